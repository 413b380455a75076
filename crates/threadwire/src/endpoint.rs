//! Endpoints: the calling thread's face to the job.

use crate::error::{InitError, InitErrorKind, LossCause, RecvError, SendError, SpawnError};
use crate::mailbox::{Mailbox, Posting, MAX_THREADS};
use crate::progress::Origin;
use crate::receive::{settle_now, Dest, Got, Receive};
use crate::request::{RecvRequest, Request, SendRequest, State};
use crate::send::{Mode, SendBuf};
use crate::{Address, Message, Node, Source, Status, Tag, TagMatch};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use threadwire_wire::Payload;

/// A thread endpoint `(node, thread)`: sends, receives and probes on behalf
/// of the thread that owns it. An `Endpoint` stays on its thread (it is not
/// `Send`); other threads get their own with [`Node::spawn`] or
/// [`Node::endpoint`]. Dropping thread 0's endpoint finalizes the node.
pub struct Endpoint {
    pub(crate) node: Node,
    pub(crate) address: Address,
    /// Whether dropping it finalizes the node (thread 0's own endpoint;
    /// not the aliases groups hold).
    finalizes: bool,
    /// Whether it is the thread's own endpoint (not an alias): dropping it
    /// means the thread has finished.
    owns_thread: bool,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endpoint({})", self.address)
    }
}

impl Endpoint {
    pub(crate) fn bind(node: Node, thread: u32) -> Result<Endpoint, InitError> {
        let mailbox = node
            .shared
            .router
            .mailboxes
            .get(thread)
            .ok_or(SpawnError::ThreadsExhausted { max: MAX_THREADS })?;
        if !mailbox.set_owner(threadwire_fiber::current_unparker()) {
            return Err(InitError::new(InitErrorKind::AlreadyEndpoint(
                Address::new(node.id(), thread),
            )));
        }
        let address = Address::new(node.id(), thread);
        Ok(Endpoint {
            node,
            address,
            finalizes: thread == 0,
            owns_thread: true,
            _not_send: PhantomData,
        })
    }

    /// Another handle on this thread's endpoint, for the group module: it
    /// stays on this thread (not `Send`) and never finalizes the node.
    pub(crate) fn alias(&self) -> Endpoint {
        Endpoint {
            node: self.node.clone(),
            address: self.address,
            finalizes: false,
            owns_thread: false,
            _not_send: PhantomData,
        }
    }

    /// Another handle on this endpoint, for code of the same thread that
    /// must own one (a library's per-thread state, as the PVM library
    /// keeps for a thread started by [`spawn_remote`](Self::spawn_remote)):
    /// it stays on this thread, and dropping it ends nothing — neither
    /// the thread's endpoint nor, for thread 0, the node.
    ///
    /// ```
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let other = ep.handle();
    /// assert_eq!(other.address(), ep.address());
    /// drop(other);
    /// ep.send(ep.address(), 1, b"still here".to_vec()).unwrap();
    /// ```
    pub fn handle(&self) -> Endpoint {
        self.alias()
    }

    /// This endpoint's address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The node this endpoint belongs to.
    pub fn node(&self) -> &Node {
        &self.node
    }

    pub(crate) fn mailbox(&self) -> &Mailbox {
        self.node
            .shared
            .router
            .mailboxes
            .get(self.address.thread)
            .expect("own mailbox exists")
    }

