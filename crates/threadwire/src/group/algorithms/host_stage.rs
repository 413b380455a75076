//! The host stage: the nodes of a group that share a host combine through
//! one shared-memory segment, with no message; one *host leader* per host
//! runs the flat algorithm among the host leaders. It sits between the
//! per-node stage ([`node_stage`]: the threads of one node) and the
//! network, as MPICH's `release_gather` and Open MPI's XHC do for the
//! processes of a machine.
//!
//! # Building
//!
//! When a group spanning several nodes is built ([`HostStage::build`],
//! collective, after the group's id is agreed), every member learns the
//! same partition of the group's nodes into hosts:
//!
//! 1. Each node's leader (its member of lowest rank) takes as its host the
//!    group's nodes that listen on its address and reach it through shared
//!    memory, and itself (`mates`: a host leader checks its pair with
//!    every other, the others theirs with the host leader); the host's
//!    leader is its node of lowest leader rank. That leader, if its host has other nodes,
//!    creates the segment: an anonymous memfd (the transport's
//!    [`Region`]: no name in any file system, so nothing outlives the
//!    processes, however they end), one 128-byte line per node of the
//!    host.
//! 2. All members exchange (an allgather) each leader's host leader, the
//!    size of its host and, at a host leader, its pid and the memfd's
//!    descriptor. The partition is taken only if every leader's view
//!    agrees with the others' (pairs that failed to share memory would
//!    break that); every member decides alike from the same data.
//! 3. The other leaders of each host open `/proc/<pid>/fd/<fd>` and map
//!    it; all members agree (an AND) that every open succeeded, and the
//!    host leaders close their descriptors: only the mappings hold the
//!    memory from then on. Any failure, or `THREADWIRE_HOST_STAGE=0` at
//!    any node (which still takes part in step 2, declining), leaves the
//!    group without a host stage: its collectives run as before.
//!    (`THREADWIRE_HOST_STAGE=1` takes it wherever it fits, for tests; like
//!    a forced algorithm, it must be set alike at every node.)
//!
//! # A call
//!
//! The stage runs at node leaders only, as the per-node stage's step 3,
//! for a call the runtime chose it for ([`tuning::host_stage`], or
//! forced as `host-stage`): call `s` is the group's `s`-th call.
//!
//! 1. A node leader that is not its host's leader writes its node's
//!    contribution (allreduce: up to [`HOST_STAGE_MAX`] bytes; barrier:
//!    nothing) into its line and stores `arrived = s`.
//! 2. The host leader waits until every line has `arrived ≥ s`, combines
//!    the contributions in line order (its own first) into its buffer,
//!    and runs the flat algorithm among the host leaders, if there are
//!    several hosts.
//! 3. It writes the result (or, on failure, the error and `s`) into its
//!    own line and stores `released = s`.
//! 4. Each other node leader waits for `released ≥ s` and reads the
//!    result (or returns the error), then releases its node's members.
//!
//! Large allreduces and broadcasts of a group whose nodes are all on one
//! host go another way: each node reads the others' buffers where they
//! are, by cross-memory attach ([`bulk`] gives the steps), with the
//! segment's lines for addresses and counters only.
//!
//! A group whose nodes are all on one host has no network stage, so no
//! leader either: each node writes its contribution into its line (in the
//! payload of the call's parity: even calls in one, odd calls in the
//! other) and stores `arrived = s`; every node waits until every line
//! has `arrived ≥ s` and combines all lines in line order itself, so all
//! get the same result. That is one crossing of the host instead of two
//! (arrive, release). A node writes call `s + 2`'s payload, the same one
//! as `s`'s, only after every node arrived at `s + 1`, i.e. after each
//! read the payloads of `s`.
//!
//! Memory ordering and reuse follow the per-node stage's rules 1–4: the
//! counters only grow (waiters compare with `≥`); data is written before
//! its counter is stored with `Release` and read after it is loaded with
//! `Acquire`; a leader writes call `s + 1`'s data only after it read the
//! result of `s`, and the host leader writes the result of `s + 1` only
//! after every line arrived at `s + 1`; the per-node stage's turn keeps one
//! stage call under way per member. Every word of the segment is an
//! atomic, so no process ever reads memory another writes without one.
//!
//! # Waiting and failures
//!
//! Nothing wakes a wait here when another process stores a counter. On an
//! OS thread it first checks the lines in a loop that spins 2 µs and then
//! yields the core, for the spin budget, then in a blocking wait yields
//! for 1 ms more (checking for lost members and aborts every 64 rounds),
//! with no system call but the yields between checks (so a `test` of a
//! nonblocking call in the stage may take up to the spin budget); a fiber
//! skips the spin and, in a blocking wait, yields to the node's other
//! fibers for that 1 ms, checking whenever its worker has nothing else to
//! run. Then it is the collective's ordinary wait, and while it lasts the node's waits re-check every 100 µs once their spin is spent
//! (the progress engine's step 9). It also ends on a member's node lost (the schedule's rule 4:
//! a dead node on this host never arrives, one elsewhere fails the host
//! leaders' flat stage) or an abort of the call, so it never hangs. A
//! released error travels in the host leader's line; a lost node there is
//! told as `PeerLost` of that node.
//!
//! Non-commutative reductions need the nodes of each host to be
//! consecutive in the leaders' order (and each node's members
//! consecutive ranks); otherwise the host stage is not used for them.
//!
//! [`node_stage`]: super::node_stage
//! [`tuning::host_stage`]: crate::group::tuning::host_stage

