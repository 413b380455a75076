//! Endpoints: the calling thread's face to the job.

use crate::error::{
    Failure, InitError, InitErrorKind, LossCause, RecvError, SendError, SpawnError,
};
use crate::mailbox::{Mailbox, Posting, MAX_THREADS};
use crate::progress::Origin;
use crate::request::{RecvRequest, Request, SendRequest, State};
use crate::{Address, Message, Node, Source, Status, Tag, TagMatch};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use threadwire_transport::SendOutcome;
use threadwire_wire::{FrameHeader, Payload};

/// A thread endpoint `(node, thread)`: sends, receives and probes on behalf
/// of the thread that owns it. An `Endpoint` stays on its thread (it is not
/// `Send`); other threads get their own with [`Node::spawn`] or
/// [`Node::endpoint`]. Dropping thread 0's endpoint finalizes the node.
pub struct Endpoint {
    node: Node,
    address: Address,
    /// Whether dropping it finalizes the node (thread 0's own endpoint;
    /// not the aliases groups hold).
    finalizes: bool,
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
            _not_send: PhantomData,
        }
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
    /// mailbox — and borrowed bytes are copied once. Messages from one
    /// thread to another arrive in the order sent.
    pub fn send(&self, to: Address, tag: Tag, data: impl Into<Payload>) -> Result<(), SendError> {
        self.send_in(0, to, tag, data.into())
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
        let node = &*self.node.shared;
        let s = &node.router;
        if s.finalized.load(Ordering::Relaxed) {
            return Err(SendError::Finalized);
        }
        if to.node >= s.nodes || to.thread >= MAX_THREADS {
            return Err(SendError::NoSuchEndpoint { to, payload });
        }
        let len = payload.len();
        if to.node == s.id {
            self.mailbox().counters.sent(len);
            let mailbox = s
                .mailboxes
                .get(to.thread)
                .expect("thread below MAX_THREADS");
            mailbox.deliver(Message {
                source: self.address,
                context,
                tag,
                payload,
            });
            return Ok(());
        }
        let peer = &s.peers[to.node as usize];
        if let Some(lost) = peer.lost() {
            return Err(SendError::PeerLost {
                to,
                lost: lost.clone(),
                payload,
            });
        }
        if len as u64 > s.max_frame {
            return Err(SendError::TooLarge {
                to,
                len,
                max: s.max_frame,
                payload,
            });
        }
        let header = FrameHeader::data_in(
            context,
            self.address.thread,
            to.thread,
            tag,
            payload.format(),
            len as u64,
        );
        match peer.send(&header, payload) {
            Ok(outcome) => {
                self.mailbox().counters.sent(len);
                if outcome == SendOutcome::Queued {
                    node.engine.try_progress(s);
                }
                Ok(())
            }
            Err((e, payload)) => {
                s.lose_peer(to.node, LossCause::Failed(Failure::Channel(e.to_string())));
                let lost = peer.lost().cloned().expect("just marked lost");
                Err(SendError::PeerLost { to, lost, payload })
            }
        }
    }

    /// Starts a send. Sends are eager — the data is handed to the channel
    /// at once — so the request is complete on return; it exists so that
    /// code written against MPI-style requests reads naturally.
    pub fn isend(&self, to: Address, tag: Tag, data: impl Into<Payload>) -> SendRequest {
        Request::ready(self.send(to, tag, data))
    }

    /// [`isend`](Self::isend) in `context`. For the group module.
    pub(crate) fn isend_in(
        &self,
        context: u32,
        to: Address,
        tag: Tag,
        payload: Payload,
    ) -> SendRequest {
        Request::ready(self.send_in(context, to, tag, payload))
    }

    fn check_source(&self, from: Source) -> Result<(), RecvError> {
        let s = &self.node.shared.router;
        if s.finalized.load(Ordering::Relaxed) {
            return Err(RecvError::Finalized);
        }
        match from.node() {
            Some(n) if n >= s.nodes => Err(RecvError::NoSuchNode(n)),
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
            Some(n) if n == self.address.node => Origin::Local,
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
        if let Err(e) = self.check_source(from) {
            return Request::ready(Err(e));
        }
        let mailbox = self.mailbox();
        match mailbox.post(context, from, tag) {
            Posting::Matched(m) => Request::ready(Ok(m)),
            Posting::Pending(slot) => {
                if let Some(e) = self.loss_of(from) {
                    mailbox.cancel(&slot);
                    if let Some(m) = mailbox.try_take(context, from, tag) {
                        return Request::ready(Ok(m));
                    }
                    return Request::ready(Err(e));
                }
                Request {
                    state: State::Receiving {
                        shared: self.node.shared.clone(),
                        thread: self.address.thread,
                        slot,
                        origin: self.origin(from),
                    },
                    _not_send: PhantomData,
                }
            }
        }
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
        let message = self.recv(from, tag)?;
        crate::request::fill(message, buf)
    }

    /// Starts a receive into `buf` (its length is the most the message may
    /// have); the request gives the buffer back with the status, or with
    /// the error ([`RecvIntoError`](crate::RecvIntoError)), so nothing is
    /// lost.
    pub fn irecv_into(
        &self,
        from: impl Into<Source>,
        tag: impl Into<TagMatch>,
        buf: Vec<u8>,
    ) -> crate::RecvIntoRequest {
        let receive = self.irecv(from, tag);
        crate::request::into_buffer(self.node.shared.clone(), receive, buf)
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
            Some(e) => Err(e),
            None => Ok(None),
        }
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
        if let Some(status) = found {
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
        if self.finalizes {
            self.node.finalize();
        }
    }
}
