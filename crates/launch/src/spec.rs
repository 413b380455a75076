//! What a job is: its nodes, program, environment, hosts and policies.

use crate::hosts::Host;
use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

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
    /// The most nodes the job may grow to when its nodes add more
    /// (`threadwire::vm`); `None`: [`DEFAULT_MAX_NODES`], or `nodes` if
    /// that is more.
    pub max_nodes: Option<u32>,
    /// How `ssh:` hosts are reached.
    pub ssh: SshConfig,
    /// Whether node 0 reads the launcher's stdin, as a program run from
    /// the shell does (`threadwire pvm`); every other node reads nothing.
    pub stdin_to_first: bool,
}

/// How the launcher reaches `ssh:` hosts: one `ssh` connection per host
/// and job, to a proxy that starts the host's nodes
/// ([`proxy`](crate::proxy)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshConfig {
    /// Options for `ssh`, before the host name: `-F FILE`, `-i KEY`,
    /// `-o Option=value`, … ([`SshConfig::from_env`]). `BatchMode=yes` is
    /// always given: nothing may ask for a password.
    pub options: Vec<String>,
    /// The `threadwire` executable that runs the proxy on the hosts, at
    /// this path there; `None`: this process's own executable, which must
    /// then exist at the same path on every ssh host.
    pub proxy: Option<PathBuf>,
}

/// The environment variable whose words are ssh's options
/// ([`SshConfig::from_env`]).
pub const SSH_OPTIONS: &str = "THREADWIRE_SSH";

impl SshConfig {
    /// The options are the whitespace-separated words of
    /// `$THREADWIRE_SSH` (none if it is unset), such as
    /// `-F /etc/threadwire/ssh_config`.
    pub fn from_env() -> SshConfig {
        let words = std::env::var(SSH_OPTIONS).unwrap_or_default();
        SshConfig {
            options: words.split_whitespace().map(String::from).collect(),
            proxy: None,
        }
    }
}

/// How far a job may grow unless its spec says otherwise.
pub const DEFAULT_MAX_NODES: u32 = 1024;

impl JobSpec {
    /// `nodes` copies of `program` on this host, no arguments; ssh options
    /// from the environment ([`SshConfig::from_env`]).
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
            max_nodes: None,
            ssh: SshConfig::from_env(),
            stdin_to_first: false,
        }
    }

    /// Node 0 reads the launcher's stdin ([`stdin_to_first`](Self::stdin_to_first)).
    pub fn stdin_to_first(mut self) -> JobSpec {
        self.stdin_to_first = true;
        self
    }

    /// The most nodes the job may grow to (never fewer than it starts with).
    pub fn capacity(&self) -> u32 {
        self.max_nodes.unwrap_or(DEFAULT_MAX_NODES).max(self.nodes)
    }

    /// Lets the job grow to at most `max` nodes.
    pub fn max_nodes(mut self, max: u32) -> JobSpec {
        self.max_nodes = Some(max);
        self
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
