//! The per-node stage: members of a group that are threads of one node
//! combine through memory, with no message; one leader per node runs the
//! flat algorithm among the leaders, then releases its node's members.
//! MPICH's `release_gather` and Open MPI's XHC, for threads.
//!
//! When a group is built, the members on each node share one
//! [`NodeTeam`] (through the node's [`NodeTeams`], keyed by the group's
//! id and member list): one cache-line-aligned [`Slot`] per local member,
//! in rank order. The node's *leader* is its member of lowest rank
//! (slot 0). Call `s` is the group's `s`-th call (1, 2, …, of any kind:
//! the same number at every member, even where a call failed before its
//! algorithm began). A call:
//!
//! 1. A member that is not the leader writes its contribution (allreduce:
//!    its buffer; bcast: the root's buffer; barrier: nothing) into its
//!    slot's data, stores `arrived = s`, and wakes the leader if every
//!    other member has arrived too (rule 5).
//! 2. The leader waits until every local slot has `arrived ≥ s`, then
//!    combines the contributions in rank order (its own first, as it has
//!    the lowest rank) into its buffer.
//! 3. The leader runs the flat algorithm (the one [`tuning`] chooses for
//!    the leaders' count, or the one forced) among the leaders only: a
//!    sub-communication of the group's collective context with the same
//!    call tag, ranked by the leaders' ranks.
//! 4. The leader writes the result into the team's result (or, on
//!    failure, the error and `s` into the team's outcome), stores
//!    `released = s` in its slot and wakes the node's members.
//! 5. Each member waits for `released ≥ s` and copies the result (or
//!    returns the error).
//!
//! A group with members on one node only has no step 3: there every
//! member, the leader too, does step 1, and the member whose arrival
//! completes the node (the one that sees every other slot at `s`; of two
//! that see it at once, the one that raises the team's `combiner` word to
//! `s`) does steps 2 and 4, so no leader is woken to do them.
//!
//! Large calls ([`tuning`]'s `allreduce_by_slices`, `bcast_by_copies`)
//! spread the node's work over its members instead of its leader, and
//! read the members' buffers where they are: each member opens its
//! buffer in its slot's [`Window`] for the call, which the others pin
//! while they read it and which its owner closes, waiting for the pins,
//! on every path out of the call (`node_stage/window.rs`). An allreduce
//! by slices:
//!
//! S1. Every member (the leader too) opens its buffer and stores
//!     `published`; all wait for every member's.
//! S2. Member `i` combines slice `i` (1/q of the buffer) of every other
//!     member's buffer into the leader's, whose slice it is the only one
//!     to touch, in rank order (the leader's is the lowest), a chunk of
//!     [`tuning::NODE_STAGE_CHUNK`] at a time (so that the partial result
//!     stays in cache), and stores `combined`; all wait for every
//!     member's. The node's result is then in the leader's buffer, with
//!     no gathering.
//! S3. On one node every other member copies the leader's buffer, stores
//!     `copied` and waits for every member's (the leader's buffer stays
//!     open until all have read it).
//! S4. Several nodes: the leader runs the leaders' stage on its buffer
//!     and releases as in step 4, with the result left in its buffer.
//! S5. Each member copies the leader's buffer and stores `copied`; the
//!     leader closes its buffer once every member has.
//!
//! A one-node broadcast by copies:
//!
//! B1. The root opens its buffer, stores `arrived` and wakes the others.
//! B2. Each other member waits for the root's `arrived`, copies its
//!     buffer, then stores its own `arrived`; the last wakes the root.
//! B3. The root waits for every `arrived` (rule 3), then closes.
//! B4. On several nodes, every member opens its buffer and arrives; the
//!     leader copies the root's buffer if the root is on its node, runs
//!     the leaders' stage and releases; the members copy the leader's
//!     buffer as in S5.
//!
//! Memory ordering:
//!
//! 1. `arrived` and `released` only grow (never reset): a waiter compares
//!    with `≥`, so no round needs a reset, and a member's count after a
//!    failed call still matches the others'.
//! 2. A slot's data is written before its counter is stored with
//!    `Release`, and read after the counter is loaded with `Acquire`.
//! 3. A member writes its data for call `s + 1` only after it saw
//!    `released ≥ s`, i.e. after the leader read its data for `s`; the
//!    leader writes the result of `s + 1` only after every member arrived
//!    at `s + 1`, i.e. after each read the result of `s`. Through
//!    windows, in S2 member `i` alone reads and writes slice `i` of the
//!    leader's buffer, and only reads the others' buffers, which their
//!    owners write only in S3 or S5, after `combined`; the leader writes
//!    its whole buffer in S4, which members read only after the release
//!    (S3: after `combined`); a buffer read in B2 or B4 is not written. So a writer never meets a
//!    reader; the slots' data are behind read-write locks so that the
//!    readers of one slot do not take turns, and a window is read only
//!    under a pin.
//! 4. Rule 3 needs one call of the stage under way per member at a time:
//!    a member's call takes its *turn* (step 0) before step 1 and gives it
//!    back when it has read its result (or failed). Turns go in call
//!    order: a call that may take the stage (barrier, bcast, allreduce)
//!    queues as it is made and leaves the queue when it takes its turn,
//!    runs flat instead, or fails; a call takes its turn only when no
//!    earlier one is queued, so rule 1's counters grow. Nonblocking calls
//!    take this path as blocking ones do — chosen alike by every member,
//!    so mixing `barrier` and `ibarrier` for one call works — and a call
//!    waiting for its turn has the member's earlier calls advanced
//!    ([`schedule`] rule 5), so the turn passes even when only the later
//!    request is waited.
//! 5. `arrived` is stored and the others' loaded with `SeqCst`: of two
//!    members arriving last at once, at least one sees the other's store,
//!    so one wake (or two) reaches the leader instead of one per
//!    member (measured: waking the leader at every arrival made a 1 × 16
//!    barrier slower than the flat one).
//!
//! Waiting is the collective's ordinary wait ([`schedule`] rule 1): spin,
//! then yield, then park through the runtime's one park/unpark (a fiber
//! parks at once, so the node's other fibers — often the very members it
//! waits for — run on its worker); a counter's writer wakes the waiter's
//! mailbox owner.
//!
//! Failures: a leader's node failing is its members' node failing, so a
//! member never waits on a dead leader. A remote member's node lost is
//! seen by the leaders in step 3 (`PeerLost`), and they release their
//! members with it in step 4; a member waiting in step 5 also sees the
//! loss itself (its wait checks the group's nodes, [`schedule`] rule 4)
//! and an abort from any member, so it ends even if its leader is still
//! blocked. After a failed call the data of the next call may meet a
//! leader still reading the failed one's; the failed call fails anyway.
//!
//! Non-commutative reductions combine in rank order only if every node's
//! members are consecutive ranks (as [`Group::world_threads`] makes
//! them): the leaders' order is then the blocks' order. Otherwise those
//! run flat.
//!
//! Cost, with `q` members on the busiest node and `L` leaders: two
//! stores and `q − 1` loads of counters on the node (a few cache-line
//! transfers), `q − 1` combines at the leader, plus the
//! flat algorithm over `L` members: a barrier costs ⌈log₂L⌉ α instead of
//! ⌈log₂p⌉ α, an allreduce (⌊log₂L⌋ + 2) (α + nβ) instead of with `p`.
//! Leaders wait for their slowest local member, and members for the whole
//! network stage; the payload moves through a copy into the slots and one
//! out. Below the slices' threshold the leader combines `q − 1` buffers
//! alone, faster than the two extra meetings of the slices (each wakes
//! every member); above it the `q` members combine at once, and a one-node
//! broadcast's members copy at once
//! (docs/PERFORMANCE-STUDIES.md, "the per-node stage" and "Collectives:
//! the per-node stage for large messages").
//!
//! [`tuning`]: crate::group::tuning
//! [`schedule`]: crate::group::schedule
//! [`Group::world_threads`]: crate::Group::world_threads

