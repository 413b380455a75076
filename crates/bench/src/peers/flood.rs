//! The Open MPI peer of `threadwire bench flood` (issue 13): the same
//! flood in `bench-peers/flood/flood.c` ([`SOURCE`]; its header says what
//! it does and prints), built and launched by the machinery of the
//! collectives' peers ([`coll::Program`]: a scratch directory, the
//! compiler and launcher in process groups with deadlines).
//!
//! 1. Build with `mpicc.openmpi -O2` (missing: the error names the Debian
//!    packages).
//! 2. Per path, `mpirun.openmpi -np 2` with its default selection (ob1 and
//!    the `vader` shared-memory BTL here) for `shm`, and with `--mca pml
//!    ob1 --mca btl self,tcp` for `tcp`; killed past
//!    [`Options::deadline`](crate::flood::Options::deadline).
//! 3. Read each rank's JSON line into a [`Side`]; rank 0 is the sender.

use super::coll::{self, Mpi};
use crate::flood::{Options, Role, Side};
use serde::Deserialize;
use std::time::{Duration, Instant};

/// `bench-peers/flood/flood.c`.
pub const SOURCE: &str = include_str!("../../../../bench-peers/flood/flood.c");

/// The peer's name in reports.
pub const OPEN_MPI: &str = "Open MPI";

/// One path's run.
#[derive(Debug)]
pub struct Outcome {
    /// The peer's name.
    pub peer: &'static str,
    /// `shm` or `tcp`.
    pub path: String,
    /// The sender's and the receiver's figures, or why there are none.
    pub result: Result<[Side; 2], coll::Error>,
}

/// Builds `flood.c` with Open MPI and runs it on each of `options.paths`;
/// `on_step` is called after each path.
pub fn run_beside(options: &Options, on_step: impl FnMut()) -> Vec<Outcome> {
    coll::build_and_launch_each(
        Mpi::OpenMpi,
        "flood",
        SOURCE,
        &["-O2"],
        options.paths.iter().cloned(),
        |program, path| launch(program, path, options),
        on_step,
    )
    .into_iter()
    .map(|(path, result)| Outcome {
        peer: OPEN_MPI,
        path,
        result,
    })
    .collect()
}

fn launch(
    program: &coll::Program,
    path: &str,
    options: &Options,
) -> Result<[Side; 2], coll::Error> {
    let selection: &[&str] = match path {
        "tcp" => &["--mca", "pml", "ob1", "--mca", "btl", "self,tcp"],
        _ => &[],
    };
    let args = [
        "--count".to_string(),
        options.count.to_string(),
        "--size".into(),
        options.size.to_string(),
        "--delay".into(),
        options.delay.as_secs_f64().to_string(),
    ];
    let deadline = Instant::now() + options.deadline();
    let output = program.launch_with(
        2,
        selection,
        &args,
        &format!("flood-{path}"),
        deadline,
        |_| {},
    )?;
    parse(&output, options.count)
}

/// A rank's line of `flood.c`.
#[derive(Deserialize)]
struct Line {
    rank: u32,
    messages: u64,
    seconds: f64,
    start_kib: u64,
    peak_kib: u64,
}

/// Both ranks' lines of `output`, sender first; each must have `count`
/// messages.
fn parse(output: &str, count: u64) -> Result<[Side; 2], coll::Error> {
    let mut sides: [Option<Side>; 2] = [None, None];
    for (number, text) in output.lines().enumerate() {
        let line: Line = serde_json::from_str(text).map_err(|e| coll::Error::Io {
            what: "reading flood.c's output",
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("line {}: {e}: {text:?}", number + 1),
            ),
        })?;
        let role = match line.rank {
            0 => Role::Sender,
            1 => Role::Receiver,
            _ => continue,
        };
        sides[line.rank as usize] = Some(Side {
            role,
            messages: line.messages,
            time: Duration::try_from_secs_f64(line.seconds).unwrap_or_default(),
            start_bytes: line.start_kib * 1024,
            peak_bytes: line.peak_kib * 1024,
        });
    }
    let found = sides
        .iter()
        .flatten()
        .filter(|s| s.messages == count)
        .count();
    match sides {
        [Some(sender), Some(receiver)] if found == 2 => Ok([sender, receiver]),
        _ => Err(coll::Error::Incomplete { expected: 2, found }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ranks_lines_are_read_in_bytes() {
        let output = "{\"rank\":1,\"messages\":3,\"seconds\":0.5,\"start_kib\":10,\"peak_kib\":20}\n\
                      {\"rank\":0,\"messages\":3,\"seconds\":1.5,\"start_kib\":11,\"peak_kib\":4096}\n";
        let [sender, receiver] = parse(output, 3).unwrap();
        assert_eq!(sender.role, Role::Sender);
        assert_eq!(sender.peak_bytes, 4096 * 1024);
        assert_eq!(receiver.time, Duration::from_millis(500));
        assert!(matches!(
            parse(output, 4),
            Err(coll::Error::Incomplete { found: 0, .. })
        ));
        assert!(parse("not json\n", 3).is_err());
    }
}
