//! `bench coll --explain`: the algorithm each collective would use at each
//! size, for each layout.
//!
//! The choice is the runtime's own ([`threadwire::group::tuning`]'s
//! choosing functions, the ones its collectives call), so it cannot drift
//! from what runs; the rule beside it names the threshold that decided.
//! A forced algorithm (`--algorithm`) replaces the rule, as
//! [`Group::set_algorithms`](threadwire::Group::set_algorithms) does.

use super::{Layout, Operation, Options};
use threadwire::group::tuning::{
    self, ALLGATHER_SHORT, ALLREDUCE_NODE_SLICES_MIN, ALLREDUCE_NODE_STAGE_MAX,
    ALLREDUCE_RING_PER_MEMBER, ALLREDUCE_SHORT, ALLTOALL_SHORT, BCAST_CHAIN_MEMBERS,
    BCAST_CHAIN_SEGMENT, BCAST_NODE_COPIES_MIN, BCAST_NODE_STAGE_MAX, BCAST_SHORT, HOST_BULK_CHUNK,
    HOST_BULK_MIN, HOST_STAGE_MAX, NODE_STAGE_ANY_SIZE_NODES, NODE_STAGE_CHUNK,
};
use threadwire::group::{
    Algorithms, AllgatherAlgorithm, AllreduceAlgorithm, AlltoallAlgorithm, BcastAlgorithm,
};

/// One layout's, operation's and size's algorithm.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The layout.
    pub layout: Layout,
    /// The collective.
    pub operation: Operation,
    /// Bytes, as the benchmark counts them.
    pub size: usize,
    /// The algorithm's name, as `--algorithm` takes it.
    pub algorithm: &'static str,
    /// Whether `--algorithm` forced it.
    pub forced: bool,
    /// The rule that chose it (the threshold crossed), or `forced`.
    pub rule: String,
}

/// The result of `--explain`.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The thresholds, by name, in bytes.
    pub thresholds: Vec<(&'static str, usize)>,
    /// A choice per layout, operation and size.
    pub choices: Vec<Choice>,
}

/// The choices for `options`' layouts, operations and sizes.
pub fn explain(options: &Options) -> Explanation {
    let choices = options
        .layouts
        .iter()
        .flat_map(|&l| options.operations.iter().map(move |&o| (l, o)))
        .flat_map(|(layout, operation)| {
            operation
                .sizes(&options.sizes)
                .into_iter()
                .map(move |size| choose(layout, operation, size, &options.algorithms))
        })
        .collect();
    Explanation {
        thresholds: vec![
            ("ALLREDUCE_SHORT", ALLREDUCE_SHORT),
            ("ALLREDUCE_RING_PER_MEMBER", ALLREDUCE_RING_PER_MEMBER),
            ("BCAST_SHORT", BCAST_SHORT),
            ("BCAST_CHAIN_SEGMENT", BCAST_CHAIN_SEGMENT),
            ("ALLGATHER_SHORT", ALLGATHER_SHORT),
            ("ALLTOALL_SHORT", ALLTOALL_SHORT),
            ("ALLREDUCE_NODE_STAGE_MAX", ALLREDUCE_NODE_STAGE_MAX),
            ("BCAST_NODE_STAGE_MAX", BCAST_NODE_STAGE_MAX),
            ("ALLREDUCE_NODE_SLICES_MIN", ALLREDUCE_NODE_SLICES_MIN),
            ("NODE_STAGE_CHUNK", NODE_STAGE_CHUNK),
            ("BCAST_NODE_COPIES_MIN", BCAST_NODE_COPIES_MIN),
            ("HOST_STAGE_MAX", HOST_STAGE_MAX),
            ("HOST_BULK_MIN", HOST_BULK_MIN),
            ("HOST_BULK_CHUNK", HOST_BULK_CHUNK),
        ],
        choices,
    }
}

