//! Active messages (issue 14): the round trip of a request and its reply
//! beside threadwire's own ping-pong round trip, and the rate of one-way
//! active messages from T threads of one node to another.
//!
//! One 2-node job per path (`shm`, `tcp`), whose nodes run
//! [`node::node`]. Both register the same handlers, each echoing or
//! counting and nothing more; node 1 then serves, node 0 measures and
//! reports each cell as it is measured.
//!
//! 1. Node 1 registers its handlers and sends *ready*; node 0 calls no
//!    handler before it has arrived.
//! 2. Node 0 sends node 1 a *command* before each batch of round trips
//!    or each round of the rate: *echo R* (node 1's thread 0 receives
//!    and sends back R messages, the ping-pong of `bench pingpong`),
//!    *serve* (it waits in a receive for *done*; that wait drives the
//!    node's progress, so its inline handlers run in that thread), *serve
//!    parked* before the fiber handler's round trips (thread 0 parks
//!    until node 0's request to the inline *finish* handler: the node's
//!    fiber worker alone drives its progress, and runs each fiber handler
//!    it reads at once, with no other thread to wake — the arrangement
//!    of a node whose work is in fibers), or *stop*.
//! 3. **Round trip**, per size: node 0 warms up and calibrates each
//!    method — the ping-pong (`send` then `recv`), a request to the
//!    inline handler and one to the fiber handler (`am_request(..).wait()`;
//!    both handlers take the payload and answer with it, so each way
//!    carries the size's bytes, as in the ping-pong) — then runs the
//!    repetitions interleaved: repetition k of each method, then k + 1,
//!    so a disturbance of the machine falls on all three alike.
//! 4. **Rate**, per kind and thread count T: node 0's T workers (fibers
//!    or OS threads, as [`bench rate`](crate::rate)) each send N one-way
//!    8-byte messages to the counting inline handler of node 1, then one
//!    request to the *flush* handler. Messages from one thread to one
//!    node run in the order sent, so the flush's answer means that all
//!    of the worker's messages were handled: *end-to-end* time ends with
//!    the last worker's answer, *send-side* time with its last send's
//!    return. Node 0 then sends *done* with the number of messages sent
//!    so far, and node 1 checks that its count has reached it (it may be
//!    past it: the node's idle fiber workers drive progress too, and may
//!    run the next round's first messages before thread 0 reads the
//!    count); *stop* carries the total, which the count must equal.
//!
//! The reference rate is LCI's published figure ([`LCI_RATE`]): a
//! constant beside our rows, not a peer run here.

pub mod node;
pub mod report;

pub use node::{node, NodeError};
pub use report::Report;

use crate::node_result::NodeResult;
use crate::rate::{Rate, ThreadKind};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use threadwire_launch::{Event, JobSpec, LaunchError};

/// LCI's published message rate between 2 processes, messages per second
/// (the goal for one-way active messages).
pub const LCI_RATE: f64 = 3.09e6;

/// The goal for the round trip: at most the ping-pong's and 10 %.
pub const ROUND_TRIP_GOAL: f64 = 1.10;

/// Bytes of each one-way message of the rate, as in `bench rate`.
pub const RATE_SIZE: usize = 8;

/// What `bench am` measures. Both nodes must be given the same options.
#[derive(Clone, Debug)]
pub struct Options {
    /// `shm`, `tcp`: one job each.
    pub paths: Vec<String>,
    /// Payload sizes of the round trip, in bytes.
    pub sizes: Vec<usize>,
    /// Repetitions per size and their length (the round count is
    /// calibrated to it per method).
    pub budget: crate::pingpong::Budget,
    /// Sending thread counts T of the rate.
    pub threads: Vec<u32>,
    /// One-way messages per thread in a timed repetition of the rate.
    pub messages: u64,
    /// Messages per thread in the rate's untimed warm-up round.
    pub warm_up: u64,
    /// Timed repetitions of the rate per kind and thread count.
    pub rate_repetitions: u32,
    /// Kinds of the sending threads, each measured at every count.
    pub kinds: Vec<ThreadKind>,
    /// The node program; under the launcher it must call [`node`] with
    /// the same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// Payloads of 0 and 8 B, 5 repetitions of 100 ms; the rate at 1, 2,
    /// 4 and 8 OS threads, 5 repetitions of 50,000 messages per thread
    /// (as `bench rate`).
    pub fn new(program: PathBuf, args: Vec<OsString>) -> Options {
        Options {
            paths: vec!["shm".into(), "tcp".into()],
            sizes: vec![0, 8],
            budget: crate::pingpong::Budget::default(),
            threads: vec![1, 2, 4, 8],
            messages: 50_000,
            warm_up: 1_000,
            rate_repetitions: 5,
            kinds: vec![ThreadKind::Os],
            program,
            args,
        }
    }
}

