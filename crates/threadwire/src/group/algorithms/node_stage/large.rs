//! The per-node stage's protocols for large messages (steps S1–S5 and
//! B1–B4 in the parent's docs): the members read each other's buffers
//! where they are, through their [`Window`]s, instead of through copies in
//! their slots — an allreduce whose members each combine a slice, and
//! broadcasts whose members copy from the root's or the leader's buffer.

use super::window::{Open, Pin};
use super::*;

/// Counts call `s` in the allreduce's `published` and `combined`.
fn tick(s: u64) -> u64 {
    s
}

/// Stores `copied = s` in the member's slot when dropped, on every path
/// out of its call: it reads no other member's window for `s` any more.
/// The last to store wakes the others (a leader may wait for it).
struct Copied<'a> {
    stage: &'a NodeStage,
    c: &'a Call,
}

impl Drop for Copied<'_> {
    fn drop(&mut self) {
        let s = self.c.index;
        self.stage.team.slots[self.stage.index]
            .copied
            .store(s, Ordering::SeqCst);
        if self.stage.all_at(s, copied) {
            self.stage.wake_others(self.c);
        }
    }
}

impl NodeStage {
    /// A pin on local member `j`'s window for call `s`, or why not: it
    /// left the call (failed, or an abort reached it first).
    fn pin<'s, T: Element>(&'s self, c: &Call, j: usize) -> Result<Pin<'s, T>, CollError> {
        self.team.slots[j].window.pin(c.index).ok_or_else(|| {
            c.failed_or_aborted().unwrap_or_else(|| {
                let node = c.comm.members[c.rank()].node;
                let thread = self.threads[j];
                let rank = c.comm.members.iter().position(|a| a.node == node && a.thread == thread);
                CollError::Aborted(rank.unwrap_or(c.rank()))
            })
        })
    }
}

/// Elements `range` of a pinned buffer, or a length mismatch.
fn part<'p, T: Element>(
    c: &Call,
    pin: &'p Pin<'_, T>,
    range: Range<usize>,
) -> Result<&'p [T], CollError> {
    let (expected, found) = (range.end, pin.len());
    pin.part(range).ok_or(CollError::LengthMismatch {
        rank: c.rank(),
        expected,
        found,
    })
}

/// Elements `range` of a pinned buffer to write, or a length mismatch.
fn part_mut<'p, T: Element>(
    c: &Call,
    pin: &'p mut Pin<'_, T>,
    range: Range<usize>,
) -> Result<&'p mut [T], CollError> {
    let (expected, found) = (range.end, pin.len());
    pin.part_mut(range).ok_or(CollError::LengthMismatch {
        rank: c.rank(),
        expected,
        found,
    })
}

/// Copies the whole of local member `j`'s buffer into `out`.
fn copy_from<T: Element>(
    c: &Call,
    stage: &NodeStage,
    j: usize,
    out: &mut [T],
) -> Result<(), CollError> {
    let pin = stage.pin::<T>(c, j)?;
    out.copy_from_slice(part(c, &pin, 0..out.len())?);
    Ok(())
}

