//! One running job: the state the launcher keeps about its nodes, and the
//! loop that feeds it what the node processes and control connections say.
//!
//! Every source of news — a node's output lines, its exit, its control
//! connection (registration, reports, channels, counters), a client of
//! the job's console (`console` module) — is a thread
//! that sends an [`Internal`] message on one channel; [`run`] is the only
//! reader and [`Job`] the only state, so no lock guards any of it.
//!
//! 1. Until every node has exited: wait for a message or the next deadline
//!    (the job's timeout, the end of the grace period after a failure, the
//!    join deadline of nodes being added).
//! 2. When every node of the job's start has registered, send each the
//!    directory and the host table. Nodes added later come in batches
//!    (`grow` module, after `threadwire::vm`), one batch at a time.
//! 3. On the first failed node, tell the others ([`Control::PeerLost`])
//!    and, under [`FailurePolicy::Abort`], kill the rest after [`GRACE`].
//! 4. Then drain: wait (at most [`CONTROL_DRAIN`]) for every control
//!    connection to close, since a node's last reports and counters come
//!    on it, then for the output threads to end.
//! 5. Meanwhile, watch every node that has sent a heartbeat on its control
//!    connection (control protocol, step 7) until that connection closes:
//!    every eighth of its peer timeout, ask the kernel how long the
//!    connection has received nothing (`TCP_INFO`); past [`FENCE_AFTER`]
//!    times the timeout, the node is silent — stopped, hung or cut off —
//!    and its process is killed, so that it can neither keep the job from
//!    ending nor come back to peers that have given it up. Its peers,
//!    watching with the timeout itself, have found it lost first. Its
//!    exit is then the job's failure, as in step 3, named for the silence.

use crate::console::{self, Console, Describing, Reply};
use crate::event::{Event, JobReport, LaunchError, OutputStream};
use crate::grow::{Batch, HostTable, Requester};
use crate::process::{NodeExit, NodeProcess};
use crate::proxy::Proxies;
use crate::rendezvous::{self, Door};
use crate::spec::{FailurePolicy, JobSpec, GRACE};
use crate::start::Starter;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::control::{self, Control, Gone, VmOp};
use threadwire::Stats;
use threadwire_transport::handshake::Credentials;

/// What the threads watching a job tell the loop of [`run`].
pub(crate) enum Internal {
    Output {
        node: u32,
        stream: OutputStream,
        line: String,
    },
    Exited {
        node: u32,
        exit: NodeExit,
    },
    Registered {
        node: u32,
        addr: String,
        stream: TcpStream,
    },
    Stats {
        node: u32,
        stats: Stats,
    },
    Channels {
        node: u32,
        routes: Vec<String>,
    },
    Report {
        node: u32,
        data: Vec<u8>,
    },
    /// A node's control connection has ended: its counters, if it sent
    /// them, were sent before this.
    ControlClosed {
        node: u32,
    },
    /// A node heartbeats on its control connection, with this peer
    /// timeout (step 5).
    Watch {
        node: u32,
        timeout: Duration,
    },
    /// A node asks to change the machine (`grow` module).
    Vm {
        node: u32,
        request: u32,
        op: VmOp,
    },
    /// A user asks on the job's console (`console` module).
    Console {
        request: console::Request,
        reply: Reply,
    },
    /// A node has said how many threads it started (control step 10).
    /// A node asks for `peer`'s address (control step 11).
    Lookup {
        node: u32,
        peer: u32,
    },
    Described {
        node: u32,
        threads: u32,
    },
    /// A node on an ssh host runs as `pid` there (`proxy` module).
    Started {
        node: u32,
        pid: u32,
    },
    /// A node on an ssh host has ended without an exit of its own: it
    /// could not start, or its host's connection was lost
    /// (`proxy` module, step 8).
    Lost {
        node: u32,
        exit: NodeExit,
        why: String,
    },
}

/// How long a finished job waits for its nodes' control connections to
/// close; they close with the nodes, so this is only a bound.
const CONTROL_DRAIN: Duration = Duration::from_secs(2);
/// How long the launcher gathers nodes' ends in order before it tells
/// the others (control step 3).
const FINISHED_BATCH: Duration = Duration::from_millis(10);

/// A node's control connection silent for this many of its peer timeouts
/// gets the node killed (step 5): later than its peers find it silent.
const FENCE_AFTER: f64 = 1.5;

/// Checks of a watched connection per peer timeout (step 5).
const CHECKS: u32 = 8;

/// When nothing is due, how long a wait for news may last before looking
/// again (a bound, not a poll: news wakes the wait at once).
const IDLE_WAIT: Duration = Duration::from_secs(3600);

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::getrandom(&mut b).expect("the OS random source is unavailable");
    b
}