use crate::group::element::{Element, Reducible, Reduction};
use crate::group::schedule::{Call, Comm};
use crate::group::{tuning, CollError};
use crate::{lock, Address, Endpoint};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
use std::task::Poll;

mod calls;
mod large;
mod window;

pub(crate) use calls::{allreduce, barrier, bcast};
use calls::leaders_allreduce;

use large::{allreduce_sliced, bcast_by_copies, bcast_by_windows};
use window::Window;

/// One local member's line: its counters, then (behind pointers) its data.
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    /// The member's calls whose contribution is in `data` (rule 1); in a
    /// one-node broadcast by copies, whose copy of the root's is done.
    arrived: AtomicU64,
    /// The leader's slot only: the calls released (rule 1).
    released: AtomicU64,
    /// Allreduce by slices: the member's calls whose buffer is open (S1),
    /// and the buffer's length in elements.
    published: AtomicU64,
    length: AtomicUsize,
    /// Allreduce by slices: the member's calls whose slice is combined
    /// in its buffer (S2).
    combined: AtomicU64,
    /// Large calls: the member's calls in which it reads no other
    /// member's window any more (S3, S5, B4).
    copied: AtomicU64,
    data: RwLock<Vec<u8>>,
    /// Large calls: the member's buffer, open to the others.
    window: Window,
}

