//! Starting under a process manager, through either of its interfaces
//! ([`Manager`]): PMI-1, below, or PMIx, through the system's PMIx
//! library ([`pmix`]: Open MPI's `mpirun`; its docs say why a library and
//! not the wire).
//!
//! The PMI-1 client speaks the "simple" wire
//! protocol, as MPICH's Hydra (`mpiexec.hydra -n 4 prog`) and Slurm's
//! `mpi/pmi2` plugin (`srun --mpi=pmi2 -n 4 prog`, which answers PMI-1
//! clients too) serve it. The lines themselves are
//! [`threadwire_wire::pmi`]'s; this module finds the manager and talks to
//! it.
//!
//! How a node uses it:
//!
//! 1. [`PmiEnv::from_env`] reads the variables the manager set
//!    ([`env`](crate::env) lists them). None set: `Ok(None)`, the node was
//!    not started by a process manager. Any set but wrong or lacking its
//!    companions: one [`PmiError::Variable`] naming the variable.
//! 2. [`PmiClient::connect`] takes the connection: the inherited socket
//!    `PMI_FD` (Hydra's default, Slurm), made close-on-exec so that
//!    programs the node starts do not inherit it; or a TCP connection to
//!    `PMI_PORT` (Hydra's `-pmi-port`), on which it first sends `initack
//!    pmiid=$PMI_ID` and reads back `initack` and `set size=`, `set
//!    rank=`, `set debug=` — its only source of rank and size then.
//! 3. [`PmiClient::init`] (`init pmi_version=1 pmi_subversion=1` →
//!    `response_to_init`), then [`get_maxes`](PmiClient::get_maxes) and
//!    [`get_my_kvsname`](PmiClient::get_my_kvsname) (both also fetched
//!    on first need).
//! 4. [`put`](PmiClient::put) publishes this node's values (checked
//!    against the maxes before sending), [`barrier`](PmiClient::barrier)
//!    waits for every process to arrive — only then are the values of all
//!    visible, this node's own included (Hydra answers a `get` before the
//!    barrier "not found") — and [`get`](PmiClient::get) reads a peer's.
//! 5. The client may stay open for the node's whole life, behind a mutex
//!    (one request and its answer at a time): a late `get` is served as
//!    long as the manager lives and the client has not finalized.
//! 6. [`finalize`](PmiClient::finalize) (`finalize` → `finalize_ack`; the
//!    manager then closes the connection) at the end. After `init`,
//!    Hydra takes the connection closing without it — the client dropped,
//!    or the process ending — as a failure and kills every process of the
//!    job at once (`SIGKILL`; `mpiexec` exits with 9): the client must
//!    live as long as the node. Before `init`, closing is harmless.
//!    [`abort`](PmiClient::abort) ends the whole job with an exit code
//!    instead; no answer comes.
//!
//! Every answer is awaited with a deadline ([`DEFAULT_TIMEOUT`], or the
//! caller's for a barrier, which may wait long for slow processes). Once a
//! request has failed midway (timed out, connection broken, an answer that
//! is not the one expected) later answers could no longer be matched to
//! their requests, so the client refuses further requests
//! ([`PmiError::Unusable`]).
//!
//! What the managers do, as seen from here (Hydra 4.0.2 run by the tests,
//! Slurm's `mpi/pmi2` plugin read from its source, not run): an unknown
//! command makes Hydra end the whole job, so the client sends only the
//! commands above; Slurm reads a request with one `read` of at most 1024
//! bytes, so every request is written with one `write` and is at most
//! [`MAX_REQUEST`](client::MAX_REQUEST) bytes. Slurm closes the connection after
//! `finalize_ack`, as Hydra does, and answers `abort` by killing the job
//! step.

mod book;
mod client;
mod detect;
mod manager;
mod pmix;

pub(crate) use book::{addr_key, process_mapping, PmiBook, JOB_KEY};
pub(crate) use manager::Manager;
pub(crate) use pmix::PmixClient;

#[cfg(test)]
mod tests;

pub(crate) use client::{PmiClient, DEFAULT_TIMEOUT};
pub(crate) use detect::{PmiEndpoint, PmiEnv};

use std::io;
use std::time::Duration;
use threadwire_wire::pmi::PmiLineError;

