//! The Open MPI peer of `threadwire bench spawn`'s process starts into a
//! running job: `MPI_Comm_spawn` of N children by a parent that
//! `mpirun -n 1` started, in `bench-peers/spawn/comm_spawn.c` ([`SOURCE`];
//! its header says what it times and prints), built and launched by the
//! machinery of the collectives' peers ([`coll::Program`]).
//!
//! 1. Build with `mpicc.openmpi -O2` (missing: the error names the Debian
//!    packages).
//! 2. Per N, `mpirun.openmpi --allow-run-as-root --oversubscribe -np 1
//!    --mca pml ob1 --mca btl self,vader,tcp comm_spawn N R`
//!    ([`SELECTION`]): the parent spawns N children R + 1 times, the first
//!    round untimed, and prints one line per timed round. The selection is
//!    this machine's: Open MPI's default also tries UCX and the `cm` PML's
//!    OFI and PSM transports, which are built into Debian's package but
//!    find no hardware here, and that costs every `MPI_Init` about 200 ms
//!    (one rank: 220 ms against 23 ms with ob1), so a spawn of one child
//!    took 250 ms instead of 40–50. Parent and children are separate jobs,
//!    which `vader` (shared memory) does not join: without `tcp` the spawn
//!    fails.
//! 3. **Hangs.** Open MPI 4.1.4 (Debian's) now and then never finishes a
//!    spawn: one child stays in `PMIx_Init`, its connection to mpirun's
//!    PMIx server never answered, while the parent waits in
//!    `MPI_Comm_spawn` (`PMIx_Lookup`) and the other children in
//!    `MPI_Init`; a known, intermittent fault of the 4.x series
//!    (open-mpi/ompi#9713, #8958). Here it struck about one launch in
//!    three of 5 rounds of 4 children, and more often with 16, whatever the
//!    BTLs (`self,vader,tcp` with ob1), `PMIX_MCA_gds=hash` or a pause
//!    between rounds. Less often a launch fails instead: once at N = 16 a
//!    child's `MPI_Send` to the parent failed and the error handler itself
//!    crashed (signal 11). So the run is watched: a launch that prints no
//!    line for [`stall`] is killed with its children, the rounds it (or a
//!    launch that failed) finished are kept (each came after that launch's
//!    warm-up), and a new launch, with a warm-up of its own, runs the
//!    rounds still missing, at most [`MAX_RETRIES`] times per N.
//!    [`Times::hung`] and [`Times::failed`] count them. A hung round is not
//!    timed: it is not a slow spawn but one that never ends.

use super::coll::{self, Mpi};
use crate::peers::process::Group;
use std::io;
use std::time::{Duration, Instant};

/// `bench-peers/spawn/comm_spawn.c`.
pub const SOURCE: &str = include_str!("../../../../bench-peers/spawn/comm_spawn.c");

/// The launcher's MCA settings (step 2).
pub const SELECTION: [&str; 6] = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp"];

/// Launches that hung or failed, per N, before the row gives up.
pub const MAX_RETRIES: u32 = 8;

/// How often the run is looked at.
const POLL: Duration = Duration::from_millis(50);

/// Builds `comm_spawn.c` with Open MPI: step 1.
pub fn build() -> Result<coll::Program, coll::Error> {
    coll::Program::build_from(Mpi::OpenMpi, "comm_spawn", SOURCE, &["-O2"])
}

/// How long a launch may go without printing a round before it counts as
/// hung: 5 s and 0.5 s a child, twice that for the first round (mpirun's
/// start and the warm-up). A spawn of 16 took 1.1–2.2 s on 2 busy cores.
pub fn stall(count: u32) -> Duration {
    Duration::from_secs(5) + Duration::from_millis(500) * count
}

/// One N's timed rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Times {
    /// Microseconds per round, in the order run.
    pub us: Vec<f64>,
    /// Launches killed after a stall (module docs, step 3).
    pub hung: u32,
    /// Launches that ended with a failure (step 3).
    pub failed: u32,
}

/// Why an N has no times.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The build or a launch failed.
    #[error(transparent)]
    Mpi(#[from] coll::Error),
    /// Launches kept hanging or failing before the rounds were complete.
    #[error(
        "Open MPI's MPI_Comm_spawn of {count}: {hung} launches hung (open-mpi/ompi#9713) and \
         {failed} failed, {rounds} of {repetitions} rounds finished; the last failure: {last}"
    )]
    GaveUp {
        /// Children per spawn.
        count: u32,
        /// Launches killed after a stall.
        hung: u32,
        /// Launches that failed.
        failed: u32,
        /// Rounds timed before the row gave up.
        rounds: usize,
        /// Rounds asked for.
        repetitions: u32,
        /// The last failed launch's error, or `none`.
        last: String,
    },
    /// The parent's output was not comm_spawn.c's lines.
    #[error("comm_spawn.c's output, line {line}: {text:?}")]
    Output {
        /// The line's number, from 1.
        line: usize,
        /// The line.
        text: String,
    },
}

