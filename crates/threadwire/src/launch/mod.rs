//! The launcher: starts a job's nodes on this host (or on the hosts of a
//! host file, [`hosts`]) and watches them.
//!
//! [`run`] is what `threadwire run` calls. It
//!
//! 1. draws a job id and a secret and opens the rendezvous service on a port
//!    the OS chooses;
//! 2. starts N node processes with the [environment contract](crate::env);
//! 3. gives every node the directory of listen addresses once all have
//!    registered;
//! 4. reports each line a node prints ([`Event::Output`]) and each exit;
//! 5. when a node fails, tells the others ([`Control::PeerLost`]), and under
//!    [`FailurePolicy::Abort`] kills whatever still runs after a grace
//!    period, so the job ends within two seconds with the cause named;
//! 6. returns a [`JobReport`] with every node's exit and counters.
//!
//! Nodes are started with `PR_SET_PDEATHSIG`, so no node outlives a killed
//! launcher. The launcher never prints: the caller renders the events.

pub mod hosts;
mod process;
pub mod protocol;
mod rendezvous;

pub use hosts::{parse_host_file, Host, HostFileError};
pub use process::NodeExit;

use crate::Stats;
use protocol::Control;
use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};
use threadwire_transport::handshake::Credentials;

/// What to do when a node fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Tell the others, give them [`GRACE`] to finish, then kill the rest.
    #[default]
    Abort,
    /// Tell the others and let them decide.
    Continue,
}

/// How long survivors of a failure may run on under [`FailurePolicy::Abort`].
pub const GRACE: Duration = Duration::from_millis(1000);

/// A job to start.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Number of nodes.
    pub nodes: u32,
    /// The program every node runs.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment for every node.
    pub env: Vec<(String, String)>,
    /// Kill the job after this long.
    pub timeout: Option<Duration>,
    /// What a node failure does to the job.
    pub on_failure: FailurePolicy,
    /// Address the rendezvous service and the nodes listen on.
    pub bind: IpAddr,
    /// Where the nodes run, node `i` on host `i % hosts.len()`; empty: all
    /// on this host.
    pub hosts: Vec<Host>,
}

impl JobSpec {
    /// `nodes` copies of `program` on this host, no arguments.
    pub fn new(nodes: u32, program: impl Into<PathBuf>) -> JobSpec {
        JobSpec {
            nodes,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            timeout: None,
            on_failure: FailurePolicy::Abort,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            hosts: Vec::new(),
        }
    }

    /// Runs the nodes on `hosts` (node `i` on host `i % hosts.len()`).
    pub fn hosts(mut self, hosts: Vec<Host>) -> JobSpec {
        self.hosts = hosts;
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> JobSpec {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds an environment variable for every node.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> JobSpec {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets the job timeout.
    pub fn timeout(mut self, t: Duration) -> JobSpec {
        self.timeout = Some(t);
        self
    }

    /// Sets the failure policy.
    pub fn on_failure(mut self, p: FailurePolicy) -> JobSpec {
        self.on_failure = p;
        self
    }
}

/// Which output stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Something that happened in a running job.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Event {
    /// A node printed a line.
    Output {
        /// The node.
        node: u32,
        /// Which stream.
        stream: OutputStream,
        /// The line, without its newline.
        line: String,
    },
    /// A node ended.
    Exited {
        /// The node.
        node: u32,
        /// How.
        exit: NodeExit,
    },
    /// A node failed; the others were told and, under
    /// [`FailurePolicy::Abort`], the job is ending.
    NodeFailed {
        /// The node.
        node: u32,
        /// What happened to it.
        cause: String,
        /// Whether the job is being ended.
        aborting: bool,
    },
    /// The job ran past its timeout and is being killed.
    TimedOut,
    /// A node has joined; `routes[j]` names the channel it uses to node
    /// `j` (`tcp`, `shm (…)`; `-` for itself).
    Channels {
        /// The node.
        node: u32,
        /// One entry per node.
        routes: Vec<String>,
    },
}

/// How a job ended.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// Each node's exit, by node number.
    pub exits: Vec<NodeExit>,
    /// Each node's final counters, where it reported them.
    pub stats: Vec<Option<Stats>>,
    /// The first failure: node and cause.
    pub failure: Option<(u32, String)>,
    /// Whether the timeout ended the job.
    pub timed_out: bool,
    /// The job's exit status: 0, the first failing node's status (128 +
    /// signal for a signal), or 124 after a timeout.
    pub status: i32,
}

/// Why a job could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// A job needs at least one node.
    #[error("a job needs at least one node")]
    NoNodes,
    /// The program could not be started.
    #[error("cannot start {}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The rendezvous service could not open.
    #[error("rendezvous service: {0}")]
    Rendezvous(#[from] std::io::Error),
    /// A host of the host file cannot be used.
    #[error("{0}")]
    Host(String),
}

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
    /// A node's control connection has ended: its counters, if it sent
    /// them, were sent before this.
    ControlClosed {
        node: u32,
    },
}