fn arrived(slot: &Slot) -> &AtomicU64 {
    &slot.arrived
}

fn published(slot: &Slot) -> &AtomicU64 {
    &slot.published
}

fn combined(slot: &Slot) -> &AtomicU64 {
    &slot.combined
}

fn copied(slot: &Slot) -> &AtomicU64 {
    &slot.copied
}

/// The node-local structure of one group: one slot per member on this
/// node, in rank order (slot 0 the leader's).
pub(crate) struct NodeTeam {
    slots: Box<[Slot]>,
    /// The last call a member combined for (one-node groups).
    combiner: AtomicU64,
    /// The result of the last call released.
    result: RwLock<Vec<u8>>,
    /// The last failed call and its error (step 4).
    outcome: Mutex<Option<(u64, CollError)>>,
}

/// The teams of this node's groups, by group id and member list.
#[derive(Default)]
pub(crate) struct NodeTeams(Mutex<HashMap<(u32, u64), Weak<NodeTeam>>>);

impl NodeTeams {
    /// The team of group `key`, made by the first of its local members.
    fn team(&self, key: (u32, u64), members: usize) -> Arc<NodeTeam> {
        let mut teams = lock(&self.0);
        if let Some(team) = teams.get(&key).and_then(Weak::upgrade) {
            return team;
        }
        teams.retain(|_, t| t.strong_count() > 0);
        let team = Arc::new(NodeTeam {
            slots: (0..members).map(|_| Slot::default()).collect(),
            combiner: AtomicU64::new(0),
            result: RwLock::new(Vec::new()),
            outcome: Mutex::new(None),
        });
        teams.insert(key, Arc::downgrade(&team));
        team
    }
}

/// One member's side of the per-node stage of a group.
pub(crate) struct NodeStage {
    team: Arc<NodeTeam>,
    /// The call holding this member's turn (rule 4); 0: none.
    turn: Cell<u64>,
    /// The member's calls that may still take the turn, in call order.
    queue: RefCell<VecDeque<u64>>,
    /// This member's slot (0: the leader).
    index: usize,
    /// The threads of this node's members, in rank order (whom to wake).
    threads: Box<[u32]>,
    /// The leaders' sub-communication, at the leader (None with one node).
    leaders: Option<Rc<Comm>>,
    /// Whether the group has members on this node only.
    one_node: bool,
    /// For each rank, the leaders' rank of its node.
    leader_of: Box<[usize]>,
    /// Nodes with members.
    pub(crate) nodes: usize,
    /// Members on the busiest node.
    pub(crate) most_on_a_node: usize,
    /// Whether every node's members are consecutive ranks.
    pub(crate) consecutive: bool,
}

impl NodeStage {
    /// The stage of the member of rank `rank` in group `k` of `members`.
    pub(crate) fn new(
        ep: &Endpoint,
        members: &Arc<[Address]>,
        rank: usize,
        k: u32,
        hash: u64,
    ) -> NodeStage {
        let me = members[rank].node;
        // Nodes in the order of their lowest rank: the leaders' order.
        let mut nodes: Vec<u32> = Vec::new();
        let mut leader_of = Vec::with_capacity(members.len());
        let mut counts: Vec<usize> = Vec::new();
        let mut consecutive = true;
        for (i, a) in members.iter().enumerate() {
            let at = match nodes.iter().position(|&n| n == a.node) {
                Some(at) => {
                    consecutive &= members[i - 1].node == a.node;
                    at
                }
                None => {
                    nodes.push(a.node);
                    counts.push(0);
                    nodes.len() - 1
                }
            };
            counts[at] += 1;
            leader_of.push(at);
        }
        let local: Vec<usize> = (0..members.len())
            .filter(|&r| members[r].node == me)
            .collect();
        let index = local.iter().position(|&r| r == rank).expect("a member");
        let leaders = (index == 0 && nodes.len() > 1).then(|| {
            let addresses: Arc<[Address]> = nodes
                .iter()
                .map(|&n| members[members.iter().position(|a| a.node == n).expect("a node")])
                .collect();
            Rc::new(Comm::new(ep, addresses, leader_of[rank], k, 0))
        });
        NodeStage {
            team: ep.node().shared.node_teams.team((k, hash), local.len()),
            turn: Cell::new(0),
            queue: RefCell::new(VecDeque::new()),
            index,
            threads: local.iter().map(|&r| members[r].thread).collect(),
            leaders,
            one_node: nodes.len() == 1,
            nodes: nodes.len(),
            leader_of: leader_of.into(),
            most_on_a_node: counts.iter().copied().max().unwrap_or(1),
            consecutive,
        }
    }

