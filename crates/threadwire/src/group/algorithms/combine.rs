//! Combining everyone's data: allreduce, reduce-scatter, scan, exscan.

use super::{block, multicast, power_of_two_below, tree};
use crate::group::element::{Reducible, Reduction};
use crate::group::schedule::Call;
use crate::group::tuning::ALLREDUCE_MULTICAST_BLOCK;
use crate::group::CollError;

/// The non-power-of-two fold (MPICH): of the first 2·rem ranks, each even
/// one hands its data to the odd one above it and sits out; the pof2
/// ranks left are renumbered in rank order. Returns the new rank, if any.
async fn fold<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<Option<usize>, CollError> {
    let (p, r) = (c.size(), c.rank());
    let rem = p - power_of_two_below(p);
    if r >= 2 * rem {
        return Ok(Some(r - rem));
    }
    if r % 2 == 0 {
        c.send(r + 1, buf)?;
        return Ok(None);
    }
    let lower = c.recv_exact(r - 1, buf.len()).await?;
    op.apply_before(&lower, buf)?;
    Ok(Some(r / 2))
}

/// The rank of new rank `new` after the fold.
fn unfolded(new: usize, rem: usize) -> usize {
    if new < rem {
        new * 2 + 1
    } else {
        new + rem
    }
}

/// The fold's way back: odd ranks give the result to the even one below.
async fn unfold<T: Reducible>(c: &Call, buf: &mut [T]) -> Result<(), CollError> {
    let (p, r) = (c.size(), c.rank());
    let rem = p - power_of_two_below(p);
    if r < 2 * rem {
        if r % 2 == 1 {
            c.send(r - 1, buf)?;
        } else {
            let got = c.recv_exact(r + 1, buf.len()).await?;
            buf.copy_from_slice(&got);
        }
    }
    Ok(())
}

/// Recursive doubling: log₂ pof2 exchanges of the whole buffer, combined
/// in rank order (any associative operation).
pub(crate) async fn allreduce_recursive_doubling<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let (p, r, n) = (c.size(), c.rank(), buf.len());
    let pof2 = power_of_two_below(p);
    if let Some(new) = fold(c, buf, op).await? {
        let mut mask = 1;
        while mask < pof2 {
            let partner = unfolded(new ^ mask, p - pof2);
            let other = c.sendrecv(partner, buf, partner, Some(n)).await?;
            op.merge(buf, &other, partner < r)?;
            mask <<= 1;
        }
    }
    unfold(c, buf).await
}

/// Rabenseifner: reduce-scatter by recursive halving over pof2 blocks,
/// then allgather by recursive doubling (commutative operations).
pub(crate) async fn allreduce_rabenseifner<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let (p, r, n) = (c.size(), c.rank(), buf.len());
    let pof2 = power_of_two_below(p);
    let span = |lo: usize, hi: usize| block(lo, n, pof2).start..block(hi - 1, n, pof2).end;
    if let Some(new) = fold(c, buf, op).await? {
        let (mut lo, mut hi) = (0, pof2);
        let mut mask = pof2 / 2;
        while mask > 0 {
            let partner = unfolded(new ^ mask, p - pof2);
            let mid = lo + (hi - lo) / 2;
            let (keep, give) = if new & mask == 0 {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            let kept = span(keep.0, keep.1);
            let other = c
                .sendrecv(partner, &buf[span(give.0, give.1)], partner, Some(kept.len()))
                .await?;
            op.merge(&mut buf[kept], &other, partner < r)?;
            (lo, hi) = keep;
            mask >>= 1;
        }
        let mut mask = 1;
        while mask < pof2 {
            let partner = unfolded(new ^ mask, p - pof2);
            let (plo, phi) = if new & mask == 0 {
                (hi, hi + mask)
            } else {
                (lo - mask, lo)
            };
            let theirs = span(plo, phi);
            let got = c.sendrecv(partner, &buf[span(lo, hi)], partner, Some(theirs.len())).await?;
            buf[theirs].copy_from_slice(&got);
            (lo, hi) = (lo.min(plo), hi.max(phi));
            mask <<= 1;
        }
    }
    unfold(c, buf).await
}

