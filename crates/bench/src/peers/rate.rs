//! The Open MPI peer of `threadwire bench rate` (issue 13): the 8-byte
//! message rate of `bench-peers/shm/msgrate.c` ([`SOURCE`]; its header
//! says what it does and prints) with `MPI_THREAD_MULTIPLE`, T pthreads
//! per rank, built and launched by the machinery of the collectives'
//! peers ([`coll::Program`]).
//!
//! 1. Build with `mpicc.openmpi -O2 -pthread` (missing: the error names
//!    the Debian packages). `-pthread` rather than `-lpthread`: the
//!    compiler takes its flags before the source, where a library would
//!    come too early for the linker; glibc 2.34 and later need neither.
//! 2. Per thread count T, `mpirun.openmpi -np 2 msgrate T N W` with its
//!    default selection (ob1 and the `vader` shared-memory BTL here),
//!    killed past [`deadline`].
//! 3. Read rank 0's line ([`parse`]): `T=.. N=.. W=.. provided=..
//!    send_rate=.. e2e_rate=..`, checked field by field and against the
//!    run's T, N and W, a [`LineError`] if it is not that line.
//!
//! msgrate times one round after its warm-up of 1,000 messages per
//! thread (ours: [`Options::repetitions`](crate::rate::Options) rounds
//! after a warm-up of the same size), so a peer row has one figure.

use super::coll::{self, Mpi};
use crate::rate::Options;
use serde::Serialize;
use std::time::{Duration, Instant};

/// `bench-peers/shm/msgrate.c`.
pub const SOURCE: &str = include_str!("../../../../bench-peers/shm/msgrate.c");

/// The peer's name in reports.
pub const OPEN_MPI: &str = "Open MPI";

/// msgrate's largest window (its `MAXW`).
const MAX_WINDOW: usize = 1024;
/// msgrate's warm-up, messages per thread.
const WARM_UP: u64 = 1000;
/// A pessimistic rate for the deadline, messages per second over all
/// threads: Open MPI measured 0.2 M/s at 8 threads here.
const SLOWEST_RATE: f64 = 20_000.0;

/// The thread level msgrate was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Provided {
    /// `MPI_THREAD_MULTIPLE`, as asked.
    #[serde(rename = "MULTIPLE")]
    Multiple,
    /// Lower: msgrate runs then only with one thread.
    #[serde(rename = "lower")]
    Lower,
}

/// One thread count's figures, in messages per second over all threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// T.
    pub threads: u32,
    /// N, messages per thread.
    pub messages: u64,
    /// W.
    pub window: usize,
    /// The thread level.
    pub provided: Provided,
    /// Up to the last thread's last `MPI_Waitall`.
    pub send: f64,
    /// Up to rank 1's acknowledgement.
    pub end_to_end: f64,
}

