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
    /// A row's variable does not read `N:repetitions`.
    #[error("{0:?} is not N:repetitions")]
    Spec(String),
    /// Starting, joining or calling across the nodes failed.
    #[error("the remote row: {0}")]
    Remote(String),
    /// The ring's send or receive failed, or brought the wrong message.
    #[error("the ring: {0}")]
    Ring(String),
}

/// Entry point and handler of the remote rows.
const NOOP: &str = "bench.spawn.noop";
/// Node 0 to node 1, in the remote rows: the row is measured.
const FINISH: &str = "bench.spawn.finish";
/// Round trips per batch, and batches.
const ROUND_TRIPS: u32 = 2000;
const BATCHES: u32 = 5;

/// A remote row's job of two nodes: node 0 starts `count` fibers on node 1
/// and joins them, once untimed and `repetitions` times timed, then times
/// batches of active-message round trips; it reports
/// [`NodeResult::RemoteSpawned`].
pub fn remote(count: u32, repetitions: u32) -> Result<(), NodeError> {
    let failed = |e: &dyn std::fmt::Display| NodeError::Remote(e.to_string());
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let node = ep.node().clone();
    node.export(NOOP, |_ep, _args| Vec::new())
        .map_err(|e| failed(&e))?;
    let noop = node
        .register_inline(NOOP, |am| {
            let _ = am.reply(Vec::new());
        })
        .map_err(|e| failed(&e))?;
    // Node 0's word to node 1 that the row is measured.
    let done = std::sync::Arc::new(threadwire::fiber::sync::Event::new());
    let set_done = done.clone();
    let finish = node
        .register_inline(FINISH, move |am| {
            set_done.set();
            let _ = am.reply(Vec::new());
        })
        .map_err(|e| failed(&e))?;
    let world = threadwire::Group::world(&ep).map_err(|e| failed(&e))?;
    world.barrier().map_err(|e| failed(&e))?;
    if ep.address().node == 0 {
        let mut am_round_trip_us = Vec::new();
        for _ in 0..BATCHES {
            let start = std::time::Instant::now();
            for _ in 0..ROUND_TRIPS {
                ep.am_request(1, &noop, Vec::new())
                    .wait()
                    .map_err(|e| failed(&e))?;
            }
            am_round_trip_us.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(ROUND_TRIPS));
        }
        let once = || -> Result<f64, NodeError> {
            let start = std::time::Instant::now();
            let handles = (0..count)
                .map(|_| ep.spawn_remote(1, NOOP, Vec::new()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| failed(&e))?;
            for h in handles {
                h.join(&ep).map_err(|e| failed(&e))?;
            }
            Ok(start.elapsed().as_secs_f64() * 1e3)
        };
        once()?;
        let ms = (0..repetitions)
            .map(|_| once())
            .collect::<Result<Vec<_>, _>>()?;
        NodeResult::RemoteSpawned {
            ms,
            am_round_trip_us,
        }
        .send(ep.node())
        .map_err(NodeError::Report)?;
        ep.am_request(1, &finish, Vec::new())
            .wait()
            .map_err(|e| failed(&e))?;
    } else {
        // Node 1 serves as a node whose work is in fibers does: its main
        // thread parked, a fiber waiting, its fiber worker driving
        // progress (so a spawned fiber runs on the worker that read its
        // request, with no thread to wake).
        let waiter = node.spawn(move |_ep| done.wait());
        waiter.join().map_err(|e| failed(&e))?;
    }
    Ok(())
}

/// Node 0 to node 1: the row is measured.
const DONE: u32 = 1;

/// An added-nodes row's job of two nodes: node 0 adds `count` nodes of
/// this program, once untimed and `repetitions` times timed, each batch
/// told to end once added; it reports [`NodeResult::NodesAdded`]. Node 1
/// waits in a receive meanwhile (its progress driven, as a node that
/// waits for work is). The added nodes, numbered from 2, wait for their
/// word and end.
pub fn added(count: u32, repetitions: u32) -> Result<(), NodeError> {
    let failed = |e: &dyn std::fmt::Display| NodeError::Remote(e.to_string());
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let n0 = threadwire::Address::new(0, 0);
    if ep.address().node != 0 {
        return ep.recv(n0, DONE).map(drop).map_err(|e| failed(&e));
    }
    let once = || -> Result<f64, NodeError> {
        let start = std::time::Instant::now();
        let added = ep
            .add_nodes(&threadwire::AddNodes::new(count))
            .map_err(|e| failed(&e))?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if added.len() != count as usize {
            return Err(failed(&format!("{} of {count} nodes joined", added.len())));
        }
        for node in added {
            ep.send(threadwire::Address::new(node, 0), DONE, Vec::new())
                .map_err(|e| failed(&e))?;
        }
        Ok(ms)
    };
    once()?;
    let ms = (0..repetitions)
        .map(|_| once())
        .collect::<Result<Vec<_>, _>>()?;
    NodeResult::NodesAdded { ms }
        .send(ep.node())
        .map_err(NodeError::Report)?;
    ep.send(threadwire::Address::new(1, 0), DONE, Vec::new())
        .map_err(|e| failed(&e))
}

/// A launcher row's node ([`super::launchers`]): `init`, one message to
/// the right neighbour and one from the left, and out. It reports
/// nothing, as under a process manager it has no launcher to report to:
/// the row is the launcher's wall time.
pub fn ring() -> Result<(), NodeError> {
    let failed = |e: &dyn std::fmt::Display| NodeError::Ring(e.to_string());
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let (me, n) = (ep.node().id(), ep.node().nodes());
    let right = threadwire::Address::new((me + 1) % n, 0);
    let left = (me + n - 1) % n;
    let tag = super::launchers::RING_TAG;
    ep.send(right, tag, me.to_le_bytes().to_vec())
        .map_err(|e| failed(&e))?;
    let message = ep
        .recv(threadwire::Address::new(left, 0), tag)
        .map_err(|e| failed(&e))?;
    match message.into_vec() == left.to_le_bytes() {
        true => Ok(()),
        false => Err(failed(&format!(
            "n{me}: the message from n{left} is not its number"
        ))),
    }
}

/// Joins the job and reports when this node's code started and when it
/// was past `init` ([`NodeResult::Joined`]); the launcher times the
/// report's arrival. Returns when the job ends for this node.
///
/// In a remote row's job ([`REMOTE_VARIABLE`](super::REMOTE_VARIABLE)
/// set) it runs that row instead ([`remote`]), and likewise the added
/// nodes' and the launcher rows' ([`ring`]).
pub fn node() -> Result<(), NodeError> {
    if std::env::var_os(super::launchers::RING_VARIABLE).is_some() {
        return ring();
    }
    let row_of = |spec: String| {
        spec.split_once(':')
            .and_then(|(c, r)| Some((c.parse().ok()?, r.parse().ok()?)))
            .ok_or(NodeError::Spec(spec))
    };
    if let Ok(spec) = std::env::var(super::ADD_VARIABLE) {
        let (count, repetitions) = row_of(spec)?;
        return added(count, repetitions);
    }
    if let Ok(spec) = std::env::var(super::REMOTE_VARIABLE) {
        let (count, repetitions) = row_of(spec)?;
        return remote(count, repetitions);
    }
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
