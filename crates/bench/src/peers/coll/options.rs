//! What a launch measures and within what: the options, the buffers
//! `coll.c` allocates, and the deadline computed from both.

use std::time::Duration;

use super::{Configuration, Operation};

/// A launch's allowance for starting and ending the MPI job.
const LAUNCH_ALLOWANCE: Duration = Duration::from_secs(30);

/// `OMP_WAIT_POLICY` for hybrid runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Unset: libgomp spins a while, then sleeps.
    #[default]
    Default,
    /// `passive`: waiting threads sleep at once.
    Passive,
    /// `active`: waiting threads spin.
    Active,
}

/// What a launch measures, and within what.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sizes in bytes (allreduce's: multiples of 8).
    pub sizes: Vec<usize>,
    /// Timed repetitions per operation and size.
    pub repetitions: u32,
    /// Time per repetition (the iterations are calibrated to it).
    pub ms: u64,
    /// A size's repetitions stop once they have taken this long, after at
    /// least 3: it caps the time of the largest sizes.
    pub max_ms_per_size: Option<u64>,
    /// Sizes whose buffers, over all members, would take more are not run.
    pub max_buffer_bytes: u64,
    /// `OMP_WAIT_POLICY` for hybrid configurations.
    pub openmp_wait_policy: WaitPolicy,
}

impl Default for Options {
    /// Issue 12's sizes (8 B, 64 KiB, 1 MiB, 16 MiB), 5 repetitions of
    /// 100 ms, at most 2 s a size, at most 2 GiB of buffers.
    fn default() -> Options {
        Options {
            sizes: vec![8, 64 << 10, 1 << 20, 16 << 20],
            repetitions: 5,
            ms: 100,
            max_ms_per_size: Some(2000),
            max_buffer_bytes: 2 << 30,
            openmp_wait_policy: WaitPolicy::Default,
        }
    }
}

impl Options {
    /// The sizes of `operation` that are run in `configuration`, and those
    /// left out for their buffers.
    pub fn split_sizes(
        &self,
        configuration: Configuration,
        operation: Operation,
    ) -> (Vec<usize>, Vec<usize>) {
        operation.sizes(&self.sizes).into_iter().partition(|&size| {
            buffer_bytes(configuration, operation, size) <= self.max_buffer_bytes
        })
    }

    /// How long one launch of `operation` at the sizes that are run may
    /// take: 30 s to start and end the job and, per size, 3 times what the
    /// check, the calibration and the repetitions take if one operation
    /// takes [`guess`] (coll.c's header has the steps).
    pub fn deadline(&self, configuration: Configuration, operation: Operation) -> Duration {
        let repetition = Duration::from_millis(self.ms);
        let per_size: Duration = self
            .split_sizes(configuration, operation)
            .0
            .into_iter()
            .map(|size| {
                let op = guess(configuration, operation, size);
                // Calibration: doubling batches until they have taken
                // half a repetition, the last as long as all before it;
                // at least one op.
                let calibration = repetition + op * 2;
                let all = self.repetitions * repetition.max(op);
                let repetitions = match self.max_ms_per_size {
                    Some(cap) => all.min((Duration::from_millis(cap) + op).max(3 * op)),
                    None => all,
                };
                op + calibration + repetitions
            })
            .sum();
        LAUNCH_ALLOWANCE + 3 * per_size
    }

    /// `coll`'s arguments for `operation` at `sizes`.
    pub(super) fn args(
        &self,
        configuration: Configuration,
        operation: Operation,
        sizes: &[usize],
    ) -> Vec<String> {
        let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
        let mut args = vec![
            "--operations".into(),
            operation.name().into(),
            "--sizes".into(),
            sizes.join(","),
            "--repetitions".into(),
            self.repetitions.to_string(),
            "--ms".into(),
            self.ms.to_string(),
            "--threads".into(),
            configuration.threads.to_string(),
        ];
        if let Some(cap) = self.max_ms_per_size {
            args.extend(["--max-ms-per-size".into(), cap.to_string()]);
        }
        args
    }
}

/// A pessimistic guess of one operation's time, for deadlines only:
/// 50 ms (MPICH's spinning ranks oversubscribed took up to 60 ms at 8 B)
/// and every buffer byte at 100 MB/s.
pub fn guess(configuration: Configuration, operation: Operation, size: usize) -> Duration {
    Duration::from_millis(50)
        + Duration::from_secs_f64(buffer_bytes(configuration, operation, size) as f64 / 100e6)
}