use crate::error::{Failure, LossCause, PeerLost};
use crate::group::element::{Element, Reducible, Reduction};
use crate::group::schedule::{Call, Comm};
use crate::group::CollError;
use crate::{Address, Endpoint};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use threadwire_fiber::SpinWait;
use threadwire_transport::shm::region::Region;

mod build;
mod bulk;

/// The largest allreduce (in bytes) the host stage carries in its lines.
pub const HOST_STAGE_MAX: usize = 48;

/// Bytes per node in the segment: two cache lines' worth on x86 (the
/// adjacent-line prefetcher pairs them) for the small calls, and as much
/// again for the large ones' words ([`bulk`]).
const LINE: usize = 256;
/// Word offsets in a line.
const ARRIVED: usize = 0;
const RELEASED: usize = 1;
/// The last failed call (host leader's line).
const FAILED: usize = 2;
/// The payload: a contribution, or the host leader's result; in a group
/// on one host, the contribution of even calls.
const PAYLOAD: usize = 4;
const PAYLOAD_WORDS: usize = HOST_STAGE_MAX / 8;
/// In a group on one host, the contribution of odd calls.
const PAYLOAD_ODD: usize = PAYLOAD + PAYLOAD_WORDS;
/// A failed call's encoded error (host leader's line; groups on several
/// hosts, which use no odd payload).
const ERROR: usize = PAYLOAD + PAYLOAD_WORDS;
const ERROR_WORDS: usize = 4;
/// Large calls ([`bulk`]): the node's buffer (address, bytes) and its
/// counters, in the line's second half.
const BULK_ADDRESS: usize = 16;
const BULK_LEN: usize = 17;
const REDUCED: usize = 18;
const DONE: usize = 19;
/// The node's pid, for the others' cross-memory reads (written when the
/// group is built: pairs connect on first use, so a node need not have a
/// channel to every other that would tell it).
const PID: usize = 20;
const _: () = assert!((PAYLOAD_ODD + PAYLOAD_WORDS) * 8 <= LINE / 2);
const _: () = assert!(BULK_ADDRESS * 8 >= LINE / 2 && (PID + 1) * 8 <= LINE);
const _: () = assert!((ERROR + ERROR_WORDS) * 8 <= LINE);

/// The error kind [`CollError::encode`] does not use, for `PeerLost`.
const PEER_LOST: u8 = 200;

