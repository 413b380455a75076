//! The sending side of an endpoint: how a message is handed over —
//! eagerly, buffered or announced (`rendezvous`) — and the data a send
//! takes ([`SendBuf`]).

use crate::error::{Failure, LossCause, SendError};
use crate::mailbox::MAX_THREADS;
use crate::message::Tail;
use crate::rendezvous::{self, Done, Fetch, Outbound, OVERHEAD};
use crate::request::{Request, SendRequest, State};
use crate::{Address, Endpoint, Message, PeerLost, Tag};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use threadwire_transport::SendOutcome;
use threadwire_wire::{FrameHeader, FrameKind, Packer, Payload};

/// How a send hands its message over (`rendezvous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Eagerly if short enough and the budget has room, else announced.
    Standard,
    /// Eagerly whatever its length and the budget.
    Eager,
    /// Announced; complete once received.
    Sync,
    /// Announced, never buffered nor inline: the payload borrows the
    /// caller's bytes, which the receive pulls where they are or the
    /// connection writes from them; the send waits until the payload is
    /// gone.
    Direct,
}

/// What [`Endpoint::send`] sends: anything that makes a [`Payload`] —
/// an owned `Vec<u8>` or `String` (moved, not copied), a finished
/// [`Packer`], a `Payload` — or borrowed bytes (`&[u8]`, `&Vec<u8>`,
/// `&str`). Borrowed bytes too long to go eagerly are read straight out
/// of them, without a copy — by the receive of a node of this host, by
/// the connection's writer over TCP — while the send waits; short ones
/// are copied once.
pub struct SendBuf<'a>(Data<'a>);

enum Data<'a> {
    Owned(Payload),
    Borrowed(&'a [u8]),
}

impl From<Payload> for SendBuf<'_> {
    fn from(p: Payload) -> Self {
        SendBuf(Data::Owned(p))
    }
}

impl From<Vec<u8>> for SendBuf<'_> {
    fn from(v: Vec<u8>) -> Self {
        SendBuf(Data::Owned(Payload::from_vec(v)))
    }
}

impl From<String> for SendBuf<'_> {
    fn from(s: String) -> Self {
        SendBuf(Data::Owned(Payload::from(s)))
    }
}

impl From<Packer> for SendBuf<'_> {
    fn from(p: Packer) -> Self {
        SendBuf(Data::Owned(p.finish()))
    }
}

impl<'a> From<&'a [u8]> for SendBuf<'a> {
    fn from(b: &'a [u8]) -> Self {
        SendBuf(Data::Borrowed(b))
    }
}

impl<'a> From<&'a Vec<u8>> for SendBuf<'a> {
    fn from(b: &'a Vec<u8>) -> Self {
        SendBuf(Data::Borrowed(b))
    }
}

impl<'a> From<&'a str> for SendBuf<'a> {
    fn from(s: &'a str) -> Self {
        SendBuf(Data::Borrowed(s.as_bytes()))
    }
}

impl Endpoint {
    /// [`send`](Endpoint::send) of plain point-to-point.
    pub(crate) fn send_buf(&self, to: Address, tag: Tag, data: SendBuf<'_>) -> Result<(), SendError> {
        match data.0 {
            Data::Owned(p) => self.send_in(0, to, tag, p),
            Data::Borrowed(bytes) if self.sends_directly(to, bytes.len()) => {
                let released = Arc::new(Done::new());
                let on_release = released.clone();
                let unsent = PeerLost {
                    node: to.node,
                    cause: LossCause::Failed(Failure::Channel(
                        "the connection closed before the message was written".into(),
                    )),
                };
                // SAFETY: a direct send is never buffered, and returns only
                // once the payload is gone (`released`, waited for below):
                // pulled and dropped with its `Fin`, written out and dropped
                // by the channel, or discarded with its queue when the
                // connection closed; an error's payload is replaced below.
                // So nothing refers to `bytes` after this call.
                let payload = unsafe {
                    Payload::borrowed_until(
                        bytes,
                        Box::new(move |delivered| match delivered {
                            true => on_release.succeed(),
                            false => on_release.fail(&unsent),
                        }),
                    )
                };
                let sent = self.post_send(0, to, tag, payload, Mode::Direct).wait();
                let sent = sent.map_err(|e| e.with_payload(|| Payload::from_vec(bytes.to_vec())));
                let node = &*self.node.shared;
                node.engine
                    .wait_until(&node.router, crate::progress::Origin::Peer(to.node), || released.is_done());
                // The receiver's `Cts` completed the send, but a connection
                // that closed before writing the `Bulk` frame discarded it.
                match (sent, released.outcome()) {
                    (Ok(()), Err(unsent)) => Err(SendError::PeerLost {
                        to,
                        lost: node.router.peers[to.node as usize].lost().cloned().unwrap_or(unsent),
                        payload: Payload::from_vec(bytes.to_vec()),
                    }),
                    (sent, _) => sent,
                }
            }
            Data::Borrowed(bytes) => self.send_in(0, to, tag, Payload::from_vec(bytes.to_vec())),
        }
    }

