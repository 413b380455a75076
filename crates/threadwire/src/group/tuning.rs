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
/// Open MPI: 10 KiB; the issue's starting point 8 KiB).
pub const ALLREDUCE_SHORT: usize = 8 << 10;
/// Allreduce: ring when each member's share (bytes / members) is at least
/// this; Rabenseifner between.
pub const ALLREDUCE_RING_PER_MEMBER: usize = 32 << 10;
/// Broadcast: binomial tree up to this many bytes (MPICH: 12 KiB), then
/// scatter + ring allgather or the pipelined chain ([`bcast`]).
pub const BCAST_SHORT: usize = 12 << 10;
/// Chain broadcast: the segment, in bytes (rounded down to whole elements,
/// at least one). A segment costs one α at each of the p − 1 hops, and the
/// pipeline's fill and drain cost p − 2 segment times: the optimum is
/// √(n α / ((p − 2) β)), about 25 KB for 1 MiB among 4 hosts on a
/// 100 Mbit link (α ≈ 100 µs) and about 100 KB through shared memory.
/// Measured among 4 members (PERFORMANCE-STUDIES, "Collectives: pipelined
/// chain broadcast"): 32 KiB is as fast as 64 KiB on one host up to
/// 1 MiB and faster above, and faster over 100 Mbit at every size (1 MiB:
/// 89 ms against 94 ms with 64 KiB and 105 ms with 128 KiB).
pub const BCAST_CHAIN_SEGMENT: usize = 32 << 10;
/// Chain broadcast: groups of up to this many members take it at every
/// size above [`BCAST_SHORT`] ([`bcast_chain_min`]); the largest measured.
pub const BCAST_CHAIN_MEMBERS: usize = 16;
/// Alltoall: Bruck up to this many bytes per block (MPICH: 256 B), then
/// pairwise exchange.
pub const ALLTOALL_SHORT: usize = 256;
/// Allgather: Bruck up to this many bytes gathered in all (MPICH: 80 KiB
/// for non-powers of two), then ring.
pub const ALLGATHER_SHORT: usize = 80 << 10;
/// The ring allreduce's allgather half goes by multicast streams (where
/// the group spans nodes that have them) from blocks of this many bytes:
/// 8 members on 100 Mbit/s hosts, 1 MiB took 202–210 ms against the
/// ring's 224–229 and 4 MiB 827–872 against 918–951, but 256 KiB (32 KiB
/// blocks) 50–53 against 45 (`bench coll --link fast100 --layout 8x1
/// --operations allreduce --channel udp --algorithm allreduce=ring`).
pub const ALLREDUCE_MULTICAST_BLOCK: usize = 128 << 10;

/// The per-node stage (members of one node combining through memory, one
/// leader per node on the network) combines an allreduce by slices from
/// this many bytes ([`allreduce_by_slices`]): every member combines its
/// slice of the node's buffers at once, instead of the leader all of them.
///
/// Measured (docs/PERFORMANCE-STUDIES.md, "Collectives: the per-node
/// stage for large messages"; 2 cores; 1x16, 2x8, 4x4): up to 128 KiB
/// the leader alone was faster (1x16, 64 KiB: 95 µs against 121), from
/// 512 KiB the slices were (1x16, 512 KiB: 1.05 ms against 2.19); at
/// 256 KiB the slices on 1x16 (all three pairs of runs), the leader on
/// 2x8 and 4x4.
pub const ALLREDUCE_NODE_SLICES_MIN: usize = 256 << 10;
/// The allreduce by slices combines a chunk of this many bytes of the
/// buffer a round, so that the node's published chunks stay in cache
/// (1x16, 1 MiB in one round: 5.8–6.3 ms; in 128 KiB rounds: 1.9–3.0 ms;
/// 64 and 256 KiB rounds were within noise of 128).
pub const NODE_STAGE_CHUNK: usize = 128 << 10;
/// A broadcast among the members of one node copies from the root's slot
/// at once from this many bytes ([`bcast_by_copies`]); below, through the
/// team's result, released by the last to arrive (1x16, 16 KiB: 16 µs
/// against 20; 32 KiB: 26 against 31; 64 KiB: 38 against 53; same study).
pub const BCAST_NODE_COPIES_MIN: usize = 32 << 10;

