//! The per-node stage's protocols for large messages (steps S1–S5 and
//! B1–B3 in the parent's docs): an allreduce whose members each combine a
//! slice, chunk by chunk, and a one-node broadcast that every member
//! copies from the root's slot at once.

use super::*;

/// Round `round` of call `s` of the allreduce by slices, as its counters
/// count: growing with both, above every earlier call's rounds.
fn tick(s: u64, round: usize) -> u64 {
    (s << 24) + round as u64
}

/// Allreduce by slices (steps S1–S5 in the module docs), a chunk of
/// [`tuning::NODE_STAGE_CHUNK`] bytes a round: every member publishes its
/// chunk, combines its slice of all of them in rank order, then (one
/// node) copies the others' slices out, or (several) the leader gathers
/// them; then the leader runs the flat allreduce among leaders and
/// releases.
pub(super) async fn allreduce_sliced<T: Reducible>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let (s, n, q) = (c.index, buf.len(), stage.team.slots.len());
    let slots = &stage.team.slots;
    let me = &slots[stage.index];
    let chunk = (tuning::NODE_STAGE_CHUNK / T::SIZE).max(1);
    let gathers = stage.one_node || stage.index == 0;
    me.length.store(n, Ordering::Relaxed);
    let combining = async {
        for round in 0..n.div_ceil(chunk).max(1) {
            let tick = tick(s, round);
            let range = round * chunk..((round + 1) * chunk).min(n);
            write_into(&me.data, &buf[range.clone()]);
            stage.meet(c, tick, published).await?;
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
            let m = range.len();
            let chunk = &mut buf[range];
            let part = combine_slice(c, stage, chunk, op, slice(m, q, stage.index))?;
            write_into(&me.part, &part);
            stage.meet(c, tick, combined).await?;
            if gathers {
                for (j, slot) in slots.iter().enumerate() {
                    let out = &mut chunk[slice(m, q, j)];
                    match j == stage.index {
                        true => out.copy_from_slice(&part),
                        false => c.decode_into(&read(&slot.part), out)?,
                    }
                }
            }
        }
        Ok(())
    };
    let combined = unless_aborted(c, combining.await);
    if stage.one_node {
        return combined;
    }
    if stage.index != 0 {
        combined?;
        stage.released(c, s).await?;
        return c.decode_into(&read(&stage.team.result), buf);
    }
    leaders_allreduce(c, stage, buf, op, combined).await
}

/// Slice `range` of the node's contributions combined in rank order: the
/// member's own from `buf`, the others' seen in place in their slots.
/// Every member checks every length, so all fail alike or none does.
fn combine_slice<T: Reducible>(
    c: &Call,
    stage: &NodeStage,
    buf: &[T],
    op: &Reduction<T>,
    range: Range<usize>,
) -> Result<Vec<T>, CollError> {
    let n = buf.len();
    let data: Vec<_> = stage.team.slots.iter().map(|slot| read(&slot.data)).collect();
    for bytes in &data {
        c.check_length::<T>(bytes, Some(n))?;
    }
    let bytes = range.start * T::SIZE..range.end * T::SIZE;
    let mut acc: Option<Vec<T>> = None;
    for (j, theirs) in data.iter().enumerate() {
        let theirs = match j == stage.index {
            true => Cow::Borrowed(&buf[range.clone()]),
            false => elements::<T>(&theirs[bytes.clone()]),
        };
        match acc.as_mut() {
            None => acc = Some(theirs.into_owned()),
            Some(acc) => op.apply(acc, &theirs)?,
        }
    }
    Ok(acc.unwrap_or_default())
}

/// A one-node broadcast by copies (steps B1–B3 in the module docs): the
/// root publishes its buffer once, every other member copies it from the
/// root's slot at once, and the root waits for their copies (rule 3).
pub(super) async fn bcast_by_copies<T: Element>(
    c: &Call,
    stage: &NodeStage,
    buf: &mut [T],
    root_slot: usize,
) -> Result<(), CollError> {
    let s = c.index;
    let me = &stage.team.slots[stage.index];
    if stage.index == root_slot {
        write_into(&me.data, buf);
        me.arrived.store(s, Ordering::SeqCst);
        stage.wake_others(c);
        let copied = wait(c, || stage.all_at(s, arrived)).await;
        return unless_aborted(c, copied);
    }
    let root = &stage.team.slots[root_slot];
    wait(c, || root.arrived.load(Ordering::Acquire) >= s).await?;
    let copied = c.decode_into(&read(&root.data), buf);
    me.arrived.store(s, Ordering::SeqCst);
    if stage.all_at(s, arrived) {
        stage.wake(c, root_slot);
    }
    unless_aborted(c, copied)
}