    /// Whether this member is its node's only one.
    fn alone(&self) -> bool {
        self.threads.len() == 1
    }

    /// Step 4's result into the team, for the node's other members (none
    /// to copy it for when the leader is alone).
    fn publish_result<T: Element>(&self, result: &[T]) {
        if !self.alone() {
            write_into(&self.team.result, result);
        }
    }

    /// Queues call `index` for a turn (rule 4).
    pub(crate) fn queue(&self, index: u64) {
        self.queue.borrow_mut().push_back(index);
    }

    /// Takes call `index` out of the queue.
    pub(crate) fn leave_queue(&self, index: u64) {
        self.queue.borrow_mut().retain(|&i| i != index);
    }

    /// Whether call `index` may take the turn now: none held, and no
    /// earlier call of the member may still take it.
    fn may_take(&self, index: u64) -> bool {
        self.turn.get() == 0 && self.queue.borrow().front().is_none_or(|&i| i == index)
    }

    /// Step 0: waits for this member's earlier calls that may take the
    /// stage to be over with it (rule 4); the turn is given back on drop.
    async fn turn<'s>(&'s self, c: &Call) -> Result<Turn<'s>, CollError> {
        // The poll that waits advanced the earlier calls already
        // (schedule rule 5).
        std::future::poll_fn(|_| {
            if self.may_take(c.index) {
                self.turn.set(c.index);
                c.leave_stage_queue();
                return Poll::Ready(Ok(Turn(self)));
            }
            match c.failed_or_aborted() {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            }
        })
        .await
    }

    fn wake(&self, c: &Call, index: usize) {
        let router = &c.comm.ep.node().shared.router;
        if let Some(m) = router.mailboxes.get(self.threads[index]) {
            m.wake_owner();
        }
    }

    fn wake_others(&self, c: &Call) {
        for i in (0..self.threads.len()).filter(|&i| i != self.index) {
            self.wake(c, i);
        }
    }

    /// Whether every local member's `counter` reached call `s` (rule 5's
    /// `SeqCst`: of two members storing last at once, one sees both).
    fn all_at(&self, s: u64, counter: fn(&Slot) -> &AtomicU64) -> bool {
        self.team
            .slots
            .iter()
            .all(|slot| counter(slot).load(Ordering::SeqCst) >= s)
    }

    /// Stores this member's `counter = tick` and waits for every local
    /// member's; the last to store wakes the others (rule 5).
    async fn meet(
        &self,
        c: &Call,
        tick: u64,
        counter: fn(&Slot) -> &AtomicU64,
    ) -> Result<(), CollError> {
        counter(&self.team.slots[self.index]).store(tick, Ordering::SeqCst);
        if self.all_at(tick, counter) {
            self.wake_others(c);
        }
        wait(c, || self.all_at(tick, counter)).await
    }

    /// The leaders' call of the same tag, with the group's forced
    /// algorithms but no node stage.
    fn leaders_call(&self, c: &Call) -> Option<Call> {
        let leaders = self.leaders.as_ref()?;
        let mut forced = c.algorithms();
        forced.barrier = None;
        forced.allreduce = forced
            .allreduce
            .filter(|&a| !a.is_staged());
        forced.bcast = forced
            .bcast
            .filter(|&a| !a.is_staged());
        leaders.algorithms.set(forced);
        Some(Call::with_tag(leaders, c.tag))
    }

    /// Steps 1 and 5 at a member that is not the leader: `mine` into its
    /// slot, then `read_result` of the leader's result.
    async fn member<R>(
        &self,
        c: &Call,
        s: u64,
        mine: Option<Vec<u8>>,
        read_result: impl FnOnce(&[u8]) -> Result<R, CollError>,
    ) -> Result<R, CollError> {
        let slot = &self.team.slots[self.index];
        if let Some(data) = mine {
            *write(&slot.data) = data;
        }
        slot.arrived.store(s, Ordering::SeqCst);
        // Only the last to arrive wakes the leader (rule 5).
        if self.all_arrived(s) {
            self.wake(c, 0);
        }
        self.released(c, s).await?;
        read_result(&read(&self.team.result))
    }

    /// Step 5's wait: the release of call `s`, or its error.
    async fn released(&self, c: &Call, s: u64) -> Result<(), CollError> {
        let released = &self.team.slots[0].released;
        wait(c, || released.load(Ordering::Acquire) >= s).await?;
        if let Some((at, e)) = &*lock(&self.team.outcome) {
            if *at == s {
                c.heard_abort();
                return Err(e.clone());
            }
        }
        Ok(())
    }

    /// A one-node group's call: every member (the leader too) arrives
    /// with its contribution, and the one that completes the node
    /// `combine`s into the team's result and releases (steps 2 and 4
    /// without waking a leader).
    async fn by_last<R>(
        &self,
        c: &Call,
        mine: Option<Vec<u8>>,
        combine: impl FnOnce(&NodeTeam) -> Result<(), CollError>,
        read_result: impl FnOnce(&[u8]) -> Result<R, CollError>,
    ) -> Result<R, CollError> {
        let s = c.index;
        let slot = &self.team.slots[self.index];
        if let Some(data) = mine {
            *write(&slot.data) = data;
        }
        slot.arrived.store(s, Ordering::SeqCst);
        // Of the members that see every arrival, one combines.
        if self.all_at(s, arrived) && self.team.combiner.fetch_max(s, Ordering::SeqCst) < s {
            let result = unless_aborted(c, combine(&self.team));
            self.release(c, s, &result);
            result?;
        } else {
            self.released(c, s).await?;
        }
        read_result(&read(&self.team.result))
    }

    fn all_arrived(&self, s: u64) -> bool {
        self.team.slots[1..]
            .iter()
            .all(|slot| slot.arrived.load(Ordering::SeqCst) >= s)
    }

    /// Step 2's wait at the leader.
    async fn arrivals(&self, c: &Call, s: u64) -> Result<(), CollError> {
        wait(c, || self.all_arrived(s)).await
    }

    /// Step 4: the error (if any) out, the members released; the result
    /// is in the team's already.
    fn release(&self, c: &Call, s: u64, result: &Result<(), CollError>) {
        if let Err(e) = result {
            *lock(&self.team.outcome) = Some((s, e.clone()));
        }
        self.team.slots[0].released.store(s, Ordering::Release);
        self.wake_others(c);
    }
}

