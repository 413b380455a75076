//! Why a Slurm cluster could not be brought up, or a command on it failed.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use crate::net::NetError;

/// Why a Slurm cluster could not be brought up here, or a command run on
/// it failed. [`is_unavailable`](SlurmError::is_unavailable) tells a test
/// that should skip (not root, a program missing) from one that failed.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct SlurmError {
    kind: SlurmErrorKind,
}

impl SlurmError {
    /// Whether the cluster cannot run on this machine at all: not root, a
    /// Slurm or munge program missing, or no namespaces (UTS namespaces
    /// for the daemons' host names; network namespaces for several hosts). The message says which; a test prints it and skips.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self.kind,
            SlurmErrorKind::NotRoot
                | SlurmErrorKind::MissingProgram { .. }
                | SlurmErrorKind::NoNamespaces(_)
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub(super) enum SlurmErrorKind {
    #[error("not root: slurmd and munged run as root here (run the tests as root)")]
    NotRoot,
    #[error("`{program}` not found in PATH, /usr/sbin or /sbin: install Debian's `{package}`")]
    MissingProgram {
        program: &'static str,
        package: &'static str,
    },
    #[error("no namespaces for the daemons here: {0}")]
    NoNamespaces(String),
    #[error("bad plan: {0}")]
    Plan(&'static str),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("emulated hosts for the slurmds")]
    Net(#[source] NetError),
    #[error("{daemon} ended during bring-up; logs:\n{logs}")]
    DaemonExited { daemon: String, logs: String },
    #[error("nodes not idle after {waited:?} (`sinfo`: {states:?}); logs:\n{logs}")]
    NotReady {
        waited: Duration,
        states: String,
        logs: String,
    },
    #[error("`{line}` did not end within {after:?}{logs}")]
    Timeout {
        line: String,
        after: Duration,
        /// The daemons' log tails, once [`SlurmError::with_logs`] added them.
        logs: String,
    },
    #[error("`{line}` failed ({status}): {stderr}")]
    Command {
        line: String,
        status: ExitStatus,
        stderr: String,
    },
    #[error("`{line}` printed {output:?}, not what was expected")]
    Output { line: String, output: String },
    #[error("job {job} not finished after {after:?} (last state {state:?}); logs:\n{logs}")]
    JobTimeout {
        job: u32,
        after: Duration,
        state: String,
        logs: String,
    },
}

impl SlurmError {
    /// The error with the daemons' log tails added, if it is a client's
    /// timeout (where they tell what hangs).
    pub(super) fn with_logs(mut self, logs: impl FnOnce() -> String) -> SlurmError {
        if let SlurmErrorKind::Timeout { logs: none, .. } = &mut self.kind {
            *none = format!("; logs:\n{}", logs());
        }
        self
    }
}

impl From<SlurmErrorKind> for SlurmError {
    fn from(kind: SlurmErrorKind) -> SlurmError {
        SlurmError { kind }
    }
}

/// An [`io::Error`] with what was being done.
pub(super) fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> SlurmError {
    let what = what.into();
    move |source| SlurmErrorKind::Io { what, source }.into()
}
