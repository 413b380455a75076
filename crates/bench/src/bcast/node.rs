//! The node side of `bench bcast`: thread 0 of every node is a member of
//! the world group; node 0 is the root. Per size, one untimed broadcast,
//! then timed ones, each until the root has an empty acknowledgement from
//! every receiver (the module docs' definition, [`super`]); the root
//! decides whether another follows and says so with a one-byte broadcast
//! outside the timing, then reports the size's times
//! ([`NodeResult::Bcast`]).

use super::{Options, ALGORITHM_VAR};
use crate::node_result::NodeResult;
use std::time::{Duration, Instant};
use threadwire::group::{Algorithms, ParseAlgorithmError};
use threadwire::{CollError, Group, InitError, ReportError, Tag};

/// The receivers' acknowledgements.
const ACK: Tag = 1;

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// The runtime refused the algorithm the job forces.
    #[error("forcing the broadcast's algorithm")]
    Algorithm(#[source] ParseAlgorithmError),
    /// The group or a broadcast failed.
    #[error("broadcast of {size} B")]
    Collective {
        /// Its size (0: the group's construction).
        size: usize,
        /// The failure.
        #[source]
        source: CollError,
    },
    /// A result could not be reported to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// Runs this node's part of a job that [`run`](super::run) started with
/// `options`.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let mut algorithms = Algorithms::new();
    if let Ok(forced) = std::env::var(ALGORITHM_VAR) {
        algorithms.force(&forced).map_err(NodeError::Algorithm)?;
    }
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let failed = |size| move |source| NodeError::Collective { size, source };
    let group = Group::world(&ep).map_err(failed(0))?;
    group.set_algorithms(algorithms);
    let largest = options.sizes.iter().copied().max().unwrap_or(0);
    let mut buffer = vec![0x5au8; largest];
    for &size in &options.sizes {
        let times = sizes_broadcasts(&group, &mut buffer[..size], options.per_size)
            .map_err(failed(size))?;
        if group.rank() == 0 {
            NodeResult::Bcast { size, ns: times }
                .send(ep.node())
                .map_err(NodeError::Report)?;
        }
    }
    Ok(())
}

/// One size: the warm-up, then timed broadcasts while they have taken
/// less than `budget`; the root's times (nothing elsewhere).
fn sizes_broadcasts(
    group: &Group,
    buffer: &mut [u8],
    budget: Duration,
) -> Result<Vec<u64>, CollError> {
    once(group, buffer)?;
    let mut times = Vec::new();
    let mut spent = Duration::ZERO;
    loop {
        let took = once(group, buffer)?;
        if group.rank() == 0 {
            spent += took;
            times.push(took.as_nanos() as u64);
        }
        let mut more = [u8::from(spent < budget)];
        group.bcast(&mut more, 0)?;
        if more[0] == 0 {
            return Ok(times);
        }
    }
}

/// One broadcast from rank 0 and every receiver's acknowledgement: the
/// root's time.
fn once(group: &Group, buffer: &mut [u8]) -> Result<Duration, CollError> {
    let started = Instant::now();
    group.bcast(buffer, 0)?;
    if group.rank() == 0 {
        for _ in 1..group.size() {
            group.recv(None, ACK)?;
        }
    } else {
        group.send(0, ACK, Vec::<u8>::new())?;
    }
    Ok(started.elapsed())
}
