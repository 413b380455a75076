//! The node side of `bench coll`: the node's members are, with one a
//! node, thread 0 (`Group::world`), and with `T` > 1, `T` spawned fibers
//! (threads 1 to `T` of every node, ranked by node), while thread 0 waits
//! for them — "nodes × fibers", so that a node's members run on its fiber
//! workers alone, as an MPI rank's OpenMP threads run on its cores; every
//! member runs [`member`], and rank 0 reports each row as it is measured
//! ([`NodeResult::Coll`]). The steps are the module docs' ([`super`]).

use super::{Layout, Operation, Options, Sample};
use crate::node_result::NodeResult;
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::{Address, CollError, Endpoint, Group, InitError, Op, ReportError};

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// A group or a collective failed.
    #[error("{operation} of {size} B: {source}")]
    Collective {
        /// The collective, or the group's construction.
        operation: &'static str,
        /// Its size.
        size: usize,
        /// The failure.
        source: CollError,
    },
    /// A member fiber failed.
    #[error("a member fiber")]
    Join(#[source] threadwire::JoinError),
    /// A result could not be reported to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// Runs this node's part of the job that [`sweep`](super::sweep) started
/// with `options`: the layout is the job's (its environment), or the
/// first of `options` outside a sweep.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let layout = super::job_layout()
        .or_else(|| options.layouts.first().copied())
        .unwrap_or(Layout {
            nodes: 1,
            threads: 1,
        });
    let ep = threadwire::init().map_err(NodeError::Init)?;
    if layout.threads == 1 {
        return member(&ep, layout, options, None);
    }
    let members: Arc<[Address]> = (0..ep.node().nodes())
        .flat_map(|node| (1..=layout.threads).map(move |thread| Address::new(node, thread)))
        .collect();
    let fibers: Vec<_> = (0..layout.threads)
        .map(|_| {
            let (options, members) = (options.clone(), members.clone());
            ep.node()
                .spawn(move |ep| member(&ep, layout, &options, Some(&members)))
        })
        .collect();
    for fiber in fibers {
        fiber.join().map_err(NodeError::Join)??;
    }
    Ok(())
}

/// A member's part: every operation and size of `options` that `layout`
/// runs, in order, in the group of `members` (thread 0 of every node if
/// `None`).
fn member(
    ep: &Endpoint,
    layout: Layout,
    options: &Options,
    members: Option<&[Address]>,
) -> Result<(), NodeError> {
    let failed = |operation: &'static str, size| {
        move |source| NodeError::Collective {
            operation,
            size,
            source,
        }
    };
    let group = match members {
        Some(members) => Group::new(ep, members),
        None => Group::world(ep),
    };
    let group = group.map_err(failed("the group", 0))?;
    group.set_algorithms(options.algorithms);
    for &operation in &options.operations {
        for size in options.split_sizes(layout, operation).0 {
            let sample = measure(&group, operation, size, options)
                .map_err(failed(operation.name(), size))?;
            if group.rank() == 0 {
                NodeResult::Coll(sample)
                    .send(ep.node())
                    .map_err(NodeError::Report)?;
            }
        }
    }
    Ok(())
}

/// A member's buffers for one operation and size, as `coll.c` sizes them.
struct Buffers {
    /// Bcast's buffer, allgather's block, or alltoall's blocks to all.
    bytes: Vec<u8>,
    /// Allreduce's vector: zeros, so that sums stay zero.
    doubles: Vec<f64>,
}

impl Buffers {
    fn new(operation: Operation, size: usize, members: usize) -> Buffers {
        let bytes = match operation {
            Operation::Bcast | Operation::Allgather => size,
            Operation::Alltoall => size * members,
            Operation::Barrier | Operation::Allreduce => 0,
        };
        let doubles = match operation {
            Operation::Allreduce => size.div_ceil(8).max(1),
            _ => 0,
        };
        Buffers {
            bytes: vec![0; bytes],
            doubles: vec![0.0; doubles],
        }
    }
}

/// One operation.
fn once(group: &Group, operation: Operation, buffers: &mut Buffers) -> Result<(), CollError> {
    match operation {
        Operation::Barrier => group.barrier(),
        Operation::Bcast => group.bcast(&mut buffers.bytes, 0),
        Operation::Allreduce => group.allreduce(&mut buffers.doubles, Op::Sum),
        Operation::Allgather => group.allgather(&buffers.bytes).map(drop),
        Operation::Alltoall => group.alltoall(&buffers.bytes).map(drop),
    }
}

/// `count` operations from a barrier, and the slowest member's time.
fn batch(
    group: &Group,
    operation: Operation,
    buffers: &mut Buffers,
    count: u64,
) -> Result<Duration, CollError> {
    group.barrier()?;
    let started = Instant::now();
    for _ in 0..count {
        once(group, operation, buffers)?;
    }
    let mut slowest = [started.elapsed().as_nanos() as u64];
    group.allreduce(&mut slowest, Op::Max)?;
    Ok(Duration::from_nanos(slowest[0]))
}

/// Calibrates and times `operation` at `size`; every member gets the same
/// sample (every decision is taken on times all members agreed on).
fn measure(
    group: &Group,
    operation: Operation,
    size: usize,
    options: &Options,
) -> Result<Sample, CollError> {
    let mut buffers = Buffers::new(operation, size, group.size());
    let repetition = options.per_repetition;
    // Doubling batches until one takes half a repetition: the first ones
    // are the warm-up.
    let mut count = 1u64;
    let per_operation = loop {
        let took = batch(group, operation, &mut buffers, count)?;
        if took >= repetition / 2 || count >= 1 << 24 {
            break took / count as u32;
        }
        count *= 2;
    };
    let iterations =
        (repetition.as_secs_f64() / per_operation.as_secs_f64().max(1e-9)).clamp(1.0, 1e8) as u64;
    let cap = options.max_ms_per_size.map(Duration::from_millis);
    let mut repetitions = Vec::new();
    let mut spent = Duration::ZERO;
    for _ in 0..options.repetitions.max(1) {
        let took = batch(group, operation, &mut buffers, iterations)?;
        repetitions.push(took / iterations as u32);
        spent += took;
        if cap.is_some_and(|cap| spent >= cap) && repetitions.len() >= 3 {
            break;
        }
    }
    let ran = repetitions.len() as u32;
    let (median, min, max) = crate::spread(&mut repetitions);
    Ok(Sample {
        operation,
        size,
        median,
        min,
        max,
        repetitions: ran,
        iterations,
    })
}
