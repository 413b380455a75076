//! One running job: the state the launcher keeps about its nodes, and the
//! loop that feeds it what the node processes and control connections say.
//!
//! Every source of news — a node's output lines, its exit, its control
//! connection (registration, reports, channels, counters) — is a thread
//! that sends an [`Internal`] message on one channel; [`run`] is the only
//! reader and [`Job`] the only state, so no lock guards any of it.
//!
//! 1. Until every node has exited: wait for a message or the next deadline
//!    (the job's timeout, or the end of the grace period after a failure).
//! 2. When every node has registered, send each the directory.
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

use crate::event::{Event, JobReport, LaunchError, OutputStream};
use crate::hosts::Host;
use crate::process::{self, NodeExit};
use crate::rendezvous;
use crate::spec::{FailurePolicy, JobSpec, GRACE};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};
use threadwire::control::{self, Control};
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
}

/// How long a finished job waits for its nodes' control connections to
/// close; they close with the nodes, so this is only a bound.
const CONTROL_DRAIN: Duration = Duration::from_secs(2);

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

/// The launcher's knowledge of a running job, node by node.
struct Job<'a> {
    spec: &'a JobSpec,
    pids: Vec<u32>,
    exits: Vec<Option<NodeExit>>,
    stats: Vec<Option<Stats>>,
    /// Writing halves of the control connections of live nodes.
    controls: Vec<Option<TcpStream>>,
    addrs: Vec<Option<String>>,
    control_open: Vec<bool>,
    failure: Option<(u32, String)>,
    first_bad: Option<NodeExit>,
    /// End of the grace period after a failure.
    kill_at: Option<Instant>,
    /// The peer timeout of each node that heartbeats (step 5).
    watched: Vec<Option<Duration>>,
    /// Why a node was killed for its silence, until its exit is reported.
    silent: Vec<Option<String>>,
    /// The next look at the watched connections.
    next_check: Option<Instant>,
    deadline: Option<Instant>,
    timed_out: bool,
}