/// `THREADWIRE_HOST_STAGE`: `Some(false)` builds no host stage,
/// `Some(true)` takes it wherever it fits, `None` as tuning says.
pub(crate) fn switch() -> Option<bool> {
    static SWITCH: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *SWITCH.get_or_init(|| match std::env::var(crate::env::HOST_STAGE).as_deref() {
        Ok("0") => Some(false),
        Ok("1") => Some(true),
        _ => None,
    })
}

/// The mapped segment of one host: one line per node of the host.
struct Segment {
    region: Region,
    lines: usize,
}

impl Segment {
    /// Word `w` of line `line`.
    fn word(&self, line: usize, w: usize) -> &AtomicU64 {
        assert!(line < self.lines && w < LINE / 8, "inside the segment");
        // SAFETY: the region is `lines · LINE` bytes, page-aligned, so the
        // offset is inside it and 8-byte aligned; it lives as long as
        // `self`, which the reference borrows; AtomicU64 has u64's layout,
        // and every process touches the segment through atomics only.
        unsafe {
            &*self
                .region
                .as_ptr()
                .add(line * LINE + w * 8)
                .cast::<AtomicU64>()
        }
    }
}

/// A node leader's side of the host stage.
struct LeaderSide {
    /// The node of each line of the segment.
    nodes: Vec<u32>,
    /// None when the node is alone on its host.
    segment: Option<Segment>,
    /// This node's line (0: the host leader).
    index: usize,
    /// The host leaders' sub-communication, at a host leader, when the
    /// group spans several hosts.
    host_leaders: Option<Rc<Comm>>,
    /// Whether the group's nodes are all on this host (no leader then:
    /// every node reads every line).
    one_host: bool,
}

/// One member's view of its group's host stage.
pub(crate) struct HostStage {
    /// Whether each host's members are consecutive ranks.
    pub(crate) consecutive: bool,
    /// The hosts the group's nodes are on.
    pub(crate) hosts: usize,
    /// Whether large calls may run the host stage ([`bulk`]): every node
    /// is on one host, and every leader reads its mates' memory.
    pub(crate) bulk: bool,
    /// At a node leader.
    side: Option<LeaderSide>,
}

impl HostStage {
    /// This node leader's side (None at other members).
    fn side(&self) -> Option<&LeaderSide> {
        self.side.as_ref()
    }
}

impl LeaderSide {
    /// Step 1 and 4 at a node leader that is not its host's leader:
    /// `mine` into its line, then the host leader's result words.
    async fn member(
        &self,
        c: &Call,
        segment: &Segment,
        mine: &[u64],
    ) -> Result<[u64; PAYLOAD_WORDS], CollError> {
        let s = c.index;
        for (w, &v) in mine.iter().enumerate() {
            segment.word(self.index, PAYLOAD + w).store(v, Ordering::Relaxed);
        }
        segment.word(self.index, ARRIVED).store(s, Ordering::Release);
        let released = segment.word(0, RELEASED);
        wait(c, || released.load(Ordering::Acquire) >= s).await?;
        if segment.word(0, FAILED).load(Ordering::Acquire) == s {
            c.heard_abort();
            // A loss this node saw itself names its own cause.
            return Err(c.interrupted().unwrap_or_else(|| decode_error(c, segment)));
        }
        let mut out = [0u64; PAYLOAD_WORDS];
        for (w, o) in out.iter_mut().enumerate() {
            *o = segment.word(0, PAYLOAD + w).load(Ordering::Relaxed);
        }
        Ok(out)
    }