    /// Whether `len` borrowed bytes to `to` would be announced and then
    /// read where they are: pulled from this process's memory (a node of
    /// this host), or written to the connection from them (TCP).
    fn sends_directly(&self, to: Address, len: usize) -> bool {
        let s = &self.node.shared.router;
        if to.node == s.id || to.node >= s.nodes() {
            return false;
        }
        let peer = &s.peers[to.node as usize];
        settle_before_large(&self.node.shared, to.node, len);
        match peer.shm() {
            Some(shm) => shm.uses_cross_memory() && len > s.rendezvous.limits.shm,
            None => len > s.rendezvous.limits.tcp,
        }
    }

    /// Hands a message over as `mode` says: eagerly (the request is
    /// complete), or announced (the request completes with the receive).
    #[inline]
    pub(crate) fn post_send(
        &self,
        context: u32,
        to: Address,
        tag: Tag,
        payload: Payload,
        mode: Mode,
    ) -> SendRequest {
        let node = &*self.node.shared;
        let s = &node.router;
        if s.finalized.load(Ordering::Relaxed) {
            return Request::ready(Err(SendError::Finalized));
        }
        if to.node >= s.nodes() || to.thread >= MAX_THREADS {
            return Request::ready(Err(SendError::NoSuchEndpoint { to, payload }));
        }
        let len = payload.len();
        if to.node == s.id {
            self.mailbox().counters.sent(len);
            let mailbox = s
                .mailboxes
                .get(to.thread)
                .expect("thread below MAX_THREADS");
            let done = (mode == Mode::Sync).then(|| Arc::new(Done::new()));
            mailbox.deliver(Message {
                source: self.address,
                context,
                tag,
                payload,
                tail: match &done {
                    Some(d) => Tail::Sync(d.clone()),
                    None => Tail::None,
                },
            });
            return match done {
                Some(done) => self.sending(done, to),
                None => Request::ready(Ok(())),
            };
        }
        let peer = &s.peers[to.node as usize];
        if let Some(lost) = peer.lost() {
            return Request::ready(Err(SendError::PeerLost {
                to,
                lost: lost.clone(),
                payload,
            }));
        }
        if len as u64 > s.max_frame {
            return Request::ready(Err(SendError::TooLarge {
                to,
                len,
                max: s.max_frame,
                payload,
            }));
        }
        let rendezvous = &s.rendezvous;
        settle_before_large(node, to.node, len);
        let limit = rendezvous.limits.for_peer(peer);
        let cost = len + OVERHEAD;
        let eager = match mode {
            Mode::Eager => {
                rendezvous.budget.force_take(to.node, cost);
                true
            }
            Mode::Standard => len <= limit && rendezvous.budget.try_take(to.node, cost),
            Mode::Sync | Mode::Direct => false,
        };
        if !eager {
            // Synchronous sends of what would go eagerly travel inline;
            // standard ones are buffered while the budget has room.
            let fits = || rendezvous.budget.try_take(to.node, cost);
            let inline = mode == Mode::Sync && len <= limit && fits();
            let held = match mode == Mode::Standard && fits() {
                true => cost,
                false => 0,
            };
            return match self.announce(context, to, tag, payload, inline, held) {
                Ok(Some(done)) => self.sending(done, to),
                Ok(None) => Request::ready(Ok(())),
                Err(e) => Request::ready(Err(e)),
            };
        }
        let header = FrameHeader::data_in(
            context,
            self.address.thread,
            to.thread,
            tag,
            payload.format(),
            len as u64,
        );
        match self.hand_over(peer, &header, payload, len) {
            Ok(()) => Request::ready(Ok(())),
            Err((e, payload)) => Request::ready(Err(self.send_failed(to, e, payload))),
        }
    }

