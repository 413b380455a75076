//! Flood: the memory of a sender that floods a late receiver (issue 13,
//! point-to-point under load).
//!
//! 1. One 2-node job per path (`shm`, `tcp`: the channel forced with
//!    `THREADWIRE_CHANNEL`, as [`pingpong`](crate::pingpong) does).
//! 2. Node 0 fills one buffer of [`Options::size`] bytes and does
//!    [`Options::count`] blocking `send`s of it to node 1, borrowed
//!    (`&buf[..]`), the message's index in its first 8 bytes.
//! 3. Node 1's receiving thread starts [`Options::delay`] late, then
//!    receives all of them ([`Receive::Owned`] `recv`, or [`Receive::Into`]
//!    `recv_into` one reused buffer), checking each one's length and index,
//!    and tells node 0 it is done.
//! 4. Each node reads its own peak resident set (`VmHWM` of
//!    `/proc/self/status`) at the end, node 0 after node 1 is done, and
//!    reports it with its counts and times ([`NodeResult::Flood`]): nothing
//!    is parsed from stdout.
//!
//! The sender's peak is the figure: a runtime that sends everything
//! eagerly holds every unreceived message in the sender, N × size bytes;
//! one with back-pressure holds a bounded number. The report shows what
//! was measured, uncapped. With [`Options::peers`], the same program in
//! Open MPI ([`crate::peers::flood`], `bench-peers/flood/flood.c`) on
//! shared memory and on TCP, its ranks' peaks beside ours.

pub mod node;
pub mod report;

pub use node::{node, NodeError};
pub use report::{Report, Row};

use crate::node_result::NodeResult;
use crate::pingpong::Receive;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use threadwire_launch::{Event, JobSpec, LaunchError};

/// What `bench flood` measures.
#[derive(Clone, Debug)]
pub struct Options {
    /// Messages node 0 sends.
    pub count: u64,
    /// Bytes per message.
    pub size: usize,
    /// How late node 1's receiving thread starts.
    pub delay: Duration,
    /// How node 1 receives.
    pub receive: Receive,
    /// `shm`, `tcp`: one job each.
    pub paths: Vec<String>,
    /// Also run `flood.c` in Open MPI on the same paths.
    pub peers: bool,
    /// The node program; under the launcher it must call [`node`] with
    /// the same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// Issue 13's flood: 2000 messages of 1 MiB, the receiver 3 s late,
    /// owned receives, over shared memory and TCP, of `program` with `args`.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Options {
        Options {
            count: 2000,
            size: 1 << 20,
            delay: Duration::from_secs(3),
            receive: Receive::Owned,
            paths: vec!["shm".into(), "tcp".into()],
            peers: false,
            program: program.into(),
            args,
        }
    }

    /// A deadline for one job or launch: the delay, and the flood at a
    /// pessimistic 20 MB/s, and a minute to start and end.
    pub fn deadline(&self) -> Duration {
        let bytes = self.count as f64 * self.size as f64;
        self.delay + Duration::from_secs_f64(bytes / 20e6) + Duration::from_secs(60)
    }
}

/// Which end of the flood a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Node 0 (rank 0): sends.
    Sender,
    /// Node 1 (rank 1): receives, late.
    Receiver,
}

/// What one end measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// Which end.
    pub role: Role,
    /// Messages sent, or received with the right length and index.
    pub messages: u64,
    /// The sender: its sends until the last returned; the receiver: from
    /// the end of its delay to its last receive.
    pub time: Duration,
    /// Peak resident set before the flood (after the buffers were filled),
    /// bytes.
    pub start_bytes: u64,
    /// Peak resident set at the end, bytes.
    pub peak_bytes: u64,
}

/// Why the benchmark failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A job could not be started.
    #[error("starting the flood job")]
    Launch(#[source] LaunchError),
    /// A job failed.
    #[error("the flood job over {path} failed with status {status}: {failure}")]
    JobFailed {
        /// The path.
        path: String,
        /// Its exit status.
        status: i32,
        /// The first failing node and its cause, or that none was named.
        failure: String,
    },
    /// A node of a job that succeeded never reported: the program does
    /// not call [`node`].
    #[error("over {path}, node n{node} ended without reporting its side of the flood")]
    NoReport {
        /// The path.
        path: String,
        /// The node.
        node: u32,
    },
    /// A node reported another count than was sent.
    #[error("over {path}, node n{node} reported {reported} messages of the {expected} sent")]
    Count {
        /// The path.
        path: String,
        /// The node.
        node: u32,
        /// Its count.
        reported: u64,
        /// `count`.
        expected: u64,
    },
}

/// The steps of [`run`], for progress: a row per path, and with the
/// peers one more per path.
pub fn steps(options: &Options) -> usize {
    options.paths.len() * if options.peers { 2 } else { 1 }
}

/// Runs `bench flood`: one job per path, then, if asked, Open MPI on the
/// same paths. `on_step` is called after each row, `on_event` sees every
/// event of the jobs but the nodes' reports.
pub fn run(
    options: &Options,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, Error> {
    let mut rows = Vec::new();
    for path in &options.paths {
        let spec = JobSpec::new(2, &options.program)
            .args(options.args.iter().cloned())
            .env(threadwire::env::CHANNEL, path.as_str())
            .timeout(options.deadline());
        let mut sides: [Option<Side>; 2] = [None, None];
        let report = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
            Some((node @ 0..=1, NodeResult::Flood(side))) => sides[node as usize] = Some(side),
            _ => on_event(ev),
        })
        .map_err(Error::Launch)?;
        if report.status != 0 {
            return Err(Error::JobFailed {
                path: path.clone(),
                status: report.status,
                failure: report.failure.map_or_else(
                    || "no node named as failing".to_string(),
                    |(node, cause)| format!("n{node}: {cause}"),
                ),
            });
        }
        let side = |node: u32| match sides[node as usize] {
            Some(side) if side.messages == options.count => Ok(side),
            Some(side) => Err(Error::Count {
                path: path.clone(),
                node,
                reported: side.messages,
                expected: options.count,
            }),
            None => Err(Error::NoReport {
                path: path.clone(),
                node,
            }),
        };
        rows.push(Row {
            source: report::THREADWIRE.to_string(),
            path: path.clone(),
            sender: side(0)?,
            receiver: side(1)?,
        });
        on_step();
    }
    let mut peers = Vec::new();
    if options.peers {
        for outcome in crate::peers::flood::run_beside(options, &mut on_step) {
            match outcome.result {
                Ok([sender, receiver]) => rows.push(Row {
                    source: outcome.peer.to_string(),
                    path: outcome.path.clone(),
                    sender,
                    receiver,
                }),
                Err(e) => peers.push(report::PeerError {
                    peer: outcome.peer,
                    path: outcome.path,
                    error: e.to_string(),
                }),
            }
        }
    }
    Ok(Report {
        count: options.count,
        size: options.size,
        delay: options.delay,
        receive: options.receive,
        rows,
        peer_errors: peers,
    })
}
