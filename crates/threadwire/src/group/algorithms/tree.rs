//! Trees, stars and a chain: barrier, broadcast, reduce, gather(v),
//! scatter(v).

use super::{absolute, block, relative};
use crate::group::element::{Element, Reducible, Reduction};
use crate::group::schedule::{Call, Received};
use crate::group::tuning::BCAST_CHAIN_SEGMENT;
use crate::group::CollError;
use std::collections::VecDeque;

/// Dissemination barrier: in round k, signal r + 2^k, hear r − 2^k.
pub(crate) async fn barrier(c: &Call) -> Result<(), CollError> {
    let (p, r) = (c.size(), c.rank());
    let mut k = 1;
    while k < p {
        let heard = c.recv((r + p - k) % p);
        c.send_bytes((r + k) % p, Vec::new())?;
        heard.await?;
        k <<= 1;
    }
    Ok(())
}

/// Binomial broadcast of `buf`'s bytes; non-roots check the length.
pub(crate) async fn bcast_binomial<T: Element>(
    c: &Call,
    buf: &mut [T],
    root: usize,
) -> Result<(), CollError> {
    let (p, vr) = (c.size(), relative(c.rank(), root, c.size()));
    let (parent, mask) = binomial_parent(vr, p);
    let mut bytes = Vec::new();
    match parent {
        Some(parent) => {
            bytes = c.recv(absolute(parent, root, p)).await?.into_vec();
            c.decode_into(&bytes, buf)?;
        }
        None => T::write(buf, &mut bytes),
    }
    binomial_forward(c, bytes, vr, mask, root)
}

/// Relative rank `vr`'s parent in the binomial tree over `p` (none for
/// the root), and the mask below which its children are.
pub(crate) fn binomial_parent(vr: usize, p: usize) -> (Option<usize>, usize) {
    let mut mask = 1;
    while mask < p {
        if vr & mask != 0 {
            return (Some(vr - mask), mask);
        }
        mask <<= 1;
    }
    (None, mask)
}

/// Sends `bytes` to relative rank `vr`'s children in the binomial tree
/// (those below `mask`), nearest last: the last send takes the bytes
/// themselves.
pub(crate) fn binomial_forward(
    c: &Call,
    bytes: Vec<u8>,
    vr: usize,
    mask: usize,
    root: usize,
) -> Result<(), CollError> {
    let p = c.size();
    let children: Vec<usize> = std::iter::successors(Some(mask >> 1), |m| Some(m >> 1))
        .take_while(|&m| m > 0)
        .filter(|&m| vr + m < p)
        .map(|m| absolute(vr + m, root, p))
        .collect();
    if let Some((&last, others)) = children.split_last() {
        for &child in others {
            c.send_bytes(child, bytes.clone())?;
        }
        c.send_bytes(last, bytes)?;
    }
    Ok(())
}