    /// A call of a group on one host (module docs, "one host"): `mine`
    /// into this node's line, then, once every node arrived, `each` of
    /// every line's contribution (as many words as `mine`), in line order.
    async fn all_lines(
        &self,
        c: &Call,
        segment: &Segment,
        mine: &[u64],
        mut each: impl FnMut(&[u64; PAYLOAD_WORDS]) -> Result<(), CollError>,
    ) -> Result<(), CollError> {
        let s = c.index;
        let slot = if s.is_multiple_of(2) { PAYLOAD } else { PAYLOAD_ODD };
        for (w, &v) in mine.iter().enumerate() {
            segment.word(self.index, slot + w).store(v, Ordering::Relaxed);
        }
        segment.word(self.index, ARRIVED).store(s, Ordering::Release);
        wait(c, || {
            (0..segment.lines).all(|l| segment.word(l, ARRIVED).load(Ordering::Acquire) >= s)
        })
        .await?;
        if !mine.is_empty() {
            for l in 0..segment.lines {
                let mut line = [0u64; PAYLOAD_WORDS];
                for (w, word) in line.iter_mut().enumerate().take(mine.len()) {
                    *word = segment.word(l, slot + w).load(Ordering::Relaxed);
                }
                each(&line)?;
            }
        }
        unless_aborted(c, Ok(()))
    }

    /// Step 2's wait at the host leader.
    async fn arrivals(&self, c: &Call, segment: &Segment) -> Result<(), CollError> {
        let s = c.index;
        wait(c, || {
            (1..segment.lines).all(|l| segment.word(l, ARRIVED).load(Ordering::Acquire) >= s)
        })
        .await
    }

    /// The host leaders' call of the same tag, with the group's forced
    /// algorithms but no stage.
    fn leaders_call(&self, c: &Call) -> Option<Call> {
        let leaders = self.host_leaders.as_ref()?;
        let mut forced = c.algorithms();
        forced.barrier = None;
        forced.allreduce = None;
        leaders.algorithms.set(forced);
        Some(Call::with_tag(leaders, c.tag))
    }

    /// Step 3: the result (or the error) out, the host's leaders released.
    fn release(&self, c: &Call, result: &Result<&[u64], CollError>) {
        let Some(segment) = &self.segment else {
            return;
        };
        let s = c.index;
        match result {
            Ok(words) => {
                for (w, &v) in words.iter().enumerate() {
                    segment.word(0, PAYLOAD + w).store(v, Ordering::Relaxed);
                }
            }
            Err(e) => {
                let bytes = match e {
                    CollError::PeerLost(lost) => {
                        let mut b = vec![PEER_LOST];
                        b.extend_from_slice(&u64::from(lost.node).to_le_bytes());
                        b
                    }
                    e => e.encode(c.rank()),
                };
                for (w, chunk) in bytes.chunks(8).take(ERROR_WORDS).enumerate() {
                    let mut word = [0u8; 8];
                    word[..chunk.len()].copy_from_slice(chunk);
                    segment
                        .word(0, ERROR + w)
                        .store(u64::from_le_bytes(word), Ordering::Relaxed);
                }
                segment.word(0, FAILED).store(s, Ordering::Relaxed);
            }
        }
        segment.word(0, RELEASED).store(s, Ordering::Release);
    }
}

/// The error the host leader released call `c` with.
fn decode_error(c: &Call, segment: &Segment) -> CollError {
    let bytes: Vec<u8> = (0..ERROR_WORDS)
        .flat_map(|w| segment.word(0, ERROR + w).load(Ordering::Relaxed).to_le_bytes())
        .collect();
    if bytes[0] == PEER_LOST {
        let node = u32::try_from(u64::from_le_bytes(bytes[1..9].try_into().expect("8 bytes")))
            .unwrap_or(u32::MAX);
        let router = &c.comm.ep.node().shared.router;
        let lost = router.peers.get(node as usize).and_then(|p| p.lost().cloned());
        return CollError::PeerLost(lost.unwrap_or(PeerLost {
            node,
            cause: LossCause::Failed(Failure::Channel("lost, as its host's leader saw".into())),
        }));
    }
    // The host leader's rank in the group is not known here; the error
    // names whom it names.
    CollError::decode(&bytes, 0)
}