    /// Waits, parking only this thread or fiber (which meanwhile drives
    /// progress to receive credit), until `cost` bytes of `node`'s budget
    /// are taken — or, for a cost beyond the whole budget, the budget
    /// alone (`Budget::try_take_alone`); `false` if `node` is lost first.
    /// For what has no announced path: active messages and multicasts.
    pub(crate) fn wait_for_budget(&self, node: u32, cost: usize) -> bool {
        let shared = &*self.node.shared;
        let s = &shared.router;
        let budget = &s.rendezvous.budget;
        let mut took = budget.try_take_alone(node, cost);
        if !took {
            let peer = &s.peers[node as usize];
            shared.engine.wait_polling(s, crate::progress::Origin::Peer(node), || {
                took = took || budget.try_take_alone(node, cost);
                took || peer.lost().is_some()
            });
        }
        took
    }

    /// Hands a frame of a message of `len` bytes to `peer`'s channel,
    /// counts the message sent and, if the channel queued it, drives
    /// progress once to push it along.
    #[inline]
    pub(crate) fn hand_over(
        &self,
        peer: &crate::peer::Peer,
        header: &FrameHeader,
        payload: Payload,
        len: usize,
    ) -> Result<(), (threadwire_transport::ChannelError, Payload)> {
        let outcome = peer.send(header, payload)?;
        self.mailbox().counters.sent(len);
        if outcome == SendOutcome::Queued {
            let node = &*self.node.shared;
            node.engine.try_progress(&node.router);
        }
        Ok(())
    }

    /// Rendezvous step 1: keeps the payload under a send id and sends the
    /// announcement.
    fn announce(
        &self,
        context: u32,
        to: Address,
        tag: Tag,
        payload: Payload,
        inline: bool,
        held: usize,
    ) -> Result<Option<Arc<Done>>, SendError> {
        let node = &*self.node.shared;
        let s = &node.router;
        let peer = &s.peers[to.node as usize];
        let len = payload.len();
        let format = payload.format();
        let fetch = match inline {
            true => Fetch::Inline(Vec::new()),
            false => rendezvous::fetch_for(peer, &payload),
        };
        let id = s.rendezvous.sends.next_id();
        let mut rts = Payload::from_wire(format, rendezvous::encode_rts(len, id, &fetch));
        let kept = match inline {
            true => {
                rts.push_bytes(payload.into_vec());
                None
            }
            false => Some(payload),
        };
        // A buffered send is complete already: nobody waits to be woken.
        let done = (held == 0).then(|| Arc::new(Done::new()));
        // Registered first: the answer may come before `send` returns.
        s.rendezvous.sends.insert(
            id,
            Outbound {
                node: to.node,
                dest_thread: to.thread,
                payload: kept,
                held,
                pull: matches!(fetch, Fetch::Pull(_)),
                done: done.clone(),
            },
        );
        let header = FrameHeader::addressed(
            FrameKind::Rts,
            self.address.thread,
            to.thread,
            tag,
            context,
            format,
            rts.len() as u64,
        );
        match self.hand_over(peer, &header, rts, len) {
            Ok(()) => Ok(done),
            Err((e, _)) => {
                s.rendezvous.budget.returned(to.node, held as u64);
                let kept = s.rendezvous.sends.remove(id).and_then(|o| o.payload);
                let payload = kept.unwrap_or_else(|| Payload::from_vec(Vec::new()));
                Err(self.send_failed(to, e, payload))
            }
        }
    }

    fn sending(&self, done: Arc<Done>, to: Address) -> SendRequest {
        Request {
            state: State::Sending {
                shared: self.node.shared.clone(),
                done,
                to,
            },
            _not_send: PhantomData,
        }
    }

    /// A channel refused a frame: the peer is lost.
    fn send_failed(
        &self,
        to: Address,
        e: threadwire_transport::ChannelError,
        payload: Payload,
    ) -> SendError {
        let s = &self.node.shared.router;
        s.lose_peer(to.node, LossCause::Failed(Failure::Channel(e.to_string())));
        let lost = s.peers[to.node as usize]
            .lost()
            .cloned()
            .expect("just marked lost");
        SendError::PeerLost { to, lost, payload }
    }

}

/// A message that may go by rendezvous waits for its pair's channel
/// choice (pairs connect on first use, `peer::dial`): how it travels —
/// eagerly, announced, pulled by cross-memory copy, read where it is —
/// depends on the channel.
pub(crate) fn settle_before_large(shared: &crate::node::NodeShared, node: u32, len: usize) {
    let s = &shared.router;
    let limits = &s.rendezvous.limits;
    if len > limits.shm.min(limits.tcp) && !s.peers[node as usize].ready() {
        crate::peer::dial::settle(shared, &[node]);
    }
}