/// How long a finished job waits for its nodes' control connections to
/// close; they close with the nodes, so this is only a bound.
const CONTROL_DRAIN: Duration = Duration::from_secs(2);

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::getrandom(&mut b).expect("the OS random source is unavailable");
    b
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
            crate::env::JobEnv::vars_for(job_id, node, n, rendezvous, &secret)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        vars.extend(spec.env.iter().cloned());
        let host = host_of(node);
        let cmd = host.command(&spec.program, &spec.args, &vars, crate::env::SECRET);
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

    let mut exits: Vec<Option<NodeExit>> = vec![None; n as usize];
    let mut stats = vec![None; n as usize];
    let mut controls: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let mut addrs: Vec<Option<String>> = vec![None; n as usize];
    let mut control_open = vec![false; n as usize];
    let mut failure: Option<(u32, String)> = None;
    let mut first_bad: Option<NodeExit> = None;
    let mut kill_at: Option<Instant> = None;
    let mut timed_out = false;
    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let kill_rest = |exits: &[Option<NodeExit>]| {
        for (i, &pid) in pids.iter().enumerate() {
            if exits[i].is_none() {
                process::kill(pid);
            }
        }
    };

    while exits.iter().any(Option::is_none) {
        let next = [deadline, kill_at].into_iter().flatten().min();
        let wait = next
            .map(|t| t.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_secs(3600));
        let msg = match rx.recv_timeout(wait) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match msg {
            None => {
                if deadline.is_some_and(|d| Instant::now() >= d) && !timed_out {
                    timed_out = true;
                    on_event(&Event::TimedOut);
                    kill_rest(&exits);
                }
                if kill_at.is_some_and(|k| Instant::now() >= k) {
                    kill_at = None;
                    kill_rest(&exits);
                }
            }
            Some(Internal::Output { node, stream, line }) => {
                on_event(&Event::Output { node, stream, line })
            }
            Some(Internal::Stats { node, stats: s }) => stats[node as usize] = Some(s),
            Some(Internal::Channels { node, routes }) => {
                on_event(&Event::Channels { node, routes })
            }
            Some(Internal::ControlClosed { node }) => control_open[node as usize] = false,
            Some(Internal::Registered { node, addr, stream }) => {
                control_open[node as usize] = true;
                addrs[node as usize] = Some(addr);
                controls[node as usize] = Some(stream);
                if addrs.iter().all(Option::is_some) {
                    let directory = Control::Directory {
                        addrs: addrs
                            .iter()
                            .map(|a| a.clone().unwrap_or_default())
                            .collect(),
                    };
                    for c in controls.iter_mut().flatten() {
                        let _ = protocol::write_control(c, &directory);
                    }
                }
            }
            Some(Internal::Exited { node, exit }) => {
                exits[node as usize] = Some(exit);
                on_event(&Event::Exited { node, exit });
                controls[node as usize] = None;
                if exit.success() || timed_out {
                    continue;
                }
                first_bad.get_or_insert(exit);
                if failure.is_none() && kill_at.is_none() {
                    let cause = format!("node n{node} {exit}");
                    let lost = Control::PeerLost {
                        node,
                        cause: cause.clone(),
                    };
                    for c in controls.iter_mut().flatten() {
                        let _ = protocol::write_control(c, &lost);
                    }
                    let aborting = spec.on_failure == FailurePolicy::Abort;
                    on_event(&Event::NodeFailed {
                        node,
                        cause: cause.clone(),
                        aborting,
                    });
                    failure = Some((node, cause));
                    if aborting {
                        kill_at = Some(Instant::now() + GRACE);
                    }
                }
            }
        }
    }
    // A node's final counters come on its control connection, read by
    // another thread than the one that reports its exit: wait for every
    // control connection to end (at once, the nodes being gone), or the
    // counters of the last nodes to exit may be lost.
    let drain_until = Instant::now() + CONTROL_DRAIN;
    while control_open.iter().any(|&open| open) {
        match rx.recv_timeout(drain_until.saturating_duration_since(Instant::now())) {
            Ok(Internal::Output { node, stream, line }) => {
                on_event(&Event::Output { node, stream, line })
            }
            Ok(Internal::Stats { node, stats: s }) => stats[node as usize] = Some(s),
            Ok(Internal::ControlClosed { node }) => control_open[node as usize] = false,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    // Output threads end when the nodes' pipes close; drain what they sent.
    for t in output_threads {
        let _ = t.join();
    }
    while let Ok(m) = rx.try_recv() {
        match m {
            Internal::Output { node, stream, line } => {
                on_event(&Event::Output { node, stream, line })
            }
            Internal::Stats { node, stats: s } => stats[node as usize] = Some(s),
            _ => {}
        }
    }
    let exits: Vec<NodeExit> = exits
        .into_iter()
        .map(|e| e.unwrap_or(NodeExit::Code(-1)))
        .collect();
    let status = if timed_out {
        124
    } else {
        first_bad.map(NodeExit::shell_status).unwrap_or(0)
    };
    Ok(JobReport {
        exits,
        stats,
        failure,
        timed_out,
        status,
    })
}