/// Ring: p − 1 steps of reduce-scatter, p − 1 of allgather, each moving
/// one p-th of the buffer to the right neighbour (commutative operations).
/// Where the group spans nodes with multicast streams and blocks are of
/// [`ALLREDUCE_MULTICAST_BLOCK`] bytes or more, the allgather is one
/// step: each member's reduced block once by its node's stream.
pub(crate) async fn allreduce_ring<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let (p, r, n) = (c.size(), c.rank(), buf.len());
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);
    for step in 0..p.saturating_sub(1) {
        let (out, into) = ((r + p - step) % p, (r + 2 * p - step - 1) % p);
        let other = c
            .sendrecv(right, &buf[block(out, n, p)], left, Some(block(into, n, p).len()))
            .await?;
        op.apply(&mut buf[block(into, n, p)], &other)?;
    }
    // Member i now holds the reduced block i + 1.
    let block_bytes = n / p.max(1) * T::SIZE;
    if block_bytes >= ALLREDUCE_MULTICAST_BLOCK && c.by_multicast() {
        return multicast::allgather_in_place(c, buf, |i| block((i + 1) % p, n, p)).await;
    }
    for step in 0..p.saturating_sub(1) {
        let (out, into) = ((r + 1 + p - step) % p, (r + p - step) % p);
        let got = c
            .sendrecv(right, &buf[block(out, n, p)], left, Some(block(into, n, p).len()))
            .await?;
        buf[block(into, n, p)].copy_from_slice(&got);
    }
    Ok(())
}

/// Ring reduce-scatter: member i ends with block i (`counts[i]` elements)
/// of the reduction (commutative operations).
pub(crate) async fn reduce_scatter_ring<T: Reducible>(
    c: &Call,
    mut buf: Vec<T>,
    counts: &[usize],
    op: &Reduction<T>,
) -> Result<Vec<T>, CollError> {
    let (p, r) = (c.size(), c.rank());
    let starts: Vec<usize> = counts
        .iter()
        .scan(0, |at, &k| {
            let s = *at;
            *at += k;
            Some(s)
        })
        .collect();
    let range = |i: usize| starts[i]..starts[i] + counts[i];
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);
    for step in 0..p - 1 {
        let (out, into) = ((r + 2 * p - step - 1) % p, (r + 2 * p - step - 2) % p);
        let other = c.sendrecv(right, &buf[range(out)], left, Some(counts[into])).await?;
        op.apply(&mut buf[range(into)], &other)?;
    }
    Ok(buf[range(r)].to_vec())
}

/// Reduce to rank 0 in rank order, then scatter the blocks (any operation).
pub(crate) async fn reduce_scatter_reduce_scatterv<T: Reducible>(
    c: &Call,
    buf: Vec<T>,
    counts: &[usize],
    op: &Reduction<T>,
) -> Result<Vec<T>, CollError> {
    let total = tree::reduce(c, buf, op, 0).await?.unwrap_or_default();
    tree::scatterv(c, &total, counts, 0).await
}

/// Inclusive scan by recursive doubling: after round k, `partial` holds
/// the aligned block of 2^(k+1) ranks around r and `result` its part up to
/// r (any associative operation: lower blocks combine on the left).
pub(crate) async fn scan<T: Reducible>(
    c: &Call,
    data: Vec<T>,
    op: &Reduction<T>,
    inclusive: bool,
) -> Result<Option<Vec<T>>, CollError> {
    let (p, r, n) = (c.size(), c.rank(), data.len());
    let mut partial = data.clone();
    let mut result = inclusive.then_some(data);
    let mut mask = 1;
    while mask < p {
        let partner = r ^ mask;
        if partner < p {
            let other = c.sendrecv(partner, &partial, partner, Some(n)).await?;
            if partner < r {
                op.apply_before(&other, &mut partial)?;
                result = Some(match result {
                    Some(mut res) => {
                        op.apply_before(&other, &mut res)?;
                        res
                    }
                    None => other.into_vec(),
                });
            } else {
                op.apply(&mut partial, &other)?;
            }
        }
        mask <<= 1;
    }
    Ok(result)
}