/// Why starting under, or talking to, a process manager failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PmiError {
    /// A PMI variable is missing, malformed or wrong.
    #[error("{name}: {problem}")]
    Variable {
        /// The variable.
        name: &'static str,
        /// What is wrong with it.
        problem: VariableProblem,
    },
    /// Connecting to, reading from or writing to the manager failed.
    #[error("PMI connection, during {request}: {source}")]
    Io {
        /// The request under way.
        request: &'static str,
        /// The I/O error.
        source: io::Error,
    },
    /// The manager closed the connection.
    #[error("the process manager closed the PMI connection during {request}")]
    Closed {
        /// The request under way.
        request: &'static str,
    },
    /// The manager sent a line that does not parse.
    #[error("the process manager answered {request} with a malformed line: {source}")]
    Malformed {
        /// The request under way.
        request: &'static str,
        /// What is wrong with the line.
        source: PmiLineError,
    },
    /// The manager sent a well-formed line, but not the answer expected.
    #[error("the process manager answered {request} with `{line}`")]
    Unexpected {
        /// The request under way.
        request: &'static str,
        /// The line it sent.
        line: String,
    },
    /// The manager answered with a failure (`rc` not 0).
    #[error("the process manager refused {request} (rc {rc}){}", msg.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Refused {
        /// The request.
        request: &'static str,
        /// Its return code.
        rc: i32,
        /// Its message, if it sent one.
        msg: Option<String>,
    },
    /// A `get` of a key nobody has put (or not before the last barrier).
    #[error("PMI key {key} not found{}", msg.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    NotFound {
        /// The key.
        key: String,
        /// The manager's message, if it sent one.
        msg: Option<String>,
    },
    /// No answer within the deadline.
    #[error("no answer from the process manager to {request} within {after:?}")]
    TimedOut {
        /// The request.
        request: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// A key or value longer than the manager takes.
    #[error("PMI {what} of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// `key`, `value` or `request`.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A key or value the protocol cannot carry (spaces, `=`, control
    /// bytes: [`threadwire_wire::pmi`]).
    #[error("PMI {what} `{text}` cannot be sent: no spaces, `=` or control bytes")]
    Unwritable {
        /// `key` or `value`.
        what: &'static str,
        /// It.
        text: String,
    },
    /// PMIx variables are set, but the PMIx library cannot be loaded.
    #[error("started by a PMIx server, but {library} cannot be loaded: {source}")]
    Library {
        /// The library's file name.
        library: &'static str,
        /// Why not.
        source: libloading::Error,
    },
    /// A PMIx call returned a failure.
    #[error("{call} failed: {name} ({status})")]
    Pmix {
        /// The function.
        call: &'static str,
        /// Its status.
        status: i32,
        /// The library's name for the status.
        name: String,
    },
    /// A PMIx value of another type than the key's.
    #[error("the PMIx server's {key} is of type {kind}, not {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// Its PMIx type tag.
        kind: u16,
        /// What it should be.
        expected: &'static str,
    },
    /// An earlier request failed midway; answers can no longer be matched
    /// to requests (module docs).
    #[error("the PMI connection is unusable after an earlier failure")]
    Unusable,
}

/// What is wrong with a PMI variable.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum VariableProblem {
    /// Not set, though the variable named is.
    Missing {
        /// The variable that needs it.
        needed_by: &'static str,
    },
    /// Set to something that is not what it should hold.
    Malformed {
        /// Its value.
        value: String,
        /// What it should hold.
        expected: &'static str,
    },
    /// `PMI_FD` names no open socket.
    NotASocket(io::Error),
    /// The rank is not below the size.
    RankOutOfRange {
        /// The rank.
        rank: u32,
        /// The size.
        size: u32,
    },
    /// The manager says otherwise (`PMI_PORT` mode's `set rank=`/`size=`,
    /// the process `PMIx_Init` names).
    Disagrees {
        /// The variable's value.
        value: u32,
        /// The manager's.
        manager: u32,
    },
}

impl std::fmt::Display for VariableProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VariableProblem::Missing { needed_by } => {
                write!(f, "not set, but {needed_by} is (a process manager must set both)")
            }
            VariableProblem::Malformed { value, expected } => {
                write!(f, "`{value}` is not {expected}")
            }
            VariableProblem::NotASocket(why) => {
                write!(f, "not an open socket inherited from the process manager: {why}")
            }
            VariableProblem::RankOutOfRange { rank, size } => {
                write!(f, "rank {rank} is not below the size {size}")
            }
            VariableProblem::Disagrees { value, manager } => {
                write!(f, "says {value}, the process manager says {manager}")
            }
        }
    }
}