/// `result`, unless a member's abort of the call arrived (the per-node
/// stage's `unless_aborted`, for the same reason).
fn unless_aborted<R>(c: &Call, result: Result<R, CollError>) -> Result<R, CollError> {
    match (result, c.abort_heard()) {
        (Ok(_), Some(e)) => Err(e),
        (result, _) => result,
    }
}

/// How long an OS thread keeps yielding for a host-stage counter after its
/// spin budget, before it sleeps in the engine's re-check rhythm.
const YIELD_BEFORE_SLEEP: std::time::Duration = std::time::Duration::from_millis(1);

/// Waits (in the collective's wait, re-checking as the progress engine's
/// step 9 says) until `ready`, or a member's node is lost, or an abort of
/// the call arrives (schedule rule 4).
async fn wait(c: &Call, ready: impl Fn() -> bool) -> Result<(), CollError> {
    if ready() {
        return Ok(());
    }
    // Another process stores what this waits for: spin, then yield, with
    // no system call between checks (the engine's wait polls its channels
    // in every round). A fiber yields at once instead, so that its worker
    // runs the node's other fibers, and checks again whenever none is
    // ready to run (a parked fiber would sleep through the engine's
    // re-check period: nothing wakes it when another process stores).
    let fiber = threadwire_fiber::in_fiber();
    if !fiber {
        let mut spin = SpinWait::new();
        while spin.spin() {
            if ready() {
                return Ok(());
            }
        }
    }
    {
        // The member it waits for is most likely a process the scheduler
        // has not run yet: keep handing it the core rather than sleep
        // through a re-check period — in a blocking wait only, as a
        // nonblocking call's `test` must return.
        let yield_for = match c.comm.blocking.get() {
            true => YIELD_BEFORE_SLEEP,
            false => std::time::Duration::ZERO,
        };
        let until = std::time::Instant::now() + yield_for;
        let mut rounds = 0u32;
        while std::time::Instant::now() < until {
            match fiber {
                true => threadwire_fiber::yield_now(),
                false => std::thread::yield_now(),
            }
            if ready() {
                return Ok(());
            }
            rounds = rounds.wrapping_add(1);
            if rounds.is_multiple_of(64) {
                if let Some(e) = c.interrupted() {
                    return Err(e);
                }
            }
        }
    }
    let engine = &c.comm.ep.node().shared.engine;
    let _watch = engine.watch_shared_memory();
    std::future::poll_fn(|_| {
        if ready() {
            return Poll::Ready(Ok(()));
        }
        match c.interrupted() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Pending,
        }
    })
    .await
}

fn words_of<T: Element>(values: &[T]) -> Vec<u64> {
    let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
    T::write(values, &mut bytes);
    bytes.resize(bytes.len().div_ceil(8) * 8, 0);
    bytes
        .chunks(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect()
}

/// `values` into `words` (as many as they fill, returned), with no
/// allocation where the elements' memory is their encoding.
fn pack<T: Element>(values: &mut [T], words: &mut [u64; PAYLOAD_WORDS]) -> usize {
    let used = (values.len() * T::SIZE).div_ceil(8);
    match T::memory_mut(values) {
        Some(bytes) => {
            bytemuck::cast_slice_mut::<u64, u8>(words)[..bytes.len()].copy_from_slice(bytes)
        }
        None => words[..used].copy_from_slice(&words_of(values)),
    }
    used
}

/// `f` of the `n` elements in `words`, seen in place where their layout
/// allows (else read into a vector).
fn with_values<T: Element>(
    c: &Call,
    words: &[u64; PAYLOAD_WORDS],
    n: usize,
    f: impl FnOnce(&[T]) -> Result<(), CollError>,
) -> Result<(), CollError> {
    let bytes = &bytemuck::cast_slice::<u64, u8>(words)[..n * T::SIZE];
    match T::view(bytes) {
        Some(values) => f(values),
        None => f(&values_of::<T>(c, words, n)?),
    }
}

fn values_of<T: Element>(c: &Call, words: &[u64], n: usize) -> Result<Vec<T>, CollError> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    c.decode_bytes::<T>(&bytes[..n * T::SIZE], Some(n))
}