/// The runtime's choice for `operation` at `size` among `layout`'s members
/// (an `f64` sum for allreduce: commutative), unless `forced`, and why.
fn choose(layout: Layout, operation: Operation, size: usize, forced: &Algorithms) -> Choice {
    let p = layout.members() as usize;
    let per_node = layout.threads as usize;
    let nodes = layout.nodes as usize;
    let within = |bytes: usize, max: &str| match nodes <= NODE_STAGE_ANY_SIZE_NODES {
        true => format!("nodes: {nodes} ≤ NODE_STAGE_ANY_SIZE_NODES"),
        false => format!("{bytes} ≤ {max}"),
    };
    // The benchmark's calls are blocking and its members consecutive.
    let staged = |how: String| {
        (
            "hierarchical",
            false,
            format!("{per_node} members a node, {how}"),
        )
    };
    // The host stage, as on one host (the benchmark's nodes share one
    // unless `--link` puts them on emulated hosts) with shared memory.
    let host_stage = |bytes: usize| {
        (layout.nodes > 1 && tuning::host_stage(bytes, per_node, 1)).then(|| {
            (
                "host-stage",
                false,
                format!("{per_node} member(s) a node, one host, {bytes} ≤ HOST_STAGE_MAX"),
            )
        })
    };
    // Large calls: the host stage's cross-memory reads between the nodes
    // (after the per-node stage where a node has several members).
    let host_bulk = |bytes: usize| {
        (layout.nodes > 1 && bytes > HOST_STAGE_MAX && tuning::host_bulk(bytes)).then(|| {
            (
                "host-stage",
                false,
                format!(
                    "{per_node} member(s) a node, one host, {bytes} ≥ HOST_BULK_MIN: \
                     reads of each other's buffers"
                ),
            )
        })
    };
    let (algorithm, forced, rule) = match operation {
        Operation::Barrier => match forced.barrier {
            Some(a) => (a.name(), true, "forced".into()),
            None if host_stage(0).is_some() => host_stage(0).expect("just checked"),
            None if tuning::barrier_node_stage(per_node) => {
                ("hierarchical", false, format!("{per_node} members a node"))
            }
            None => ("dissemination", false, "one member a node".into()),
        },
        Operation::Bcast => match forced.bcast {
            Some(a) => (a.name(), true, "forced".into()),
            None if host_bulk(size).is_some() => host_bulk(size).expect("just checked"),
            None if tuning::bcast_node_stage(size, nodes, per_node) => {
                let how = match nodes {
                    1 if tuning::bcast_by_copies(size) => {
                        format!("{size} ≥ BCAST_NODE_COPIES_MIN: copies from the root")
                    }
                    1 => format!("{size} < BCAST_NODE_COPIES_MIN: through the last to arrive"),
                    _ => format!("{} among the leaders", tuning::bcast(size, nodes)),
                };
                staged(format!("{}, {how}", within(size, "BCAST_NODE_STAGE_MAX")))
            }
            None => {
                let a = tuning::bcast(size, p);
                let rule = match a {
                    BcastAlgorithm::Binomial if size <= BCAST_SHORT => {
                        format!("{size} ≤ BCAST_SHORT")
                    }
                    BcastAlgorithm::Binomial => format!("{p} members < 3"),
                    BcastAlgorithm::Chain if p <= BCAST_CHAIN_MEMBERS => {
                        format!("{size} > BCAST_SHORT, {p} members ≤ BCAST_CHAIN_MEMBERS")
                    }
                    BcastAlgorithm::Chain => format!("{size} ≥ ({p} − 2) BCAST_CHAIN_SEGMENT"),
                    _ => format!("{p} members > BCAST_CHAIN_MEMBERS, {size} < ({p} − 2) segments"),
                };
                (a.name(), false, rule)
            }
        },
        Operation::Allreduce => {
            let bytes = size.div_ceil(8).max(1) * 8;
            match forced.allreduce {
                Some(a) => (a.name(), true, "forced".into()),
                None if host_stage(bytes).is_some() => host_stage(bytes).expect("just checked"),
                None if host_bulk(bytes).is_some() => host_bulk(bytes).expect("just checked"),
                None if tuning::allreduce_node_stage(bytes, nodes, per_node, true) => {
                    let how = match tuning::allreduce_by_slices(bytes) {
                        true => format!("{bytes} ≥ ALLREDUCE_NODE_SLICES_MIN: by slices"),
                        false => format!("{bytes} < ALLREDUCE_NODE_SLICES_MIN: at the leader"),
                    };
                    staged(format!(
                        "{}, {how}",
                        within(bytes, "ALLREDUCE_NODE_STAGE_MAX")
                    ))
                }
                None => {
                    let a = tuning::allreduce(bytes, p, true);
                    let rule = match a {
                        AllreduceAlgorithm::RecursiveDoubling if p == 1 => "one member".into(),
                        AllreduceAlgorithm::RecursiveDoubling => {
                            format!("{bytes} ≤ ALLREDUCE_SHORT")
                        }
                        AllreduceAlgorithm::Ring => {
                            format!("{bytes}/{p} ≥ ALLREDUCE_RING_PER_MEMBER")
                        }
                        _ => format!(
                            "ALLREDUCE_SHORT < {bytes}, {bytes}/{p} < ALLREDUCE_RING_PER_MEMBER"
                        ),
                    };
                    (a.name(), false, rule)
                }
            }
        }
        Operation::Allgather => {
            let total = size * p;
            match forced.allgather {
                Some(a) => (a.name(), true, "forced".into()),
                None => {
                    // The benchmark's nodes share one host: no multicast.
                    let a = tuning::allgather(total, false);
                    let rule = match a {
                        AllgatherAlgorithm::Bruck => format!("{total} gathered ≤ ALLGATHER_SHORT"),
                        _ => format!("{total} gathered > ALLGATHER_SHORT"),
                    };
                    (a.name(), false, rule)
                }
            }
        }
        Operation::Alltoall => match forced.alltoall {
            Some(a) => (a.name(), true, "forced".into()),
            None => {
                let a = tuning::alltoall(size);
                let rule = match a {
                    AlltoallAlgorithm::Bruck => format!("{size} a block ≤ ALLTOALL_SHORT"),
                    _ => format!("{size} a block > ALLTOALL_SHORT"),
                };
                (a.name(), false, rule)
            }
        },
    };
    Choice {
        layout,
        operation,
        size,
        algorithm,
        forced,
        rule,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sizes: Vec<usize>) -> Options {
        Options::new(sizes, "threadwire".into(), Vec::new())
    }

    #[test]
    fn the_rules_switch_at_the_thresholds() {
        let mut o = options(vec![8, 64 << 10, 1 << 20]);
        o.layouts.push("4x4".parse().unwrap());
        let e = explain(&o);
        let at = |layout: &str, operation, size| {
            let layout: Layout = layout.parse().unwrap();
            e.choices
                .iter()
                .find(|c| c.layout == layout && c.operation == operation && c.size == size)
                .map(|c| c.algorithm)
                .unwrap()
        };
        assert_eq!(at("4x1", Operation::Allreduce, 8), "host-stage");
        assert_eq!(at("4x1", Operation::Allreduce, 64 << 10), "host-stage");
        assert_eq!(at("4x1", Operation::Allreduce, 1 << 20), "host-stage");
        assert_eq!(at("1x16", Operation::Allreduce, 64 << 10), "hierarchical");
        assert_eq!(at("1x16", Operation::Allreduce, 1 << 20), "hierarchical");
        assert_eq!(at("2x8", Operation::Allreduce, 1 << 20), "host-stage");
        assert_eq!(at("4x1", Operation::Bcast, 8), "binomial");
        assert_eq!(at("2x8", Operation::Bcast, 64 << 10), "host-stage");
        assert_eq!(at("1x16", Operation::Bcast, 1 << 20), "hierarchical");
        assert_eq!(at("4x1", Operation::Bcast, 64 << 10), "host-stage");
        assert_eq!(at("4x1", Operation::Alltoall, 8), "bruck");
        assert_eq!(at("4x1", Operation::Alltoall, 64 << 10), "pairwise");
        assert_eq!(at("1x16", Operation::Allgather, 8), "bruck");
        assert_eq!(at("1x16", Operation::Allgather, 64 << 10), "ring");
        assert_eq!(at("1x16", Operation::Barrier, 0), "hierarchical");
        assert_eq!(at("4x1", Operation::Barrier, 0), "host-stage");
        assert_eq!(at("2x8", Operation::Allreduce, 8), "hierarchical");
        assert_eq!(at("2x8", Operation::Bcast, 8), "hierarchical");
        assert_eq!(at("4x4", Operation::Bcast, 8), "hierarchical");
        assert_eq!(at("4x4", Operation::Bcast, 64 << 10), "host-stage");
        assert_eq!(at("4x4", Operation::Allreduce, 1 << 20), "host-stage");
    }

    #[test]
    fn a_forced_algorithm_replaces_the_rule() {
        let mut o = options(vec![8]);
        o.algorithms.force("allreduce=ring").unwrap();
        let e = explain(&o);
        let c = e
            .choices
            .iter()
            .find(|c| c.operation == Operation::Allreduce)
            .unwrap();
        assert_eq!((c.algorithm, c.forced), ("ring", true));
    }
}
