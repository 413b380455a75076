//! How a collective runs: its messages, its waits, and its request.
//!
//! An algorithm is an `async fn` over a `Call` — one collective call of
//! one member — that sends (never waiting for the receive, rule 7) and
//! awaits receives. Nothing here is an async runtime: the future is polled by
//! whoever waits for the collective, with a waker that does nothing,
//! because every event it waits for — a message for this thread, a failed
//! node, an abort — already wakes the thread through its mailbox:
//!
//! 1. A blocking collective polls its future inside the progress engine's
//!    ordinary wait (spin, then yield, then sleep; a fiber parks at once),
//!    as the condition the wait re-checks.
//! 2. A nonblocking one returns a [`Request`](crate::Request) holding the
//!    future, polled once at the start (so its first messages leave at
//!    once) and then by `test`, `wait`, `wait_all` and `wait_any`: it
//!    advances when its owner looks at it, as most MPIs' do. `test` never
//!    parks, so a fiber that loops on it must yield
//!    ([`fiber::yield_now`](crate::fiber::yield_now)) for the fibers it
//!    waits on to run.
//! 3. Every receive of a call is in the group's collective context with
//!    the call's tag (its sequence number in the group), from one member:
//!    per-pair order keeps the rounds of one call apart, the tag keeps
//!    calls apart (so several may be under way), and the context keeps
//!    groups and plain traffic apart.
//! 4. A receive that waits also fails when a member's node is lost (seen
//!    from the node's failure count, so a member waiting on another that
//!    waits on the dead one does not hang) or when a member's abort
//!    message for this call arrives: a member that fails a call tells the
//!    others (its error, where it travels), once.
//! 5. A group keeps its nonblocking calls under way (in call order) until
//!    they complete, also where their requests were dropped, and polling
//!    any call of the group (waiting, testing) first advances the
//!    group's earlier ones: a call that waits for an earlier one (the
//!    per-node stage's turn, its rule 4) never starves it, even when only
//!    the later request is waited. The earlier calls are advanced before
//!    the call's own future is polled, not from inside it, so one call's
//!    future is on the stack at a time (fibers have small stacks).
//! 6. A group's id is given back when its last call is over, not when the
//!    [`Group`](super::Group) is dropped: a request still under way on a
//!    dropped group keeps the id, so no new group takes its contexts
//!    while its messages may still arrive. (A call that nobody can
//!    advance any more — its request and its group both dropped before it
//!    completed — keeps the id at this member for good.)
//! 7. A send never waits for its receive (every member sends before it
//!    receives in most steps): a message short enough goes eagerly, a
//!    longer one is announced (`rendezvous`) and its request kept in the
//!    call, which ends only once they are all received — so the bytes of
//!    a large step move once, into the receiving member's buffer. (A
//!    leaders' call inside a call leaves its sends to finish on their
//!    own: the runtime holds their bytes until received.)

use super::algorithms::host_stage::HostStage;
use super::algorithms::node_stage::NodeStage;
use super::context;
use super::element::Element;
use super::tuning::Algorithms;
use super::CollError;
use crate::node::NodeShared;
use crate::progress::Origin;
use crate::{Address, Endpoint, Message, RecvRequest, Source, TagMatch};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use threadwire_wire::Payload;

mod drive;
mod received;

use drive::InFlight;
pub(crate) use drive::{blocking, nonblocking};
pub(crate) use received::Received;

