//! Errors, one type per operation.

use crate::Address;
use std::fmt;
use threadwire_wire::Payload;

/// Why a peer node can no longer be reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// The node finished (`finalize`) and will send nothing more.
    Finished,
    /// The node died or its connection broke; the [`Failure`] says how.
    Failed(Failure),
}

/// How a peer node failed, as this node saw it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// Its connection closed without a goodbye: the process ended.
    #[error("connection closed without goodbye")]
    ClosedWithoutGoodbye,
    /// A channel to it failed; the text is the channel's error.
    #[error("{0}")]
    Channel(String),
    /// It sent what no correct node sends; the text says what.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The launcher reported it gone; the text is the launcher's.
    #[error("{0}")]
    ReportedByLauncher(String),
    /// The launcher itself is gone: the job is over for this node.
    #[error("the launcher is gone")]
    LauncherGone,
    /// Nothing came from it for `ms` milliseconds, longer than the peer
    /// timeout ([`Config::peer_timeout`](crate::Config::peer_timeout)):
    /// stopped, cut off or hung (liveness protocol in the progress
    /// engine's `liveness` module). Its connection is closed, so a node
    /// that was only stopped finds itself cut off when it resumes.
    #[error("silent for {ms} ms")]
    Silent {
        /// How long nothing had come from it.
        ms: u64,
    },
}

/// A node that has left the job, and why. Delivered to
/// [`Node::on_peer_lost`](crate::Node::on_peer_lost) subscribers and carried
/// by the errors of operations that involved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerLost {
    /// The node.
    pub node: u32,
    /// Why it is gone.
    pub cause: LossCause,
}

impl fmt::Display for PeerLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            LossCause::Finished => write!(f, "node n{} has finished", self.node),
            LossCause::Failed(why) => write!(f, "node n{} was lost: {why}", self.node),
        }
    }
}

/// Why a send failed. The message is given back where it was not sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The destination node is gone.
    #[error("send to {to}: {lost}")]
    PeerLost {
        /// The destination.
        to: Address,
        /// Which node, and why.
        lost: PeerLost,
        /// The message, unsent (empty when part of it reached the wire).
        payload: Payload,
    },
    /// No such node or thread in this job.
    #[error("send to {to}: no such endpoint in this job")]
    NoSuchEndpoint {
        /// The destination.
        to: Address,
        /// The message, unsent.
        payload: Payload,
    },
    /// The message is longer than a frame may be.
    #[error("send to {to}: {len} bytes exceed the maximum frame of {max} bytes")]
    TooLarge {
        /// The destination.
        to: Address,
        /// The message length.
        len: usize,
        /// The configured maximum.
        max: u64,
        /// The message, unsent.
        payload: Payload,
    },
    /// This node has finalized.
    #[error("send after finalize")]
    Finalized,
}

impl SendError {
    /// The same error with its message replaced by `payload()`.
    pub(crate) fn with_payload(self, payload: impl FnOnce() -> Payload) -> SendError {
        match self {
            SendError::PeerLost { to, lost, .. } => SendError::PeerLost {
                to,
                lost,
                payload: payload(),
            },
            SendError::NoSuchEndpoint { to, .. } => SendError::NoSuchEndpoint {
                to,
                payload: payload(),
            },
            SendError::TooLarge { to, len, max, .. } => SendError::TooLarge {
                to,
                len,
                max,
                payload: payload(),
            },
            SendError::Finalized => SendError::Finalized,
        }
    }

    /// The unsent message, if the error kept it.
    pub fn into_payload(self) -> Option<Payload> {
        match self {
            SendError::PeerLost { payload, .. }
            | SendError::NoSuchEndpoint { payload, .. }
            | SendError::TooLarge { payload, .. } => Some(payload),
            SendError::Finalized => None,
        }
    }
}