/// `result`, unless a member's abort of the call arrived: a member that
/// failed the call before its step 1 may since have arrived for its next
/// call, so the counters alone would release this one with that data.
/// (Not a lost node: one that finished after the call completed there is
/// no failure of it.)
fn unless_aborted<R>(c: &Call, result: Result<R, CollError>) -> Result<R, CollError> {
    match (result, c.abort_heard()) {
        (Ok(_), Some(e)) => Err(e),
        (result, _) => result,
    }
}

/// A member's turn in the stage (rule 4), given back when dropped.
struct Turn<'s>(&'s NodeStage);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.turn.set(0);
    }
}

/// Waits (in the collective's wait) until `ready`, or an abort of the
/// call arrives or a member's node fails. A node that merely finished is
/// no reason: the wait is on this node's members, and a leader waiting
/// on that node sees its loss itself.
async fn wait(c: &Call, ready: impl Fn() -> bool) -> Result<(), CollError> {
    std::future::poll_fn(|_| {
        if ready() {
            return Poll::Ready(Ok(()));
        }
        match c.failed_or_aborted() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Pending,
        }
    })
    .await
}

// Rule 3 keeps writers and readers of one lock apart; readers share.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

fn bytes_of<T: Element>(values: &[T]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
    T::write(values, &mut bytes);
    bytes
}

/// `values` into `bytes`, reusing its allocation.
fn write_into<T: Element>(bytes: &RwLock<Vec<u8>>, values: &[T]) {
    let mut bytes = write(bytes);
    bytes.clear();
    T::write(values, &mut bytes);
}

/// `bytes` as elements: seen in place where the layout allows, else read.
fn elements<T: Element>(bytes: &[u8]) -> Cow<'_, [T]> {
    match T::view(bytes) {
        Some(values) => Cow::Borrowed(values),
        None => Cow::Owned(T::read_all(bytes)),
    }
}

/// Member `i`'s slice of `n` elements cut in `q`.
fn slice(n: usize, q: usize, i: usize) -> Range<usize> {
    i * n / q..(i + 1) * n / q
}