/// A group as its collectives see it: members, contexts, sequence.
pub(crate) struct Comm {
    pub(crate) ep: Endpoint,
    pub(crate) members: Arc<[Address]>,
    pub(crate) rank: usize,
    collective: u32,
    abort: u32,
    /// Broadcasts by multicast stream (`algorithms::multicast`).
    multicast: u32,
    /// Nodes of other members, whose loss fails a call.
    member_nodes: Box<[u32]>,
    origin: Origin,
    next_tag: Cell<u32>,
    /// Calls started: the next call's index.
    calls: Cell<u64>,
    failures_seen: Cell<u64>,
    pub(crate) algorithms: Cell<Algorithms>,
    /// Whether calls start with the argument check (`check.rs`).
    pub(crate) checks: Cell<bool>,
    /// The per-node stage, for groups with members on this node.
    pub(crate) node_stage: Option<NodeStage>,
    /// Inside [`block_on`](drive::block_on): a wait may keep the core busy (yielding) where
    /// a `test` must return.
    pub(crate) blocking: Cell<bool>,
    /// The host stage, for groups whose nodes share hosts (set once built).
    pub(crate) host_stage: std::cell::OnceCell<HostStage>,
    /// Nonblocking calls not known to be complete, in call order (rule 5).
    in_flight: RefCell<Vec<(u64, InFlight)>>,
    /// The group id this side holds, given back on drop (rule 6).
    pub(crate) lease: Option<IdLease>,
    /// Calls to `agree` so far: the next agreement's number.
    pub(crate) agreements: Cell<u64>,
}

/// A group id held by one thread, given back when dropped (rule 6).
pub(crate) struct IdLease {
    node: Arc<NodeShared>,
    thread: u32,
    id: u32,
}

impl IdLease {
    /// Takes id `k` for the calling thread of `ep`.
    pub(crate) fn take(ep: &Endpoint, k: u32) -> IdLease {
        let thread = ep.address().thread;
        let node = ep.node().shared.clone();
        node.contexts.take(thread, k);
        IdLease { node, thread, id: k }
    }
}

impl Drop for IdLease {
    fn drop(&mut self) {
        self.node.router.revoked.forget(self.thread, self.id);
        self.node.contexts.release(self.thread, self.id);
    }
}

impl Comm {
    /// The collective side of group id `k`; `first_tag` numbers its first
    /// call.
    pub(crate) fn new(
        ep: &Endpoint,
        members: Arc<[Address]>,
        rank: usize,
        k: u32,
        first_tag: u32,
    ) -> Comm {
        let me = ep.address().node;
        let mut member_nodes: Vec<u32> = members
            .iter()
            .map(|a| a.node)
            .filter(|&n| n != me)
            .collect();
        member_nodes.sort_unstable();
        member_nodes.dedup();
        let origin = match member_nodes.as_slice() {
            [] => Origin::Local,
            [n] => Origin::Peer(*n),
            _ => Origin::Anywhere,
        };
        Comm {
            ep: ep.alias(),
            members,
            rank,
            collective: context::collective_context(k),
            multicast: context::multicast_context(k),
            abort: context::abort_context(k),
            member_nodes: member_nodes.into(),
            origin,
            next_tag: Cell::new(first_tag),
            calls: Cell::new(0),
            failures_seen: Cell::new(u64::MAX),
            algorithms: Cell::new(Algorithms::default()),
            checks: Cell::new(super::check::default_on()),
            node_stage: None,
            blocking: Cell::new(false),
            host_stage: std::cell::OnceCell::new(),
            in_flight: RefCell::new(Vec::new()),
            lease: None,
            agreements: Cell::new(0),
        }
    }

    pub(crate) fn size(&self) -> usize {
        self.members.len()
    }

    fn node(&self) -> &Arc<NodeShared> {
        &self.ep.node().shared
    }

    /// A member's node that failed (not merely finished), if any.
    fn failed_member(&self) -> Option<CollError> {
        let router = &self.node().router;
        self.member_nodes
            .iter()
            .find_map(|&n| router.peers[n as usize].failure())
            .map(|lost| CollError::PeerLost(lost.clone()))
    }

    /// Advances this group's nonblocking calls that started before call
    /// `index`, oldest first, and forgets the completed ones (rule 5).
    /// Called at the top of a poll, never from inside a call's future, so
    /// that one call's future is on the stack at a time.
    pub(crate) fn advance_before(&self, index: u64) {
        let mut completed = false;
        for i in 0.. {
            let call = match self.in_flight.borrow().get(i) {
                Some((first, call)) if *first < index => call.clone(),
                _ => break,
            };
            // A call being polled further up this stack is busy already.
            if let Ok(mut under_way) = call.try_borrow_mut() {
                under_way.advance();
                completed |= under_way.is_complete();
            };
        }
        if completed {
            self.in_flight
                .borrow_mut()
                .retain(|(_, call)| call.try_borrow().map_or(true, |c| !c.is_complete()));
        }
    }

