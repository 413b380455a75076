//! The host stage for large buffers: the nodes of a group that all share
//! one host read each other's buffers where they are, with one
//! cross-memory copy (`process_vm_readv`, the transport's [`pull`], from
//! the pid each node wrote in its line) instead of messages. Open MPI's XHC and MPICH's
//! shared-memory collectives do the same for the ranks of a machine with
//! XPMEM or CMA; here it runs at node leaders, after the per-node stage
//! has combined each node's threads.
//!
//! It applies ([`HostStage::bulk`], agreed when the group was built) when
//! every node of the group is on one host and every leader's channels to
//! the others read by cross-memory attach, to elements whose memory is
//! their encoding ([`Element::memory_mut`]). Each node's line holds, in
//! its second half, its buffer's address and length and two more
//! counters that only grow, `reduced` and `done`, beside the line's
//! `arrived`. Call `s`, at the node of line `i` among `L`:
//!
//! Allreduce:
//!
//! 1. Write the buffer's address and length, store `arrived = s`; wait
//!    until every line arrived. A length that differs from this node's
//!    fails the call at every node alike (all read the same lengths).
//! 2. Reduce-scatter: slice `i` of the buffer (elements `i·n/L` to
//!    `(i+1)·n/L`), in chunks of [`tuning::HOST_BULK_CHUNK`] (so that the
//!    partial result stays in cache): read the chunk of every other
//!    line's buffer and combine it into this buffer, in line order
//!    (later lines after, earlier ones before: non-commutative operations
//!    combine in rank order when the nodes' ranks are consecutive, as the
//!    dispatch requires).
//! 3. Store `reduced = s`; wait until every line has.
//! 4. Allgather: read slice `j` of line `j`'s buffer into this buffer's
//!    slice `j`, for every other `j`.
//! 5. Store `done = s`; wait until every line has: no buffer goes back to
//!    its caller while another node may still read it.
//!
//! Broadcast from the node of line `r`:
//!
//! 1. Every node writes its buffer's address and length and stores
//!    `arrived = s`. The others wait for line `r`'s arrival and check the
//!    length against its.
//! 2. Each other node reads line `r`'s whole buffer into its own and
//!    stores `done = s`.
//! 3. Line `r`'s node waits until every line is done.
//!
//! Why it is sound: a node writes only its own slice in step 2 (which no
//! other node reads before `reduced`), and the other slices in step 4,
//! after every node finished reading them; a buffer's address is
//! rewritten only by a later call, which its node makes after step 5 (or,
//! at a broadcast's root, step 3). Reads land in this process's own
//! buffer through the kernel, so no memory of this process is ever
//! shared; a node that fails (a read fails because its peer died, a
//! length differs) returns its error, which reaches the others as the
//! collective's abort or their own view of the loss ([`schedule`] rule
//! 4), so no wait outlives it.
//!
//! Cost on one host of `L` nodes, `n` bytes: three meetings (a few cache
//! lines each) and, per node, `(L − 1)·n/L` bytes read and combined plus
//! `(L − 1)·n/L` read: `2(L − 1)/L · n` copied, at once on every core,
//! against the flat ring's `2(L − 1)/L · n` sent, received and copied
//! twice on the way. A broadcast reads `n` at every node but the root's,
//! at once.
//!
//! [`pull`]: threadwire_transport::shm::pull
//! [`HostStage::bulk`]: super::HostStage
//! [`tuning::HOST_BULK_CHUNK`]: crate::group::tuning::HOST_BULK_CHUNK
//! [`schedule`]: crate::group::schedule

use super::*;
use crate::group::tuning;
use std::ops::Range;

/// Slice `i` of `n` elements cut in `parts`.
fn slice(n: usize, parts: usize, i: usize) -> Range<usize> {
    i * n / parts..(i + 1) * n / parts
}

impl LeaderSide {
    /// Reads `out.len()` elements of line `line`'s buffer from element
    /// `from` on, into `out`.
    fn read<T: Element>(
        &self,
        c: &Call,
        segment: &Segment,
        line: usize,
        from: usize,
        out: &mut [T],
    ) -> Result<(), CollError> {
        let node = self.nodes[line];
        let address = segment.word(line, BULK_ADDRESS).load(Ordering::Relaxed);
        let bytes = T::memory_mut(out).expect("the dispatch checked the elements");
        let at = address + (from * T::SIZE) as u64;
        let pid = segment.word(line, PID).load(Ordering::Relaxed) as u32;
        let pulled = threadwire_transport::shm::pull(pid, &[(at, bytes.len() as u64)], bytes)
            .map_err(|e| e.to_string());
        pulled.map_err(|why| {
            c.interrupted().unwrap_or_else(|| {
                CollError::PeerLost(PeerLost {
                    node,
                    cause: LossCause::Failed(Failure::Channel(format!(
                        "cannot read its buffer: {why}"
                    ))),
                })
            })
        })
    }