/// The host stage takes allreduces and broadcasts of at least this many
/// bytes by cross-memory reads ([`host_bulk`]), where the group can.
///
/// Measured on 4x1 (docs/PERFORMANCE-STUDIES.md, "Collectives: the host
/// stage by cross-memory reads"; 3 alternated pairs of runs, forced
/// against the flat choice): the reads lost below 32 KiB (allreduce 16 KiB:
/// 73–85 µs against 52–58; bcast 4 KiB: 15 against 6–8) and won from it
/// (allreduce 32 KiB: 58–73 against 72–88, 128 KiB: 101–135 against
/// 316–363; bcast 64 KiB: 20–24 against 52–93).
pub const HOST_BULK_MIN: usize = 32 << 10;
/// The host stage's allreduce by reads combines this many bytes of its
/// slice at a time, so that the partial result stays in cache.
pub const HOST_BULK_CHUNK: usize = 256 << 10;

/// Barrier algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierAlgorithm {
    /// Dissemination (⌈log₂ p⌉ rounds).
    Dissemination,
    /// The per-node stage, dissemination among the nodes' leaders.
    Hierarchical,
    /// The per-node stage, then the host stage (a host's nodes through
    /// one shared segment), dissemination among the hosts' leaders;
    /// `hierarchical` where the group has no host stage.
    HostStage,
}

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
    /// The per-node stage, the flat choice among the nodes' leaders
    /// (non-commutative operations only where every node's members are
    /// consecutive ranks).
    Hierarchical,
    /// The per-node stage, then the host stage: up to [`HOST_STAGE_MAX`]
    /// bytes through the host's segment, the flat choice among the hosts'
    /// leaders; on one host from [`HOST_BULK_MIN`] bytes by cross-memory
    /// reads ([`host_bulk`]); else as `hierarchical`.
    HostStage,
}

impl AllreduceAlgorithm {
    /// Whether it runs a stage (so is no choice for the leaders').
    pub(crate) fn is_staged(self) -> bool {
        matches!(self, AllreduceAlgorithm::Hierarchical | AllreduceAlgorithm::HostStage)
    }
}

/// Broadcast algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BcastAlgorithm {
    /// Binomial tree.
    Binomial,
    /// Binomial scatter, then ring allgather (van de Geijn).
    ScatterAllgather,
    /// A pipelined chain in rank order from the root, in segments of
    /// [`BCAST_CHAIN_SEGMENT`].
    Chain,
    /// The per-node stage, a binomial tree among the nodes' leaders.
    Hierarchical,
    /// The per-node stage, then the host stage's reads of the root
    /// node's buffer (a group on one host, [`HOST_BULK_MIN`] bytes or
    /// more); `hierarchical` where it does not apply.
    HostStage,
    /// Once by the root's multicast stream to every node (the UDP channel
    /// between hosts), a binomial tree where the stream does not reach
    /// every member's node; the default on such jobs (`multicast`).
    Multicast,
}

impl BcastAlgorithm {
    /// Whether it runs a stage (so is no choice for the leaders').
    pub(crate) fn is_staged(self) -> bool {
        matches!(self, BcastAlgorithm::Hierarchical | BcastAlgorithm::HostStage)
    }
}

/// Allgather algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllgatherAlgorithm {
    /// Bruck's concatenation (⌈log₂ p⌉ rounds, any p).
    Bruck,
    /// Ring.
    Ring,
    /// Every member's block once by its node's multicast stream to all
    /// the others, at once (the UDP channel between hosts); sent to each
    /// directly where the stream does not reach every member's node.
    Multicast,
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
    /// Barrier.
    pub barrier: Option<BarrierAlgorithm>,
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

/// The allreduce algorithm for `bytes` per member among `members`: recursive
/// doubling up to [`ALLREDUCE_SHORT`] (and for any non-commutative
/// operation), a ring once each member's share reaches
/// [`ALLREDUCE_RING_PER_MEMBER`], Rabenseifner between.
pub fn allreduce(bytes: usize, members: usize, commutative: bool) -> AllreduceAlgorithm {
    if !commutative || bytes <= ALLREDUCE_SHORT || members == 1 {
        AllreduceAlgorithm::RecursiveDoubling
    } else if bytes / members >= ALLREDUCE_RING_PER_MEMBER {
        AllreduceAlgorithm::Ring
    } else {
        AllreduceAlgorithm::Rabenseifner
    }
}