/// Van de Geijn's broadcast: a binomial scatter of p blocks, then a ring
/// allgather of them.
pub(crate) async fn bcast_scatter_allgather<T: Element>(
    c: &Call,
    buf: &mut [T],
    root: usize,
) -> Result<(), CollError> {
    let (p, vr, n) = (c.size(), relative(c.rank(), root, c.size()), buf.len());
    // Relative blocks [lo, hi) as elements.
    let span = |lo: usize, hi: usize| block(lo, n, p).start..block(hi.min(p), n, p).start;
    let mut mask = 1;
    while mask < p {
        if vr & mask != 0 {
            let range = span(vr, vr + mask);
            let got = c
                .recv_exact::<T>(absolute(vr - mask, root, p), range.len())
                .await?;
            buf[range].copy_from_slice(&got);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < p {
            c.send(absolute(vr + mask, root, p), &buf[span(vr + mask, vr + 2 * mask)])?;
        }
        mask >>= 1;
    }
    let (left, right) = (absolute(vr + p - 1, root, p), absolute(vr + 1, root, p));
    for step in 0..p - 1 {
        let (out, into) = ((vr + p - step) % p, (vr + 2 * p - step - 1) % p);
        let got = c
            .sendrecv::<T>(right, &buf[block(out, n, p)], left, Some(block(into, n, p).len()))
            .await?;
        buf[block(into, n, p)].copy_from_slice(&got);
    }
    Ok(())
}

/// Receives a chain member keeps posted ahead of the one it waits for, so
/// that a segment that arrives while it forwards the previous one meets a
/// posted receive.
const CHAIN_RECEIVES_AHEAD: usize = 4;

/// What the chain's first segment carries after its elements: the root's
/// element count (`u64`, little-endian). A member whose buffer is longer
/// or shorter by whole segments would otherwise see only well-formed
/// segments, and stop early or wait for ones that never come.
const CHAIN_COUNT_BYTES: usize = 8;

/// Pipelined chain broadcast: the root cuts `buf` into segments of
/// [`BCAST_CHAIN_SEGMENT`] bytes (the last one shorter; one empty segment
/// when `buf` is empty) and sends them, in order, to relative rank 1; each
/// member receives segment k from its predecessor, checks it, and forwards
/// it to its successor while segment k + 1 is on its way. Sends are eager,
/// so every link of the chain carries a segment at once once the pipeline
/// is full.
pub(crate) async fn bcast_chain<T: Element>(
    c: &Call,
    buf: &mut [T],
    root: usize,
) -> Result<(), CollError> {
    let (p, vr, n) = (c.size(), relative(c.rank(), root, c.size()), buf.len());
    if p == 1 {
        return Ok(());
    }
    let per_segment = (BCAST_CHAIN_SEGMENT / T::SIZE).max(1);
    let segments = n.div_ceil(per_segment).max(1);
    let segment = |k: usize| k * per_segment..((k + 1) * per_segment).min(n);
    let successor = (vr + 1 < p).then(|| absolute(vr + 1, root, p));
    if vr == 0 {
        let next = successor.expect("a group of two or more has a rank 1");
        for k in 0..segments {
            let mut bytes = Vec::new();
            T::write(&buf[segment(k)], &mut bytes);
            if k == 0 {
                bytes.extend_from_slice(&(n as u64).to_le_bytes());
            }
            c.send_bytes(next, bytes)?;
        }
        return Ok(());
    }
    let predecessor = absolute(vr - 1, root, p);
    let mut posted = VecDeque::with_capacity(CHAIN_RECEIVES_AHEAD + 1);
    for k in 0..segments {
        while posted.len() <= CHAIN_RECEIVES_AHEAD && k + posted.len() < segments {
            posted.push_back(c.recv(predecessor));
        }
        let incoming = posted.pop_front().expect("segment k is posted");
        let bytes = incoming.await?.into_vec();
        let range = segment(k);
        let elements = if k == 0 {
            chain_first_elements(c, &bytes, n)?
        } else {
            &bytes[..]
        };
        c.decode_into(elements, &mut buf[range])?;
        if let Some(next) = successor {
            c.send_bytes(next, bytes)?;
        }
    }
    Ok(())
}

/// The elements of the chain's first segment, once the root's count after
/// them matches this member's `n`.
fn chain_first_elements<'b>(c: &Call, bytes: &'b [u8], n: usize) -> Result<&'b [u8], CollError> {
    let mismatch = |found| CollError::LengthMismatch {
        rank: c.rank(),
        expected: n,
        found,
    };
    let at = bytes
        .len()
        .checked_sub(CHAIN_COUNT_BYTES)
        .ok_or_else(|| mismatch(bytes.len()))?;
    let (elements, count) = bytes.split_at(at);
    let count = u64::from_le_bytes(count.try_into().expect("CHAIN_COUNT_BYTES is 8"));
    if count != n as u64 {
        return Err(mismatch(usize::try_from(count).unwrap_or(usize::MAX)));
    }
    Ok(elements)
}

/// Binomial reduce to `root`; a non-commutative operation reduces to rank
/// 0 in rank order and rank 0 forwards the result.
pub(crate) async fn reduce<T: Reducible>(
    c: &Call,
    mut acc: Vec<T>,
    op: &Reduction<T>,
    root: usize,
) -> Result<Option<Vec<T>>, CollError> {
    let (p, r, n) = (c.size(), c.rank(), acc.len());
    let tree_root = if op.is_commutative() { root } else { 0 };
    let vr = relative(r, tree_root, p);
    let mut mask = 1;
    while mask < p {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < p {
                let other = c.recv_exact(absolute(child, tree_root, p), n).await?;
                op.apply(&mut acc, &other)?;
            }
        } else {
            c.send(absolute(vr & !mask, tree_root, p), &acc)?;
            break;
        }
        mask <<= 1;
    }
    if tree_root != root {
        if r == tree_root {
            c.send(root, &acc)?;
            return Ok(None);
        }
        if r == root {
            return Ok(Some(c.recv_exact(tree_root, n).await?.into_vec()));
        }
    }
    Ok((r == root).then_some(acc))
}

