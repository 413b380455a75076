//! A receive under way, from posting to the message in the caller's
//! hands: matched in the mailbox, then — for what a message's receipt must
//! still do ([`Tail`]) — its eager bytes returned to the sender's budget,
//! a synchronous sender released, or an announced message's bytes fetched
//! into the receive's buffer (`rendezvous`, steps 3 and 5).

use crate::error::{Failure, LossCause, RecvError};
use crate::mailbox::{Mailbox, Posting, Ticket};
use crate::message::Tail;
use crate::node::NodeShared;
use crate::progress::Origin;
use crate::rendezvous::{codec, Announced, Done, Fetch, OVERHEAD};
use crate::{Address, Message, Status};
use std::sync::Arc;
use std::time::Instant;
use threadwire_wire::{Format, FrameHeader, FrameKind, Payload};

/// Where a receive's bytes go.
pub(crate) enum Dest {
    /// A message of its own (`recv`).
    Owned,
    /// The caller's buffer, held by the request (`irecv_into`).
    Buffer(Vec<u8>),
    /// The caller's borrowed buffer (`recv_into`, which holds the
    /// receive on its stack and finishes or drops it before returning).
    Slice { ptr: *mut u8, len: usize },
}

/// What a receive got.
pub(crate) enum Got {
    /// The message (for [`Dest::Owned`]).
    Message(Message),
    /// The status of the bytes written into the caller's buffer.
    Status(Status),
}

impl Got {
    /// The message of an owned receive.
    #[inline]
    pub(crate) fn into_message(self) -> Message {
        match self {
            Got::Message(m) => m,
            Got::Status(_) => unreachable!("an owned receive gets a message"),
        }
    }

    /// The status of a receive into a buffer.
    #[inline]
    pub(crate) fn into_status(self) -> Status {
        match self {
            Got::Status(s) => s,
            Got::Message(_) => unreachable!("a receive into a buffer gets a status"),
        }
    }
}

impl Dest {
    /// The caller's buffer of an `irecv_into`, given back.
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        match self {
            Dest::Buffer(b) => b,
            _ => Vec::new(),
        }
    }
}

enum Phase {
    Posted(Ticket),
    /// An announced message's bytes on their way (pushed).
    Fetching(Fetching),
    Finished(Result<Got, RecvError>),
    Taken,
}

struct Fetching {
    /// The message's sender, tag and full length.
    status: Status,
    context: u32,
    format: Format,
    id: u64,
    done: Arc<Done>,
    /// The new buffer of an owned receive.
    owned: Option<Vec<u8>>,
    /// Bytes asked for.
    want: usize,
}

/// A receive from posting to completion.
pub(crate) struct Receive {
    pub(crate) shared: Arc<NodeShared>,
    thread: u32,
    pub(crate) origin: Origin,
    phase: Phase,
    dest: Dest,
}

impl Receive {
    /// A receive of a message already taken out of the mailbox (a matched
    /// probe's).
    pub(crate) fn matched(shared: Arc<NodeShared>, thread: u32, m: Message, dest: Dest) -> Receive {
        let origin = Origin::Peer(m.source.node);
        Receive::new(shared, thread, origin, Posting::Matched(m), dest)
    }

    /// A receive of `thread` as its mailbox's posting left it.
    pub(crate) fn new(
        shared: Arc<NodeShared>,
        thread: u32,
        origin: Origin,
        posting: Posting,
        dest: Dest,
    ) -> Receive {
        let mut r = Receive {
            shared,
            thread,
            origin,
            phase: Phase::Taken,
            dest,
        };
        match posting {
            Posting::Matched(m) => r.settle_matched(m),
            Posting::Pending(ticket) => r.phase = Phase::Posted(ticket),
        }
        r
    }

    /// What a message just taken from the mailbox must still do
    /// ([`settle_now`]), or its announced bytes to fetch.
    #[inline]
    fn settle_matched(&mut self, m: Message) {
        match settle_now(&self.shared, self.thread, m, &mut self.dest) {
            Ok(result) => self.phase = Phase::Finished(result),
            Err(mut m) => match std::mem::replace(&mut m.tail, Tail::None) {
                Tail::Announced(a) => self.fetch(m, *a),
                _ => unreachable!("settle_now gives back announced messages only"),
            },
        }
    }