/// Whether a barrier runs the per-node stage, with at most
/// `most_on_a_node` members on one node: when some node has more than one.
pub fn barrier_node_stage(most_on_a_node: usize) -> bool {
    most_on_a_node > 1
}

/// Groups on up to this many nodes take the per-node stage for allreduce
/// and bcast at every size ([`allreduce_node_stage`], [`bcast_node_stage`]);
/// on more, up to [`ALLREDUCE_NODE_STAGE_MAX`] and [`BCAST_NODE_STAGE_MAX`].
pub const NODE_STAGE_ANY_SIZE_NODES: usize = 2;
/// The per-node stage for allreduce up to this many bytes on more than
/// [`NODE_STAGE_ANY_SIZE_NODES`] nodes.
pub const ALLREDUCE_NODE_STAGE_MAX: usize = 1 << 20;
/// The per-node stage for bcast up to this many bytes on more than
/// [`NODE_STAGE_ANY_SIZE_NODES`] nodes (the former `NODE_STAGE_MAX`).
pub const BCAST_NODE_STAGE_MAX: usize = 4 << 10;

/// Whether an allreduce of `bytes` runs the per-node stage among `nodes`
/// nodes, with at most `most_on_a_node` members on one: when some node has
/// more than one member, at every size on up to
/// [`NODE_STAGE_ANY_SIZE_NODES`] nodes and up to
/// [`ALLREDUCE_NODE_STAGE_MAX`] on more. `in_rank_order` is false for a
/// non-commutative operation on a group whose nodes' ranks are not
/// consecutive (which then runs flat).
///
/// Measured up to 16 MiB (docs/PERFORMANCE-STUDIES.md, "Collectives: the
/// per-node stage for large messages"; 2 cores, every node on one host):
/// with the slices from [`ALLREDUCE_NODE_SLICES_MIN`] the stage was faster
/// than the flat algorithms at every size on 1x16 (1 MiB: 1.3–2.6 ms
/// against 4.2–4.4), up to 1 MiB on 2x8 and within noise above it, and on
/// 4x4 faster up to 1 MiB but slower from 4 MiB (16 MiB: 120–148 ms
/// against 100–101), where the members' copies cost more than the flat
/// ring's messages between threads.
pub fn allreduce_node_stage(
    bytes: usize,
    nodes: usize,
    most_on_a_node: usize,
    in_rank_order: bool,
) -> bool {
    let size_ok = nodes <= NODE_STAGE_ANY_SIZE_NODES || bytes <= ALLREDUCE_NODE_STAGE_MAX;
    most_on_a_node > 1 && in_rank_order && size_ok
}

/// Whether a bcast of `bytes` runs the per-node stage among `nodes` nodes:
/// when some node has more than one member, at every size on up to
/// [`NODE_STAGE_ANY_SIZE_NODES`] nodes and up to [`BCAST_NODE_STAGE_MAX`]
/// on more. Measured as for [`allreduce_node_stage`]: faster than the flat
/// chain at every size on 1x16 and 2x8 (1x16, 1 MiB: 0.50–0.72 ms against
/// 1.11; 2x8: 0.65–0.90 against 1.32–1.91), slower on 4x4 from 16 KiB to
/// 1 MiB (16 KiB: 74–75 µs against 40–50), where four leaders' chain and
/// then their members' copies follow one another instead of one pipeline.
pub fn bcast_node_stage(bytes: usize, nodes: usize, most_on_a_node: usize) -> bool {
    most_on_a_node > 1 && (nodes <= NODE_STAGE_ANY_SIZE_NODES || bytes <= BCAST_NODE_STAGE_MAX)
}

/// Whether the per-node stage combines an allreduce of `bytes` by slices
/// at every member: from [`ALLREDUCE_NODE_SLICES_MIN`].
pub fn allreduce_by_slices(bytes: usize) -> bool {
    bytes >= ALLREDUCE_NODE_SLICES_MIN
}

/// Whether a one-node per-node stage broadcasts `bytes` by every member
/// copying from the root's slot: from [`BCAST_NODE_COPIES_MIN`].
pub fn bcast_by_copies(bytes: usize) -> bool {
    bytes >= BCAST_NODE_COPIES_MIN
}