    /// Sends `data` to `to` with `tag`. Returns once the data may be reused:
    /// an owned buffer (`Vec<u8>`, a finished [`Packer`](threadwire_wire::Packer))
    /// moves without a copy — to a thread of this node straight into its
    /// mailbox — and borrowed bytes are copied once, unless they are long
    /// enough to be announced, and then read where they are: by the
    /// receive of a node of this host, by the connection over TCP
    /// ([`SendBuf`]). Messages from one thread
    /// to another arrive in the order sent.
    ///
    /// A message to another node goes eagerly when it is short enough
    /// and the peer's budget ([`Config::eager_budget`](crate::Config::eager_budget))
    /// has room; a longer one is announced, its bytes moving once a
    /// receive has matched it, straight into the receiver's buffer. `send`
    /// returns at once while the budget holds the message, and otherwise
    /// waits until a receive has matched it (as MPI's standard mode
    /// allows), so memory stays bounded.
    pub fn send<'a>(
        &self,
        to: Address,
        tag: Tag,
        data: impl Into<SendBuf<'a>>,
    ) -> Result<(), SendError> {
        self.send_buf(to, tag, data.into())
    }

    /// Sends `data` and returns only once a receive has matched it (MPI's
    /// `MPI_Ssend`): to a thread of this node as to any other.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let me = threadwire::init()?;
    /// let peer = threadwire::Address::new(1, 0);
    /// me.ssend(peer, 3, &b"are you there?"[..])?; // returns once n1.t0 received it
    /// # Ok(())
    /// # }
    /// ```
    pub fn ssend(&self, to: Address, tag: Tag, data: impl Into<Payload>) -> Result<(), SendError> {
        self.issend(to, tag, data).wait()
    }

    /// Starts a synchronous send: the request completes once a receive
    /// has matched the message.
    pub fn issend(&self, to: Address, tag: Tag, data: impl Into<Payload>) -> SendRequest {
        self.post_send(0, to, tag, data.into(), Mode::Sync)
    }

    /// [`send`](Self::send) in `context` (0: plain point-to-point); only
    /// receives of the same context match it. For the group module.
    #[inline]
    pub(crate) fn send_in(
        &self,
        context: u32,
        to: Address,
        tag: Tag,
        payload: Payload,
    ) -> Result<(), SendError> {
        self.post_send(context, to, tag, payload, Mode::Standard).wait()
    }

    /// [`send_in`](Self::send_in), eager at any length and whatever the
    /// budget: for the steps of a collective, whose sends must not wait
    /// for their receives (every member sends before it receives).
    #[inline]
    pub(crate) fn send_eager_in(
        &self,
        context: u32,
        to: Address,
        tag: Tag,
        payload: Payload,
    ) -> Result<(), SendError> {
        self.post_send(context, to, tag, payload, Mode::Eager).wait()
    }

    /// Starts a send: complete at once when the message went eagerly (or
    /// to this node), else once a receive has matched it. A request
    /// dropped before completion lets the send finish on its own.
    pub fn isend(&self, to: Address, tag: Tag, data: impl Into<Payload>) -> SendRequest {
        self.post_send(0, to, tag, data.into(), Mode::Standard)
    }

    /// [`isend`](Self::isend) in `context`. For the group module.
    pub(crate) fn isend_in(
        &self,
        context: u32,
        to: Address,
        tag: Tag,
        payload: Payload,
    ) -> SendRequest {
        self.post_send(context, to, tag, payload, Mode::Standard)
    }

    fn check_source(&self, from: Source) -> Result<(), RecvError> {
        let s = &self.node.shared.router;
        if s.finalized.load(Ordering::Relaxed) {
            return Err(RecvError::Finalized);
        }
        match from.node() {
            Some(n) if n >= s.nodes() => Err(RecvError::NoSuchNode(n)),
            _ => Ok(()),
        }
    }

    fn loss_of(&self, from: Source) -> Option<RecvError> {
        let n = from.node()?;
        if n == self.address.node {
            return None;
        }
        self.node.shared.router.peers[n as usize]
            .lost()
            .map(|l| RecvError::PeerLost(l.clone()))
    }

    fn origin(&self, from: Source) -> Origin {
        match from.node() {
            Some(n) if n == self.address.node && !self.node.shared.router.notify.hosts_watched() => {
                Origin::Local
            }
            Some(n) if n == self.address.node => Origin::Anywhere,
            Some(n) => Origin::Peer(n),
            None => Origin::Anywhere,
        }
    }

    /// Starts a receive of the first message matching `from` and `tag`.
    pub fn irecv(&self, from: impl Into<Source>, tag: impl Into<TagMatch>) -> RecvRequest {
        self.irecv_in(0, from.into(), tag.into())
    }

    /// [`irecv`](Self::irecv) in `context`: matches only messages sent in
    /// it. For the group module.
    #[inline]
    pub(crate) fn irecv_in(&self, context: u32, from: Source, tag: TagMatch) -> RecvRequest {
        match self.receive(context, from, tag, Dest::Owned) {
            Ok(Posted::Receiving(r)) => Request {
                state: State::Receiving(r),
                _not_send: PhantomData,
            },
            Ok(Posted::Finished(r, _)) => Request::ready(r.map(Got::into_message)),
            Err((e, _)) => Request::ready(Err(e)),
        }
    }

    /// Posts a receive of `context` whose bytes go to `dest`; one whose
    /// message was already waiting (and is not announced) finishes at
    /// once, with no receive under way ([`Posted::Finished`]).
    #[inline]
    fn receive(
        &self,
        context: u32,
        from: Source,
        tag: TagMatch,
        mut dest: Dest,
    ) -> Result<Posted, (RecvError, Dest)> {
        if let Err(e) = self.check_source(from) {
            return Err((e, dest));
        }
        let mailbox = self.mailbox();
        let thread = self.address.thread;
        let posting = match mailbox.post(context, from, tag) {
            Posting::Pending(ticket) => match self.loss_of(from) {
                None => Posting::Pending(ticket),
                Some(e) => {
                    mailbox.cancel(ticket);
                    match mailbox.try_take(context, from, tag) {
                        Some(m) => Posting::Matched(m),
                        None => return Err((e, dest)),
                    }
                }
            },
            matched => matched,
        };
        let posting = match posting {
            Posting::Matched(m) => match settle_now(&self.node.shared, thread, m, &mut dest) {
                Ok(result) => return Ok(Posted::Finished(result, dest)),
                Err(announced) => Posting::Matched(announced),
            },
            pending => pending,
        };
        let shared = self.node.shared.clone();
        let receive = Receive::new(shared, thread, self.origin(from), posting, dest);
        Ok(Posted::Receiving(receive))
    }

    /// Receives the first message matching `from` and `tag`, blocking only
    /// the calling thread. Fails with [`RecvError::PeerLost`] if the node it
    /// waits on is lost, rather than waiting forever.
    ///
    /// `from` is an [`Address`], a [`Source`] (`Source::Node(n)`,
    /// [`ANY_SOURCE`](crate::ANY_SOURCE)); `tag` a [`Tag`] or
    /// [`ANY_TAG`](crate::ANY_TAG).
    pub fn recv(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Message, RecvError> {
        self.irecv(from, tag).wait()
    }

    /// Receives the first message matching `from` and `tag` into `buf`,
    /// blocking only the calling thread, and returns its status (`len` is
    /// the bytes written). A message longer than `buf` fills it, is
    /// consumed, and fails with [`RecvError::Truncated`] carrying its real
    /// length.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let me = threadwire::init()?;
    /// let mut buf = vec![0u8; 1 << 20];
    /// let status = me.recv_into(threadwire::ANY_SOURCE, 7, &mut buf)?;
    /// println!("{} bytes from {}", status.len, status.source);
    /// # Ok(())
    /// # }
    /// ```
    pub fn recv_into(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
        buf: &mut [u8],
    ) -> Result<Status, RecvError> {
        let dest = Dest::Slice {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        };
        // Held here and finished or dropped before `buf`'s borrow ends.
        let posted = self.receive(0, from.into(), tag.into(), dest);
        let got = match posted.map_err(|(e, _)| e)? {
            Posted::Receiving(mut receive) => receive.take(),
            Posted::Finished(got, _) => got,
        };
        got.map(Got::into_status)
    }

    /// Starts a receive into `buf` (its length is the most the message may
    /// have); the request gives the buffer back with the status, or with
    /// the error ([`RecvIntoError`](crate::RecvIntoError)), so nothing is
    /// lost.
    ///
    /// ```
    /// use threadwire::{Address, RecvError};
    ///
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// ep.send(ep.address(), 7, b"ping".to_vec()).unwrap();
    /// let (buf, status) = ep.irecv_into(ep.address(), 7, vec![0; 16]).wait().unwrap();
    /// assert_eq!(&buf[..status.len], b"ping");
    /// // No node 5 in a job of one: the error, and the buffer back.
    /// let e = ep.irecv_into(Address::new(5, 0), 7, buf).wait().unwrap_err();
    /// assert!(matches!(e.error, RecvError::NoSuchNode(5)));
    /// assert_eq!(e.buffer.len(), 16);
    /// ```
    pub fn irecv_into(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
        buf: Vec<u8>,
    ) -> crate::RecvIntoRequest {
        match self.receive(0, from.into(), tag.into(), Dest::Buffer(buf)) {
            Ok(Posted::Receiving(r)) => Request {
                state: State::Receiving(r),
                _not_send: PhantomData,
            },
            Ok(Posted::Finished(got, dest)) => {
                let buffer = dest.into_buffer();
                Request::ready(match got {
                    Ok(got) => Ok((buffer, got.into_status())),
                    Err(error) => Err(crate::RecvIntoError { error, buffer }),
                })
            }
            Err((error, dest)) => Request::ready(Err(crate::RecvIntoError {
                error,
                buffer: dest.into_buffer(),
            })),
        }
    }

    /// [`recv`](Self::recv) in `context`. For the group module.
    pub(crate) fn recv_in(
        &self,
        context: u32,
        from: Source,
        tag: TagMatch,
    ) -> Result<Message, RecvError> {
        self.irecv_in(context, from, tag).wait()
    }

    /// [`recv_in`](Self::recv_in) of a message the progress engine itself
    /// delivers on this node's behalf (the launcher's answers, `vm`): the
    /// source is this node, yet the wait drives progress, as only a poll
    /// of the control connection brings it.
    pub(crate) fn recv_driven(&self, context: u32, tag: TagMatch) -> Result<Message, RecvError> {
        let from = Source::Node(self.address.node);
        let posted = self.receive(context, from, tag, Dest::Owned);
        let mut receive = match posted.map_err(|(e, _)| e)? {
            Posted::Receiving(receive) => receive,
            Posted::Finished(got, _) => return got.map(Got::into_message),
        };
        receive.origin = Origin::Anywhere;
        Request {
            state: State::Receiving(receive),
            _not_send: PhantomData,
        }
        .wait()
    }

    /// Whether a message of `context` from `from` with `tag` waits,
    /// without polling. For the group module (a collective's abort).
    pub(crate) fn peek_in(&self, context: u32, from: Source, tag: TagMatch) -> bool {
        self.mailbox().probe(context, from, tag).is_some()
    }

    /// The status of a matching message if one has arrived, without
    /// receiving it.
    pub fn iprobe(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Option<Status>, RecvError> {
        let (from, tag) = (from.into(), tag.into());
        self.check_source(from)?;
        let node = &*self.node.shared;
        if let Some(status) = self.mailbox().probe(0, from, tag) {
            return Ok(Some(status));
        }
        if self.origin(from) != Origin::Local {
            node.engine.try_progress(&node.router);
        }
        if let Some(status) = self.mailbox().probe(0, from, tag) {
            return Ok(Some(status));
        }
        match self.loss_of(from) {
            // A loss is recorded after its notifications are delivered.
            Some(e) => self.mailbox().probe(0, from, tag).map(Some).ok_or(e),
            None => Ok(None),
        }
    }

    /// Takes the first matching message that has arrived out of matching,
    /// if any, without receiving it (MPI's `MPI_Improbe`): no other
    /// receive can get it; [`Matched::mrecv`](crate::Matched::mrecv)
    /// receives it.
    pub fn improbe(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Option<crate::Matched>, RecvError> {
        let (from, tag) = (from.into(), tag.into());
        Ok(match self.iprobe(from, tag)? {
            Some(_) => self.take_matched(from, tag),
            None => None,
        })
    }

    /// Waits until a matching message has arrived and takes it out of
    /// matching (MPI's `MPI_Mprobe`); see [`improbe`](Self::improbe).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let me = threadwire::init()?;
    /// let held = me.mprobe(threadwire::ANY_SOURCE, 5)?;
    /// let mut buf = vec![0u8; held.status().len]; // sized by the probe
    /// held.mrecv_into(&mut buf)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn mprobe(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<crate::Matched, RecvError> {
        let (from, tag) = (from.into(), tag.into());
        self.probe(from, tag)?;
        // Only this thread takes messages out of its mailbox: the message
        // probed is still there.
        Ok(self
            .take_matched(from, tag)
            .expect("a probed message stays until its owner takes it"))
    }

    fn take_matched(&self, from: Source, tag: TagMatch) -> Option<crate::Matched> {
        let m = self.mailbox().try_take(0, from, tag)?;
        Some(crate::Matched::new(
            self.node.shared.clone(),
            self.address.thread,
            m,
        ))
    }

    /// Waits until a matching message has arrived and returns its status,
    /// leaving it to be received.
    pub fn probe(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
    ) -> Result<Status, RecvError> {
        let (from, tag) = (from.into(), tag.into());
        self.check_source(from)?;
        let node = &*self.node.shared;
        let s = &node.router;
        let failures = s.failures.load(Ordering::SeqCst);
        let mut found = None;
        node.engine.wait_until(s, self.origin(from), || {
            found = self.mailbox().probe(0, from, tag);
            found.is_some()
                || self.loss_of(from).is_some()
                || (from.node().is_none() && s.failures.load(Ordering::SeqCst) != failures)
        });
        // Again: a loss seen in the wait is recorded after its
        // notifications are delivered.
        if let Some(status) = found.or_else(|| self.mailbox().probe(0, from, tag)) {
            return Ok(status);
        }
        if let Some(e) = self.loss_of(from) {
            return Err(e);
        }
        let lost = s
            .peers
            .iter()
            .filter_map(|p| p.lost())
            .find(|l| matches!(l.cause, LossCause::Failed(_)));
        Err(RecvError::PeerLost(
            lost.cloned().expect("a failure was counted"),
        ))
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if self.owns_thread {
            let router = &self.node.shared.router;
            router.notify.thread_finished(self.address.thread);
        }
        if self.finalizes {
            self.node.finalize();
        }
    }
}

/// A receive as its posting left it.
enum Posted {
    /// Waiting for its message, or for an announced message's bytes.
    Receiving(Receive),
    /// Its message was waiting: the result, and the destination to give
    /// back (an `irecv_into`'s buffer).
    Finished(Result<Got, RecvError>, Dest),
}