/// Why a receive or probe failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// The node the receive named — or, for a wildcard receive pending when
    /// a node failed, possibly the sender — is gone.
    #[error("receive: {0}")]
    PeerLost(PeerLost),
    /// The source names no node of this job.
    #[error("receive from node n{0}: no such node in this job")]
    NoSuchNode(u32),
    /// This node has finalized.
    #[error("receive after finalize")]
    Finalized,
    /// The receive was in a group that a member revoked
    /// ([`Group::revoke`](crate::Group::revoke)).
    #[error("receive: the group was revoked")]
    Revoked,
    /// The receive was cancelled before any message matched it
    /// ([`Request::cancel`](crate::Request::cancel)).
    #[error("receive cancelled")]
    Cancelled,
    /// The message matched was longer than the caller's buffer: the buffer
    /// holds its first bytes and the message is consumed (as MPI's
    /// `MPI_ERR_TRUNCATE`).
    #[error("receive: message of {} bytes from {} (tag {}) truncated to the buffer's {capacity}", status.len, status.source, status.tag)]
    Truncated {
        /// The message's sender, tag and real length.
        status: crate::Status,
        /// The buffer's length.
        capacity: usize,
    },
}

/// Why a thread could not be started, or made an endpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// Every thread number of this node is taken.
    #[error("no thread number left: a node has at most {max} threads")]
    ThreadsExhausted {
        /// The limit.
        max: u32,
    },
    /// The OS refused to start a thread (or the fiber workers).
    #[error("the OS refused to start a thread: {0}")]
    Os(std::io::Error),
    /// [`Node::export`](crate::Node::export) of a name exported before.
    #[error("entry point {name} is exported already")]
    AlreadyExported {
        /// The name.
        name: String,
    },
    /// The node exports no entry point of this name.
    #[error("node n{node} exports no entry point {name} (export the same names on every node, before any node spawns)")]
    UnknownEntry {
        /// The node asked.
        node: u32,
        /// The name.
        name: String,
    },
    /// The node is gone.
    #[error("spawn: {0}")]
    PeerLost(PeerLost),
    /// No such node in the job.
    #[error("spawn on node n{node}: no such node in a job of {nodes}")]
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// Nodes in the job.
        nodes: u32,
    },
    /// The node could not start the thread; the text is its error.
    #[error("node n{node} could not start the thread: {why}")]
    Remote {
        /// The node.
        node: u32,
        /// Its error.
        why: String,
    },
    /// This node has finalized.
    #[error("spawn after finalize")]
    Finalized,
}

impl From<std::io::Error> for SpawnError {
    fn from(e: std::io::Error) -> SpawnError {
        SpawnError::Os(e)
    }
}

/// Why a node could not join its job, or a thread become an endpoint.
/// [`source`](std::error::Error::source) is the underlying error, where
/// there is one; `Display` says what failed, `Debug` adds every source
/// (`what: why: why`), as `anyhow`'s `{:#}` does.
pub struct InitError {
    kind: InitErrorKind,
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "threadwire init: {}", self.kind)
    }
}

impl std::error::Error for InitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

/// The message, not the structure: `fn main() -> Result<(), Box<dyn Error>>`
/// (as in the crate's examples) and `expect` print an error with `Debug`, and
/// the message is what tells a user what to do, e.g. to start the program
/// with `threadwire run`.
impl fmt::Debug for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)?;
        let mut source = std::error::Error::source(self);
        while let Some(e) = source {
            write!(f, ": {e}")?;
            source = e.source();
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum InitErrorKind {
    #[error(transparent)]
    Env(#[from] crate::env::EnvError),
    #[error("rendezvous with the launcher at {addr}")]
    Rendezvous {
        addr: std::net::SocketAddr,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{name}")]
    Setting {
        name: &'static str,
        source: crate::config::ParseChannelChoiceError,
    },
    #[error("this thread is already an endpoint ({0})")]
    AlreadyEndpoint(Address),
    #[error("no endpoint for this thread")]
    Spawn(#[from] SpawnError),
    #[error("this process has already joined its job")]
    AlreadyInitialized,
    #[error("I/O")]
    Io(#[from] std::io::Error),
    #[error("its launcher (pid {0}) has ended")]
    LauncherGone(i32),
    #[error("starting under a process manager (PMI): {0}")]
    Pmi(String),
}

impl InitError {
    pub(crate) fn new(kind: InitErrorKind) -> InitError {
        InitError { kind }
    }

    /// Whether the program was simply not started by a launcher.
    pub fn is_not_launched(&self) -> bool {
        matches!(
            self.kind,
            InitErrorKind::Env(crate::env::EnvError::NotLaunched)
        )
    }
}

impl<E: Into<InitErrorKind>> From<E> for InitError {
    fn from(e: E) -> InitError {
        InitError { kind: e.into() }
    }
}