    /// Stores `counter = s` in this node's line and waits until every
    /// line's `counter` reached `s`.
    async fn meet(&self, c: &Call, segment: &Segment, counter: usize) -> Result<(), CollError> {
        let s = c.index;
        segment.word(self.index, counter).store(s, Ordering::Release);
        wait(c, || {
            (0..segment.lines).all(|l| segment.word(l, counter).load(Ordering::Acquire) >= s)
        })
        .await
    }

    /// Step 1 of both: this node's buffer into its line, `arrived = s`.
    fn publish<T>(&self, c: &Call, segment: &Segment, buf: &[T]) {
        let line = self.index;
        let bytes = std::mem::size_of_val(buf) as u64;
        segment.word(line, BULK_ADDRESS).store(buf.as_ptr() as u64, Ordering::Relaxed);
        segment.word(line, BULK_LEN).store(bytes, Ordering::Relaxed);
        segment.word(line, ARRIVED).store(c.index, Ordering::Release);
    }

    /// Whether line `line`'s buffer has `bytes` bytes, as a typed error.
    fn check_len<T: Element>(
        &self,
        c: &Call,
        segment: &Segment,
        line: usize,
        n: usize,
    ) -> Result<(), CollError> {
        let theirs = segment.word(line, BULK_LEN).load(Ordering::Relaxed) as usize;
        if theirs != n * T::SIZE {
            return Err(CollError::LengthMismatch {
                rank: c.rank(),
                expected: n,
                found: theirs / T::SIZE,
            });
        }
        Ok(())
    }
}

/// The line of the node of rank `rank`.
pub(super) fn line_of(c: &Call, side: &LeaderSide, rank: usize) -> usize {
    let node = c.comm.members[rank].node;
    side.nodes.iter().position(|&n| n == node).expect("a member's node is on the host")
}

/// Allreduce, steps 1–5.
pub(super) async fn allreduce<T: Reducible>(
    c: &Call,
    side: &LeaderSide,
    segment: &Segment,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let (n, lines, me) = (buf.len(), segment.lines, side.index);
    side.publish(c, segment, buf);
    side.meet(c, segment, ARRIVED).await?;
    for line in 0..lines {
        side.check_len::<T>(c, segment, line, n)?;
    }
    // Step 2, a chunk at a time.
    let mine = slice(n, lines, me);
    let chunk = (tuning::HOST_BULK_CHUNK / T::SIZE).max(1);
    let mut theirs: Vec<T> = buf[mine.start..mine.end.min(mine.start + chunk)].to_vec();
    let mut start = mine.start;
    while start < mine.end {
        let range = start..(start + chunk).min(mine.end);
        let m = range.len();
        for line in (me + 1..lines).chain((0..me).rev()) {
            side.read(c, segment, line, range.start, &mut theirs[..m])?;
            op.merge(&mut buf[range.clone()], &theirs[..m], line < me)?;
        }
        start = range.end;
    }
    side.meet(c, segment, REDUCED).await?;
    // Step 4.
    for line in (0..lines).filter(|&l| l != me) {
        let range = slice(n, lines, line);
        let from = range.start;
        side.read(c, segment, line, from, &mut buf[range])?;
    }
    let done = side.meet(c, segment, DONE).await;
    unless_aborted(c, done)
}

/// Broadcast from the node of line `root`, steps 1–3.
pub(super) async fn bcast<T: Element>(
    c: &Call,
    side: &LeaderSide,
    segment: &Segment,
    buf: &mut [T],
    root: usize,
) -> Result<(), CollError> {
    let s = c.index;
    side.publish(c, segment, buf);
    if side.index == root {
        let done = side.meet(c, segment, DONE).await;
        return unless_aborted(c, done);
    }
    let arrived = segment.word(root, ARRIVED);
    wait(c, || arrived.load(Ordering::Acquire) >= s).await?;
    side.check_len::<T>(c, segment, root, buf.len())?;
    side.read(c, segment, root, 0, buf)?;
    segment.word(side.index, DONE).store(s, Ordering::Release);
    unless_aborted(c, Ok(()))
}
