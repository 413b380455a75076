//! Broadcast and allgather by multicast stream (`peer::multicast`): the
//! bytes leave their node once, whatever the number of receivers.
//!
//! Broadcast:
//!
//! 1. The root sends its buffer to every other member by its node's
//!    stream, in the group's multicast context with the call's tag, if
//!    the stream reaches every member's node (each has joined it), and is
//!    done: the stream repairs what the network loses.
//! 2. Otherwise it sends by the binomial tree, in the collective context
//!    (and says once per node, `-v`, which node the stream missed).
//! 3. Every other member posts two receives — from the root in the
//!    multicast context, from its parent in the binomial tree in the
//!    collective context — and takes whichever message comes; one that
//!    came by the tree it forwards to its own children in the tree. The
//!    other receive is withdrawn: each member gets exactly one message per
//!    call, so it can match nothing else.
//!
//! Members thus follow the root's choice without agreeing on it first,
//! and the choice may differ from call to call (a node joining the
//! stream late, one lost): only "multicast" itself must be chosen alike,
//! which the job's settings do (`Router::multicast_job`).
//!
//! Allgather, every member at once (also the second half of the ring
//! allreduce, each member's reduced block to all):
//!
//! 4. It posts a receive from every other member in the multicast
//!    context, then sends its block by its node's stream to them all —
//!    or, where the stream does not reach every member's node, to each
//!    directly in the same context (the receives take either).
//! 5. It waits for the p − 1 blocks and places each at its sender's
//!    rank. One step where Bruck takes ⌈log₂ p⌉ and the ring p − 1; each
//!    node's link carries its block once, and each receives the p − 1
//!    others, as in the ring.

use super::tree::{binomial_forward, binomial_parent};
use super::{absolute, relative};
use crate::group::element::Element;
use crate::group::schedule::Call;
use crate::group::CollError;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::task::Poll;

/// Allgather of `data`, equal at every member (steps 4–5).
pub(crate) async fn allgather<T: Element>(c: &Call, data: &[T]) -> Result<Vec<T>, CollError> {
    let n = data.len();
    let mut out = data.repeat(c.size());
    allgather_in_place(c, &mut out, |i| i * n..(i + 1) * n).await?;
    Ok(out)
}

/// Steps 4–5 over `buf`, where member `i`'s block is `buf[blocks(i)]`:
/// this member's goes to all, the others' come into theirs.
pub(crate) async fn allgather_in_place<T: Element>(
    c: &Call,
    buf: &mut [T],
    blocks: impl Fn(usize) -> Range<usize>,
) -> Result<(), CollError> {
    let (p, r) = (c.size(), c.rank());
    let incoming: Vec<_> = (0..p)
        .filter(|&i| i != r)
        .map(|i| (i, c.recv_multicast(i)))
        .collect();
    let mut bytes = Vec::new();
    T::write(&buf[blocks(r)], &mut bytes);
    c.send_multicast_or_each(bytes)?;
    for (i, block) in incoming {
        let bytes = block.await?.into_vec();
        c.decode_into(&bytes, &mut buf[blocks(i)])?;
    }
    Ok(())
}

/// Broadcast of `buf` from `root` (steps 1–3).
pub(crate) async fn bcast<T: Element>(c: &Call, buf: &mut [T], root: usize) -> Result<(), CollError> {
    let (p, vr) = (c.size(), relative(c.rank(), root, c.size()));
    let (parent, mask) = binomial_parent(vr, p);
    let Some(parent) = parent else {
        let mut bytes = Vec::new();
        T::write(buf, &mut bytes);
        return match c.send_multicast(bytes)? {
            None => Ok(()),
            Some(bytes) => binomial_forward(c, bytes, vr, mask, root),
        };
    };
    let mut by_stream = c.recv_multicast(root);
    let mut by_tree = c.recv(absolute(parent, root, p));
    let (message, from_tree) = std::future::poll_fn(|cx| {
        if let Poll::Ready(m) = Pin::new(&mut by_stream).poll(cx) {
            return Poll::Ready(m.map(|m| (m, false)));
        }
        Pin::new(&mut by_tree).poll(cx).map(|m| m.map(|m| (m, true)))
    })
    .await?;
    drop((by_stream, by_tree));
    let bytes = message.into_vec();
    c.decode_into(&bytes, buf)?;
    if from_tree {
        binomial_forward(c, bytes, vr, mask, root)?;
    }
    Ok(())
}