    /// Whether what the receive waits for has happened (the next
    /// [`advance`](Self::advance) moves on without waiting).
    #[inline]
    pub(crate) fn is_ready(&self) -> bool {
        match &self.phase {
            Phase::Posted(ticket) => self.mailbox().is_done(*ticket),
            Phase::Fetching(f) => f.done.is_done(),
            Phase::Finished(_) | Phase::Taken => true,
        }
    }

    /// Moves on without waiting; `true` once finished, or once matched
    /// with nothing left to fetch (then [`take`](Self::take) settles it,
    /// and a receive dropped before that gives its message back).
    #[inline]
    pub(crate) fn advance(&mut self) -> bool {
        loop {
            match &self.phase {
                Phase::Posted(ticket) => {
                    let ticket = *ticket;
                    match self.mailbox().matched(ticket) {
                        None => return false,
                        Some(false) => return true,
                        Some(true) => {}
                    }
                    self.phase = Phase::Taken;
                    match self.mailbox().take(ticket).expect("a matched receive has its result") {
                        Ok(m) => self.settle_matched(m),
                        Err(e) => self.phase = Phase::Finished(Err(e)),
                    }
                }
                Phase::Fetching(f) if f.done.is_done() => {
                    let Phase::Fetching(f) = std::mem::replace(&mut self.phase, Phase::Taken)
                    else {
                        unreachable!()
                    };
                    self.phase = Phase::Finished(self.fetched(f));
                }
                Phase::Fetching(_) => return false,
                Phase::Finished(_) | Phase::Taken => return true,
            }
        }
    }

    /// Blocks the calling thread until finished (or matched with nothing
    /// to fetch).
    pub(crate) fn wait(&mut self) {
        while !self.advance() {
            let (engine, router) = (&self.shared.engine, &self.shared.router);
            match &self.phase {
                Phase::Posted(ticket) => {
                    let mailbox = self.mailbox();
                    engine.wait_until(router, self.origin, || mailbox.is_done(*ticket))
                }
                Phase::Fetching(f) => {
                    let node = Origin::Peer(f.status.source.node);
                    engine.wait_until(router, node, || f.done.is_done())
                }
                _ => {}
            }
        }
    }

    /// [`wait`](Self::wait), giving up at `deadline` while no message has
    /// matched (a matched one is finished whatever the time): whether it
    /// finished.
    pub(crate) fn wait_deadline(&mut self, deadline: Instant) -> bool {
        while !self.advance() {
            let (engine, router) = (&self.shared.engine, &self.shared.router);
            match &self.phase {
                Phase::Posted(ticket) => {
                    let mailbox = self.mailbox();
                    let done = || mailbox.is_done(*ticket);
                    if !engine.wait_until_deadline(router, self.origin, done, deadline) {
                        return self.advance();
                    }
                }
                Phase::Fetching(f) => {
                    let node = Origin::Peer(f.status.source.node);
                    engine.wait_until(router, node, || f.done.is_done())
                }
                _ => {}
            }
        }
        true
    }

    /// The result, once finished.
    // Inlined, with `settle_now`, `land` and the request's `from_receive`: out
    // of line, the message (about 100 bytes) was copied through each call's
    // frame, and those copies stalled on store forwarding (a local send and
    // receive: 190–240 against 175–225 ns; PERFORMANCE-STUDIES.md, "The
    // small-message receive path").
    #[inline]
    pub(crate) fn take(&mut self) -> Result<Got, RecvError> {
        self.wait();
        if let Phase::Posted(ticket) = self.phase {
            self.phase = Phase::Taken;
            match self.mailbox().take(ticket).expect("`wait` saw it done") {
                Ok(m) => self.settle_matched(m),
                Err(e) => self.phase = Phase::Finished(Err(e)),
            }
            self.wait();
        }
        match std::mem::replace(&mut self.phase, Phase::Taken) {
            Phase::Finished(r) => r,
            _ => panic!("receive result already taken"),
        }
    }

    /// Cancels the receive if no message matched it yet (then it finishes
    /// with [`RecvError::Cancelled`]): `true` if cancelled.
    pub(crate) fn cancel(&mut self) -> bool {
        let Phase::Posted(ticket) = self.phase else {
            return false;
        };
        if !self.mailbox().withdraw(ticket) {
            return false;
        }
        self.phase = Phase::Finished(Err(RecvError::Cancelled));
        true
    }

    /// The receiving thread's mailbox (its owner's operations: a receive
    /// stays on the thread that posted it, its request not being `Send`).
    #[inline]
    fn mailbox(&self) -> &Mailbox {
        self.shared
            .router
            .mailboxes
            .get(self.thread)
            .expect("the receiving thread's mailbox exists")
    }

