//! The node side of `bench rate`: node 0 sends and reports one sample per
//! kind and thread count as each is measured (the launcher shows progress
//! as they come), node 1 receives.

use super::{Error, Options, Side};
use crate::node_result::NodeResult;
use threadwire::{Address, InitError, ReportError};

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// The measurement failed.
    #[error(transparent)]
    Rate(#[from] Error),
    /// A sample could not be reported to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// Runs this node's side of the job [`run`](super::run) started.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let (side, partner) = match ep.address().node {
        0 => (Side::Sender, Address::new(1, 0)),
        1 => (Side::Receiver, Address::new(0, 0)),
        _ => return Ok(()),
    };
    let mut reported = Ok(());
    super::run_side(&ep, partner, side, options, |sample| {
        if reported.is_ok() {
            reported = NodeResult::Rate(*sample).send(ep.node());
        }
    })?;
    reported.map_err(NodeError::Report)
}
