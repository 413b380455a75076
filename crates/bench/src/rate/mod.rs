//! Message rate: 8-byte messages from T threads of one node to T threads of
//! another, the figure of osu_mbw_mr and of the MPI peer
//! `bench-peers/shm/msgrate.c`, whose structure this follows.
//!
//! Each side's thread 0 spawns T workers, then drives rounds (one untimed
//! warm-up, then the timed repetitions):
//!
//! 1. The receiving side's thread 0 sends *ready* to the sending side's;
//!    that one answers *go*: a two-node barrier, as msgrate's `MPI_Barrier`.
//! 2. The sending thread 0 reads the clock (`t0`) and releases its workers
//!    through a local barrier, so all start together; the receiving thread 0
//!    releases its own.
//! 3. Sender worker t sends N messages with tag t to receiver worker t, as
//!    `isend` in windows of W completed together; receiver worker t receives
//!    them in windows of W and checks that they arrive in order: as
//!    msgrate does, into W buffers of its own that it reuses
//!    (`irecv_into`), or with [`Options::owned`] as a message of its own
//!    each (`irecv`, a new vector per message).
//! 4. *Send-side* time ends when the last sender has completed its last
//!    window (sends are eager: local completion). The receiving thread 0,
//!    once all its workers hold everything, sends an *ack*; *end-to-end*
//!    time ends when the ack arrives at the sending thread 0.
//!
//! Workers are spawned in the same order on both nodes, so worker t has
//! the same thread number on both and each side knows its partner's
//! address; *ready* carries the receiver's numbering so a difference is an
//! error rather than a hang. The workers are fibers or OS threads
//! ([`ThreadKind`]); msgrate's pthreads compare with OS threads.
//!
//! The benchmark `bench rate` is [`run`]: one 2-node job whose nodes run
//! [`node::node`], node 0 reporting each sample as it is measured; its
//! result is a [`report::Report`]. With [`Options::peers`], msgrate itself
//! in Open MPI ([`crate::peers::rate`]) at the same T, N and W over shared
//! memory, its rows beside ours.

pub mod node;
pub mod report;

pub use node::node;
pub use report::Report;

use crate::node_result::NodeResult;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;
use threadwire_launch::{Event, JobSpec, LaunchError};
use threadwire_testbed::net::Net;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use threadwire::fiber::sync::Barrier;
use threadwire::{Address, Endpoint, JoinError, RecvError, SendError, Tag, ThreadHandle};

/// Bytes per message, as in msgrate.
const SIZE: usize = 8;
/// Tags of the thread-0 handshake; workers use tags `0..T`.
const READY: Tag = 0x7261_0001;
const GO: Tag = 0x7261_0002;
const ACK: Tag = 0x7261_0003;

/// Which kind of threads carry the workers' endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadKind {
    /// OS threads ([`Node::spawn_os`](threadwire::Node::spawn_os)), as
    /// msgrate's pthreads.
    Os,
    /// Fibers on the node's workers ([`Node::spawn`](threadwire::Node::spawn)).
    Fibers,
}

impl ThreadKind {
    /// The kind's name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ThreadKind::Os => "os",
            ThreadKind::Fibers => "fibers",
        }
    }

    fn spawn<T: Send + 'static>(
        self,
        ep: &Endpoint,
        body: impl FnOnce(Endpoint) -> T + Send + 'static,
    ) -> ThreadHandle<T> {
        match self {
            ThreadKind::Os => ep.node().spawn_os(body),
            ThreadKind::Fibers => ep.node().spawn(body),
        }
    }
}

