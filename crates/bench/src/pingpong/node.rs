//! The node side of `bench pingpong`: thread to thread inside node 0
//! (path `thread`), then node 0 to node 1 over the job's channel (path
//! `shm` or `tcp`, as the launcher set `THREADWIRE_CHANNEL`); node 0
//! reports each size's sample as it is measured ([`NodeResult`]). With
//! [`Options::into`] each size runs twice, owned receives then receives
//! into a reused buffer, on both sides in the same order.

use super::{Budget, Error, Options, Receive, Sample};
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
        let (sizes_owned, receives) = (sizes.clone(), options.receives());
        let partner = ep
            .node()
            .spawn(move |ep| partner_side(&ep, Address::new(0, 0), &sizes_owned, receives, budget));
        // A size at a time, each reported at once: the launcher shows
        // progress as the results come.
        for &size in sizes {
            for &receive in options.receives() {
                leader(&ep, partner.address(), "thread", receive, size, budget)?;
            }
        }
        partner
            .join()
            .map_err(NodeError::Join)?
            .map_err(NodeError::Pingpong)?;
    }
    if let Some(channel) = channel {
        if me.node == 0 {
            for &size in sizes {
                for &receive in options.receives() {
                    leader(&ep, Address::new(1, 0), channel, receive, size, budget)?;
                }
            }
        } else if me.node == 1 {
            partner_side(&ep, Address::new(0, 0), sizes, options.receives(), budget)
                .map_err(NodeError::Pingpong)?;
        }
    }
    Ok(())
}

/// The partner's side of the leader's loop: per size, each receive.
fn partner_side(
    ep: &Endpoint,
    leader: Address,
    sizes: &[usize],
    receives: &[Receive],
    budget: Budget,
) -> Result<(), Error> {
    for &size in sizes {
        for &receive in receives {
            one(ep, leader, false, receive, size, budget)?;
        }
    }
    Ok(())
}

/// One size with `partner`, receiving as `receive` says.
fn one(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    receive: Receive,
    size: usize,
    budget: Budget,
) -> Result<Vec<Sample>, Error> {
    match receive {
        Receive::Owned => super::run(ep, partner, leader, &[size], budget),
        Receive::Into => super::run_into(ep, partner, leader, &[size], budget),
    }
}

/// Measures one size with `partner` and reports it as `path`'s.
fn leader(
    ep: &Endpoint,
    partner: Address,
    path: &str,
    receive: Receive,
    size: usize,
    budget: Budget,
) -> Result<(), NodeError> {
    let samples = one(ep, partner, true, receive, size, budget).map_err(NodeError::Pingpong)?;
    for sample in samples {
        NodeResult::Pingpong {
            path: path.to_string(),
            receive,
            sample,
        }
        .send(ep.node())
        .map_err(NodeError::Report)?;
    }
    Ok(())
}