    /// The caller's buffer of an `irecv_into`, given back.
    pub(crate) fn take_buffer(&mut self) -> Vec<u8> {
        std::mem::replace(&mut self.dest, Dest::Owned).into_buffer()
    }

    /// Rendezvous step 3.
    fn fetch(&mut self, m: Message, a: Announced) {
        let status = Status {
            source: m.source,
            tag: m.tag,
            len: a.len,
        };
        let node = m.source.node;
        let router = &self.shared.router;
        let fetch = match a.fetch {
            Fetch::Inline(bytes) => {
                router.rendezvous.budget.took(node, a.len + OVERHEAD);
                self.finish_fetch(m.source, a.send_id);
                let payload = Payload::from_wire(a.format, bytes);
                self.phase = Phase::Finished(land(&mut self.dest, message(m, payload)));
                return;
            }
            other => other,
        };
        let mut owned = None;
        let (ptr, capacity) = match &mut self.dest {
            Dest::Owned => {
                let v = owned.insert(Vec::<u8>::with_capacity(a.len));
                (v.as_mut_ptr(), a.len)
            }
            Dest::Buffer(b) => (b.as_mut_ptr(), b.len()),
            Dest::Slice { ptr, len } => (*ptr, *len),
        };
        let want = a.len.min(capacity);
        match fetch {
            Fetch::Inline(_) => unreachable!("handled above"),
            Fetch::Pull(segments) => {
                let peer = &router.peers[node as usize];
                // SAFETY: as above; the kernel writes at most `want` bytes.
                let buf = unsafe { std::slice::from_raw_parts_mut(ptr, want) };
                let pulled = match peer.shm() {
                    Some(shm) => shm.pull(&segments, buf).map_err(|e| e.to_string()),
                    None => Err("announced for shared memory on a TCP pair".into()),
                };
                if let Err(why) = pulled {
                    router.lose_peer(node, LossCause::Failed(Failure::Channel(why)));
                    self.phase = Phase::Finished(Err(self.loss(node)));
                    return;
                }
                self.finish_fetch(m.source, a.send_id);
                self.phase = Phase::Finished(match owned {
                    Some(mut v) => {
                        // SAFETY: the pull wrote all `want` = `a.len` bytes.
                        unsafe { v.set_len(want) };
                        Ok(Got::Message(message(m, Payload::from_wire(a.format, v))))
                    }
                    None => into_status(status, capacity),
                });
            }
            Fetch::Push => {
                let done = Arc::new(Done::new());
                // SAFETY: the buffer stays put and untouched until `done`
                // or a withdrawal (`Drop`): an owned one lives in the
                // fetch, the caller's in `dest`, lent for the receive's life.
                let id = unsafe {
                    router
                        .rendezvous
                        .fetches
                        .register(node, ptr, want, done.clone())
                };
                let peer = &router.peers[node as usize];
                if let Some(tcp) = peer.data_tcp() {
                    // SAFETY: as for the registration above; the
                    // withdrawal in `Drop` unplaces it too.
                    unsafe { tcp.place(id, ptr, want) };
                }
                let returns = router.rendezvous.budget.take_returns(node);
                let cts = codec::encode_cts(a.send_id, id, want, returns);
                self.phase = Phase::Fetching(Fetching {
                    status,
                    context: m.context,
                    format: a.format,
                    id,
                    done,
                    owned,
                    want,
                });
                self.answer(m.source, FrameKind::Cts, cts);
            }
        }
    }

    /// Rendezvous step 5.
    fn fetched(&mut self, f: Fetching) -> Result<Got, RecvError> {
        if let Err(lost) = f.done.outcome() {
            self.unplace(f.status.source.node, f.id);
            return Err(RecvError::PeerLost(lost));
        }
        match f.owned {
            Some(mut v) => {
                // SAFETY: the bulk frame filled all `want` bytes before
                // `done` was set.
                unsafe { v.set_len(f.want) };
                Ok(Got::Message(Message {
                    source: f.status.source,
                    context: f.context,
                    tag: f.status.tag,
                    payload: Payload::from_wire(f.format, v),
                    tail: Tail::None,
                }))
            }
            None => into_status(f.status, self.capacity()),
        }
    }

    fn capacity(&self) -> usize {
        match &self.dest {
            Dest::Owned => usize::MAX,
            Dest::Buffer(b) => b.len(),
            Dest::Slice { len, .. } => *len,
        }
    }

