//! How a collective runs: its messages, its waits, and its request.
//!
//! An algorithm is an `async fn` over a [`Call`] — one collective call of
//! one member — that sends (eager: a send never blocks) and awaits
//! receives. Nothing here is an async runtime: the future is polled by
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

use super::algorithms::node_stage::NodeStage;
use super::context;
use super::element::Element;
use super::tuning::Algorithms;
use super::CollError;
use crate::node::NodeShared;
use crate::progress::Origin;
use crate::request::{Request, Schedule};
use crate::{Address, Endpoint, Message, RecvRequest, Source, TagMatch};
use std::cell::Cell;
use std::future::Future;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use threadwire_wire::Payload;

/// A received message's elements: its bytes seen in place, or decoded
/// where they cannot be (a big-endian host, misaligned bytes,
/// [`ValueLoc`](crate::ValueLoc)).
pub(crate) enum Received<T> {
    /// Bytes [`Element::view`] accepts.
    InPlace(Vec<u8>, std::marker::PhantomData<T>),
    Decoded(Vec<T>),
}

impl<T: Element> std::ops::Deref for Received<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Received::InPlace(bytes, _) => T::view(bytes).expect("checked when received"),
            Received::Decoded(values) => values,
        }
    }
}

impl<T: Element> Received<T> {
    /// The elements, owned.
    pub(crate) fn into_vec(self) -> Vec<T> {
        match self {
            Received::InPlace(..) => self.to_vec(),
            Received::Decoded(values) => values,
        }
    }
}

/// A group as its collectives see it: members, contexts, sequence.
pub(crate) struct Comm {
    pub(crate) ep: Endpoint,
    pub(crate) members: Arc<[Address]>,
    pub(crate) rank: usize,
    collective: u32,
    abort: u32,
    /// Nodes of other members, whose loss fails a call.
    member_nodes: Box<[u32]>,
    origin: Origin,
    next_tag: Cell<u32>,
    /// Calls started: the next call's index.
    calls: Cell<u64>,
    failures_seen: Cell<u64>,
    pub(crate) algorithms: Cell<Algorithms>,
    /// The per-node stage, for groups with members on this node.
    pub(crate) node_stage: Option<NodeStage>,
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
            abort: context::abort_context(k),
            member_nodes: member_nodes.into(),
            origin,
            next_tag: Cell::new(first_tag),
            calls: Cell::new(0),
            failures_seen: Cell::new(u64::MAX),
            algorithms: Cell::new(Algorithms::default()),
            node_stage: None,
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
        self.member_nodes.iter().find_map(|&n| {
            let lost = router.peers[n as usize].lost()?;
            matches!(lost.cause, crate::LossCause::Failed(_))
                .then(|| CollError::PeerLost(lost.clone()))
        })
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
    /// A blocking call: the only kind the per-node stage runs (its rule 4).
    pub(crate) blocking: bool,
}

impl Call {
    /// Starts the next call on `comm`: every member numbers its calls in
    /// the same order.
    pub(crate) fn start(comm: &Rc<Comm>) -> Call {
        let tag = comm.next_tag.get();
        comm.next_tag.set(tag.wrapping_add(1));
        let index = comm.calls.get() + 1;
        comm.calls.set(index);
        Call {
            index,
            ..Call::with_tag(comm, tag)
        }
    }

    /// Starts the next blocking call on `comm`.
    pub(crate) fn start_blocking(comm: &Rc<Comm>) -> Call {
        Call {
            blocking: true,
            ..Call::start(comm)
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
            blocking: false,
        }
    }

    /// Records that this member learned of the call's failure from
    /// another (it then sends no abort of its own).
    pub(crate) fn heard_abort(&self) {
        self.aborted.set(true);
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

    pub(crate) fn algorithms(&self) -> Algorithms {
        self.comm.algorithms.get()
    }

    /// Sends raw bytes to member `to`.
    pub(crate) fn send_bytes(&self, to: usize, bytes: Vec<u8>) -> Result<(), CollError> {
        let c = &self.comm;
        c.ep.send_in(c.collective, c.members[to], self.tag, Payload::from_vec(bytes))
            .map_err(CollError::from)
    }

    /// Sends `values` to member `to`.
    pub(crate) fn send<T: Element>(&self, to: usize, values: &[T]) -> Result<(), CollError> {
        let mut bytes = Vec::new();
        T::write(values, &mut bytes);
        self.send_bytes(to, bytes)
    }

    /// Posts the receive of this call's next message from member `from`.
    pub(crate) fn recv(&self, from: usize) -> Recv<'_> {
        let c = &self.comm;
        Recv {
            request: c.ep.irecv_in(
                c.collective,
                Source::Thread(c.members[from]),
                TagMatch::Is(self.tag),
            ),
            call: self,
        }
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

    fn check_length<T: Element>(&self, bytes: &[u8], count: Option<usize>) -> Result<(), CollError> {
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
        let c = &self.comm;
        if let Some(e) = c.member_lost() {
            return Some(e);
        }
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

    /// Runs an algorithm's body; if it fails here first, tells the others.
    pub(crate) async fn run<T>(
        &self,
        body: impl Future<Output = Result<T, CollError>>,
    ) -> Result<T, CollError> {
        let r = body.await;
        if let Err(e) = &r {
            if e.travels() && !self.aborted.get() {
                let c = &self.comm;
                let bytes = e.encode(c.rank);
                for (i, &a) in c.members.iter().enumerate() {
                    if i != c.rank {
                        let _ = c.ep.send_in(
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
        if this.request.is_done() {
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

fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Runs `fut` to completion on this thread (rule 1).
pub(crate) fn block_on<F: Future + ?Sized>(comm: &Comm, mut fut: Pin<&mut F>) -> F::Output {
    if let Poll::Ready(v) = poll_once(fut.as_mut()) {
        return v;
    }
    let node = comm.node();
    let mut out = None;
    node.engine.wait_until(&node.router, comm.origin, || {
        match poll_once(fut.as_mut()) {
            Poll::Ready(v) => {
                out = Some(v);
                true
            }
            Poll::Pending => false,
        }
    });
    out.expect("the wait ends on completion")
}

/// A blocking collective: `body` run to completion.
pub(crate) fn blocking<T>(
    comm: &Comm,
    body: impl Future<Output = Result<T, CollError>>,
) -> Result<T, CollError> {
    block_on(comm, pin!(body))
}

/// A nonblocking collective's request (rule 2).
pub(crate) fn nonblocking<T: 'static>(
    comm: &Rc<Comm>,
    body: impl Future<Output = Result<T, CollError>> + 'static,
) -> Request<T, CollError> {
    Request::scheduled(Box::new(Nonblocking {
        comm: comm.clone(),
        body: Box::pin(body),
    }))
}

type Body<T> = Pin<Box<dyn Future<Output = Result<T, CollError>>>>;

struct Nonblocking<T> {
    comm: Rc<Comm>,
    body: Body<T>,
}

impl<T> Schedule<T, CollError> for Nonblocking<T> {
    fn poll(&mut self) -> Option<Result<T, CollError>> {
        match poll_once(self.body.as_mut()) {
            Poll::Ready(r) => Some(r),
            Poll::Pending => None,
        }
    }

    fn block(&mut self) -> Result<T, CollError> {
        block_on(&self.comm, self.body.as_mut())
    }

    fn node(&self) -> &Arc<NodeShared> {
        self.comm.node()
    }
}
