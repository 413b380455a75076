//! The node side of `bench pingpong`: thread to thread inside node 0
//! (path `thread`), then node 0 to node 1 over the job's channel (path
//! `shm` or `tcp`, as the launcher set `THREADWIRE_CHANNEL`); node 0
//! reports each size's sample as it is measured ([`NodeResult`]).

use super::{Budget, Error, Options, Sample};
use crate::node_result::NodeResult;
use threadwire::{Address, Endpoint, InitError, ReportError};

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// A ping-pong failed.
    #[error("ping-pong: {0}")]
    Pingpong(#[source] Error),
    /// The partner fiber of the `thread` path failed.
    #[error("the partner fiber")]
    Join(#[source] threadwire::JoinError),
    /// A result could not be reported to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// Runs this node's part of the job that [`sweep`](super::sweep) started
/// with `options`: the paths are the job's (its environment), the sizes
/// and budget `options`'.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let paths = super::job_paths().unwrap_or_else(|| options.paths.clone());
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let me = ep.address();
    let (sizes, budget) = (&options.sizes, options.budget);
    let channel = paths.iter().find(|p| *p != "thread");
    if me.node == 0 && paths.iter().any(|p| p == "thread") {
        let sizes_owned = sizes.clone();
        let partner = ep
            .node()
            .spawn(move |ep| super::run(&ep, Address::new(0, 0), false, &sizes_owned, budget));
        // A size at a time, each reported at once: the launcher shows
        // progress as the results come.
        for &size in sizes {
            leader(&ep, partner.address(), "thread", size, budget)?;
        }
        partner
            .join()
            .map_err(NodeError::Join)?
            .map_err(NodeError::Pingpong)?;
    }
    if let Some(channel) = channel {
        if me.node == 0 {
            for &size in sizes {
                leader(&ep, Address::new(1, 0), channel, size, budget)?;
            }
        } else if me.node == 1 {
            super::run(&ep, Address::new(0, 0), false, sizes, budget)
                .map_err(NodeError::Pingpong)?;
        }
    }
    Ok(())
}

/// Measures one size with `partner` and reports it as `path`'s.
fn leader(
    ep: &Endpoint,
    partner: Address,
    path: &str,
    size: usize,
    budget: Budget,
) -> Result<(), NodeError> {
    let samples: Vec<Sample> =
        super::run(ep, partner, true, &[size], budget).map_err(NodeError::Pingpong)?;
    for sample in samples {
        NodeResult::Pingpong {
            path: path.to_string(),
            sample,
        }
        .send(ep.node())
        .map_err(NodeError::Report)?;
    }
    Ok(())
}