    /// Step 4 from this side: `Fin` to the sender, with the budget's
    /// returns.
    fn finish_fetch(&self, to: Address, send_id: u64) {
        let returns = self
            .shared
            .router
            .rendezvous
            .budget
            .take_returns(to.node);
        self.answer(to, FrameKind::Fin, codec::encode_fin(send_id, returns));
    }

    /// Sends a rendezvous frame to the sending thread `to`.
    fn answer(&self, to: Address, kind: FrameKind, payload: Vec<u8>) {
        answer(&self.shared, self.thread, to, kind, payload)
    }

    fn loss(&self, node: u32) -> RecvError {
        match self.shared.router.peers[node as usize].lost() {
            Some(lost) => RecvError::PeerLost(lost.clone()),
            None => RecvError::Finalized,
        }
    }

    /// Takes the buffer of fetch `id` back from a TCP channel's reader.
    fn unplace(&self, node: u32, id: u64) {
        let peer = &self.shared.router.peers[node as usize];
        if let Some(tcp) = peer.tcp().and_then(|c| c.as_tcp()) {
            tcp.unplace(id);
        }
    }
}

impl Drop for Receive {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Taken) {
            Phase::Posted(ticket) => self.mailbox().cancel(ticket),
            Phase::Fetching(f) => {
                // Nothing may write the buffer once this returns: withdraw
                // it, or wait for whoever took the entry to finish.
                let router = &self.shared.router;
                let node = f.status.source.node;
                if !router.rendezvous.fetches.withdraw(f.id) {
                    let done = || f.done.is_done();
                    self.shared
                        .engine
                        .wait_until(router, Origin::Peer(node), done);
                }
                self.unplace(node, f.id);
            }
            Phase::Finished(_) | Phase::Taken => {}
        }
    }
}

fn message(m: Message, payload: Payload) -> Message {
    Message {
        payload,
        tail: Tail::None,
        ..m
    }
}

fn into_status(status: Status, capacity: usize) -> Result<Got, RecvError> {
    if status.len > capacity {
        return Err(RecvError::Truncated { status, capacity });
    }
    Ok(Got::Status(status))
}

/// A matched message's receipt without a [`Receive`], for all but an
/// announced one (given back, to be fetched): its eager bytes returned to
/// the sender's budget or its synchronous sender released, then its bytes
/// into `dest`. A receive whose message was waiting when it was posted
/// ends here, with no receive to build, wait on and take apart.
#[inline]
pub(crate) fn settle_now(
    shared: &NodeShared,
    thread: u32,
    mut m: Message,
    dest: &mut Dest,
) -> Result<Result<Got, RecvError>, Message> {
    let node = m.source.node;
    match std::mem::replace(&mut m.tail, Tail::None) {
        Tail::None => {}
        Tail::Eager(cost) => {
            let budget = &shared.router.rendezvous.budget;
            if let Some(returns) = budget.took(node, cost as usize) {
                let credit = codec::encode_credit(returns);
                answer(shared, thread, m.source, FrameKind::Credit, credit);
            }
        }
        Tail::Sync(done) => done.succeed(),
        announced @ Tail::Announced(_) => {
            m.tail = announced;
            return Err(m);
        }
    }
    Ok(land(dest, m))
}

/// An eager message into `dest`.
#[inline]
fn land(dest: &mut Dest, m: Message) -> Result<Got, RecvError> {
    match dest {
        Dest::Owned => Ok(Got::Message(m)),
        Dest::Buffer(b) => crate::request::fill(m, b).map(Got::Status),
        Dest::Slice { ptr, len } => {
            // SAFETY: `recv_into` lends its buffer for the receive's
            // life and touches it only after the receive is finished.
            let buf = unsafe { std::slice::from_raw_parts_mut(*ptr, *len) };
            crate::request::fill(m, buf).map(Got::Status)
        }
    }
}

/// Sends a frame of the receive's protocol (a budget's credit, a
/// rendezvous answer) from `thread` to the sending thread `to`.
fn answer(shared: &NodeShared, thread: u32, to: Address, kind: FrameKind, payload: Vec<u8>) {
    let router = &shared.router;
    let header = FrameHeader::addressed(
        kind,
        thread,
        to.thread,
        0,
        0,
        Format::OPAQUE,
        payload.len() as u64,
    );
    let peer = &router.peers[to.node as usize];
    if let Err((e, _)) = peer.send(&header, Payload::from_vec(payload)) {
        router.lose_peer(to.node, LossCause::Failed(Failure::Channel(e.to_string())));
    }
}