/// How a round trip is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// `send` and `recv`, the partner's thread 0 sending back what it got.
    Pingpong,
    /// `am_request` to an inline handler that answers with the payload.
    Inline,
    /// `am_request` to a fiber handler that answers with the payload.
    Fiber,
}

impl Method {
    /// Every method, in the order each repetition runs them.
    pub const ALL: [Method; 3] = [Method::Pingpong, Method::Inline, Method::Fiber];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Method::Pingpong => "pingpong",
            Method::Inline => "inline",
            Method::Fiber => "fiber",
        }
    }
}

/// Round-trip times over the repetitions: median, fastest, slowest.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Times {
    /// The median repetition (the upper one for an even count).
    pub median: Duration,
    /// The fastest repetition.
    pub min: Duration,
    /// The slowest repetition.
    pub max: Duration,
}

impl Times {
    pub(crate) fn of(values: &mut [Duration]) -> Times {
        let (median, min, max) = crate::spread(values);
        Times { median, min, max }
    }
}

/// One size's round trips, each method's, from one job.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundTrip {
    /// Payload bytes each way.
    pub size: usize,
    /// The ping-pong's round trip.
    pub pingpong: Times,
    /// A request to the inline handler and its answer.
    pub inline: Times,
    /// A request to the fiber handler and its answer.
    pub fiber: Times,
}

impl RoundTrip {
    /// The times of `method`.
    pub fn of(&self, method: Method) -> &Times {
        match method {
            Method::Pingpong => &self.pingpong,
            Method::Inline => &self.inline,
            Method::Fiber => &self.fiber,
        }
    }
}

/// One kind and thread count of the rate, in messages per second over
/// all threads.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateSample {
    /// Which threads sent.
    pub kind: ThreadKind,
    /// Sending threads.
    pub threads: u32,
    /// Messages per thread per repetition.
    pub messages: u64,
    /// Up to the last send's return.
    pub send: Rate,
    /// Up to the last flush's answer: every message handled.
    pub end_to_end: Rate,
}

/// A cell node 0 reports ([`NodeResult::Am`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Cell {
    /// A size's round trips.
    RoundTrip(RoundTrip),
    /// A kind and thread count of the rate.
    Rate(RateSample),
}

/// Why `bench am` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A job could not be started.
    #[error("starting the benchmark job")]
    Launch(#[source] LaunchError),
    /// A job failed.
    #[error("the benchmark job on {path} failed with status {status}")]
    JobFailed {
        /// The job's path.
        path: String,
        /// Its exit status.
        status: i32,
    },
}

/// The cells a run of `options` reports, for progress.
pub fn steps(options: &Options) -> usize {
    let rates = options.kinds.len() * options.threads.len();
    options.paths.len() * (options.sizes.len() + rates)
}

/// Runs `bench am`: one 2-node job per path, `on_step` called as each
/// cell comes, `on_event` with every other event of the jobs.
pub fn run(
    options: &Options,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, RunError> {
    let mut report = Report {
        repetitions: options.budget.repetitions.max(1),
        per_repetition: options.budget.per_repetition,
        messages: options.messages,
        rate_repetitions: options.rate_repetitions.max(1),
        round_trips: Vec::new(),
        rates: Vec::new(),
    };
    for path in &options.paths {
        let spec = JobSpec::new(2, &options.program)
            .args(options.args.iter().cloned())
            .env(threadwire::env::CHANNEL, path);
        let job = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
            Some((_, NodeResult::Am(cell))) => {
                match cell {
                    Cell::RoundTrip(r) => report.round_trips.push((path.clone(), r)),
                    Cell::Rate(r) => report.rates.push((path.clone(), r)),
                }
                on_step();
            }
            _ => on_event(ev),
        })
        .map_err(RunError::Launch)?;
        if job.status != 0 {
            return Err(RunError::JobFailed {
                path: path.clone(),
                status: job.status,
            });
        }
    }
    Ok(report)
}
