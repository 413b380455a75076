//! The per-node stage's calls: barrier, allreduce and broadcast, each
//! the module's steps 1–5 around the leaders' stage (the host stage, or
//! the flat algorithm among the nodes' leaders).

use super::*;

/// Barrier: steps 1–5 with no data, a dissemination barrier among leaders.
pub(crate) async fn barrier(c: &Call, stage: &NodeStage) -> Result<(), CollError> {
    let _turn = stage.turn(c).await?;
    if stage.one_node {
        return stage.by_last(c, None, |_| Ok(()), |_| Ok(())).await;
    }
    let s = c.index;
    if stage.index != 0 {
        return stage.member(c, s, None, |_| Ok(())).await;
    }
    let result = async {
        stage.arrivals(c, s).await?;
        if c.on_host_stage.get() {
            crate::group::algorithms::host_stage::barrier(c).await?;
        } else if let Some(lc) = stage.leaders_call(c) {
            crate::group::algorithms::tree::barrier(&lc).await?;
        }
        Ok(())
    }
    .await;
    let result = unless_aborted(c, result);
    stage.release(c, s, &result);
    result
}

/// Allreduce: the node's buffers combined at the leader in rank order
/// (by slices at every member from [`tuning::allreduce_by_slices`]), then
/// the flat allreduce among leaders.
pub(crate) async fn allreduce<T: Reducible>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let n = buf.len();
    let _turn = stage.turn(c).await?;
    if tuning::allreduce_by_slices(n * T::SIZE) && !stage.alone() {
        return allreduce_sliced(c, stage, buf, op).await;
    }
    if stage.one_node {
        let combine = |team: &NodeTeam| {
            let first = read(&team.slots[0].data);
            c.check_length::<T>(&first, Some(n))?;
            let mut acc = elements::<T>(&first).into_owned();
            for slot in &team.slots[1..] {
                let data = read(&slot.data);
                c.check_length::<T>(&data, Some(n))?;
                op.apply(&mut acc, &elements::<T>(&data))?;
            }
            write_into(&team.result, &acc);
            Ok(())
        };
        let mine = bytes_of(buf);
        return stage
            .by_last(c, Some(mine), combine, |bytes| c.decode_into(bytes, buf))
            .await;
    }
    let s = c.index;
    if stage.index != 0 {
        let mine = bytes_of(buf);
        return stage
            .member(c, s, Some(mine), |bytes| c.decode_into(bytes, buf))
            .await;
    }
    let combined = async {
        stage.arrivals(c, s).await?;
        for slot in &stage.team.slots[1..] {
            let data = read(&slot.data);
            c.check_length::<T>(&data, Some(n))?;
            op.apply(buf, &elements::<T>(&data))?;
        }
        Ok(())
    }
    .await;
    leaders_allreduce(c, stage, buf, op, combined, true).await
}

/// The leader's steps 3 and 4 of an allreduce, once its node's part is
/// `combined` into `buf`: the host stage or the flat allreduce among the
/// leaders, the result into the team if `publish` (else the members read
/// it from `buf`), and the release.
pub(super) async fn leaders_allreduce<T: Reducible>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    op: &Reduction<T>,
    combined: Result<(), CollError>,
    publish: bool,
) -> Result<(), CollError> {
    let result = async {
        combined?;
        if c.on_host_stage.get() {
            crate::group::algorithms::host_stage::allreduce(c, buf, op).await?;
        } else if let Some(lc) = stage.leaders_call(c) {
            crate::group::dispatch::allreduce_flat(&lc, buf, op).await?;
        }
        if publish {
            stage.publish_result(buf);
        }
        Ok(())
    }
    .await;
    let result = unless_aborted(c, result);
    stage.release(c, c.index, &result);
    result
}

/// Broadcast: the root's buffer to its node's leader (through its slot),
/// the flat broadcast among leaders, then to every node's members; on one
/// node from [`tuning::bcast_by_copies`], every member copies from the
/// root's slot at once.
pub(crate) async fn bcast<T: Element>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    root: usize,
) -> Result<(), CollError> {
    let is_root = c.rank() == root;
    let _turn = stage.turn(c).await?;
    let at = |rank: usize| {
        stage
            .threads
            .iter()
            .position(|&t| t == c.comm.members[rank].thread)
    };
    if stage.one_node {
        let root_slot = at(root).expect("one node: the root is on it");
        if tuning::bcast_by_copies(std::mem::size_of_val(buf)) {
            return bcast_by_copies(c, stage, buf, root_slot).await;
        }
        let copy = |team: &NodeTeam| {
            let data = read(&team.slots[root_slot].data);
            let mut result = write(&team.result);
            result.clear();
            result.extend_from_slice(&data);
            Ok(())
        };
        let mine = is_root.then(|| bytes_of(buf));
        return stage
            .by_last(c, mine, copy, |bytes| c.decode_into(bytes, buf))
            .await;
    }
    let root_here = c.comm.members[root].node == c.comm.members[c.rank()].node;
    if tuning::bcast_by_copies(std::mem::size_of_val(buf)) {
        let root_slot = root_here.then(|| at(root)).flatten();
        return bcast_by_windows(c, stage, buf, root, root_slot).await;
    }
    let s = c.index;
    if stage.index != 0 {
        let mine = is_root.then(|| bytes_of(buf));
        return stage
            .member(c, s, mine, |bytes| c.decode_into(bytes, buf))
            .await;
    }
    let result = async {
        stage.arrivals(c, s).await?;
        if root_here && !is_root {
            let at = at(root).expect("the root is on this node");
            c.decode_into(&read(&stage.team.slots[at].data), buf)?;
        }
        if c.on_host_stage.get() {
            crate::group::algorithms::host_stage::bcast(c, buf, root).await?;
        } else if let Some(lc) = stage.leaders_call(c) {
            crate::group::dispatch::bcast_flat(&lc, buf, stage.leader_of[root]).await?;
        }
        stage.publish_result(buf);
        Ok(())
    }
    .await;
    let result = unless_aborted(c, result);
    stage.release(c, s, &result);
    result
}