/// Binomial gather of `n` elements per member.
pub(crate) async fn gather<T: Element>(
    c: &Call,
    data: &[T],
    root: usize,
) -> Result<Option<Vec<T>>, CollError> {
    let (p, n) = (c.size(), data.len());
    let vr = relative(c.rank(), root, p);
    let mut held = data.to_vec();
    let mut mask = 1;
    while mask < p {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < p {
                let blocks = mask.min(p - child);
                let got = c.recv_exact(absolute(child, root, p), blocks * n).await?;
                held.extend_from_slice(&got);
            }
        } else {
            c.send(absolute(vr - mask, root, p), &held)?;
            return Ok(None);
        }
        mask <<= 1;
    }
    // Root: `held` is in relative order.
    let mut out = Vec::with_capacity(p * n);
    for rank in 0..p {
        let i = relative(rank, root, p);
        out.extend_from_slice(&held[i * n..(i + 1) * n]);
    }
    Ok(Some(out))
}

/// Binomial scatter of `count` elements per member from `root`'s `data`.
pub(crate) async fn scatter<T: Element>(
    c: &Call,
    data: &[T],
    count: usize,
    root: usize,
) -> Result<Vec<T>, CollError> {
    let (p, r) = (c.size(), c.rank());
    let vr = relative(r, root, p);
    let mut held: Vec<T> = Vec::new();
    if r == root {
        if data.len() != count * p {
            return Err(CollError::LengthMismatch {
                rank: r,
                expected: count * p,
                found: data.len(),
            });
        }
        for i in 0..p {
            let rank = absolute(i, root, p);
            held.extend_from_slice(&data[rank * count..(rank + 1) * count]);
        }
    }
    let mut mask = 1;
    while mask < p {
        if vr & mask != 0 {
            let blocks = mask.min(p - vr);
            held = c
                .recv_exact(absolute(vr - mask, root, p), blocks * count)
                .await?
                .into_vec();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < p {
            let blocks = mask.min(p - vr - mask);
            let part = &held[mask * count..(mask + blocks) * count];
            c.send(absolute(vr + mask, root, p), part)?;
        }
        mask >>= 1;
    }
    held.truncate(count);
    Ok(held)
}

/// Linear gather of any lengths: `counts` (at the root) says how many
/// elements each member sends.
pub(crate) async fn gatherv<T: Element>(
    c: &Call,
    data: &[T],
    counts: &[usize],
    root: usize,
) -> Result<Option<Vec<Vec<T>>>, CollError> {
    let (p, r) = (c.size(), c.rank());
    if r != root {
        c.send(root, data)?;
        return Ok(None);
    }
    if counts.len() != p {
        return Err(CollError::LengthMismatch {
            rank: r,
            expected: p,
            found: counts.len(),
        });
    }
    if counts[r] != data.len() {
        return Err(CollError::LengthMismatch {
            rank: r,
            expected: counts[r],
            found: data.len(),
        });
    }
    let posted: Vec<_> = (0..p).map(|i| (i != r).then(|| c.recv(i))).collect();
    let mut out = Vec::with_capacity(p);
    for (i, incoming) in posted.into_iter().enumerate() {
        out.push(match incoming {
            Some(incoming) => c.decode(incoming.await?, Some(counts[i]))?.into_vec(),
            None => data.to_vec(),
        });
    }
    Ok(Some(out))
}

/// Linear scatter of any lengths: block i of `data` (`counts[i]` elements,
/// at the root) goes to member i.
pub(crate) async fn scatterv<T: Element>(
    c: &Call,
    data: &[T],
    counts: &[usize],
    root: usize,
) -> Result<Vec<T>, CollError> {
    let (p, r) = (c.size(), c.rank());
    if r != root {
        return c.recv_any(root).await.map(Received::into_vec);
    }
    let total: usize = counts.iter().sum();
    if counts.len() != p || total != data.len() {
        return Err(CollError::LengthMismatch {
            rank: r,
            expected: if counts.len() != p { p } else { total },
            found: if counts.len() != p {
                counts.len()
            } else {
                data.len()
            },
        });
    }
    let mut at = 0;
    let mut mine = Vec::new();
    for (i, &k) in counts.iter().enumerate() {
        if i == r {
            mine = data[at..at + k].to_vec();
        } else {
            c.send(i, &data[at..at + k])?;
        }
        at += k;
    }
    Ok(mine)
}
