//! Overlap of computation with communication: what a second thread per
//! node buys a node that must both compute and receive (the seeds'
//! central claim, measured as a number).
//!
//! Node 0 streams `blocks` blocks of `block` bytes to node 1, which must
//! compute on each for a fixed time before it is done with it. With one
//! thread the two alternate; with a second thread, one receives the next
//! block while the other computes, and the run takes about the longer of
//! the two rather than their sum.
//!
//! 1. Node 1 calibrates its compute kernel (a dependent multiply-add chain
//!    over the block's words): how many steps take a millisecond.
//! 2. A *comm only* run: node 0 sends every block and waits for node 1's
//!    *done*; node 1 receives them and computes nothing. Its median time,
//!    divided by `blocks`, is the communication time per block.
//! 3. For each ratio r, node 1 computes r × that time on every block, in
//!    every mode ([`Mode`]). Each run starts with node 0's *go* (mode and
//!    compute nanoseconds per block) and node 1's *ready* once its threads
//!    are set up; node 0 then reads the clock, sends the blocks (blocking
//!    sends: a node that does not receive holds the sender back, as the
//!    budget bounds memory), and stops the clock at *done*, which carries
//!    node 1's checksum of every block and its compute time. A wrong
//!    checksum fails the run.
//! 4. Node 0 reports each sample as it is measured: the median (min–max)
//!    over the repetitions, beside the compute time node 1 measured.
//!
//! The report prints, per ratio, the serial sum (comm + compute) and the
//! ideal overlap (the larger of the two) beside each mode, and the gain of
//! the threaded modes over `serial` as the seeds' "% improvement". On a
//! 2-core machine both nodes share the cores: node 0's sending and node
//! 1's receiving thread take time from the computing thread, which a
//! machine per node would not.

pub mod node;
pub mod report;

pub use node::node;
pub use report::Report;

use crate::node_result::NodeResult;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use threadwire_launch::{Event, JobSpec, LaunchError};
use threadwire_testbed::net::Net;

/// How node 1 receives and computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// One thread: receive a block, compute on it, receive the next.
    Serial,
    /// One thread, MPI's overlap idiom: the next block's receive is posted
    /// before computing on this one, and waited for after. Whether its
    /// bytes move meanwhile is up to the runtime, with no thread calling
    /// into it.
    Posted,
    /// A fiber receives and hands blocks to the computing main thread
    /// through a queue of two.
    Fiber,
    /// The same with an OS thread receiving.
    Os,
}

impl Mode {
    /// Every mode, in the report's order.
    pub const ALL: [Mode; 4] = [Mode::Serial, Mode::Posted, Mode::Fiber, Mode::Os];

    /// The mode's name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Serial => "serial",
            Mode::Posted => "posted",
            Mode::Fiber => "fiber",
            Mode::Os => "os",
        }
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(code: u8) -> Option<Mode> {
        Mode::ALL.get(code as usize).copied()
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode other than `serial`, `posted`, `fiber` or `os`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseModeError(String);

impl fmt::Display for ParseModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a mode (serial, posted, fiber or os): {:?}", self.0)
    }
}

impl std::error::Error for ParseModeError {}

impl FromStr for Mode {
    type Err = ParseModeError;
    fn from_str(s: &str) -> Result<Mode, ParseModeError> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| ParseModeError(s.to_string()))
    }
}

/// What to run. Both nodes must pass the same options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Bytes per block.
    pub block: usize,
    /// Blocks per run.
    pub blocks: u32,
    /// Compute time per block as multiples of the communication time.
    pub ratios: Vec<f64>,
    /// Modes, each run at every ratio.
    pub modes: Vec<Mode>,
    /// Timed runs per mode and ratio (and of the comm-only run).
    pub repetitions: u32,
}

impl Default for Options {
    /// 8 blocks of 1 MiB, compute 0.5, 1 and 2 times the communication,
    /// every mode, 3 repetitions.
    fn default() -> Self {
        Options {
            block: 1 << 20,
            blocks: 8,
            ratios: vec![0.5, 1.0, 2.0],
            modes: Mode::ALL.to_vec(),
            repetitions: 3,
        }
    }
}

/// Milliseconds over the repetitions: median, fastest, slowest.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median repetition (the upper one for an even count).
    pub median: f64,
    /// The fastest.
    pub min: f64,
    /// The slowest.
    pub max: f64,
}

impl Spread {
    fn of(ms: &mut [f64]) -> Spread {
        let (median, min, max) = crate::spread(ms);
        Spread { median, min, max }
    }
}

/// One run's figures: the comm-only run (`mode` `None`, `ratio` 0) or a
/// mode at a ratio.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The mode, or `None` for the comm-only run.
    pub mode: Option<Mode>,
    /// Compute per block ÷ communication per block.
    pub ratio: f64,
    /// Node 0's time from its first send until node 1's *done*, ms.
    pub total: Spread,
    /// Node 1's measured compute time over all blocks, ms (median run).
    pub compute_ms: f64,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A send failed.
    #[error("send: {0}")]
    Send(#[from] threadwire::SendError),
    /// A receive failed.
    #[error("receive: {0}")]
    Recv(#[from] threadwire::RecvError),
    /// The receiving thread failed.
    #[error("the receiving thread failed: {0}")]
    Join(#[from] threadwire::JoinError),
    /// A control message was not what the protocol expects next.
    #[error("unexpected message: {0}")]
    Protocol(&'static str),
    /// Node 1's checksum of the blocks differs from node 0's.
    #[error("the blocks arrived damaged: checksum {got:#x}, sent {sent:#x}")]
    Checksum {
        /// What node 0 sent.
        sent: u64,
        /// What node 1 computed.
        got: u64,
    },
}

/// Why `bench overlap` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The job could not be started.
    #[error("starting the benchmark job")]
    Launch(#[source] LaunchError),
    /// The job failed.
    #[error("the benchmark job failed with status {0}")]
    JobFailed(i32),
}

/// Runs `bench overlap`: a 2-node job of `program` with `args`, which
/// must call [`node`] with the same `options`, on the two first hosts of
/// `net` if given. `on_step` is called for each sample as it comes,
/// `on_event` sees every other event of the job.
pub fn run(
    options: &Options,
    program: PathBuf,
    args: Vec<OsString>,
    net: Option<&Net>,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, RunError> {
    let mut spec = JobSpec::new(2, program).args(args);
    if let Some(net) = net {
        spec = spec.hosts(net.launch_hosts());
    }
    let mut samples = Vec::new();
    let report = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
        Some((_, NodeResult::Overlap(sample))) => {
            samples.push(sample);
            on_step();
        }
        _ => on_event(ev),
    })
    .map_err(RunError::Launch)?;
    if report.status != 0 {
        return Err(RunError::JobFailed(report.status));
    }
    Ok(Report {
        block: options.block,
        blocks: options.blocks,
        repetitions: options.repetitions,
        link: net.map(|n| n.link.to_string()),
        samples,
    })
}

/// The steps of a run of `options`, for progress: the comm-only run and
/// one sample per mode and ratio.
pub fn steps(options: &Options) -> usize {
    1 + options.modes.len() * options.ratios.len()
}

/// A run's compute time per block at `ratio`, from the comm-only run's
/// median over `blocks`.
fn compute_per_block(comm: &Spread, blocks: u32, ratio: f64) -> Duration {
    Duration::from_secs_f64(comm.median / 1e3 / f64::from(blocks.max(1)) * ratio)
}
