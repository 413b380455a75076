//! The node side of the process rows of `bench spawn`: join the job and
//! report the two timestamps the launcher's timeline needs.

use super::monotonic_ns;
use crate::node_result::NodeResult;
use threadwire::{InitError, ReportError};

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// The timestamps could not be reported to the launcher.
    #[error("reporting that the node joined")]
    Report(#[source] ReportError),
}

/// Joins the job and reports when this node's code started and when it
/// was past `init` ([`NodeResult::Joined`]); the launcher times the
/// report's arrival. Returns when the job ends for this node.
pub fn node() -> Result<(), NodeError> {
    let started_ns = monotonic_ns();
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let joined_ns = monotonic_ns();
    NodeResult::Joined {
        started_ns,
        joined_ns,
    }
    .send(ep.node())
    .map_err(NodeError::Report)
}