/// Steps 2–3: `repetitions` timed spawns of `count` children, each after
/// a warm-up in its launch, until `deadline`.
pub fn spawn_times(
    program: &coll::Program,
    count: u32,
    repetitions: u32,
    deadline: Instant,
) -> Result<Times, Error> {
    let mut times = Times {
        us: Vec::new(),
        hung: 0,
        failed: 0,
    };
    let mut last = String::from("none");
    while times.us.len() < repetitions as usize {
        let rounds = repetitions - times.us.len() as u32;
        let name = format!("comm_spawn-{count}-{}", times.hung + times.failed);
        let (us, end) = launch(program, count, rounds, &name, deadline)?;
        times.us.extend(us);
        match end {
            End::Done => continue,
            End::Hung => times.hung += 1,
            End::Failed(e) => {
                times.failed += 1;
                last = e.to_string();
            }
        }
        if times.hung + times.failed >= MAX_RETRIES || Instant::now() >= deadline {
            return Err(Error::GaveUp {
                count,
                hung: times.hung,
                failed: times.failed,
                rounds: times.us.len(),
                repetitions,
                last,
            });
        }
    }
    times.us.truncate(repetitions as usize);
    Ok(times)
}

/// How a launch ended.
enum End {
    /// With every round.
    Done,
    /// Killed after a stall.
    Hung,
    /// With a failure.
    Failed(coll::Error),
}

/// One launch of `rounds` timed rounds: the times of those it finished,
/// and how it ended.
fn launch(
    program: &coll::Program,
    count: u32,
    rounds: u32,
    name: &str,
    deadline: Instant,
) -> Result<(Vec<f64>, End), Error> {
    let cmd = program.command(1, &SELECTION, &[count.to_string(), rounds.to_string()]);
    let (output, log) = program.files(name);
    let mut group = Group::spawn(cmd, &output, &log).map_err(|e| coll::Error::Io {
        what: "starting mpirun",
        source: io::Error::other(e.to_string()),
    })?;
    let read = || std::fs::read_to_string(&output).unwrap_or_default();
    // Only whole lines: a kill or crash may have cut the last one.
    let whole = |text: &str| text.rfind('\n').map_or("", |end| &text[..=end]).to_string();
    let stall = stall(count);
    let mut lines = 0;
    let mut quiet_until = Instant::now() + 2 * stall;
    loop {
        if group.process().wait_exited(Instant::now() + POLL) {
            break;
        }
        let now = Instant::now();
        let printed = read().lines().count();
        if printed > lines {
            lines = printed;
            quiet_until = now + stall;
        }
        if now >= quiet_until || now >= deadline {
            group.kill();
            return Ok((parse(&whole(&read()), count)?, End::Hung));
        }
    }
    let status = group.wait(deadline).map_err(|e| coll::Error::Io {
        what: "waiting for mpirun",
        source: io::Error::other(e.to_string()),
    })?;
    if !status.success() {
        let failure = coll::Error::Failed {
            launcher: Mpi::OpenMpi.launcher(),
            status,
            log: coll::log_tail(&log),
        };
        return Ok((parse(&whole(&read()), count)?, End::Failed(failure)));
    }
    let us = parse(&read(), count)?;
    match us.len() == rounds as usize {
        true => Ok((us, End::Done)),
        false => Err(coll::Error::Incomplete {
            expected: rounds as usize,
            found: us.len(),
        }
        .into()),
    }
}

/// The parent's lines `comm_spawn COUNT ROUND MICROSECONDS`, each for
/// `count` children; other lines (Open MPI's notices) are skipped.
fn parse(output: &str, count: u32) -> Result<Vec<f64>, Error> {
    let mut us = Vec::new();
    for (number, text) in output.lines().enumerate() {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.first() != Some(&"comm_spawn") {
            continue;
        }
        let bad = || Error::Output {
            line: number + 1,
            text: text.to_string(),
        };
        let [_, n, _round, t] = fields[..] else {
            return Err(bad());
        };
        let t: f64 = t.parse().map_err(|_| bad())?;
        if n.parse::<u32>().ok() != Some(count) || !t.is_finite() || t <= 0.0 {
            return Err(bad());
        }
        us.push(t);
    }
    Ok(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parents_rounds_are_read_and_notices_skipped() {
        let output = "comm_spawn 4 1 319476.6\n\
                      [host:123] some Open MPI notice\n\
                      comm_spawn 4 2 1500.25\n";
        assert_eq!(parse(output, 4).unwrap(), vec![319476.6, 1500.25]);
        assert!(parse("", 4).unwrap().is_empty());
        // A line for another N, a missing or bad time: not the parent's.
        for bad in [
            "comm_spawn 16 1 12.5\n",
            "comm_spawn 4 1\n",
            "comm_spawn 4 1 fast\n",
            "comm_spawn 4 1 -3\n",
        ] {
            assert!(
                matches!(parse(bad, 4), Err(Error::Output { line: 1, .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_row_that_gave_up_says_why() {
        let e = Error::GaveUp {
            count: 16,
            hung: 7,
            failed: 1,
            rounds: 2,
            repetitions: 5,
            last: "mpirun.openmpi failed".into(),
        };
        let text = e.to_string();
        assert!(text.contains("7 launches hung"), "{text}");
        assert!(text.contains("1 failed, 2 of 5 rounds"), "{text}");
        assert!(
            text.ends_with("the last failure: mpirun.openmpi failed"),
            "{text}"
        );
        assert!(stall(16) > stall(1));
    }
}