impl fmt::Display for ThreadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A thread kind other than `os` or `fibers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseThreadKindError(String);

impl fmt::Display for ParseThreadKindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a thread kind (os or fibers): {:?}", self.0)
    }
}

impl std::error::Error for ParseThreadKindError {}

impl FromStr for ThreadKind {
    type Err = ParseThreadKindError;
    fn from_str(s: &str) -> Result<ThreadKind, ParseThreadKindError> {
        match s {
            "os" => Ok(ThreadKind::Os),
            "fibers" => Ok(ThreadKind::Fibers),
            _ => Err(ParseThreadKindError(s.to_string())),
        }
    }
}

/// What to run. Both nodes must pass the same options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Thread counts T, one measurement each.
    pub threads: Vec<u32>,
    /// Messages per thread in a timed repetition (N).
    pub messages: u64,
    /// Sends or receives started before they are completed together (W).
    pub window: usize,
    /// Messages per thread in the untimed warm-up round.
    pub warm_up: u64,
    /// Timed repetitions per thread count.
    pub repetitions: u32,
    /// Kinds of threads, each measured at every thread count.
    pub kinds: Vec<ThreadKind>,
    /// Also run msgrate in Open MPI at each thread count (shared memory:
    /// not with emulated hosts).
    pub peers: bool,
    /// Receive each message as an owned one (`irecv`) instead of into the
    /// receiver's reused buffers (`irecv_into`, as msgrate's `MPI_Irecv`).
    pub owned: bool,
}

impl Default for Options {
    /// msgrate's T = 1, 2, 4, 8, W = 64 and warm-up of 1,000, on OS threads
    /// as its pthreads; 5 repetitions of N = 50,000 rather than one of
    /// msgrate's 200,000: at the 0.2–0.3 M messages/s measured between two
    /// nodes over TCP on the 2-core development VM, that is about 15 s for
    /// the four thread counts, and a repetition still spans ~800 windows.
    fn default() -> Self {
        Options {
            threads: vec![1, 2, 4, 8],
            messages: 50_000,
            window: 64,
            warm_up: 1_000,
            repetitions: 5,
            kinds: vec![ThreadKind::Os],
            peers: false,
            owned: false,
        }
    }
}

/// Messages per second over the repetitions: median, fastest, slowest.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// The median repetition (the upper one for an even count).
    pub median: f64,
    /// The slowest repetition.
    pub min: f64,
    /// The fastest repetition.
    pub max: f64,
}

impl Rate {
    fn of(rates: &mut [f64]) -> Rate {
        let (median, min, max) = crate::spread(rates);
        Rate { median, min, max }
    }
}

/// One thread count's result, in messages per second over all threads.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Which threads carried the endpoints.
    pub kind: ThreadKind,
    /// Sending (and receiving) threads.
    pub threads: u32,
    /// Messages per thread per repetition.
    pub messages: u64,
    /// Up to the last send's local completion.
    pub send: Rate,
    /// Up to the receiving node's acknowledgement of everything.
    pub end_to_end: Rate,
}

/// Which side of the measurement a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Sends, times and reports.
    Sender,
    /// Receives and acknowledges.
    Receiver,
}

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// A send failed.
    Send(SendError),
    /// A receive failed.
    Recv(RecvError),
    /// A worker panicked.
    Join(JoinError),
    /// A message was not the one expected next from its sender.
    OutOfOrder {
        /// The sender.
        from: Address,
        /// The sequence number expected.
        expected: u64,
        /// What arrived: its sequence number, or `None` if not 8 bytes.
        got: Option<u64>,
    },
    /// The two nodes numbered their workers differently, so worker t's
    /// partner is not where it is expected.
    Numbering {
        /// This node's first worker thread number.
        local: u32,
        /// The partner node's.
        remote: Option<u32>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Send(e) => write!(f, "send: {e}"),
            Error::Recv(e) => write!(f, "receive: {e}"),
            Error::Join(e) => write!(f, "a worker failed: {e}"),
            Error::OutOfOrder {
                from,
                expected,
                got: Some(got),
            } => write!(f, "from {from}: expected message {expected}, got {got}"),
            Error::OutOfOrder {
                from,
                expected,
                got: None,
            } => write!(
                f,
                "from {from}: expected message {expected}, got one not of {SIZE} bytes"
            ),
            Error::Numbering { local, remote } => write!(
                f,
                "the nodes number their workers differently: first worker t{local} here, {} there",
                remote.map_or_else(|| "unreadable".to_string(), |r| format!("t{r}"))
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Send(e) => Some(e),
            Error::Recv(e) => Some(e),
            Error::Join(e) => Some(e),
            Error::OutOfOrder { .. } | Error::Numbering { .. } => None,
        }
    }
}

/// Runs every kind and thread count with `partner`, the other node's
/// thread 0; `ep` must be this node's thread 0 (or any endpoint that
/// spawns nothing else meanwhile). The [`Side::Sender`] hands each sample
/// to `on_sample` as it is measured, so that it can be reported at once,
/// and returns them all, in kind-major order; the receiver returns an
/// empty list and never calls `on_sample`.
pub fn run_side(
    ep: &Endpoint,
    partner: Address,
    side: Side,
    options: &Options,
    mut on_sample: impl FnMut(&Sample),
) -> Result<Vec<Sample>, Error> {
    let mut samples = Vec::new();
    for &kind in &options.kinds {
        for &threads in &options.threads {
            if let Some(sample) = measure(ep, partner, side, kind, threads.max(1), options)? {
                on_sample(&sample);
                samples.push(sample);
            }
        }
    }
    Ok(samples)
}

/// Why `bench rate` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The job could not be started.
    #[error("starting the benchmark job")]
    Launch(#[source] LaunchError),
    /// The job failed.
    #[error("the benchmark job failed with status {0}")]
    JobFailed(i32),
    /// The peers were asked for between emulated hosts: msgrate runs over
    /// shared memory only.
    #[error(
        "the Open MPI peer (--peers) runs over shared memory only, not between emulated hosts"
    )]
    PeersOverLink,
}

/// Runs `bench rate`: a 2-node job of `program` with `args`, which must
/// call [`node`] with the same `options`, its nodes on the two first hosts
/// of `net` if given; then, with [`Options::peers`] (and no `net`), the
/// Open MPI peer at each thread count. `on_step` is called for each
/// sample as it comes, `on_event` sees every other event of the job.
pub fn run(
    options: &Options,
    program: PathBuf,
    args: Vec<OsString>,
    net: Option<&Net>,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, RunError> {
    if options.peers && net.is_some() {
        return Err(RunError::PeersOverLink);
    }
    let mut spec = JobSpec::new(2, program).args(args);
    if let Some(net) = net {
        spec = spec.hosts(net.launch_hosts());
    }
    let mut samples = Vec::new();
    let report = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
        Some((_, NodeResult::Rate(sample))) => {
            samples.push(sample);
            on_step();
        }
        _ => on_event(ev),
    })
    .map_err(RunError::Launch)?;
    if report.status != 0 {
        return Err(RunError::JobFailed(report.status));
    }
    let mut peer_samples = Vec::new();
    let mut peer_errors = Vec::new();
    if options.peers {
        for outcome in crate::peers::rate::run_beside(options, on_step) {
            match outcome.result {
                Ok(measured) => peer_samples.push(report::PeerSample {
                    peer: crate::peers::rate::OPEN_MPI,
                    measured,
                }),
                Err(e) => peer_errors.push(report::PeerError {
                    peer: crate::peers::rate::OPEN_MPI,
                    threads: outcome.threads,
                    error: e.to_string(),
                }),
            }
        }
    }
    Ok(Report {
        messages: options.messages,
        window: options.window,
        repetitions: options.repetitions,
        owned: options.owned,
        samples,
        peer_samples,
        peer_errors,
    })
}

/// The steps of a run of `options`, for progress: a sample per kind and
/// thread count, and with the peers one more per thread count.
pub fn steps(options: &Options) -> usize {
    let peers = if options.peers {
        options.threads.len()
    } else {
        0
    };
    options.kinds.len() * options.threads.len() + peers
}

/// What thread 0 and its workers share for one thread count.
struct Rounds {
    /// Thread 0 and the workers: releases a round.
    start: Barrier,
    /// Thread 0 and the workers: ends a round.
    finish: Barrier,
    /// Messages per worker in the round about to start.
    messages: AtomicU64,
    /// Set instead of a count: the workers return.
    stop: AtomicBool,
    /// A worker failed; thread 0 ends the rounds.
    failed: AtomicBool,
    /// When every timestamp is taken from.
    epoch: Instant,
    /// Nanoseconds since `epoch` of the latest worker's last completion.
    last_done: AtomicU64,
}

impl Rounds {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// One thread count: spawn, warm up, repeat, join.
fn measure(
    ep: &Endpoint,
    partner: Address,
    side: Side,
    kind: ThreadKind,
    threads: u32,
    options: &Options,
) -> Result<Option<Sample>, Error> {
    let rounds = Arc::new(Rounds {
        start: Barrier::new(threads as usize + 1),
        finish: Barrier::new(threads as usize + 1),
        messages: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        epoch: Instant::now(),
        last_done: AtomicU64::new(0),
    });
    let window = options.window.max(1);
    let owned = options.owned;
    let workers: Vec<ThreadHandle<Result<(), Error>>> = (0..threads)
        .map(|t| {
            let rounds = rounds.clone();
            kind.spawn(ep, move |ep| {
                worker(&ep, partner.node, side, t, window, owned, &rounds)
            })
        })
        .collect();
    let first = workers[0].address().thread;

    let messages = options.messages.max(1);
    let schedule = std::iter::once(options.warm_up.max(1))
        .chain((0..options.repetitions.max(1)).map(|_| messages));
    let mut send_rates = Vec::new();
    let mut end_to_end_rates = Vec::new();
    let mut outcome = Ok(());
    for (round, n) in schedule.enumerate() {
        let times = match side {
            Side::Sender => sender_round(ep, partner, first, &rounds, n),
            Side::Receiver => receiver_round(ep, partner, first, &rounds, n),
        };
        match times {
            Err(e) => {
                outcome = Err(e);
                break;
            }
            // The worker's error comes with its join, below.
            Ok(_) if rounds.failed.load(Ordering::Acquire) => break,
            Ok(Some((send_ns, end_to_end_ns))) if round > 0 => {
                let total = (n * u64::from(threads)) as f64;
                send_rates.push(total / (send_ns.max(1) as f64 / 1e9));
                end_to_end_rates.push(total / (end_to_end_ns.max(1) as f64 / 1e9));
            }
            Ok(_) => {}
        }
    }
    // Release the workers from their last `start.wait`, whatever happened.
    rounds.stop.store(true, Ordering::Release);
    rounds.start.wait();
    for w in workers {
        let result = w.join().map_err(Error::Join).and_then(|r| r);
        if outcome.is_ok() {
            outcome = result;
        }
    }
    outcome?;
    Ok((side == Side::Sender).then(|| Sample {
        kind,
        threads,
        messages,
        send: Rate::of(&mut send_rates),
        end_to_end: Rate::of(&mut end_to_end_rates),
    }))
}

/// Thread 0 of the sending node, one round: the send-side and the
/// end-to-end time in nanoseconds, `None` if a worker failed.
fn sender_round(
    ep: &Endpoint,
    partner: Address,
    first: u32,
    rounds: &Rounds,
    messages: u64,
) -> Result<Option<(u64, u64)>, Error> {
    let ready = ep.recv(partner, READY).map_err(Error::Recv)?.into_vec();
    let remote = ready.try_into().ok().map(u32::from_le_bytes);
    if remote != Some(first) {
        return Err(Error::Numbering {
            local: first,
            remote,
        });
    }
    ep.send(partner, GO, Vec::new()).map_err(Error::Send)?;
    rounds.messages.store(messages, Ordering::Relaxed);
    rounds.last_done.store(0, Ordering::Relaxed);
    let t0 = rounds.now();
    rounds.start.wait();
    rounds.finish.wait();
    if rounds.failed.load(Ordering::Acquire) {
        return Ok(None);
    }
    let last = rounds.last_done.load(Ordering::Relaxed);
    ep.recv(partner, ACK).map_err(Error::Recv)?;
    let acked = rounds.now();
    Ok(Some((last.saturating_sub(t0), acked - t0)))
}

/// Thread 0 of the receiving node, one round: always `None`, as it times
/// nothing.
fn receiver_round(
    ep: &Endpoint,
    partner: Address,
    first: u32,
    rounds: &Rounds,
    messages: u64,
) -> Result<Option<(u64, u64)>, Error> {
    ep.send(partner, READY, first.to_le_bytes().to_vec())
        .map_err(Error::Send)?;
    ep.recv(partner, GO).map_err(Error::Recv)?;
    rounds.messages.store(messages, Ordering::Relaxed);
    rounds.start.wait();
    rounds.finish.wait();
    if rounds.failed.load(Ordering::Acquire) {
        return Ok(None);
    }
    ep.send(partner, ACK, Vec::new()).map_err(Error::Send)?;
    Ok(None)
}

/// Worker t: one round per release of `start` until `stop`. After a failure
/// it keeps meeting the barriers, so thread 0 never waits for it in vain.
fn worker(
    ep: &Endpoint,
    partner_node: u32,
    side: Side,
    t: u32,
    window: usize,
    owned: bool,
    rounds: &Rounds,
) -> Result<(), Error> {
    // Worker t has the same thread number on both nodes (module docs).
    let partner = Address::new(partner_node, ep.address().thread);
    let mut outcome = Ok(());
    loop {
        rounds.start.wait();
        if rounds.stop.load(Ordering::Acquire) {
            return outcome;
        }
        if outcome.is_ok() {
            let messages = rounds.messages.load(Ordering::Relaxed);
            outcome = match side {
                Side::Sender => send_all(ep, partner, t, window, messages),
                Side::Receiver => receive_all(ep, partner, t, window, messages, owned),
            };
            match outcome {
                Ok(()) => {
                    rounds.last_done.fetch_max(rounds.now(), Ordering::Relaxed);
                }
                Err(_) => rounds.failed.store(true, Ordering::Release),
            }
        }
        rounds.finish.wait();
    }
}

/// `messages` sends to `to`, `window` started before they are completed.
fn send_all(
    ep: &Endpoint,
    to: Address,
    tag: Tag,
    window: usize,
    messages: u64,
) -> Result<(), Error> {
    let mut requests = Vec::with_capacity(window);
    let mut sent = 0;
    while sent < messages {
        let end = messages.min(sent + window as u64);
        requests.extend((sent..end).map(|seq| ep.isend(to, tag, &seq.to_le_bytes()[..])));
        for r in requests.drain(..) {
            r.wait().map_err(Error::Send)?;
        }
        sent = end;
    }
    Ok(())
}

/// `messages` receives from `from`, `window` posted before they are
/// completed; each must carry the next sequence number. Into `window`
/// buffers of the receiver's, reused from one window to the next
/// (msgrate's `MPI_Irecv` into its `buf[i]`), or with `owned` as a
/// message of its own each.
fn receive_all(
    ep: &Endpoint,
    from: Address,
    tag: Tag,
    window: usize,
    messages: u64,
    owned: bool,
) -> Result<(), Error> {
    let in_order = |expected: u64, got: Option<u64>| match got == Some(expected) {
        true => Ok(()),
        false => Err(Error::OutOfOrder {
            from,
            expected,
            got,
        }),
    };
    let mut buffers: Vec<Vec<u8>> = match owned {
        true => Vec::new(),
        false => (0..window).map(|_| vec![0; SIZE]).collect(),
    };
    let (mut owned_requests, mut into_requests) = (Vec::new(), Vec::new());
    let mut received = 0;
    while received < messages {
        let end = messages.min(received + window as u64);
        if owned {
            owned_requests.extend((received..end).map(|_| ep.irecv(from, tag)));
            for (expected, r) in (received..end).zip(owned_requests.drain(..)) {
                let message = r.wait().map_err(Error::Recv)?.into_vec();
                in_order(expected, message.try_into().ok().map(u64::from_le_bytes))?;
            }
        } else {
            let posted = buffers.drain(..(end - received) as usize);
            into_requests.extend(posted.map(|buf| ep.irecv_into(from, tag, buf)));
            for (expected, r) in (received..end).zip(into_requests.drain(..)) {
                let (buf, status) = r.wait().map_err(|e| Error::Recv(e.error))?;
                let got = (status.len == SIZE)
                    .then(|| u64::from_le_bytes(buf[..SIZE].try_into().expect("8 bytes")));
                in_order(expected, got)?;
                buffers.push(buf);
            }
        }
        received = end;
    }
    Ok(())
}