    /// Whether a member revoked the group for this one (`revoke`, step 3).
    pub(crate) fn revoked(&self) -> bool {
        let router = &self.node().router;
        if !router.revoked.any() {
            return false;
        }
        let thread = self.ep.address().thread;
        router.revoked.is_marked((thread, self.collective >> 2, super::revoke::fingerprint(&self.members)))
    }

    /// A lost member's node, checked only when the node's failure count
    /// moved (rule 4); a failed one before a finished one.
    fn member_lost(&self) -> Option<CollError> {
        let router = &self.node().router;
        let failures = router.failures.load(Ordering::SeqCst);
        if failures == self.failures_seen.get() {
            return None;
        }
        if let Some(e) = self.failed_member() {
            return Some(e);
        }
        for &n in self.member_nodes.iter() {
            if let Some(lost) = router.peers[n as usize].lost() {
                return Some(CollError::PeerLost(lost.clone()));
            }
        }
        self.failures_seen.set(failures);
        None
    }
}

/// One collective call of one member.
pub(crate) struct Call {
    pub(crate) comm: Rc<Comm>,
    pub(crate) tag: u32,
    /// The call's place in the group's sequence, from 1: the same at every
    /// member, and growing (the per-node stage's counters, its rule 1).
    pub(crate) index: u64,
    /// Set once this member has heard another's abort (it then does not
    /// send one of its own).
    aborted: Cell<bool>,
    /// Set once the argument check found every member's arguments alike.
    agreed: Cell<bool>,
    /// In the per-node stage's queue for its turn.
    queued: Cell<bool>,
    /// Runs with the runtime's own choice of algorithms.
    own_choices: Cell<bool>,
    /// The per-node stage's leaders take the host stage (its step 3).
    pub(crate) on_host_stage: Cell<bool>,
    /// Sends of this call still waiting for their receives (announced
    /// messages): the call ends only once they complete (rule 7).
    sends: RefCell<Vec<crate::SendRequest>>,
}

impl Drop for Call {
    fn drop(&mut self) {
        self.leave_stage_queue();
    }
}

impl Call {
    /// Starts the next call on `comm`: every member numbers its calls in
    /// the same order.
    pub(crate) fn start(comm: &Rc<Comm>) -> Call {
        let tag = comm.next_tag.get();
        comm.next_tag.set(tag.wrapping_add(1));
        let index = comm.calls.get() + 1;
        comm.calls.set(index);
        let mut call = Call::with_tag(comm, tag);
        call.index = index;
        call
    }

    /// Queues this call for the per-node stage's turn, as it is made: a
    /// call that may take the stage (barrier, bcast, allreduce) takes its
    /// turn only after the member's earlier such calls (its rule 4).
    pub(crate) fn queue_for_stage(&self) {
        if let Some(stage) = &self.comm.node_stage {
            stage.queue(self.index);
            self.queued.set(true);
        }
    }

    /// Leaves the stage's queue: the call took its turn, or runs flat, or
    /// failed first.
    pub(crate) fn leave_stage_queue(&self) {
        if self.queued.replace(false) {
            if let Some(stage) = &self.comm.node_stage {
                stage.leave_queue(self.index);
            }
        }
    }

    /// A call of tag `tag` on `comm`: the leaders' part of a call of the
    /// group (per-node stage, step 3).
    pub(crate) fn with_tag(comm: &Rc<Comm>, tag: u32) -> Call {
        Call {
            comm: comm.clone(),
            tag,
            index: 0,
            aborted: Cell::new(false),
            agreed: Cell::new(false),
            queued: Cell::new(false),
            own_choices: Cell::new(false),
            on_host_stage: Cell::new(false),
            sends: RefCell::new(Vec::new()),
        }
    }

