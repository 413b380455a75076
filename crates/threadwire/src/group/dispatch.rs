//! Which algorithm each collective call runs: the checks a member makes
//! on its own arguments, the choice between the host stage, the per-node
//! stage and the flat algorithms (forced, or by [`tuning`]), and the
//! algorithm's `async fn` over the call.

use super::algorithms::node_stage::{self, NodeStage};
use super::algorithms::{combine, exchange, multicast, tree};
use super::element::{Element, Reducible, Reduction};
use super::schedule::Call;
use super::tuning::{self, AllgatherAlgorithm, AllreduceAlgorithm, AlltoallAlgorithm};
use super::tuning::{BarrierAlgorithm, BcastAlgorithm, ReduceScatterAlgorithm};
use super::CollError;

pub(super) fn check_root(c: &Call, root: usize) -> Result<(), CollError> {
    if root >= c.size() {
        return Err(CollError::RankOutOfRange {
            rank: root,
            size: c.size(),
        });
    }
    Ok(())
}

fn check_counts(c: &Call, counts: &[usize], len: usize) -> Result<(), CollError> {
    let total: usize = counts.iter().sum();
    let (expected, found) = if counts.len() != c.size() {
        (c.size(), counts.len())
    } else {
        (len, total)
    };
    if expected != found {
        return Err(CollError::LengthMismatch {
            rank: c.rank(),
            expected,
            found,
        });
    }
    Ok(())
}

fn not_commutative(algorithm: &'static str) -> CollError {
    CollError::NotApplicable {
        algorithm,
        why: "the operation is not commutative",
    }
}

/// The call's per-node stage, if it runs one: forced, or chosen by
/// `by_default` (one of [`tuning`]'s `*_node_stage`, given the stage and
/// whether the operation combines in rank order there); blocking and nonblocking calls alike, so that members may mix
/// the two forms for one call.
fn node_stage(
    c: &Call,
    forced: Option<bool>,
    in_rank_order: bool,
    by_default: impl FnOnce(&NodeStage, bool) -> bool,
) -> Result<Option<&NodeStage>, CollError> {
    let chosen = choose_node_stage(c, forced, in_rank_order, by_default);
    if !matches!(chosen, Ok(Some(_))) {
        c.leave_stage_queue();
    }
    chosen
}

fn choose_node_stage(
    c: &Call,
    forced: Option<bool>,
    in_rank_order: bool,
    by_default: impl FnOnce(&NodeStage, bool) -> bool,
) -> Result<Option<&NodeStage>, CollError> {
    let Some(stage) = c.comm.node_stage.as_ref() else {
        return Ok(None);
    };
    let ordered = in_rank_order || stage.consecutive;
    match forced {
        Some(true) if !ordered => Err(CollError::NotApplicable {
            algorithm: "hierarchical",
            why: "the operation is not commutative and a node's ranks are not consecutive",
        }),
        Some(on) => Ok(on.then_some(stage)),
        None => Ok(by_default(stage, ordered).then_some(stage)),
    }
}

/// Whether the call runs the host stage (as the per-node stage's step 3):
/// forced (`forced`: `Some(true)`) or chosen by [`tuning::host_stage`],
/// where the group has one and `bytes` fit its lines; the same choice at
/// every member.
fn host_stage(c: &Call, forced: Option<bool>, bytes: usize, in_rank_order: bool) -> bool {
    let Some(host) = c.comm.host_stage.get() else {
        return false;
    };
    let most_on_a_node = c.comm.node_stage.as_ref().map_or(1, |s| s.most_on_a_node);
    let fits = bytes <= tuning::HOST_STAGE_MAX && (in_rank_order || host.consecutive);
    let on = fits
        && forced.unwrap_or_else(|| tuning::host_stage(bytes, most_on_a_node, host.hosts));
    c.on_host_stage.set(on);
    on
}

