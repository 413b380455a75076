//! The node side of `bench am` (the protocol is in the module docs):
//! node 0 measures and reports each cell as it is measured, node 1
//! serves its handlers and echoes its ping-pong.

use super::{Cell, Method, Options, RateSample, RoundTrip, Times, RATE_SIZE};
use crate::node_result::NodeResult;
use crate::rate::{Rate, ThreadKind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::fiber::sync::Barrier;
use threadwire::{
    Address, AmError, Endpoint, Handler, InitError, JoinError, Node, Payload, RecvError,
    ReportError, SendError, Tag, ThreadHandle,
};

/// Node 1's *ready*.
const READY: Tag = 0x616d_0001;
/// Node 0's commands.
const COMMAND: Tag = 0x616d_0002;
/// The end of a *serve*.
const DONE: Tag = 0x616d_0003;
/// The ping-pong's messages.
const PING: Tag = 0x616d_0004;

/// The handlers' names, the same on both nodes.
const ECHO_INLINE: &str = "bench.am.echo.inline";
const ECHO_FIBER: &str = "bench.am.echo.fiber";
const COUNT: &str = "bench.am.count";
const FLUSH: &str = "bench.am.flush";
const FINISH: &str = "bench.am.finish";

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// A handler could not be registered.
    #[error("registering a handler")]
    Register(#[source] AmError),
    /// A send failed.
    #[error("send")]
    Send(#[source] SendError),
    /// A receive failed.
    #[error("receive")]
    Recv(#[source] RecvError),
    /// An active message or request failed.
    #[error("active message")]
    Am(#[source] AmError),
    /// A sending thread failed.
    #[error("a sending thread")]
    Join(#[source] JoinError),
    /// A command node 1 cannot read.
    #[error("node 1 got a command it cannot read ({0} bytes)")]
    Command(usize),
    /// Node 1 handled fewer one-way messages than node 0 had sent when
    /// their flushes were answered, or at the end another number.
    #[error("node 1 handled {handled} one-way messages, node 0 sent {sent}")]
    Count {
        /// Counted by node 1's handler.
        handled: u64,
        /// Sent by node 0's threads.
        sent: u64,
    },
    /// A cell could not be reported to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// What node 0 asks of node 1 before a batch (module docs, step 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    /// Receive and send back this many messages.
    Echo(u64),
    /// Wait for *done*.
    Serve,
    /// Wait for *done* parked, by an inline handler (`FINISH`): node 1's
    /// fiber worker alone drives its progress, and runs each fiber
    /// handler it reads with no other thread to wake (the fiber rows).
    ServeParked,
    /// Return; node 0 sent this many one-way messages in all.
    Stop(u64),
}

impl Command {
    fn encode(self) -> Vec<u8> {
        let (what, n) = match self {
            Command::Echo(n) => (1u64, n),
            Command::Serve => (2, 0),
            Command::Stop(sent) => (3, sent),
            Command::ServeParked => (4, 0),
        };
        [what.to_le_bytes(), n.to_le_bytes()].concat()
    }

    fn decode(bytes: &[u8]) -> Option<Command> {
        let word = |i: usize| Some(u64::from_le_bytes(bytes.get(i..i + 8)?.try_into().ok()?));
        match (bytes.len(), word(0)?, word(8)?) {
            (16, 1, n) => Some(Command::Echo(n)),
            (16, 2, _) => Some(Command::Serve),
            (16, 3, sent) => Some(Command::Stop(sent)),
            (16, 4, _) => Some(Command::ServeParked),
            _ => None,
        }
    }
}

/// The handlers, registered on every node.
struct Handlers {
    inline: Handler,
    fiber: Handler,
    count: Handler,
    flush: Handler,
    /// Ends a parked serve: node 0's count of one-way messages sent.
    finish: Handler,
    /// One-way messages this node's `count` handler has run.
    counted: Arc<AtomicU64>,
    /// What each `finish` brought, in order, for the parked main thread:
    /// node 1's worker serves a parked batch without thread 0, so the
    /// next batch's `finish` may come before thread 0 has taken this one.
    finished: Arc<(
        std::sync::Mutex<std::collections::VecDeque<u64>>,
        std::sync::Condvar,
    )>,
}

impl Handlers {
    fn register(node: &Node) -> Result<Handlers, AmError> {
        let counted = Arc::new(AtomicU64::new(0));
        let c = counted.clone();
        let finished = Arc::new((
            std::sync::Mutex::new(std::collections::VecDeque::new()),
            std::sync::Condvar::new(),
        ));
        let f = finished.clone();
        Ok(Handlers {
            // Both echoes take the payload (its buffer moves) and answer
            // with it: each way carries the size's bytes, as the ping-pong.
            inline: node.register_inline(ECHO_INLINE, |am| {
                let payload = am.take_payload();
                let _ = am.reply(payload);
            })?,
            fiber: node.register_fiber(ECHO_FIBER, |_ep: &Endpoint, am| {
                let payload = am.take_payload();
                let _ = am.reply(payload);
            })?,
            count: node.register_inline(COUNT, move |_am| {
                c.fetch_add(1, Ordering::Relaxed);
            })?,
            flush: node.register_inline(FLUSH, |am| {
                let _ = am.reply(Vec::new());
            })?,
            finish: node.register_inline(FINISH, move |am| {
                let bytes = am.payload().to_vec();
                let sent = u64::from_le_bytes(bytes.try_into().unwrap_or([0xff; 8]));
                let (slot, told) = &*f;
                slot.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_back(sent);
                told.notify_all();
                let _ = am.reply(Vec::new());
            })?,
            counted,
            finished,
        })
    }
}

/// Runs this node's side of the job [`run`](super::run) started.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let handlers = Handlers::register(ep.node()).map_err(NodeError::Register)?;
    match ep.address().node {
        0 => Leader::new(&ep, options, &handlers)?.run(),
        1 => serve(&ep, Address::new(0, 0), &handlers),
        _ => Ok(()),
    }
}

/// Node 1's thread 0: *ready*, then each command until *stop*.
fn serve(ep: &Endpoint, leader: Address, handlers: &Handlers) -> Result<(), NodeError> {
    ep.send(leader, READY, Vec::new())
        .map_err(NodeError::Send)?;
    loop {
        let bytes = ep
            .recv(leader, COMMAND)
            .map_err(NodeError::Recv)?
            .into_vec();
        match Command::decode(&bytes).ok_or(NodeError::Command(bytes.len()))? {
            Command::Echo(rounds) => {
                for _ in 0..rounds {
                    let m = ep.recv(leader, PING).map_err(NodeError::Recv)?;
                    ep.send(leader, PING, Payload::from_vec(m.into_vec()))
                        .map_err(NodeError::Send)?;
                }
            }
            Command::Serve => {
                // This wait drives the node's progress meanwhile (so do
                // idle fiber workers: the next round's messages may be
                // counted before this thread reads the count).
                let done = ep.recv(leader, DONE).map_err(NodeError::Recv)?.into_vec();
                let sent = u64::from_le_bytes(done.try_into().unwrap_or([0xff; 8]));
                check_count(handlers, sent, |handled| handled >= sent)?;
            }
            Command::ServeParked => {
                let (slot, told) = &*handlers.finished;
                let mut queue = slot.lock().unwrap_or_else(|p| p.into_inner());
                let sent = loop {
                    match queue.pop_front() {
                        Some(sent) => break sent,
                        None => queue = told.wait(queue).unwrap_or_else(|p| p.into_inner()),
                    }
                };
                drop(queue);
                check_count(handlers, sent, |handled| handled >= sent)?;
            }
            Command::Stop(sent) => return check_count(handlers, sent, |handled| handled == sent),
        }
    }
}

/// Whether node 1's count of one-way messages handled agrees with the
/// `sent` of node 0.
fn check_count(
    handlers: &Handlers,
    sent: u64,
    agrees: impl Fn(u64) -> bool,
) -> Result<(), NodeError> {
    let handled = handlers.counted.load(Ordering::Relaxed);
    match agrees(handled) {
        true => Ok(()),
        false => Err(NodeError::Count { handled, sent }),
    }
}

/// Node 0's thread 0.
struct Leader<'a> {
    ep: &'a Endpoint,
    options: &'a Options,
    handlers: &'a Handlers,
    partner: Address,
    /// One-way messages sent to node 1 so far.
    sent: u64,
}

impl<'a> Leader<'a> {
    fn new(
        ep: &'a Endpoint,
        options: &'a Options,
        handlers: &'a Handlers,
    ) -> Result<Leader<'a>, NodeError> {
        let partner = Address::new(1, 0);
        // Node 1's handlers are registered: calls may begin.
        ep.recv(partner, READY).map_err(NodeError::Recv)?;
        Ok(Leader {
            ep,
            options,
            handlers,
            partner,
            sent: 0,
        })
    }

    fn run(mut self) -> Result<(), NodeError> {
        for &size in &self.options.sizes {
            let cell = self.round_trip(size)?;
            self.report(Cell::RoundTrip(cell))?;
        }
        for &kind in &self.options.kinds {
            for &threads in &self.options.threads {
                let cell = self.rate(kind, threads.max(1))?;
                self.report(Cell::Rate(cell))?;
            }
        }
        self.command(Command::Stop(self.sent))
    }

    fn report(&self, cell: Cell) -> Result<(), NodeError> {
        NodeResult::Am(cell)
            .send(self.ep.node())
            .map_err(NodeError::Report)
    }

    fn command(&self, command: Command) -> Result<(), NodeError> {
        self.ep
            .send(self.partner, COMMAND, command.encode())
            .map_err(NodeError::Send)
    }

    /// Ends a parked *serve* (`Command::ServeParked`) by its handler.
    fn finish(&self) -> Result<(), NodeError> {
        self.ep
            .am_request(
                self.partner.node,
                &self.handlers.finish,
                self.sent.to_le_bytes().to_vec(),
            )
            .wait()
            .map(drop)
            .map_err(NodeError::Am)
    }

    /// Ends a *serve*: node 1 checks its count against ours.
    fn done(&self) -> Result<(), NodeError> {
        self.ep
            .send(self.partner, DONE, self.sent.to_le_bytes().to_vec())
            .map_err(NodeError::Send)
    }

    /// Module docs, step 3.
    fn round_trip(&mut self, size: usize) -> Result<RoundTrip, NodeError> {
        // As `bench pingpong` at small sizes: 32 untimed rounds (the first
        // round trips of a job are far slower), then 32 to calibrate.
        let mut held = vec![0u8; size];
        let mut per_repetition = [0u64; 3];
        for (i, method) in Method::ALL.into_iter().enumerate() {
            self.batch(method, 32, &mut held)?;
            let per = self.batch(method, 32, &mut held)? / 32;
            let budget = self.options.budget.per_repetition.as_secs_f64();
            per_repetition[i] = (budget / per.as_secs_f64().max(1e-9)).clamp(2.0, 1e6) as u64;
        }
        let mut times: [Vec<Duration>; 3] = Default::default();
        for _ in 0..self.options.budget.repetitions.max(1) {
            for (i, method) in Method::ALL.into_iter().enumerate() {
                let rounds = per_repetition[i];
                let took = self.batch(method, rounds, &mut held)?;
                times[i].push(took / rounds as u32);
            }
        }
        let [pingpong, inline, fiber] = times.map(|mut t| Times::of(&mut t));
        Ok(RoundTrip {
            size,
            pingpong,
            inline,
            fiber,
        })
    }

    /// `rounds` round trips of `method`, bouncing `held`; their time.
    fn batch(
        &self,
        method: Method,
        rounds: u64,
        held: &mut Vec<u8>,
    ) -> Result<Duration, NodeError> {
        let (ep, partner) = (self.ep, self.partner);
        let mut data = std::mem::take(held);
        let took = match method {
            Method::Pingpong => {
                self.command(Command::Echo(rounds))?;
                let t = Instant::now();
                for _ in 0..rounds {
                    ep.send(partner, PING, Payload::from_vec(data))
                        .map_err(NodeError::Send)?;
                    data = ep.recv(partner, PING).map_err(NodeError::Recv)?.into_vec();
                }
                t.elapsed()
            }
            Method::Inline | Method::Fiber => {
                let (handler, serve) = match method {
                    Method::Inline => (&self.handlers.inline, Command::Serve),
                    _ => (&self.handlers.fiber, Command::ServeParked),
                };
                self.command(serve)?;
                let t = Instant::now();
                for _ in 0..rounds {
                    data = ep
                        .am_request(partner.node, handler, Payload::from_vec(data))
                        .wait()
                        .map_err(NodeError::Am)?
                        .into_vec();
                }
                let took = t.elapsed();
                match serve {
                    Command::ServeParked => self.finish()?,
                    _ => self.done()?,
                }
                took
            }
        };
        *held = data;
        Ok(took)
    }

    /// Module docs, step 4: one kind and thread count.
    fn rate(&mut self, kind: ThreadKind, threads: u32) -> Result<RateSample, NodeError> {
        let rounds = Arc::new(Rounds {
            start: Barrier::new(threads as usize + 1),
            finish: Barrier::new(threads as usize + 1),
            messages: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            epoch: Instant::now(),
            last_sent: AtomicU64::new(0),
            last_done: AtomicU64::new(0),
        });
        let workers: Vec<ThreadHandle<Result<(), NodeError>>> = (0..threads)
            .map(|_| {
                let (rounds, to) = (rounds.clone(), self.partner.node);
                let (count, flush) = (self.handlers.count.clone(), self.handlers.flush.clone());
                let body = move |ep: Endpoint| sender(&ep, to, &count, &flush, &rounds);
                match kind {
                    ThreadKind::Os => self.ep.node().spawn_os(body),
                    ThreadKind::Fibers => self.ep.node().spawn(body),
                }
            })
            .collect();
        let messages = self.options.messages.max(1);
        let schedule = std::iter::once(self.options.warm_up.max(1))
            .chain((0..self.options.rate_repetitions.max(1)).map(|_| messages));
        let (mut send, mut end_to_end) = (Vec::new(), Vec::new());
        let mut outcome = Ok(());
        for (round, n) in schedule.enumerate() {
            if let Err(e) = self.command(Command::Serve) {
                outcome = Err(e);
                break;
            }
            rounds.messages.store(n, Ordering::Relaxed);
            rounds.last_sent.store(0, Ordering::Relaxed);
            rounds.last_done.store(0, Ordering::Relaxed);
            let t0 = rounds.now();
            rounds.start.wait();
            rounds.finish.wait();
            self.sent += n * u64::from(threads);
            if let Err(e) = self.done() {
                outcome = Err(e);
                break;
            }
            let (sent_at, done_at) = (
                rounds.last_sent.load(Ordering::Relaxed),
                rounds.last_done.load(Ordering::Relaxed),
            );
            // A worker that failed leaves its time at 0: its error comes
            // with its join, below.
            if done_at == 0 {
                break;
            }
            if round > 0 {
                let total = (n * u64::from(threads)) as f64;
                let per_second = |ns: u64| total / (ns.max(1) as f64 / 1e9);
                send.push(per_second(sent_at.saturating_sub(t0)));
                end_to_end.push(per_second(done_at.saturating_sub(t0)));
            }
        }
        rounds.stop.store(true, Ordering::Release);
        rounds.start.wait();
        for w in workers {
            let joined = w.join().map_err(NodeError::Join).and_then(|r| r);
            if outcome.is_ok() {
                outcome = joined;
            }
        }
        outcome?;
        let rate = |values: &mut Vec<f64>| {
            let (median, min, max) = crate::spread(values);
            Rate { median, min, max }
        };
        Ok(RateSample {
            kind,
            threads,
            messages,
            send: rate(&mut send),
            end_to_end: rate(&mut end_to_end),
        })
    }
}

/// What node 0's thread 0 and its sending threads share for one kind and
/// thread count.
struct Rounds {
    /// Thread 0 and the senders: releases a round.
    start: Barrier,
    /// Thread 0 and the senders: ends a round.
    finish: Barrier,
    /// Messages per sender in the round about to start.
    messages: AtomicU64,
    /// Set instead of a round: the senders return.
    stop: AtomicBool,
    /// When every timestamp is taken from.
    epoch: Instant,
    /// Nanoseconds since `epoch` of the latest last send's return.
    last_sent: AtomicU64,
    /// Nanoseconds since `epoch` of the latest flush's answer.
    last_done: AtomicU64,
}

impl Rounds {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// A sending thread: one round per release of `start` until `stop`. After
/// a failure it keeps meeting the barriers, so thread 0 never waits for it
/// in vain, and leaves the round's times alone.
fn sender(
    ep: &Endpoint,
    to: u32,
    count: &Handler,
    flush: &Handler,
    rounds: &Rounds,
) -> Result<(), NodeError> {
    let mut outcome = Ok(());
    loop {
        rounds.start.wait();
        if rounds.stop.load(Ordering::Acquire) {
            return outcome;
        }
        if outcome.is_ok() {
            let messages = rounds.messages.load(Ordering::Relaxed);
            outcome = send_all(ep, to, count, flush, messages, rounds);
        }
        rounds.finish.wait();
    }
}

/// `messages` one-way messages to `count`, then a request to `flush`,
/// answered once all of them have run.
fn send_all(
    ep: &Endpoint,
    to: u32,
    count: &Handler,
    flush: &Handler,
    messages: u64,
    rounds: &Rounds,
) -> Result<(), NodeError> {
    for seq in 0..messages {
        let data: [u8; RATE_SIZE] = seq.to_le_bytes();
        ep.am_send(to, count, &data[..]).map_err(NodeError::Am)?;
    }
    rounds.last_sent.fetch_max(rounds.now(), Ordering::Relaxed);
    ep.am_request(to, flush, Vec::new())
        .wait()
        .map_err(NodeError::Am)?;
    rounds.last_done.fetch_max(rounds.now(), Ordering::Relaxed);
    Ok(())
}