    /// Records that this member learned of the call's failure from
    /// another (it then sends no abort of its own).
    pub(crate) fn heard_abort(&self) {
        self.aborted.set(true);
    }

    /// Records that the argument check passed: the errors that follow
    /// from the arguments alone are then found by every member itself.
    pub(crate) fn arguments_agreed(&self) {
        self.agreed.set(true);
    }

    /// The tag the next call on `comm` will have (the same at every member).
    pub(crate) fn peek_tag(comm: &Comm) -> u32 {
        comm.next_tag.get()
    }

    pub(crate) fn rank(&self) -> usize {
        self.comm.rank
    }

    pub(crate) fn size(&self) -> usize {
        self.comm.size()
    }

    /// The algorithms forced on the group, unless this call runs with the
    /// runtime's own choices.
    pub(crate) fn algorithms(&self) -> Algorithms {
        match self.own_choices.get() {
            true => Algorithms::default(),
            false => self.comm.algorithms.get(),
        }
    }

    /// Runs this call with the runtime's own choice of algorithms, whatever
    /// the group forces (the argument check, which must not depend on what
    /// it checks).
    pub(crate) fn ignore_forced_algorithms(&self) {
        self.own_choices.set(true);
    }

    /// Sends raw bytes to member `to` without waiting for the receive
    /// (rule 7): eagerly, or announced and completed before the call ends.
    pub(crate) fn send_bytes(&self, to: usize, bytes: Vec<u8>) -> Result<(), CollError> {
        self.send_bytes_in(self.comm.collective, to, bytes)
    }

    fn send_bytes_in(&self, context: u32, to: usize, bytes: Vec<u8>) -> Result<(), CollError> {
        let c = &self.comm;
        let payload = Payload::from_vec(bytes);
        let mut send = c.ep.isend_in(context, c.members[to], self.tag, payload);
        if send.advance() {
            return send.wait().map_err(CollError::from);
        }
        self.sends.borrow_mut().push(send);
        Ok(())
    }