impl<'a> Job<'a> {
    fn new(spec: &'a JobSpec, pids: Vec<u32>) -> Job<'a> {
        let n = spec.nodes as usize;
        Job {
            spec,
            pids,
            exits: vec![None; n],
            stats: vec![None; n],
            controls: (0..n).map(|_| None).collect(),
            addrs: vec![None; n],
            control_open: vec![false; n],
            failure: None,
            first_bad: None,
            kill_at: None,
            watched: vec![None; n],
            silent: vec![None; n],
            next_check: None,
            deadline: spec.timeout.map(|t| Instant::now() + t),
            timed_out: false,
        }
    }

    fn running(&self) -> bool {
        self.exits.iter().any(Option::is_none)
    }

    fn next_due(&self) -> Option<Instant> {
        [self.deadline, self.kill_at, self.next_check]
            .into_iter()
            .flatten()
            .min()
    }

    fn kill_rest(&self) {
        for (i, &pid) in self.pids.iter().enumerate() {
            if self.exits[i].is_none() {
                process::kill(pid);
            }
        }
    }

    fn send_all(&mut self, message: &Control) {
        for c in self.controls.iter_mut().flatten() {
            let _ = control::write_control(c, message);
        }
    }

    /// The timeout or the grace period may have run out.
    fn on_due(&mut self, on_event: &mut impl FnMut(&Event)) {
        let now = Instant::now();
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
    }

    /// Step 5: kills the watched nodes whose control connection has been
    /// silent too long, and plans the next look.
    fn fence_silent(&mut self) {
        let mut next_tick = None::<Duration>;
        for i in 0..self.pids.len() {
            let (Some(timeout), Some(stream)) = (self.watched[i], &self.controls[i]) else {
                continue;
            };
            if self.exits[i].is_some() || !self.control_open[i] || self.silent[i].is_some() {
                continue;
            }
            next_tick = Some(next_tick.map_or(timeout / CHECKS, |t| t.min(timeout / CHECKS)));
            let Ok(quiet) = threadwire_transport::quiet(stream) else {
                continue;
            };
            if quiet.received >= timeout.mul_f64(FENCE_AFTER) {
                let ms = quiet.received.as_millis();
                tracing::warn!("launcher: node n{i} silent for {ms} ms; killing it");
                self.silent[i] = Some(format!("node n{i} was silent for {ms} ms and was killed"));
                process::kill(self.pids[i]);
            }
        }
        self.next_check = next_tick.map(|t| Instant::now() + t);
    }

    fn on_message(&mut self, message: Internal, on_event: &mut impl FnMut(&Event)) {
        match message {
            Internal::Output { node, stream, line } => {
                on_event(&Event::Output { node, stream, line })
            }
            Internal::Stats { node, stats } => self.stats[node as usize] = Some(stats),
            Internal::Channels { node, routes } => on_event(&Event::Channels { node, routes }),
            Internal::Report { node, data } => on_event(&Event::Report { node, data }),
            Internal::ControlClosed { node } => self.control_open[node as usize] = false,
            Internal::Watch { node, timeout } => {
                if !timeout.is_zero() {
                    self.watched[node as usize] = Some(timeout);
                    let first = Instant::now() + timeout / CHECKS;
                    self.next_check = Some(self.next_check.map_or(first, |c| c.min(first)));
                }
            }
            Internal::Registered { node, addr, stream } => {
                self.control_open[node as usize] = true;
                self.addrs[node as usize] = Some(addr);
                self.controls[node as usize] = Some(stream);
                if self.addrs.iter().all(Option::is_some) {
                    let addrs = self
                        .addrs
                        .iter()
                        .map(|a| a.clone().unwrap_or_default())
                        .collect();
                    self.send_all(&Control::Directory { addrs });
                }
            }
            Internal::Exited { node, exit } => self.on_exit(node, exit, on_event),
        }
    }

    fn on_exit(&mut self, node: u32, exit: NodeExit, on_event: &mut impl FnMut(&Event)) {
        self.exits[node as usize] = Some(exit);
        on_event(&Event::Exited { node, exit });
        self.controls[node as usize] = None;
        if exit.success() || self.timed_out {
            return;
        }
        self.first_bad.get_or_insert(exit);
        if self.failure.is_some() || self.kill_at.is_some() {
            return;
        }
        let cause = self.silent[node as usize]
            .take()
            .unwrap_or_else(|| format!("node n{node} {exit}"));
        self.send_all(&Control::PeerLost {
            node,
            cause: cause.clone(),
        });
        let aborting = self.spec.on_failure == FailurePolicy::Abort;
        on_event(&Event::NodeFailed {
            node,
            cause: cause.clone(),
            aborting,
        });
        self.failure = Some((node, cause));
        if aborting {
            self.kill_at = Some(Instant::now() + GRACE);
        }
    }

    fn into_report(self) -> JobReport {
        let status = match self.timed_out {
            true => 124,
            false => self.first_bad.map(NodeExit::shell_status).unwrap_or(0),
        };
        JobReport {
            exits: self
                .exits
                .into_iter()
                .map(|e| e.unwrap_or(NodeExit::Code(-1)))
                .collect(),
            stats: self.stats,
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
    let host_of = |node: u32| match spec.hosts.len() {
        0 => Host::Local,
        k => spec.hosts[node as usize % k].clone(),
    };
    // Hosts, step 1: with namespaces, listen everywhere and tell each node
    // the gateway its namespace reaches this host by.
    let mut gateways = Vec::new();
    for host in &spec.hosts {
        gateways.push(host.gateway().map_err(LaunchError::Host)?);
    }
    let first_gateway = gateways.iter().flatten().next().copied();
    let listen_on = match first_gateway {
        Some(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => spec.bind,
    };
    let listener = TcpListener::bind(SocketAddr::new(listen_on, 0))?;
    let port = listener.local_addr()?.port();
    let rendezvous_for = |node: u32| -> IpAddr {
        match spec.hosts.len() {
            0 => spec.bind,
            k => gateways[node as usize % k]
                .or(first_gateway)
                .unwrap_or(spec.bind),
        }
    };
    let (tx, rx) = mpsc::channel();
    {
        let creds = Credentials { job_id, secret };
        let tx = tx.clone();
        std::thread::Builder::new()
            .name("rendezvous".into())
            .spawn(move || rendezvous::serve(listener, creds, n, tx))?;
    }

    let mut pids = Vec::with_capacity(n as usize);
    let mut output_threads = Vec::new();
    for node in 0..n {
        let rendezvous = SocketAddr::new(rendezvous_for(node), port);
        let mut vars: Vec<(String, String)> =
            threadwire::env::JobEnv::vars_for(job_id, node, n, rendezvous, &secret)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        vars.extend(spec.env.iter().cloned());
        let host = host_of(node);
        let cmd = host.command(&spec.program, &spec.args, &vars, threadwire::env::SECRET);
        let feed_secret = matches!(host, Host::Ssh(_)).then(|| {
            secret
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        });
        match process::start(node, cmd, feed_secret, &tx) {
            Ok((pid, threads)) => {
                pids.push(pid);
                output_threads.extend(threads);
            }
            Err(source) => {
                pids.iter().for_each(|&p| process::kill(p));
                return Err(LaunchError::Spawn {
                    program: spec.program.clone(),
                    source,
                });
            }
        }
    }
    drop(tx);

    let mut job = Job::new(spec, pids);
    while job.running() {
        let wait = job
            .next_due()
            .map_or(IDLE_WAIT, |t| t.saturating_duration_since(Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(message) => job.on_message(message, &mut on_event),
            Err(RecvTimeoutError::Timeout) => job.on_due(&mut on_event),
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    // Step 4: a node's last reports and counters come on its control
    // connection, read by another thread than the one that reports its
    // exit.
    let drain_until = Instant::now() + CONTROL_DRAIN;
    while job.control_open.iter().any(|&open| open) {
        match rx.recv_timeout(drain_until.saturating_duration_since(Instant::now())) {
            Ok(message) => job.on_message(message, &mut on_event),
            Err(_) => break,
        }
    }
    // Output threads end when the nodes' pipes close; drain what they sent.
    for t in output_threads {
        let _ = t.join();
    }
    while let Ok(message) = rx.try_recv() {
        job.on_message(message, &mut on_event);
    }
    Ok(job.into_report())
}
