//! What the launcher tells its caller: events while a job runs, its
//! report at the end, and why it could not start.

use crate::process::NodeExit;
use std::path::PathBuf;
use threadwire::Stats;

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
    /// [`FailurePolicy::Abort`](crate::FailurePolicy::Abort), the job is ending.
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
    /// A node reported a result ([`threadwire::Node::report`]): bytes in
    /// whatever codec the program and the caller agree on.
    Report {
        /// The node.
        node: u32,
        /// The report, as the node sent it.
        data: Vec<u8>,
    },
    /// The machine changed at a node's request (`threadwire::vm`) or the
    /// console's (`threadwire vm`, [`console`](crate::console)): nodes
    /// added, hosts added or removed; in words, for the event log.
    Machine(String),
    /// A node has joined; `routes[j]` names the channel it uses to node
    /// `j` (`tcp`, `shm (…)`, `not connected`: pairs connect on first use;
    /// `-` for itself).
    Channels {
        /// The node.
        node: u32,
        /// One entry per node.
        routes: Vec<String>,
    },
    /// A node is leaving; its routes as they ended, as in
    /// [`Event::Channels`].
    Routes {
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
    /// Each node's channels to its peers as they ended (`routes[j]` to
    /// node `j`), where it told them at its finalize: on the UDP channel
    /// with the pair's datagram counters, and at its own entry its
    /// multicast stream's counters when it had one (else `-`).
    pub routes: Vec<Option<Vec<String>>>,
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
    #[error(transparent)]
    Host(#[from] crate::hosts::HostError),
}