    /// Waits until the call's announced sends are received (rule 7).
    async fn sends_received(&self) -> Result<(), CollError> {
        std::future::poll_fn(|_| {
            let mut sends = self.sends.borrow_mut();
            let mut failed = None;
            sends.retain_mut(|s| {
                if !s.advance() {
                    return true;
                }
                let done = std::mem::replace(s, crate::Request::ready(Ok(())));
                if let Err(e) = done.wait() {
                    failed.get_or_insert(CollError::from(e));
                }
                false
            });
            if let Some(e) = failed {
                return Poll::Ready(Err(e));
            }
            if sends.is_empty() {
                return Poll::Ready(Ok(()));
            }
            match self.interrupted() {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Sends `values` to member `to`.
    pub(crate) fn send<T: Element>(&self, to: usize, values: &[T]) -> Result<(), CollError> {
        let mut bytes = Vec::new();
        T::write(values, &mut bytes);
        self.send_bytes(to, bytes)
    }

    /// Posts the receive of this call's next message from member `from`.
    pub(crate) fn recv(&self, from: usize) -> Recv<'_> {
        self.recv_in(self.comm.collective, from)
    }

    fn recv_in(&self, context: u32, from: usize) -> Recv<'_> {
        let c = &self.comm;
        let source = Source::Thread(c.members[from]);
        Recv {
            request: c.ep.irecv_in(context, source, TagMatch::Is(self.tag)),
            call: self,
        }
    }

    /// Posts the receive of this call's broadcast from member `from` by
    /// its node's multicast stream (`algorithms::multicast`).
    pub(crate) fn recv_multicast(&self, from: usize) -> Recv<'_> {
        self.recv_in(self.comm.multicast, from)
    }

    /// Sends `bytes` to every other member by this node's multicast
    /// stream; the bytes given back, nothing sent, where it does not reach
    /// every member's node.
    pub(crate) fn send_multicast(&self, bytes: Vec<u8>) -> Result<Option<Vec<u8>>, CollError> {
        let c = &self.comm;
        let mut to: Vec<Address> = (0..c.size())
            .filter(|&r| r != c.rank)
            .map(|r| c.members[r])
            .collect();
        to.sort_unstable_by_key(|a| (a.node, a.thread));
        let payload = Payload::from_vec(bytes);
        let declined = c.ep.send_by_stream(c.multicast, &to, self.tag, payload);
        Ok(declined.map_err(CollError::PeerLost)?.map(Payload::into_vec))
    }

    /// [`send_multicast`](Self::send_multicast), or where the stream does
    /// not reach every member's node, `bytes` to each other member
    /// directly in the same context: a receive posted by
    /// [`recv_multicast`](Self::recv_multicast) takes either.
    pub(crate) fn send_multicast_or_each(&self, bytes: Vec<u8>) -> Result<(), CollError> {
        let Some(bytes) = self.send_multicast(bytes)? else {
            return Ok(());
        };
        for to in (0..self.size()).filter(|&r| r != self.rank()) {
            self.send_bytes_in(self.comm.multicast, to, bytes.clone())?;
        }
        Ok(())
    }

    /// Whether the group has members on other nodes than this member's.
    pub(crate) fn spans_nodes(&self) -> bool {
        !self.comm.member_nodes.is_empty()
    }

    /// Whether the call's group can go by multicast streams: the job
    /// broadcasts by multicast where it can (the same at every member)
    /// and the group spans nodes.
    pub(crate) fn by_multicast(&self) -> bool {
        let router = &self.comm.node().router;
        router.multicast_job.load(Ordering::Acquire) && self.spans_nodes()
    }

    /// One step of most algorithms: posts the receive from `from`, sends
    /// `values` to `to`, then waits for the receive — `count` elements,
    /// if the algorithm knows how many.
    pub(crate) async fn sendrecv<T: Element>(
        &self,
        to: usize,
        values: &[T],
        from: usize,
        count: Option<usize>,
    ) -> Result<Received<T>, CollError> {
        let incoming = self.recv(from);
        self.send(to, values)?;
        self.decode(incoming.await?, count)
    }

    /// Receives exactly `count` elements from member `from`.
    pub(crate) async fn recv_exact<T: Element>(
        &self,
        from: usize,
        count: usize,
    ) -> Result<Received<T>, CollError> {
        let m = self.recv(from).await?;
        self.decode(m, Some(count))
    }

    /// Receives any number of elements from member `from`.
    pub(crate) async fn recv_any<T: Element>(
        &self,
        from: usize,
    ) -> Result<Received<T>, CollError> {
        let m = self.recv(from).await?;
        self.decode(m, None)
    }

    /// A received message's elements; `count` is what the algorithm
    /// expects, if it knows. The message's own bytes where they can be
    /// seen as elements in place (no copy, no fresh pages: at 1 MiB the
    /// page faults of a new buffer cost more than the copy).
    pub(crate) fn decode<T: Element>(
        &self,
        m: Message,
        count: Option<usize>,
    ) -> Result<Received<T>, CollError> {
        let bytes = m.into_vec();
        self.check_length::<T>(&bytes, count)?;
        Ok(match T::view(&bytes) {
            Some(_) => Received::InPlace(bytes, std::marker::PhantomData),
            None => Received::Decoded(T::read_all(&bytes)),
        })
    }

    /// [`decode`](Self::decode) of bytes.
    pub(crate) fn decode_bytes<T: Element>(
        &self,
        bytes: &[u8],
        count: Option<usize>,
    ) -> Result<Vec<T>, CollError> {
        self.check_length::<T>(bytes, count)?;
        Ok(T::read_all(bytes))
    }

    /// [`decode_bytes`](Self::decode_bytes) straight into `out`, whose
    /// length the bytes must fill.
    pub(crate) fn decode_into<T: Element>(
        &self,
        bytes: &[u8],
        out: &mut [T],
    ) -> Result<(), CollError> {
        self.check_length::<T>(bytes, Some(out.len()))?;
        T::read_into(bytes, out);
        Ok(())
    }

    /// That `bytes` hold whole elements, `count` of them if given.
    pub(crate) fn check_length<T: Element>(
        &self,
        bytes: &[u8],
        count: Option<usize>,
    ) -> Result<(), CollError> {
        let found = bytes.len() / T::SIZE;
        let whole = bytes.len().is_multiple_of(T::SIZE);
        if !whole || count.is_some_and(|c| c != found) {
            return Err(CollError::LengthMismatch {
                rank: self.rank(),
                expected: count.unwrap_or(found),
                found: if whole { found } else { bytes.len() },
            });
        }
        Ok(())
    }

    /// Why waiting on this call must stop, if it must (rule 4).
    pub(crate) fn interrupted(&self) -> Option<CollError> {
        if self.comm.revoked() {
            return Some(CollError::Revoked);
        }
        self.comm.member_lost().or_else(|| self.abort_heard())
    }

    /// Why a wait on this node's members must stop: a member's node
    /// failed (not merely finished), or an abort of this call arrived.
    pub(crate) fn failed_or_aborted(&self) -> Option<CollError> {
        let any_loss = self.comm.node().router.failures.load(Ordering::SeqCst) != 0;
        if self.comm.revoked() {
            return Some(CollError::Revoked);
        }
        any_loss
            .then(|| self.comm.failed_member())
            .flatten()
            .or_else(|| self.abort_heard())
    }

    /// Another member's abort of this call, if one arrived (rule 4).
    pub(crate) fn abort_heard(&self) -> Option<CollError> {
        let c = &self.comm;
        if c.ep.peek_in(c.abort, Source::Any, TagMatch::Is(self.tag)) {
            let m = c
                .ep
                .recv_in(c.abort, Source::Any, TagMatch::Is(self.tag))
                .ok()?;
            let from = c.members.iter().position(|&a| a == m.source()).unwrap_or(0);
            self.aborted.set(true);
            return Some(CollError::decode(&m.into_vec(), from));
        }
        None
    }

    /// Ends an algorithm's body with its result `r`: a success waits until
    /// the body's sends are received; a failure found here first is told
    /// to the others. Awaited right after the body,
    /// `call.finish(body.await).await`, so that the body's future is built
    /// in place inside its caller's: an `async fn` taking the body would
    /// hold it twice and copy it at its first poll (a barrier's future was
    /// 1.5 KB, half of it that copy, moved on every call).
    pub(crate) async fn finish<T>(&self, mut r: Result<T, CollError>) -> Result<T, CollError> {
        if r.is_ok() {
            if let Err(e) = self.sends_received().await {
                r = Err(e);
            }
        }
        if let Err(e) = &r {
            let found_by_all = self.agreed.get() && e.follows_from_arguments();
            if e.travels() && !self.aborted.get() && !found_by_all {
                let c = &self.comm;
                let bytes = e.encode(c.rank);
                for (i, &a) in c.members.iter().enumerate() {
                    if i != c.rank {
                        let _ = c.ep.send_eager_in(
                            c.abort,
                            a,
                            self.tag,
                            Payload::from_vec(bytes.clone()),
                        );
                    }
                }
            }
        }
        r
    }
}

/// A posted receive of a call, awaited (rule 4).
pub(crate) struct Recv<'c> {
    request: RecvRequest,
    call: &'c Call,
}

impl Future for Recv<'_> {
    type Output = Result<Message, CollError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.request.advance() {
            return Poll::Ready(match this.request.take() {
                Ok(m) => Ok(m),
                // A member that finished left because of the failure that
                // ended this call elsewhere; name the failed one if known.
                Err(crate::RecvError::PeerLost(lost))
                    if lost.cause == crate::LossCause::Finished =>
                {
                    Err(this
                        .call
                        .comm
                        .failed_member()
                        .unwrap_or(CollError::PeerLost(lost)))
                }
                Err(e) => Err(e.into()),
            });
        }
        match this.call.interrupted() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Pending,
        }
    }
}