/// The host stage (`group/algorithms/host_stage.rs`) carries allreduces up
/// to this many bytes in its lines.
pub const HOST_STAGE_MAX: usize = crate::group::algorithms::host_stage::HOST_STAGE_MAX;

/// Whether a barrier or allreduce of `bytes` runs the host stage, on a
/// group that has one (some host with several of its nodes), with at most
/// `most_on_a_node` members on one node and its nodes on `hosts` hosts:
/// where `bytes` ≤ [`HOST_STAGE_MAX`], for groups of one member a node on
/// one host — measured to win there (4x1: barrier 0.49, allreduce 8 B 0.58
/// of the flat time; 2x1: 0.72 and 0.82), not under the per-node stage
/// (2x8: 1.11 and 1.14), and not yet measured across hosts (docs/PERFORMANCE-STUDIES.md, "a host stage through shared
/// memory"). `THREADWIRE_HOST_STAGE=1` takes it wherever it fits.
pub fn host_stage(bytes: usize, most_on_a_node: usize, hosts: usize) -> bool {
    let by_default = most_on_a_node == 1 && hosts == 1;
    bytes <= HOST_STAGE_MAX
        && crate::group::algorithms::host_stage::switch().unwrap_or(by_default)
}

/// Whether an allreduce or broadcast of `bytes` runs the host stage by
/// cross-memory reads, on a group that can (all its nodes on one host,
/// reading each other's memory; `host_stage/bulk.rs`): from
/// [`HOST_BULK_MIN`]. `THREADWIRE_HOST_STAGE` switches it as the small
/// host stage.
pub fn host_bulk(bytes: usize) -> bool {
    bytes >= HOST_BULK_MIN && crate::group::algorithms::host_stage::switch().unwrap_or(true)
}

/// The broadcast algorithm for `bytes` among `members`: a binomial tree up
/// to [`BCAST_SHORT`] or with 2 members; the pipelined chain above that
/// once `bytes` reaches [`bcast_chain_min`] (at once up to
/// [`BCAST_CHAIN_MEMBERS`]); below it scatter + allgather.
pub fn bcast(bytes: usize, members: usize) -> BcastAlgorithm {
    if bytes <= BCAST_SHORT || members < 3 {
        BcastAlgorithm::Binomial
    } else if bytes >= bcast_chain_min(members) {
        BcastAlgorithm::Chain
    } else {
        BcastAlgorithm::ScatterAllgather
    }
}

/// The fewest bytes the chain broadcast is chosen for among `members`
/// (3 or more): any size above [`BCAST_SHORT`] up to
/// [`BCAST_CHAIN_MEMBERS`], measured; in larger groups (p − 2) segments
/// of [`BCAST_CHAIN_SEGMENT`], where the pipeline's fill costs at most
/// the transfer — the model's rule, not measured.
///
/// Measured (docs/PERFORMANCE-STUDIES.md, "Collectives: pipelined chain
/// broadcast"; 2 cores; 3x1, 4x1, 8x1 and 2x8, 16 KiB to 16 MiB, on one
/// host and on 100 Mbit emulated hosts): the chain was the fastest
/// everywhere except a few small sizes where the binomial tree was as
/// fast within noise, and scatter + allgather lost to it at every point
/// (1 MiB among 4 hosts: 89 ms for the chain, 1.05× one point-to-point
/// transfer, against 177 ms for scatter + allgather and 258 ms binomial;
/// on one host 1.8 ms against 5.3 and 5.1). The benchmark times calls
/// back to back, which hides part of the chain's fill behind the previous
/// call, and the emulated link passes an idle host's first 32 KiB at
/// once: both favour the chain at one or two segments, so groups larger
/// than those measured keep the model's rule. The rule is the same on
/// one host and across hosts: the choice needs no notion of placement.
pub fn bcast_chain_min(members: usize) -> usize {
    if members <= BCAST_CHAIN_MEMBERS {
        BCAST_SHORT + 1
    } else {
        (members - 2) * BCAST_CHAIN_SEGMENT
    }
}

