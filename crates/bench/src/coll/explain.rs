//! `bench coll --explain`: the algorithm each collective would use at each
//! size, for each layout.
//!
//! The runtime keeps its choice to itself (`tuning`'s choosing functions
//! are crate-private); what it publishes are the thresholds
//! ([`threadwire::group::tuning`]'s constants) and the rules, in the table
//! of the `group` module's docs. The choices here apply those documented
//! rules to the published thresholds, so they follow a moved threshold but
//! not a changed rule: a test of the runtime's own choice belongs in the
//! runtime, once it exposes it. A forced algorithm (`--algorithm`) replaces
//! the rule, as [`Group::set_algorithms`](threadwire::Group::set_algorithms)
//! does.

use super::{Layout, Operation, Options};
use threadwire::group::tuning::{
    ALLGATHER_SHORT, ALLREDUCE_RING_PER_MEMBER, ALLREDUCE_SHORT, ALLTOALL_SHORT, BCAST_SHORT,
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
            ("ALLGATHER_SHORT", ALLGATHER_SHORT),
            ("ALLTOALL_SHORT", ALLTOALL_SHORT),
        ],
        choices,
    }
}

/// The documented rule for `operation` at `size` among `layout`'s members
/// (an `f64` sum for allreduce: commutative), unless `forced`.
fn choose(layout: Layout, operation: Operation, size: usize, forced: &Algorithms) -> Choice {
    let p = layout.members() as usize;
    let choice = |algorithm, forced, rule: String| Choice {
        layout,
        operation,
        size,
        algorithm,
        forced,
        rule,
    };
    let forced_rule = || "forced".to_string();
    match operation {
        Operation::Barrier => choice("dissemination", false, "always".into()),
        Operation::Bcast => match forced.bcast {
            Some(a) => choice(bcast_name(a), true, forced_rule()),
            None if size <= BCAST_SHORT => {
                choice("binomial", false, format!("{size} ≤ BCAST_SHORT"))
            }
            None if p < 4 => choice("binomial", false, format!("{p} members < 4")),
            None => choice(
                "scatter-allgather",
                false,
                format!("{size} > BCAST_SHORT, {p} members ≥ 4"),
            ),
        },
        Operation::Allreduce => {
            let bytes = size.div_ceil(8).max(1) * 8;
            match forced.allreduce {
                Some(a) => choice(allreduce_name(a), true, forced_rule()),
                None if p == 1 => choice("recursive-doubling", false, "one member".into()),
                None if bytes <= ALLREDUCE_SHORT => choice(
                    "recursive-doubling",
                    false,
                    format!("{bytes} ≤ ALLREDUCE_SHORT"),
                ),
                None if bytes / p >= ALLREDUCE_RING_PER_MEMBER => choice(
                    "ring",
                    false,
                    format!("{bytes}/{p} ≥ ALLREDUCE_RING_PER_MEMBER"),
                ),
                None => choice(
                    "rabenseifner",
                    false,
                    format!("ALLREDUCE_SHORT < {bytes}, {bytes}/{p} < ALLREDUCE_RING_PER_MEMBER"),
                ),
            }
        }
        Operation::Allgather => {
            let total = size * p;
            match forced.allgather {
                Some(a) => choice(allgather_name(a), true, forced_rule()),
                None if total <= ALLGATHER_SHORT => choice(
                    "bruck",
                    false,
                    format!("{total} gathered ≤ ALLGATHER_SHORT"),
                ),
                None => choice("ring", false, format!("{total} gathered > ALLGATHER_SHORT")),
            }
        }
        Operation::Alltoall => match forced.alltoall {
            Some(a) => choice(alltoall_name(a), true, forced_rule()),
            None if size <= ALLTOALL_SHORT => {
                choice("bruck", false, format!("{size} a block ≤ ALLTOALL_SHORT"))
            }
            None => choice(
                "pairwise",
                false,
                format!("{size} a block > ALLTOALL_SHORT"),
            ),
        },
    }
}

/// `--algorithm`'s name of `a`.
pub fn allreduce_name(a: AllreduceAlgorithm) -> &'static str {
    match a {
        AllreduceAlgorithm::RecursiveDoubling => "recursive-doubling",
        AllreduceAlgorithm::Rabenseifner => "rabenseifner",
        AllreduceAlgorithm::Ring => "ring",
        _ => "unknown",
    }
}

/// `--algorithm`'s name of `a`.
pub fn bcast_name(a: BcastAlgorithm) -> &'static str {
    match a {
        BcastAlgorithm::Binomial => "binomial",
        BcastAlgorithm::ScatterAllgather => "scatter-allgather",
        _ => "unknown",
    }
}

/// `--algorithm`'s name of `a`.
pub fn allgather_name(a: AllgatherAlgorithm) -> &'static str {
    match a {
        AllgatherAlgorithm::Bruck => "bruck",
        AllgatherAlgorithm::Ring => "ring",
        _ => "unknown",
    }
}

/// `--algorithm`'s name of `a`.
pub fn alltoall_name(a: AlltoallAlgorithm) -> &'static str {
    match a {
        AlltoallAlgorithm::Bruck => "bruck",
        AlltoallAlgorithm::Pairwise => "pairwise",
        _ => "unknown",
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
        let e = explain(&options(vec![8, 64 << 10, 1 << 20]));
        let at = |layout: &str, operation, size| {
            let layout: Layout = layout.parse().unwrap();
            e.choices
                .iter()
                .find(|c| c.layout == layout && c.operation == operation && c.size == size)
                .map(|c| c.algorithm)
                .unwrap()
        };
        assert_eq!(at("4x1", Operation::Allreduce, 8), "recursive-doubling");
        assert_eq!(at("4x1", Operation::Allreduce, 64 << 10), "rabenseifner");
        assert_eq!(at("4x1", Operation::Allreduce, 1 << 20), "ring");
        assert_eq!(at("1x16", Operation::Allreduce, 64 << 10), "rabenseifner");
        assert_eq!(at("2x8", Operation::Bcast, 8), "binomial");
        assert_eq!(at("2x8", Operation::Bcast, 1 << 20), "scatter-allgather");
        assert_eq!(at("4x1", Operation::Alltoall, 8), "bruck");
        assert_eq!(at("4x1", Operation::Alltoall, 64 << 10), "pairwise");
        assert_eq!(at("1x16", Operation::Allgather, 8), "bruck");
        assert_eq!(at("1x16", Operation::Allgather, 64 << 10), "ring");
        assert_eq!(at("1x16", Operation::Barrier, 0), "dissemination");
    }

    #[test]
    fn a_forced_algorithm_replaces_the_rule() {
        let mut o = options(vec![8]);
        super::super::force(&mut o.algorithms, "allreduce=ring").unwrap();
        let e = explain(&o);
        let c = e
            .choices
            .iter()
            .find(|c| c.operation == Operation::Allreduce)
            .unwrap();
        assert_eq!((c.algorithm, c.forced), ("ring", true));
    }
}