/// The bytes of every member's buffers and every rank's node buffers that
/// `coll.c` allocates for `operation` at `size` (its `buffer_sizes`).
pub fn buffer_bytes(configuration: Configuration, operation: Operation, size: usize) -> u64 {
    let (m, t, s) = (
        configuration.members(),
        u64::from(configuration.threads),
        size as u64,
    );
    let (send, receive, node) = match operation {
        Operation::Barrier => (0, 0, 0),
        Operation::Bcast => (0, s, s),
        Operation::Allreduce => (s, s, s),
        Operation::Allgather => (s, m * s, m * s),
        Operation::Alltoall => (m * s, m * s, m * s * t),
    };
    // Two node buffers in turn, and alltoall's outgoing one.
    let node_buffers = match (configuration.threads, operation) {
        (1, _) => 0,
        (_, Operation::Alltoall) => 3,
        _ => 2,
    };
    m.saturating_mul(send + receive) + u64::from(configuration.ranks) * node_buffers * node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::coll::Mpi;

    const HYBRID: Configuration = Configuration {
        ranks: 2,
        threads: 8,
    };

    #[test]
    fn buffers_are_counted_as_coll_c_allocates_them() {
        let mib = 1u64 << 20;
        assert_eq!(
            buffer_bytes(Configuration::ranks(4), Operation::Barrier, 0),
            0
        );
        assert_eq!(
            buffer_bytes(Configuration::ranks(2), Operation::Allreduce, 1 << 20),
            4 * mib
        );
        // 16 ranks × (16 + 16) blocks of 16 MiB.
        assert_eq!(
            buffer_bytes(Configuration::ranks(16), Operation::Alltoall, 16 << 20),
            8192 * mib
        );
        // 16 members × (1 + 16) MiB, and 2 ranks × 2 node buffers of 16 MiB.
        assert_eq!(
            buffer_bytes(HYBRID, Operation::Allgather, 1 << 20),
            (16 * 17 + 64) * mib
        );
    }

    #[test]
    fn sizes_past_the_buffer_cap_are_left_out() {
        let options = Options::default();
        let (run, skipped) = options.split_sizes(Configuration::ranks(16), Operation::Alltoall);
        assert_eq!((run, skipped), (vec![8, 64 << 10, 1 << 20], vec![16 << 20]));
        let (run, skipped) = options.split_sizes(Configuration::ranks(4), Operation::Alltoall);
        assert_eq!((run.len(), skipped.len()), (4, 0));
        let (run, _) = options.split_sizes(HYBRID, Operation::Barrier);
        assert_eq!(run, vec![0]);
    }

    #[test]
    fn the_deadline_grows_with_sizes_and_repetitions_and_is_capped() {
        let small = Options {
            sizes: vec![8],
            ..Options::default()
        };
        // 3 × (50 ms check + 100 + 100 ms calibration + 5 × 100 ms), and
        // 32 bytes at 100 MB/s.
        let deadline = small.deadline(Configuration::ranks(2), Operation::Allreduce);
        let expected = LAUNCH_ALLOWANCE + Duration::from_millis(3 * 750);
        assert!(
            deadline.abs_diff(expected) < Duration::from_micros(10),
            "{deadline:?}"
        );
        let more = Options {
            repetitions: 50,
            ..small.clone()
        };
        assert!(
            more.deadline(Configuration::ranks(2), Operation::Allreduce)
                > small.deadline(Configuration::ranks(2), Operation::Allreduce)
        );
        let uncapped = Options {
            max_ms_per_size: None,
            ..more.clone()
        };
        assert!(
            uncapped.deadline(Configuration::ranks(2), Operation::Allreduce)
                > more.deadline(Configuration::ranks(2), Operation::Allreduce)
        );
        let default = Options::default();
        let big = default.deadline(Configuration::ranks(16), Operation::Allreduce);
        assert!(
            big > Duration::from_secs(60) && big < Duration::from_secs(600),
            "{big:?}"
        );
    }

    #[test]
    fn coll_gets_the_options_as_its_flags() {
        let args = Options::default().args(HYBRID, Operation::Bcast, &[8, 64]);
        assert_eq!(
            args.join(" "),
            "--operations bcast --sizes 8,64 --repetitions 5 --ms 100 --threads 8 --max-ms-per-size 2000"
        );
        assert_eq!(
            Mpi::Mpich.launch(Configuration::ranks(16)).join(" "),
            "mpiexec.mpich -n 16"
        );
    }
}