/// The allgather algorithm for `total_bytes` gathered: Bruck up to
/// [`ALLGATHER_SHORT`], a ring above — where the group spans nodes that
/// have multicast streams (`multicast`: the UDP channel between hosts),
/// multicast instead of the ring: 8 members on 100 Mbit/s hosts, 1 MiB each, took
/// 652–692 ms against the ring's 736–771, 256 KiB 160–164 against 179
/// (`bench coll --link fast100 --layout 8x1 --operations allgather`),
/// level at 64 KiB, and Bruck keeps the small sizes (64 B: 226 µs
/// against 244).
pub fn allgather(total_bytes: usize, multicast: bool) -> AllgatherAlgorithm {
    if total_bytes <= ALLGATHER_SHORT {
        AllgatherAlgorithm::Bruck
    } else if multicast {
        AllgatherAlgorithm::Multicast
    } else {
        AllgatherAlgorithm::Ring
    }
}

/// The alltoall algorithm for blocks of `block_bytes`: Bruck up to
/// [`ALLTOALL_SHORT`], pairwise exchange above.
pub fn alltoall(block_bytes: usize) -> AlltoallAlgorithm {
    if block_bytes <= ALLTOALL_SHORT {
        AlltoallAlgorithm::Bruck
    } else {
        AlltoallAlgorithm::Pairwise
    }
}

/// The reduce-scatter algorithm: a ring for commutative operations, a
/// reduce to rank 0 and a scatter for the others.
pub fn reduce_scatter(commutative: bool) -> ReduceScatterAlgorithm {
    if commutative {
        ReduceScatterAlgorithm::Ring
    } else {
        ReduceScatterAlgorithm::ReduceScatterv
    }
}

/// A name no algorithm of that collective has, or a `COLLECTIVE=ALGORITHM`
/// that names no collective.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?}: one of barrier=dissemination|hierarchical|host-stage, \
     allreduce=recursive-doubling|rabenseifner|ring|hierarchical|host-stage, \
     bcast=binomial|scatter-allgather|chain|hierarchical|host-stage, allgather=bruck|ring|multicast, alltoall=bruck|pairwise, \
     reduce_scatter=ring|reduce-scatterv"
)]
pub struct ParseAlgorithmError(String);

