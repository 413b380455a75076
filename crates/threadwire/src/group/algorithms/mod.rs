//! The algorithms, each an `async fn` over one [`Call`](super::schedule::Call);
//! their costs are in the [group module's docs](super). `p` is the group's
//! size, `r` this member's rank, `n` the elements in play.
//!
//! - [`tree`]: barrier, broadcast, reduce, gather(v), scatter(v);
//! - [`combine`]: allreduce, reduce-scatter, scan, exscan;
//! - [`exchange`]: allgather(v), alltoall(v);
//! - [`node_stage`]: barrier, allreduce and broadcast with the members of
//!   each node combined through memory, one leader per node on the network;
//! - [`host_stage`]: barrier and small allreduce with the node leaders of
//!   each host combined through a shared segment, one leader per host on
//!   the network;
//! - [`multicast`]: broadcast and allgather, each block sent once by its
//!   node's multicast stream.
//!
//! Where the operation is not commutative, blocks are combined in rank
//! order: `Reduction::merge` is told which side the other block is on.

pub(crate) mod combine;
pub(crate) mod exchange;
pub(crate) mod host_stage;
pub(crate) mod multicast;
pub(crate) mod node_stage;
pub(crate) mod tree;

/// `rank` relative to `root`.
pub(crate) fn relative(rank: usize, root: usize, p: usize) -> usize {
    (rank + p - root) % p
}

/// The rank of relative rank `vr`.
pub(crate) fn absolute(vr: usize, root: usize, p: usize) -> usize {
    (vr + root) % p
}

/// Where block `i` of `blocks` equal blocks of `n` elements starts:
/// contiguous, sizes differing by at most one.
pub(crate) fn block_start(i: usize, n: usize, blocks: usize) -> usize {
    i * n / blocks
}

/// The elements of block `i` of `blocks` over `n` elements.
pub(crate) fn block(i: usize, n: usize, blocks: usize) -> std::ops::Range<usize> {
    block_start(i, n, blocks)..block_start(i + 1, n, blocks)
}

/// The largest power of two not above `p` (p ≥ 1).
pub(crate) fn power_of_two_below(p: usize) -> usize {
    1 << (usize::BITS - 1 - p.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(power_of_two_below(1), 1);
        assert_eq!(power_of_two_below(7), 4);
        assert_eq!(power_of_two_below(8), 8);
        let sizes: Vec<usize> = (0..3).map(|i| block(i, 10, 3).len()).collect();
        assert_eq!(sizes, [3, 3, 4]);
        assert_eq!(block(0, 2, 4), 0..0);
        for r in 0..5 {
            assert_eq!(absolute(relative(r, 3, 5), 3, 5), r);
        }
    }
}