/// Allreduce by slices (steps S1–S5 in the module docs): every member
/// opens its buffer and combines its slice of all of them in rank order,
/// a chunk of [`tuning::NODE_STAGE_CHUNK`] at a time, into the leader's
/// buffer; then (several nodes) the leader runs the leaders' stage and
/// releases; the members copy the leader's buffer.
pub(super) async fn allreduce_sliced<T: Reducible>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let (s, n, q, i) = (c.index, buf.len(), stage.team.slots.len(), stage.index);
    let slots = &stage.team.slots;
    slots[i].length.store(n, Ordering::Relaxed);
    // S1.
    let mut open = slots[i].window.open(s, buf);
    let _copied = Copied { stage, c };
    let combining = async {
        stage.meet(c, tick(s), published).await?;
        if let Some(found) = slots
            .iter()
            .map(|slot| slot.length.load(Ordering::Relaxed))
            .find(|&length| length != n)
        {
            return Err(CollError::LengthMismatch {
                rank: c.rank(),
                expected: n,
                found,
            });
        }
        // S2: into the leader's buffer (slot 0, the lowest rank: the
        // left fold of the node's contributions in rank order).
        let mine = slice(n, q, i);
        let chunk = (tuning::NODE_STAGE_CHUNK / T::SIZE).max(1);
        let mut leader = match i {
            0 => None,
            _ => Some(stage.pin::<T>(c, 0)?),
        };
        let mut start = mine.start;
        while start < mine.end {
            let range = start..(start + chunk).min(mine.end);
            for j in 1..q {
                let pin = match j == i {
                    true => None,
                    false => Some(stage.pin::<T>(c, j)?),
                };
                let (acc, theirs): (&mut [T], &[T]) = match (leader.as_mut(), &pin) {
                    (Some(l), Some(p)) => (part_mut(c, l, range.clone())?, part(c, p, range.clone())?),
                    (Some(l), None) => (part_mut(c, l, range.clone())?, open.part(range.clone())),
                    (None, Some(p)) => (open.part(range.clone()), part(c, p, range.clone())?),
                    (None, None) => unreachable!("the leader's own slice is its accumulator"),
                };
                op.apply(acc, theirs)?;
            }
            start = range.end;
        }
        drop(leader);
        stage.meet(c, tick(s), combined).await
    };
    let combined = unless_aborted(c, combining.await);
    if stage.one_node {
        // S3: the result is in the leader's buffer, which stays open
        // until every member has copied it.
        combined?;
        if i != 0 {
            copy_from(c, stage, 0, open.all())?;
        }
        return stage.meet(c, s, copied).await;
    }
    if i != 0 {
        // S5.
        combined?;
        stage.released(c, s).await?;
        return copy_from(c, stage, 0, open.all());
    }
    // S4.
    let result = leaders_allreduce(c, stage, open.all(), op, combined, false).await;
    result?;
    stage.meet(c, s, copied).await
}

/// A one-node broadcast by copies (steps B1–B3 in the module docs): the
/// root opens its buffer, every other member copies it at once, and the
/// root waits for their copies before it closes it.
pub(super) async fn bcast_by_copies<T: Element>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    root_slot: usize,
) -> Result<(), CollError> {
    let s = c.index;
    let me = &stage.team.slots[stage.index];
    if stage.index == root_slot {
        let open = me.window.open(s, buf);
        me.arrived.store(s, Ordering::SeqCst);
        stage.wake_others(c);
        let copied = wait(c, || stage.all_at(s, arrived)).await;
        drop(open);
        return unless_aborted(c, copied);
    }
    let root = &stage.team.slots[root_slot];
    wait(c, || root.arrived.load(Ordering::Acquire) >= s).await?;
    let copied = copy_from(c, stage, root_slot, buf);
    me.arrived.store(s, Ordering::SeqCst);
    if stage.all_at(s, arrived) {
        stage.wake(c, root_slot);
    }
    unless_aborted(c, copied)
}

/// A broadcast over several nodes by copies (step B4 in the module
/// docs): every member opens its buffer and arrives; the leader copies
/// from the root's buffer if the root is a member of its node, runs the
/// leaders' stage and releases; the members copy the leader's buffer,
/// which it closes once all have.
pub(super) async fn bcast_by_windows<T: Element>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    root: usize,
    root_slot: Option<usize>,
) -> Result<(), CollError> {
    let s = c.index;
    let me = &stage.team.slots[stage.index];
    let mut open: Open<'_, T> = me.window.open(s, buf);
    let _copied = Copied { stage, c };
    if stage.index != 0 {
        me.arrived.store(s, Ordering::SeqCst);
        if stage.all_arrived(s) {
            stage.wake(c, 0);
        }
        stage.released(c, s).await?;
        if root_slot == Some(stage.index) {
            return Ok(());
        }
        return copy_from(c, stage, 0, open.all());
    }
    let result = async {
        stage.arrivals(c, s).await?;
        if let Some(j) = root_slot.filter(|&j| j != 0) {
            copy_from(c, stage, j, open.all())?;
        }
        if c.on_host_stage.get() {
            super::super::host_stage::bcast(c, open.all(), root).await?;
        } else if let Some(lc) = stage.leaders_call(c) {
            crate::group::dispatch::bcast_flat(&lc, open.all(), stage.leader_of[root]).await?;
        }
        Ok(())
    }
    .await;
    let result = unless_aborted(c, result);
    stage.release(c, s, &result);
    result?;
    stage.meet(c, s, copied).await
}