/// Output that is not msgrate's line for this run.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// No line starts with `T=`.
    #[error("no line of msgrate's in its output: {0:?}")]
    Missing(String),
    /// The line is not `T=.. N=.. W=.. provided=.. send_rate=.. e2e_rate=..`
    /// of this run.
    #[error("msgrate's line {text:?}: {why}")]
    Malformed {
        /// The line.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// Why a thread count has no peer figures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The build or the launch failed.
    #[error(transparent)]
    Mpi(#[from] coll::Error),
    /// Its output was not the line.
    #[error(transparent)]
    Line(#[from] LineError),
    /// The window or the count is beyond what msgrate takes.
    #[error("msgrate takes windows of 1 to {MAX_WINDOW} and up to {} messages per thread: W={window}, N={messages}", i32::MAX)]
    OutOfRange {
        /// W.
        window: usize,
        /// N.
        messages: u64,
    },
}

/// One thread count's run.
#[derive(Debug)]
pub struct Outcome {
    /// T.
    pub threads: u32,
    /// The figures, or why there are none.
    pub result: Result<Measured, Error>,
}

/// Builds `msgrate.c` with Open MPI and runs it once per thread count of
/// `options` with its N and W; `on_step` is called after each.
pub fn run_beside(options: &Options, on_step: impl FnMut()) -> Vec<Outcome> {
    coll::build_and_launch_each(
        Mpi::OpenMpi,
        "msgrate",
        SOURCE,
        &["-O2", "-pthread"],
        options.threads.iter().map(|&t| t.max(1)),
        |program, &threads| launch(program, threads, options),
        on_step,
    )
    .into_iter()
    .map(|(threads, result)| Outcome { threads, result })
    .collect()
}

/// How long a launch at `threads` may take: warm-up and round at
/// [`SLOWEST_RATE`], and a minute to start and end.
pub fn deadline(threads: u32, messages: u64) -> Duration {
    let total = f64::from(threads) * (messages + WARM_UP) as f64;
    Duration::from_secs_f64(total / SLOWEST_RATE) + Duration::from_secs(60)
}

fn launch(program: &coll::Program, threads: u32, options: &Options) -> Result<Measured, Error> {
    let messages = options.messages.max(1);
    let window = options.window.max(1);
    if window > MAX_WINDOW || messages > i32::MAX as u64 {
        return Err(Error::OutOfRange { window, messages });
    }
    let args = [threads, messages as u32, window as u32].map(|a| a.to_string());
    let deadline = Instant::now() + deadline(threads, messages);
    let output = program.launch_with(
        2,
        &[],
        &args,
        &format!("msgrate-{threads}"),
        deadline,
        |_| {},
    )?;
    Ok(parse(&output, threads, messages, window)?)
}

/// Rank 0's line in `output`, which must be of a run of `threads`,
/// `messages` and `window`.
pub fn parse(
    output: &str,
    threads: u32,
    messages: u64,
    window: usize,
) -> Result<Measured, LineError> {
    let text = output
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("T="))
        .ok_or_else(|| LineError::Missing(output.chars().take(200).collect()))?;
    let malformed = |why| LineError::Malformed {
        text: text.chars().take(200).collect(),
        why,
    };
    const KEYS: [&str; 6] = ["T", "N", "W", "provided", "send_rate", "e2e_rate"];
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.len() != KEYS.len() {
        return Err(malformed("not six fields"));
    }
    let mut values = [""; 6];
    for ((value, field), key) in values.iter_mut().zip(&fields).zip(KEYS) {
        *value = field
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
            .ok_or_else(|| malformed("fields not T, N, W, provided, send_rate, e2e_rate"))?;
    }
    let [t, n, w, provided, send, end_to_end] = values;
    let whole = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| malformed("T, N or W not a count"))
    };
    if (whole(t)?, whole(n)?, whole(w)?) != (u64::from(threads), messages, window as u64) {
        return Err(malformed("not this run's T, N and W"));
    }
    let provided = match provided {
        "MULTIPLE" => Provided::Multiple,
        "lower" => Provided::Lower,
        _ => return Err(malformed("provided neither MULTIPLE nor lower")),
    };
    let rate = |s: &str| match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(malformed("a rate not a positive number")),
    };
    Ok(Measured {
        threads,
        messages,
        window,
        provided,
        send: rate(send)?,
        end_to_end: rate(end_to_end)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_read_and_checked() {
        let output = "T=2 N=2000 W=64 provided=MULTIPLE send_rate=812345 e2e_rate=790001\n";
        let m = parse(output, 2, 2000, 64).unwrap();
        assert_eq!(m.provided, Provided::Multiple);
        assert_eq!((m.send, m.end_to_end), (812_345.0, 790_001.0));
        let lower = "T=1 N=5 W=4 provided=lower send_rate=1.5e6 e2e_rate=1e6";
        assert_eq!(parse(lower, 1, 5, 4).unwrap().provided, Provided::Lower);
        assert!(matches!(parse("", 2, 2000, 64), Err(LineError::Missing(_))));
        for bad in [
            "T=2 N=2000 W=64 provided=MULTIPLE send_rate=812345",
            "T=2 N=2000 W=64 provided=MULTIPLE e2e_rate=1 send_rate=1",
            "T=3 N=2000 W=64 provided=MULTIPLE send_rate=1 e2e_rate=1",
            "T=x N=2000 W=64 provided=MULTIPLE send_rate=1 e2e_rate=1",
            "T=2 N=2000 W=64 provided=SINGLE send_rate=1 e2e_rate=1",
            "T=2 N=2000 W=64 provided=MULTIPLE send_rate=inf e2e_rate=1",
            "T=2 N=2000 W=64 provided=MULTIPLE send_rate=1 e2e_rate=-4",
            "T=2 N=2000 W=64 provided=MULTIPLE send_rate=1 e2e_rate=",
        ] {
            let e = parse(bad, 2, 2000, 64).unwrap_err();
            assert!(matches!(e, LineError::Malformed { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn the_deadline_allows_a_slow_peer() {
        assert_eq!(deadline(1, 19_000), Duration::from_secs(61));
        assert!(deadline(8, 200_000) > Duration::from_secs(80));
    }
}