/// Whether a call of `bytes` of elements `T` runs the host stage by
/// cross-memory reads (`host_stage/bulk.rs`): forced or chosen by
/// [`tuning::host_bulk`], where the group's nodes can (all on one host,
/// reading each other's memory), the elements' memory is their encoding,
/// and `bytes` exceed the lines; the same choice at every member.
fn host_bulk<T: Element>(c: &Call, forced: Option<bool>, bytes: usize, in_rank_order: bool) -> bool {
    let Some(host) = c.comm.host_stage.get() else {
        return false;
    };
    let plain = T::memory_mut(&mut []).is_some();
    let fits = host.bulk && plain && bytes > tuning::HOST_STAGE_MAX;
    let on = fits
        && (in_rank_order || host.consecutive)
        && forced.unwrap_or_else(|| tuning::host_bulk(bytes));
    c.on_host_stage.set(on);
    on
}

pub(super) async fn barrier(c: &Call) -> Result<(), CollError> {
    let forced = c.algorithms().barrier;
    let on_host = host_stage(c, forced.map(|a| a == BarrierAlgorithm::HostStage), 0, true);
    let forced = match on_host {
        true => Some(true),
        false => forced.map(|a| a != BarrierAlgorithm::Dissemination),
    };
    match node_stage(c, forced, true, |stage, _| tuning::barrier_node_stage(stage.most_on_a_node))? {
        Some(stage) => node_stage::barrier(c, stage).await,
        None => tree::barrier(c).await,
    }
}

pub(super) async fn bcast<T: Element>(c: &Call, buf: &mut [T], root: usize) -> Result<(), CollError> {
    check_root(c, root)?;
    let forced = c.algorithms().bcast;
    let bytes = std::mem::size_of_val(buf);
    let host = forced.map(|a| a == BcastAlgorithm::HostStage);
    let hierarchical = match host_bulk::<T>(c, host, bytes, true) {
        true => Some(true),
        false => forced.map(BcastAlgorithm::is_staged),
    };
    let by_default = |stage: &NodeStage, _| {
        tuning::bcast_node_stage(bytes, stage.nodes, stage.most_on_a_node)
    };
    if let Some(stage) = node_stage(c, hierarchical, true, by_default)? {
        return node_stage::bcast(c, stage, buf, root).await;
    }
    bcast_flat(c, buf, root).await
}

/// Broadcast without the per-node stage (also the leaders' stage).
pub(crate) async fn bcast_flat<T: Element>(
    c: &Call,
    buf: &mut [T],
    root: usize,
) -> Result<(), CollError> {
    let algorithm = match c.algorithms().bcast {
        Some(BcastAlgorithm::Hierarchical | BcastAlgorithm::HostStage) | None
            if c.by_multicast() =>
        {
            BcastAlgorithm::Multicast
        }
        Some(BcastAlgorithm::Hierarchical | BcastAlgorithm::HostStage) | None => {
            tuning::bcast(std::mem::size_of_val(buf), c.size())
        }
        Some(a) => a,
    };
    match algorithm {
        BcastAlgorithm::Multicast => multicast::bcast(c, buf, root).await,
        BcastAlgorithm::Binomial | BcastAlgorithm::Hierarchical | BcastAlgorithm::HostStage => {
            tree::bcast_binomial(c, buf, root).await
        }
        BcastAlgorithm::ScatterAllgather => tree::bcast_scatter_allgather(c, buf, root).await,
        BcastAlgorithm::Chain => tree::bcast_chain(c, buf, root).await,
    }
}

pub(crate) async fn allreduce<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    op.check()?;
    let forced = c.algorithms().allreduce;
    let (bytes, commutative) = (buf.len() * T::SIZE, op.is_commutative());
    let host = forced.map(|a| a == AllreduceAlgorithm::HostStage);
    let on_host = host_stage(c, host, bytes, commutative)
        || host_bulk::<T>(c, host, bytes, commutative);
    let hierarchical = match on_host {
        true => Some(true),
        false => forced.map(AllreduceAlgorithm::is_staged),
    };
    let by_default = |stage: &NodeStage, ordered| {
        tuning::allreduce_node_stage(bytes, stage.nodes, stage.most_on_a_node, ordered)
    };
    if let Some(stage) = node_stage(c, hierarchical, commutative, by_default)? {
        return node_stage::allreduce(c, stage, buf, op).await;
    }
    allreduce_flat(c, buf, op).await
}