/// The side of a call that runs the host stage, at a node leader.
fn side_of(c: &Call) -> Option<&LeaderSide> {
    c.comm.host_stage.get()?.side()
}

/// Barrier, steps 1–4, at a node leader whose members have arrived.
pub(crate) async fn barrier(c: &Call) -> Result<(), CollError> {
    let side = side_of(c).expect("the host stage runs at node leaders");
    if let (Some(segment), true) = (&side.segment, side.one_host) {
        return side.all_lines(c, segment, &[], |_| Ok(())).await;
    }
    if let (Some(segment), true) = (&side.segment, side.index != 0) {
        return side.member(c, segment, &[]).await.map(|_| ());
    }
    let result = async {
        if let Some(segment) = &side.segment {
            side.arrivals(c, segment).await?;
        }
        if let Some(lc) = side.leaders_call(c) {
            super::tree::barrier(&lc).await?;
        }
        Ok(())
    }
    .await;
    let result = unless_aborted(c, result);
    side.release(c, &result.as_ref().map(|_| &[][..]).map_err(Clone::clone));
    result
}

/// Allreduce at a node leader whose `buf` holds its node's combined
/// contribution: of at most [`HOST_STAGE_MAX`] bytes, steps 1–4; larger
/// ones (one host only) by [`bulk`] reads.
pub(crate) async fn allreduce<T: Reducible>(
    c: &Call,
    buf: &mut [T],
    op: &Reduction<T>,
) -> Result<(), CollError> {
    let side = side_of(c).expect("the host stage runs at node leaders");
    let n = buf.len();
    if let (Some(segment), true) = (&side.segment, side.one_host) {
        if n * T::SIZE > HOST_STAGE_MAX {
            return bulk::allreduce(c, side, segment, buf, op).await;
        }
        let mut mine = [0u64; PAYLOAD_WORDS];
        let used = pack(buf, &mut mine);
        let mut first = true;
        let combine = |line: &[u64; PAYLOAD_WORDS]| {
            with_values(c, line, n, |theirs: &[T]| match std::mem::take(&mut first) {
                true => {
                    buf.copy_from_slice(theirs);
                    Ok(())
                }
                false => op.apply(buf, theirs),
            })
        };
        return side.all_lines(c, segment, &mine[..used], combine).await;
    }
    if let (Some(segment), true) = (&side.segment, side.index != 0) {
        let got = side.member(c, segment, &words_of(buf)).await?;
        buf.copy_from_slice(&values_of::<T>(c, &got, n)?);
        return Ok(());
    }
    let result = async {
        if let Some(segment) = &side.segment {
            side.arrivals(c, segment).await?;
            for line in 1..segment.lines {
                let words: Vec<u64> = (0..PAYLOAD_WORDS)
                    .map(|w| segment.word(line, PAYLOAD + w).load(Ordering::Relaxed))
                    .collect();
                op.apply(buf, &values_of::<T>(c, &words, n)?)?;
            }
        }
        if let Some(lc) = side.leaders_call(c) {
            crate::group::dispatch::allreduce_flat(&lc, buf, op).await?;
        }
        Ok(words_of(buf))
    }
    .await;
    let result = unless_aborted(c, result);
    side.release(c, &result.as_ref().map(Vec::as_slice).map_err(Clone::clone));
    result.map(|_| ())
}

/// Broadcast from rank `root` at a node leader whose `buf` holds the
/// root's data if its node is the root's: [`bulk`] reads, one host only.
pub(crate) async fn bcast<T: Element>(c: &Call, buf: &mut [T], root: usize) -> Result<(), CollError> {
    let side = side_of(c).expect("the host stage runs at node leaders");
    let segment = side.segment.as_ref().filter(|_| side.one_host);
    let segment = segment.expect("a broadcast takes the host stage on one host only");
    bulk::bcast(c, side, segment, buf, bulk::line_of(c, side, root)).await
}
