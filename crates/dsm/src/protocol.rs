//! The engine's messages, as threadwire active messages.
//!
//! | handler        | request                          | reply            | runs |
//! |----------------|----------------------------------|------------------|------|
//! | `dsm.fetch`    | unit (u32)                       | the unit's bytes | inline, at the home |
//! | `dsm.diff`     | `[unit][len][diff]`…             | empty, or an error text | inline, at the home |
//! | `dsm.barrier`  | epoch (u64), allocated bytes (u64), units written (u32…) | every node's `[node][count][units…]` | fiber, at node 0 |
//!
//! # The barrier
//!
//! 1. The threads of a node meet first (a fiber barrier of the node's
//!    participating threads); the last to arrive is the node's leader.
//! 2. The leader releases (engine rule 4): the node's diffs go to their
//!    homes and the leader waits until every home has applied them.
//! 3. The leader sends its arrival to node 0: the barrier's epoch, the
//!    bytes the node has allocated (so that a node that called `alloc`
//!    differently is caught) and its write notices.
//! 4. Node 0 runs each arrival in a fiber handler; they meet at a fiber
//!    barrier of as many parties as nodes, the last merging the arrivals;
//!    each then replies with every node's notices (the release).
//! 5. Each leader invalidates what the other nodes wrote (engine rule 5),
//!    then lets its node's threads go.

use crate::engine::Engine;
use std::sync::{Arc, Mutex};
use threadwire::{ActiveMessage, AmError, Endpoint, Handler, Node};
use threadwire_fiber::sync::Barrier;

/// The reply of a diff batch that was refused, as its first byte.
pub const REFUSED: u8 = 1;

/// What node 0 gathers for one barrier.
#[derive(Debug, Default)]
struct Round {
    /// `[node][count][units…]` per arrival, in arrival order.
    notices: Vec<u8>,
    /// (epoch, allocated) of the first arrival: every other must match.
    expected: Option<(u64, u64)>,
    /// An arrival that did not match.
    mismatch: bool,
    /// Arrivals still to reply with this round's merged notices.
    replied: usize,
    merged: Option<Arc<Vec<u8>>>,
}

/// The handlers of one node.
#[derive(Clone, Debug)]
pub struct Handlers {
    pub fetch: Handler,
    pub diff: Handler,
    pub barrier: Handler,
}

/// Registers the three handlers on `node` for `engine`.
pub fn register(node: &Node, engine: &Arc<Engine>) -> Result<Handlers, AmError> {
    let e = engine.clone();
    let fetch = node.register_inline("dsm.fetch", move |am: &mut ActiveMessage<'_>| {
        let bytes = am.payload().to_vec();
        let reply = match bytes.try_into().map(u32::from_le_bytes) {
            Ok(u) if (u as usize) < e.units() && e.home(u) == e.node => {
                // SAFETY: copied out at once; concurrent writers of the
                // home's threads are released later (engine rules).
                unsafe { e.bytes(u) }.to_vec()
            }
            _ => Vec::new(),
        };
        let _ = am.reply(reply);
    })?;
    let e = engine.clone();
    let diff = node.register_inline("dsm.diff", move |am: &mut ActiveMessage<'_>| {
        let batch = am.payload().to_vec();
        let reply = match e.apply(&batch) {
            Ok(()) => Vec::new(),
            Err(err) => {
                let mut r = vec![REFUSED];
                r.extend_from_slice(err.to_string().as_bytes());
                r
            }
        };
        let _ = am.reply(reply);
    })?;
    let nodes = engine.nodes as usize;
    let meeting = Arc::new(Barrier::new(nodes));
    let round = Arc::new(Mutex::new(Round::default()));
    let barrier = node.register_fiber(
        "dsm.barrier",
        move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let from = am.source().node;
            let bytes = am.payload().to_vec();
            let (epoch, allocated, units) = match parse_arrival(&bytes) {
                Some(a) => a,
                None => {
                    let _ = am.reply(vec![REFUSED]);
                    return;
                }
            };
            {
                let mut r = round.lock().unwrap_or_else(|p| p.into_inner());
                match r.expected {
                    None => r.expected = Some((epoch, allocated)),
                    Some(x) if x != (epoch, allocated) => r.mismatch = true,
                    Some(_) => {}
                }
                r.notices.extend_from_slice(&from.to_le_bytes());
                r.notices
                    .extend_from_slice(&(units.len() as u32 / 4).to_le_bytes());
                r.notices.extend_from_slice(units);
            }
            if meeting.wait().is_leader() {
                let mut r = round.lock().unwrap_or_else(|p| p.into_inner());
                let mut merged = vec![r.mismatch as u8];
                merged.append(&mut r.notices);
                r.merged = Some(Arc::new(merged));
                r.expected = None;
                r.mismatch = false;
                r.replied = 0;
            }
            // Every arrival of the round waits until the merge is there.
            meeting.wait();
            let merged = {
                let mut r = round.lock().unwrap_or_else(|p| p.into_inner());
                r.replied += 1;
                let m = r.merged.clone().expect("merged by the leader");
                if r.replied == nodes {
                    r.merged = None;
                }
                m
            };
            let _ = am.reply(merged.to_vec());
        },
    )?;
    Ok(Handlers {
        fetch,
        diff,
        barrier,
    })
}

/// An arrival's (epoch, allocated bytes, notices as raw u32s).
fn parse_arrival(b: &[u8]) -> Option<(u64, u64, &[u8])> {
    let epoch = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
    let allocated = u64::from_le_bytes(b.get(8..16)?.try_into().ok()?);
    let units = &b[16..];
    units
        .len()
        .is_multiple_of(4)
        .then_some((epoch, allocated, units))
}

/// An arrival's bytes.
pub fn arrival(epoch: u64, allocated: u64, units: &[u32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + 4 * units.len());
    b.extend_from_slice(&epoch.to_le_bytes());
    b.extend_from_slice(&allocated.to_le_bytes());
    for u in units {
        b.extend_from_slice(&u.to_le_bytes());
    }
    b
}

/// What the release said: whether the nodes disagreed, and the units each
/// other node wrote (the caller's own left out).
pub fn release(b: &[u8], me: u32) -> Option<(bool, Vec<u32>)> {
    let (&mismatch, mut rest) = b.split_first()?;
    let mut others = Vec::new();
    while !rest.is_empty() {
        let node = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
        let count = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
        let units = rest.get(8..8 + 4 * count)?;
        if node != me {
            others.extend(
                units
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))),
            );
        }
        rest = &rest[8 + 4 * count..];
    }
    Some((mismatch != 0, others))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_leaves_out_the_callers_own_notices() {
        let mut b = vec![0u8];
        for (node, units) in [(0u32, vec![1u32, 2]), (1, vec![3])] {
            b.extend_from_slice(&node.to_le_bytes());
            b.extend_from_slice(&(units.len() as u32).to_le_bytes());
            for u in units {
                b.extend_from_slice(&u.to_le_bytes());
            }
        }
        assert_eq!(release(&b, 0), Some((false, vec![3])));
        assert_eq!(release(&b, 1), Some((false, vec![1, 2])));
        assert_eq!(release(&b[..b.len() - 1], 0), None);
        let a = arrival(3, 4096, &[7, 9]);
        assert_eq!(parse_arrival(&a), Some((3, 4096, &a[16..])));
        assert_eq!(parse_arrival(&a[..17]), None);
    }
}