/// Names for an algorithm enum: `name()`, `Display` and `FromStr` agree.
macro_rules! named {
    ($enum:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $enum {
            /// Its name, as [`Algorithms::force`] and `Display` spell it.
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $enum {
            type Err = ParseAlgorithmError;

            fn from_str(s: &str) -> Result<$enum, ParseAlgorithmError> {
                match s {
                    $($name => Ok($enum::$variant),)+
                    _ => Err(ParseAlgorithmError(s.to_string())),
                }
            }
        }
    };
}

named!(BarrierAlgorithm {
    Dissemination => "dissemination",
    Hierarchical => "hierarchical",
    HostStage => "host-stage",
});
named!(AllreduceAlgorithm {
    RecursiveDoubling => "recursive-doubling",
    Rabenseifner => "rabenseifner",
    Ring => "ring",
    Hierarchical => "hierarchical",
    HostStage => "host-stage",
});
named!(BcastAlgorithm {
    Binomial => "binomial",
    ScatterAllgather => "scatter-allgather",
    Chain => "chain",
    Hierarchical => "hierarchical",
    HostStage => "host-stage",
    Multicast => "multicast",
});
named!(AllgatherAlgorithm {
    Bruck => "bruck",
    Ring => "ring",
    Multicast => "multicast",
});
named!(AlltoallAlgorithm {
    Bruck => "bruck",
    Pairwise => "pairwise",
});
named!(ReduceScatterAlgorithm {
    Ring => "ring",
    ReduceScatterv => "reduce-scatterv",
});

impl Algorithms {
    /// Forces one algorithm, named `COLLECTIVE=ALGORITHM` (`allreduce=ring`).
    ///
    /// ```
    /// use threadwire::group::{AllreduceAlgorithm, Algorithms};
    ///
    /// let mut forced = Algorithms::new();
    /// forced.force("allreduce=ring").unwrap();
    /// assert_eq!(forced.allreduce, Some(AllreduceAlgorithm::Ring));
    /// assert!(forced.force("allreduce=bruck").is_err());
    /// assert_eq!(forced.forced(), ["allreduce=ring"]);
    /// ```
    pub fn force(&mut self, forced: &str) -> Result<(), ParseAlgorithmError> {
        let bad = || ParseAlgorithmError(forced.to_string());
        let (collective, algorithm) = forced.split_once('=').ok_or_else(bad)?;
        let algorithm = algorithm.trim();
        match collective.trim() {
            "barrier" => self.barrier = Some(algorithm.parse().map_err(|_| bad())?),
            "allreduce" => self.allreduce = Some(algorithm.parse().map_err(|_| bad())?),
            "bcast" => self.bcast = Some(algorithm.parse().map_err(|_| bad())?),
            "allgather" => self.allgather = Some(algorithm.parse().map_err(|_| bad())?),
            "alltoall" => self.alltoall = Some(algorithm.parse().map_err(|_| bad())?),
            "reduce_scatter" => self.reduce_scatter = Some(algorithm.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        }
        Ok(())
    }

    /// The forced algorithms, as [`force`](Self::force) takes them.
    pub fn forced(&self) -> Vec<String> {
        let mut names = Vec::new();
        if let Some(a) = self.barrier {
            names.push(format!("barrier={a}"));
        }
        if let Some(a) = self.allreduce {
            names.push(format!("allreduce={a}"));
        }
        if let Some(a) = self.bcast {
            names.push(format!("bcast={a}"));
        }
        if let Some(a) = self.allgather {
            names.push(format!("allgather={a}"));
        }
        if let Some(a) = self.alltoall {
            names.push(format!("alltoall={a}"));
        }
        if let Some(a) = self.reduce_scatter {
            names.push(format!("reduce_scatter={a}"));
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_is_forced_by_its_name() {
        let mut a = Algorithms::new();
        for forced in [
            "barrier=dissemination",
            "barrier=hierarchical",
            "allreduce=recursive-doubling",
            "allreduce=rabenseifner",
            "allreduce=ring",
            "allreduce=hierarchical",
            "bcast=binomial",
            "bcast=scatter-allgather",
            "bcast=chain",
            "bcast=hierarchical",
            "allgather=bruck",
            "allgather=ring",
            "allgather=multicast",
            "alltoall=bruck",
            "alltoall=pairwise",
            "reduce_scatter=ring",
            "reduce_scatter=reduce-scatterv",
        ] {
            a.force(forced).unwrap();
            assert!(a.forced().iter().any(|f| f == forced), "{forced}");
        }
        for bad in ["barrier=ring", "bcast=bruck", "allreduce", "allreduce=bruck", "=ring", ""] {
            assert!(a.force(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bcast_chain_for_large_buffers_from_three_members() {
        assert_eq!(bcast(1 << 20, 2), BcastAlgorithm::Binomial);
        assert_eq!(bcast(BCAST_SHORT, 4), BcastAlgorithm::Binomial);
        assert_eq!(bcast(BCAST_SHORT + 1, 3), BcastAlgorithm::Chain);
        assert_eq!(bcast(BCAST_SHORT + 1, 16), BcastAlgorithm::Chain);
        assert_eq!(bcast(256 << 10, 17), BcastAlgorithm::ScatterAllgather);
        let fill = 30 * BCAST_CHAIN_SEGMENT;
        assert_eq!(bcast(fill - 1, 32), BcastAlgorithm::ScatterAllgather);
        assert_eq!(bcast(fill, 32), BcastAlgorithm::Chain);
    }

    #[test]
    fn node_stage_with_members_sharing_a_node() {
        assert!(barrier_node_stage(2));
        assert!(!barrier_node_stage(1));
        assert!(allreduce_node_stage(16 << 20, 2, 2, true));
        assert!(allreduce_node_stage(ALLREDUCE_NODE_STAGE_MAX, 4, 2, true));
        assert!(!allreduce_node_stage(ALLREDUCE_NODE_STAGE_MAX + 1, 4, 2, true));
        assert!(!allreduce_node_stage(8, 1, 1, true));
        assert!(!allreduce_node_stage(8, 2, 4, false));
        assert!(bcast_node_stage(16 << 20, 1, 2));
        assert!(bcast_node_stage(BCAST_NODE_STAGE_MAX, 3, 2));
        assert!(!bcast_node_stage(BCAST_NODE_STAGE_MAX + 1, 3, 2));
        assert!(!bcast_node_stage(8, 1, 1));
        assert!(!allreduce_by_slices(ALLREDUCE_NODE_SLICES_MIN - 1));
        assert!(allreduce_by_slices(ALLREDUCE_NODE_SLICES_MIN));
        assert!(!bcast_by_copies(BCAST_NODE_COPIES_MIN - 1));
        assert!(bcast_by_copies(BCAST_NODE_COPIES_MIN));
    }
}