/// What the launcher knows of one node.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) process: Option<NodeProcess>,
    pub(crate) exit: Option<NodeExit>,
    pub(crate) stats: Option<Stats>,
    /// Its channels as they ended, told at its finalize.
    pub(crate) routes: Option<Vec<String>>,
    /// Writing half of its control connection while it lives.
    pub(crate) control: Option<TcpStream>,
    pub(crate) addr: Option<String>,
    pub(crate) control_open: bool,
    /// It has been sent the directory: messages to every node reach it
    /// from then on (before, the directory's list of gone nodes covers
    /// what it missed, and it expects the directory first).
    pub(crate) directed: bool,
    /// Its number in the host table.
    pub(crate) host: usize,
    /// It has told its channels: it has joined.
    pub(crate) joined: bool,
    /// Its exit, seen before its control connection ended: held until
    /// that connection has been read to its end.
    pub(crate) exit_pending: Option<NodeExit>,
    /// Its peer timeout, once it heartbeats (step 5).
    pub(crate) watched: Option<Duration>,
    /// Why it was killed on purpose — silent (step 5), or its host
    /// removed — until its exit is reported.
    pub(crate) killed: Option<String>,
    /// Its end is no failure of the job: its host was removed, or it was
    /// added and never joined (the request that added it failed instead).
    pub(crate) excused: bool,
    /// It was killed because its host was removed.
    pub(crate) host_removed: bool,
    /// How it ended, in words, once it has (for the console).
    pub(crate) ended: Option<String>,
}

/// The launcher's knowledge of a running job, node by node.
pub(crate) struct Job<'a> {
    pub(crate) spec: &'a JobSpec,
    pub(crate) slots: Vec<Slot>,
    pub(crate) hosts: HostTable,
    pub(crate) starter: Starter,
    pub(crate) door: Arc<Door>,
    /// The batch of added nodes joining now, and the requests waiting.
    pub(crate) batch: Option<Batch>,
    pub(crate) queued: VecDeque<(Requester, VmOp)>,
    /// The console's `nodes` requests waiting for the nodes' answers.
    pub(crate) describing: Vec<Describing>,
    pub(crate) job_id: u64,
    pub(crate) started: Instant,
    /// The directory has gone to the founders.
    pub(crate) founded: bool,
    failure: Option<(u32, String)>,
    first_bad: Option<NodeExit>,
    /// End of the grace period after a failure.
    kill_at: Option<Instant>,
    /// The next look at the watched connections.
    next_check: Option<Instant>,
    /// Nodes ended in order, not yet told (control step 3), and when they
    /// will be.
    finished: Vec<u32>,
    finished_due: Option<Instant>,
    deadline: Option<Instant>,
    timed_out: bool,
}

impl<'a> Job<'a> {
    fn running(&self) -> bool {
        self.slots.iter().any(|s| s.exit.is_none())
    }

