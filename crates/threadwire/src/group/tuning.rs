//! Which algorithm runs a call: the thresholds, in one place, and the
//! per-group override that forces one (for tests and measurement).
//!
//! The thresholds start from MPICH's and Open MPI's tuned defaults; a
//! later `bench coll` moves them by measurement on this machine. Sizes are
//! in bytes of the whole buffer unless said otherwise. Every member must
//! choose the same algorithm, so a choice depends only on what every
//! member knows (sizes, the group's size, the operation), and a forced
//! algorithm must be forced at every member alike.

/// Allreduce: recursive doubling up to this many bytes (MPICH: 2 KiB,
/// Open MPI: 10 KiB; the starting point 8 KiB).
pub const ALLREDUCE_SHORT: usize = 8 << 10;
/// Allreduce: ring when each member's share (bytes / members) is at least
/// this; Rabenseifner between.
pub const ALLREDUCE_RING_PER_MEMBER: usize = 32 << 10;
/// Broadcast: binomial tree up to this many bytes (MPICH: 12 KiB), then
/// scatter + ring allgather.
pub const BCAST_SHORT: usize = 12 << 10;
/// Alltoall: Bruck up to this many bytes per block (MPICH: 256 B), then
/// pairwise exchange.
pub const ALLTOALL_SHORT: usize = 256;
/// Allgather: Bruck up to this many bytes gathered in all (MPICH: 80 KiB
/// for non-powers of two), then ring.
pub const ALLGATHER_SHORT: usize = 80 << 10;

/// Allreduce algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllreduceAlgorithm {
    /// Recursive doubling with the non-power-of-two fold.
    RecursiveDoubling,
    /// Reduce-scatter by recursive halving, then allgather by recursive
    /// doubling (commutative operations only).
    Rabenseifner,
    /// Ring reduce-scatter, then ring allgather (commutative only).
    Ring,
}

/// Broadcast algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BcastAlgorithm {
    /// Binomial tree.
    Binomial,
    /// Binomial scatter, then ring allgather (van de Geijn).
    ScatterAllgather,
}

/// Allgather algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllgatherAlgorithm {
    /// Bruck's concatenation (⌈log₂ p⌉ rounds, any p).
    Bruck,
    /// Ring.
    Ring,
}

/// Alltoall algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlltoallAlgorithm {
    /// Bruck's index algorithm (⌈log₂ p⌉ rounds, blocks forwarded).
    Bruck,
    /// Pairwise exchange (p − 1 rounds, each block sent once).
    Pairwise,
}

/// Reduce-scatter algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReduceScatterAlgorithm {
    /// Ring (commutative only).
    Ring,
    /// Reduce to rank 0 in rank order, then scatter.
    ReduceScatterv,
}

/// Algorithms forced on a group's collectives; `None` lets the thresholds
/// choose. Set with [`Group::set_algorithms`](super::Group::set_algorithms)
/// at every member alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Algorithms {
    /// Allreduce (and the reduce half of nothing else).
    pub allreduce: Option<AllreduceAlgorithm>,
    /// Broadcast.
    pub bcast: Option<BcastAlgorithm>,
    /// Allgather (fixed sizes; allgatherv always runs a ring).
    pub allgather: Option<AllgatherAlgorithm>,
    /// Alltoall (fixed sizes; alltoallv always runs pairwise).
    pub alltoall: Option<AlltoallAlgorithm>,
    /// Reduce-scatter.
    pub reduce_scatter: Option<ReduceScatterAlgorithm>,
}

impl Algorithms {
    /// Nothing forced.
    pub fn new() -> Algorithms {
        Algorithms::default()
    }
}

pub(crate) fn allreduce(bytes: usize, members: usize, commutative: bool) -> AllreduceAlgorithm {
    if !commutative || bytes <= ALLREDUCE_SHORT || members == 1 {
        AllreduceAlgorithm::RecursiveDoubling
    } else if bytes / members >= ALLREDUCE_RING_PER_MEMBER {
        AllreduceAlgorithm::Ring
    } else {
        AllreduceAlgorithm::Rabenseifner
    }
}

pub(crate) fn bcast(bytes: usize, members: usize) -> BcastAlgorithm {
    if bytes <= BCAST_SHORT || members < 4 {
        BcastAlgorithm::Binomial
    } else {
        BcastAlgorithm::ScatterAllgather
    }
}

pub(crate) fn allgather(total_bytes: usize) -> AllgatherAlgorithm {
    if total_bytes <= ALLGATHER_SHORT {
        AllgatherAlgorithm::Bruck
    } else {
        AllgatherAlgorithm::Ring
    }
}

pub(crate) fn alltoall(block_bytes: usize) -> AlltoallAlgorithm {
    if block_bytes <= ALLTOALL_SHORT {
        AlltoallAlgorithm::Bruck
    } else {
        AlltoallAlgorithm::Pairwise
    }
}

pub(crate) fn reduce_scatter(commutative: bool) -> ReduceScatterAlgorithm {
    if commutative {
        ReduceScatterAlgorithm::Ring
    } else {
        ReduceScatterAlgorithm::ReduceScatterv
    }
}