/// Allreduce without the per-node stage (also the leaders' stage).
pub(crate) async fn allreduce_flat<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let commutative = op.is_commutative();
    let algorithm = match c.algorithms().allreduce {
        Some(AllreduceAlgorithm::Rabenseifner) if !commutative => {
            return Err(not_commutative("Rabenseifner"))
        }
        Some(AllreduceAlgorithm::Ring) if !commutative => return Err(not_commutative("ring")),
        Some(AllreduceAlgorithm::Hierarchical | AllreduceAlgorithm::HostStage) | None => {
            tuning::allreduce(buf.len() * T::SIZE, c.size(), commutative)
        }
        Some(a) => a,
    };
    match algorithm {
        AllreduceAlgorithm::RecursiveDoubling
        | AllreduceAlgorithm::Hierarchical
        | AllreduceAlgorithm::HostStage => {
            combine::allreduce_recursive_doubling(c, buf, op).await
        }
        AllreduceAlgorithm::Rabenseifner => combine::allreduce_rabenseifner(c, buf, op).await,
        AllreduceAlgorithm::Ring => combine::allreduce_ring(c, buf, op).await,
    }
}

pub(super) async fn reduce<T: Reducible>(
    c: &Call,
    data: Vec<T>,
    op: &Reduction<T>,
    root: usize,
) -> Result<Option<Vec<T>>, CollError> {
    check_root(c, root)?;
    op.check()?;
    tree::reduce(c, data, op, root).await
}

pub(super) async fn reduce_scatter<T: Reducible>(
    c: &Call,
    data: Vec<T>,
    counts: &[usize],
    op: &Reduction<T>,
) -> Result<Vec<T>, CollError> {
    op.check()?;
    check_counts(c, counts, data.len())?;
    let commutative = op.is_commutative();
    let algorithm = match c.algorithms().reduce_scatter {
        Some(ReduceScatterAlgorithm::Ring) if !commutative => return Err(not_commutative("ring")),
        Some(a) => a,
        None => tuning::reduce_scatter(commutative),
    };
    match algorithm {
        ReduceScatterAlgorithm::Ring => combine::reduce_scatter_ring(c, data, counts, op).await,
        ReduceScatterAlgorithm::ReduceScatterv => {
            combine::reduce_scatter_reduce_scatterv(c, data, counts, op).await
        }
    }
}

pub(super) async fn scan<T: Reducible>(
    c: &Call,
    data: Vec<T>,
    op: &Reduction<T>,
    inclusive: bool,
) -> Result<Option<Vec<T>>, CollError> {
    op.check()?;
    combine::scan(c, data, op, inclusive).await
}

pub(super) async fn allgather<T: Element>(c: &Call, data: &[T]) -> Result<Vec<T>, CollError> {
    let algorithm = c.algorithms().allgather.unwrap_or_else(|| {
        tuning::allgather(std::mem::size_of_val(data) * c.size(), c.by_multicast())
    });
    match algorithm {
        AllgatherAlgorithm::Bruck => exchange::allgather_bruck(c, data).await,
        AllgatherAlgorithm::Ring => exchange::allgather_ring(c, data).await,
        AllgatherAlgorithm::Multicast => multicast::allgather(c, data).await,
    }
}

pub(super) async fn alltoall<T: Element>(c: &Call, data: &[T]) -> Result<Vec<T>, CollError> {
    let p = c.size();
    if !data.len().is_multiple_of(p) {
        return Err(CollError::LengthMismatch {
            rank: c.rank(),
            expected: data.len() / p * p,
            found: data.len(),
        });
    }
    let n = data.len() / p;
    let algorithm = c
        .algorithms()
        .alltoall
        .unwrap_or_else(|| tuning::alltoall(n * T::SIZE));
    match algorithm {
        AlltoallAlgorithm::Bruck => exchange::alltoall_bruck(c, data, n).await,
        AlltoallAlgorithm::Pairwise => exchange::alltoall_pairwise(c, data, n).await,
    }
}