    fn next_due(&self) -> Option<Instant> {
        let batch = self.batch.as_ref().map(|b| b.deadline);
        let describing = self.describing.iter().map(|d| d.deadline).min();
        [
            self.deadline,
            self.kill_at,
            self.next_check,
            self.finished_due,
            batch,
            describing,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn kill_rest(&self) {
        for s in &self.slots {
            if let (None, Some(process)) = (s.exit, &s.process) {
                process.kill();
            }
        }
    }

    pub(crate) fn send_all(&mut self, message: &Control) {
        for s in self.slots.iter_mut().filter(|s| s.directed) {
            if let Some(c) = &mut s.control {
                let _ = control::write_control(c, message);
            }
        }
    }

    pub(crate) fn send_to(&mut self, node: u32, message: &Control) {
        if let Some(c) = self
            .slots
            .get_mut(node as usize)
            .and_then(|s| s.control.as_mut())
        {
            let _ = control::write_control(c, message);
        }
    }

    /// The directory for nodes below `nodes`: addresses (for a node that
    /// joins a running job: a founding node asks for those it needs,
    /// control step 11), and the gone.
    pub(crate) fn directory(&self, nodes: u32, addresses: bool) -> Control {
        let slots = &self.slots[..nodes as usize];
        Control::Directory {
            addrs: match addresses {
                true => (0..nodes).map(|n| self.address_of(n)).collect(),
                false => Vec::new(),
            },
            spread: self.hosts.spread(),
            gone: slots
                .iter()
                .enumerate()
                .filter_map(|(node, s)| {
                    let exit = s.exit?;
                    Some(Gone {
                        node: node as u32,
                        finished: exit.success(),
                        cause: s
                            .killed
                            .clone()
                            .unwrap_or_else(|| format!("node n{node} {exit}")),
                    })
                })
                .collect(),
        }
    }

    /// Node `node`'s listening address; empty if it has left the job or
    /// is unknown.
    fn address_of(&self, node: u32) -> String {
        match self.slots.get(node as usize) {
            Some(s) if s.exit.is_none() => s.addr.clone().unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The timeout, the grace period or a batch's join may have run out.
    fn on_due(&mut self, on_event: &mut impl FnMut(&Event)) {
        let now = Instant::now();
        if self.finished_due.is_some_and(|d| now >= d) {
            self.finished_due = None;
            let nodes = std::mem::take(&mut self.finished);
            self.send_all(&Control::Finished { nodes });
        }
        if self.deadline.is_some_and(|d| now >= d) && !self.timed_out {
            self.timed_out = true;
            on_event(&Event::TimedOut);
            self.kill_rest();
        }
        if self.kill_at.is_some_and(|k| now >= k) {
            self.kill_at = None;
            self.kill_rest();
        }
        if self.next_check.is_some_and(|c| now >= c) {
            self.fence_silent();
        }
        if self.batch.as_ref().is_some_and(|b| now >= b.deadline) {
            self.batch_timed_out(on_event);
        }
        self.describe_due(now);
    }

    /// Step 5: kills the watched nodes whose control connection has been
    /// silent too long, and plans the next look.
    fn fence_silent(&mut self) {
        let mut next_tick = None::<Duration>;
        for (i, s) in self.slots.iter_mut().enumerate() {
            let (Some(timeout), Some(stream), Some(process)) = (s.watched, &s.control, &s.process)
            else {
                continue;
            };
            if s.exit.is_some() || !s.control_open || s.killed.is_some() {
                continue;
            }
            next_tick = Some(next_tick.map_or(timeout / CHECKS, |t| t.min(timeout / CHECKS)));
            let Ok(quiet) = threadwire_transport::quiet(stream) else {
                continue;
            };
            if quiet.received >= timeout.mul_f64(FENCE_AFTER) {
                let ms = quiet.received.as_millis();
                tracing::warn!("launcher: node n{i} silent for {ms} ms; killing it");
                s.killed = Some(format!("node n{i} was silent for {ms} ms and was killed"));
                process.kill();
            }
        }
        self.next_check = next_tick.map(|t| Instant::now() + t);
    }

    fn on_message(&mut self, message: Internal, on_event: &mut impl FnMut(&Event)) {
        match message {
            Internal::Output { node, stream, line } => {
                on_event(&Event::Output { node, stream, line })
            }
            Internal::Stats { node, stats } => self.slots[node as usize].stats = Some(stats),
            // A node's first word of its routes is its join; its last,
            // at finalize, how they ended.
            Internal::Channels { node, routes } if self.slots[node as usize].joined => {
                on_event(&Event::Routes {
                    node,
                    routes: routes.clone(),
                });
                self.slots[node as usize].routes = Some(routes);
            }
            Internal::Channels { node, routes } => {
                self.slots[node as usize].joined = true;
                on_event(&Event::Channels { node, routes });
                self.batch_progress(on_event);
            }
            Internal::Report { node, data } => on_event(&Event::Report { node, data }),
            Internal::ControlClosed { node } => {
                let slot = &mut self.slots[node as usize];
                slot.control_open = false;
                if let Some(exit) = slot.exit_pending.take() {
                    self.on_exit(node, exit, on_event);
                } else if matches!(slot.process, Some(NodeProcess::External)) && slot.exit.is_none()
                {
                    // Started from outside: its connection's end is its end,
                    // a clean one if it reported its counters at finalize.
                    let exit = match slot.stats.is_some() {
                        true => NodeExit::Code(0),
                        false => NodeExit::Code(1),
                    };
                    self.on_exit(node, exit, on_event);
                }
            }
            Internal::Watch { node, timeout } => {
                if !timeout.is_zero() {
                    self.slots[node as usize].watched = Some(timeout);
                    let first = Instant::now() + timeout / CHECKS;
                    self.next_check = Some(self.next_check.map_or(first, |c| c.min(first)));
                }
            }
            Internal::Registered { node, addr, stream } => {
                let slot = &mut self.slots[node as usize];
                slot.control_open = true;
                slot.addr = Some(addr);
                slot.control = Some(stream);
                let founders = self.spec.nodes as usize;
                if !self.founded && self.slots[..founders].iter().all(|s| s.addr.is_some()) {
                    self.founded = true;
                    let directory = self.directory(self.spec.nodes, false);
                    for s in &mut self.slots[..founders] {
                        s.directed = true;
                    }
                    self.send_all(&directory);
                    let hosts = self.hosts.control();
                    self.send_all(&hosts);
                    if self.batch.is_none() {
                        if let Some((requester, op)) = self.queued.pop_front() {
                            self.on_vm(requester, op, on_event);
                        }
                    }
                }
                self.batch_progress(on_event);
            }
            Internal::Exited { node, exit } => {
                let slot = &mut self.slots[node as usize];
                // Its exit and its last words come from two threads: a
                // node that joins and ends at once (a PVM task that sends
                // one message) may be seen gone before its join is read,
                // and would fail the request that added it. Until it has
                // joined, its exit waits for its control connection's end.
                match slot.control_open && !slot.joined {
                    true => slot.exit_pending = Some(exit),
                    false => self.on_exit(node, exit, on_event),
                }
            }
            Internal::Vm { node, request, op } => {
                self.on_vm(Requester::Node { node, request }, op, on_event)
            }
            Internal::Console { request, reply } => self.on_console(request, reply, on_event),
            Internal::Described { node, threads } => self.on_described(node, threads),
            Internal::Lookup { node, peer } => {
                let addr = self.address_of(peer);
                self.send_to(node, &Control::Address { node: peer, addr });
            }
            Internal::Started { node, pid } => {
                if let Some(NodeProcess::Proxied { pid: known, .. }) =
                    &mut self.slots[node as usize].process
                {
                    *known = Some(pid);
                }
            }
            Internal::Lost { node, exit, why } => {
                let slot = &mut self.slots[node as usize];
                slot.exit_pending = None;
                if slot.exit.is_none() {
                    slot.killed.get_or_insert(why);
                    self.on_exit(node, exit, on_event);
                }
            }
        }
    }

    pub(crate) fn on_exit(&mut self, node: u32, exit: NodeExit, on_event: &mut impl FnMut(&Event)) {
        let slot = &mut self.slots[node as usize];
        slot.exit = Some(exit);
        slot.control = None;
        let joined = slot.joined;
        let killed = slot.killed.take();
        slot.ended = Some(match (&killed, joined) {
            (Some(why), _) => why.clone(),
            (None, false) if !exit.success() => format!("node n{node} {exit} before it joined"),
            (None, _) => format!("node n{node} {exit}"),
        });
        self.describe_gone(node);
        on_event(&Event::Exited { node, exit });
        if !joined && self.batch.as_ref().is_some_and(|b| b.has(node)) {
            // An added node that never joined fails its request, not the job.
            self.slots[node as usize].excused = true;
            let cause = killed.unwrap_or_else(|| format!("node n{node} {exit} before it joined"));
            self.send_all(&Control::PeerLost {
                node,
                cause: cause.clone(),
            });
            self.batch_failed(node, cause, on_event);
            return;
        }
        if exit.success() {
            // Those it never connected to learn of its end (control step 3).
            self.finished.push(node);
            self.finished_due
                .get_or_insert(Instant::now() + FINISHED_BATCH);
            return;
        }
        if self.timed_out {
            return;
        }
        let cause = killed.unwrap_or_else(|| format!("node n{node} {exit}"));
        if self.slots[node as usize].excused {
            // Its host was removed: the others learn of it; the job goes on.
            self.send_all(&Control::PeerLost { node, cause });
            return;
        }
        self.first_bad.get_or_insert(exit);
        let aborting = self.spec.on_failure == FailurePolicy::Abort;
        if aborting && (self.failure.is_some() || self.kill_at.is_some()) {
            // The rest are being stopped already.
            return;
        }
        // Under --keep-going every failure is told, not only the first: a
        // survivor waiting on a node that failed second would otherwise
        // wait until the job's timeout (one that never connected to it
        // has no connection to see close).
        self.send_all(&Control::PeerLost {
            node,
            cause: cause.clone(),
        });
        on_event(&Event::NodeFailed {
            node,
            cause: cause.clone(),
            aborting,
        });
        self.failure.get_or_insert((node, cause));
        if aborting {
            self.kill_at = Some(Instant::now() + GRACE);
        }
    }

    fn into_report(self) -> JobReport {
        let status = match self.timed_out {
            true => 124,
            false => self.first_bad.map(NodeExit::shell_status).unwrap_or(0),
        };
        let mut exits = Vec::with_capacity(self.slots.len());
        let mut stats = Vec::with_capacity(self.slots.len());
        let mut routes = Vec::with_capacity(self.slots.len());
        for s in self.slots {
            exits.push(s.exit.unwrap_or(NodeExit::Code(-1)));
            stats.push(s.stats);
            routes.push(s.routes);
        }
        JobReport {
            exits,
            stats,
            routes,
            failure: self.failure,
            timed_out: self.timed_out,
            status,
        }
    }
}

/// Runs a job to its end, calling `on_event` for everything that happens.
pub fn run(spec: &JobSpec, mut on_event: impl FnMut(&Event)) -> Result<JobReport, LaunchError> {
    let n = spec.nodes;
    if n == 0 {
        return Err(LaunchError::NoNodes);
    }
    let job_id = u64::from_le_bytes(random_bytes());
    let secret: [u8; 32] = random_bytes();
    // Hosts, step 1: with namespaces, listen everywhere and tell each node
    // the gateway its namespace reaches this host by.
    let hosts = HostTable::new(&spec.hosts)?;
    let first_gateway = hosts.first_gateway();
    let listen_on = match first_gateway {
        Some(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => spec.bind,
    };
    let listener = TcpListener::bind(SocketAddr::new(listen_on, 0))?;
    let port = listener.local_addr()?.port();
    let door = Door::new(n, SocketAddr::new(listen_on, port));
    let (tx, rx) = mpsc::channel();
    // The console (`console` module, step 1); it goes when `run` returns,
    // on every path, or earlier once every node has ended.
    let console = Console::open(job_id, tx.clone());
    {
        let creds = Credentials { job_id, secret };
        let (tx, door) = (tx.clone(), door.clone());
        std::thread::Builder::new()
            .name("rendezvous".into())
            .spawn(move || rendezvous::serve(listener, creds, door, tx))?;
    }
    let starter = Starter {
        job_id,
        secret,
        port,
        listen_on,
        bind: spec.bind,
        first_gateway,
        env: spec.env.clone(),
        capacity: spec.capacity(),
        founders: n,
        stdin_to_first: spec.stdin_to_first,
        proxies: Proxies::new(spec.ssh.clone(), tx.clone()),
        watcher: crate::watch::Watcher::new(tx.clone())?,
    };
    let mut job = Job {
        spec,
        slots: Vec::with_capacity(n as usize),
        hosts,
        starter,
        door: door.clone(),
        batch: None,
        queued: VecDeque::new(),
        describing: Vec::new(),
        job_id,
        started: Instant::now(),
        founded: false,
        failure: None,
        first_bad: None,
        kill_at: None,
        next_check: None,
        finished: Vec::new(),
        finished_due: None,
        deadline: spec.timeout.map(|t| Instant::now() + t),
        timed_out: false,
    };
    for node in 0..n {
        let host = job.hosts.founder_host(node);
        let (entry, gateway) = job.hosts.get(host);
        let started = job
            .starter
            .start(node, n, &entry, gateway, (&spec.program, &spec.args, &[]));
        match started {
            Ok(process) => job.slots.push(Slot {
                process: Some(process),
                host,
                ..Slot::default()
            }),
            Err(source) => {
                job.slots
                    .iter()
                    .filter_map(|s| s.process.as_ref())
                    .for_each(NodeProcess::kill);
                job.starter.proxies.end();
                door.close();
                return Err(LaunchError::Spawn {
                    program: spec.program.clone(),
                    source,
                });
            }
        }
    }
    debug_assert_eq!(door.started.load(Ordering::Acquire), n);

    while job.running() {
        let wait = job
            .next_due()
            .map_or(IDLE_WAIT, |t| t.saturating_duration_since(Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(message) => {
                job.on_message(message, &mut on_event);
                // A steady stream of messages must not hold back what is due.
                if job.next_due().is_some_and(|t| t <= Instant::now()) {
                    job.on_due(&mut on_event);
                }
            }
            Err(RecvTimeoutError::Timeout) => job.on_due(&mut on_event),
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    // The job has ended: its console goes (console, step 5).
    drop(console);
    door.close();
    // Step 4: a node's last reports and counters come on its control
    // connection, read by another thread than the one that reports its
    // exit.
    let drain_until = Instant::now() + CONTROL_DRAIN;
    while job.slots.iter().any(|s| s.control_open) {
        match rx.recv_timeout(drain_until.saturating_duration_since(Instant::now())) {
            Ok(message) => job.on_message(message, &mut on_event),
            Err(_) => break,
        }
    }
    // A proxy reports a node's exit after its output: the proxies have
    // said all; they end now (proxy, step 7).
    job.starter.proxies.end();
    // The watcher ends when the nodes' pipes close; drain what it sent.
    job.starter.watcher.finish();
    while let Ok(message) = rx.try_recv() {
        job.on_message(message, &mut on_event);
    }
    Ok(job.into_report())
}
