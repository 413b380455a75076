//! The sender's side (protocol steps 1, 2 and 6): one-way messages,
//! requests and their answers, reports of failed one-way handlers.

use super::status::{self, Failed, Status};
use super::{AmError, Handler, REPLY_CONTEXT};
use crate::error::{Failure, LossCause, RecvError};
use crate::receive::{Got, Receive};
use crate::rendezvous::{Done, Fetch, Outbound, OVERHEAD};
use std::sync::Arc;
use crate::request::{Completion, Request, State};
use super::reports::Taken;
use crate::{Endpoint, PeerLost, Source, TagMatch};
use std::sync::atomic::Ordering;
use threadwire_wire::{FrameHeader, FrameKind, Payload};

/// A request under way ([`Endpoint::am_request`]): completes with the
/// handler's answer. Works with [`wait`](Request::wait),
/// [`test`](Request::test), [`wait_all`](crate::wait_all) and
/// [`wait_any`](crate::wait_any).
pub type AmRequest = Request<Payload, AmError>;

impl Endpoint {
    /// Sends a one-way active message: `handler` runs on `node` with
    /// `data` (on this node too, inline handlers then running in this
    /// thread before the call returns). Returns once the message has left;
    /// waits first, parking only this thread or fiber, while `node`'s
    /// budget has no room (see [`am`](crate::am)). A message longer than
    /// the eager limit of the channel to `node` is announced instead
    /// (step 2b): the call returns once `node` has fetched its bytes, or
    /// they were handed to the connection. Messages from one thread to one
    /// node, large or small, run their inline handlers in the order sent.
    /// A handler that fails reports to this thread: see
    /// [`am_check`](Self::am_check).
    ///
    /// # Errors
    ///
    /// [`AmError::PeerLost`] (the payload given back),
    /// [`AmError::NoSuchNode`], [`AmError::TooLarge`],
    /// [`AmError::Finalized`].
    pub fn am_send(&self, node: u32, handler: &Handler, data: impl Into<Payload>) -> Result<(), AmError> {
        self.am_post(node, handler, 0, data.into(), None, true)
    }

    /// [`am_send`](Self::am_send) that never waits: with no room in the
    /// budget it gives the payload back in [`AmError::WouldBlock`]. A
    /// large message is announced and the call returns at once, its
    /// payload kept by this node until `node` fetches it.
    ///
    /// # Errors
    ///
    /// As [`am_send`](Self::am_send), and [`AmError::WouldBlock`].
    pub fn try_am_send(&self, node: u32, handler: &Handler, data: impl Into<Payload>) -> Result<(), AmError> {
        self.am_post(node, handler, 0, data.into(), None, false)
    }

    /// Sends a request: `handler` runs on `node` with `data` and its
    /// answer ([`ActiveMessage::reply`](super::ActiveMessage::reply))
    /// completes the returned request. Waits for budget as
    /// [`am_send`](Self::am_send) does.
    ///
    /// The request fails with [`AmError::UnknownHandler`],
    /// [`AmError::HandlerPanicked`], [`AmError::NoReply`] or
    /// [`AmError::PeerLost`] when `node` is lost first; never hangs.
    pub fn am_request(&self, node: u32, handler: &Handler, data: impl Into<Payload>) -> AmRequest {
        self.am_request_at(node, None, handler, data.into())
    }

    /// [`am_request`](Self::am_request) for one thread of `node` (`target`).
    pub(super) fn am_request_at(
        &self,
        node: u32,
        target: Option<u32>,
        handler: &Handler,
        data: Payload,
    ) -> AmRequest {
        let router = &self.node.shared.router;
        if node >= router.nodes() {
            return Request::ready(Err(AmError::NoSuchNode {
                node,
                nodes: router.nodes(),
            }));
        }
        let number = router.am.next_request();
        // Posted first: an inline handler of this node answers before
        // `am_post` returns.
        let answer = self.irecv_in(REPLY_CONTEXT, Source::Node(node), TagMatch::from(number));
        if let Err(e) = self.am_post(node, handler, number, data, target, true) {
            drop(answer);
            return Request::ready(Err(e));
        }
        let state = match answer.state {
            State::Receiving(r) => State::Receiving(r),
            State::Ready(Ok(m)) => State::Ready(decode_answer(&self.node.shared.router.am, m.source.node, m.into_payload())),
            State::Ready(Err(e)) => State::Ready(Err(from_recv_error(e))),
            _ => State::Ready(Err(AmError::Finalized)),
        };
        Request {
            state,
            _not_send: std::marker::PhantomData,
        }
    }

    /// The oldest failure reported for this thread's one-way active
    /// messages and not yet taken (their handler panicked, was unknown,
    /// or could not start), without waiting. A failure shows once the
    /// destination's report has arrived: a thread that must know sends a
    /// request last. The node keeps 16 reports per thread; beyond, it
    /// counts them, and once the kept ones are taken the count comes as
    /// [`AmError::ReportsDropped`].
    ///
    /// # Errors
    ///
    /// The failure, as the request would have failed.
    pub fn am_check(&self) -> Result<(), AmError> {
        let registry = &self.node.shared.router.am;
        match registry.reports.take(self.address.thread) {
            Taken::Report { node, payload } => decode_answer(registry, node, payload).map(drop),
            Taken::Dropped(count) => Err(AmError::ReportsDropped { count }),
            Taken::Nothing => Ok(()),
        }
    }

    /// Steps 1–2 (and step 3 at once for this node).
    pub(super) fn am_post(
        &self,
        node: u32,
        handler: &Handler,
        request: u32,
        payload: Payload,
        target: Option<u32>,
        wait: bool,
    ) -> Result<(), AmError> {
        let shared = &*self.node.shared;
        let s = &shared.router;
        if s.finalized.load(Ordering::Relaxed) {
            return Err(AmError::Finalized);
        }
        if node >= s.nodes() {
            return Err(AmError::NoSuchNode { node, nodes: s.nodes() });
        }
        if node == s.id {
            let message = super::Arrival {
                source: self.address,
                id: handler.id,
                request,
                target,
                payload,
                cost: 0,
                large: 0,
            };
            super::arrive(s, message);
            return Ok(());
        }
        let peer = &s.peers[node as usize];
        let lost = |payload| match peer.lost() {
            Some(lost) => Err(AmError::PeerLost {
                lost: lost.clone(),
                payload,
            }),
            None => Ok(payload),
        };
        let mut payload = lost(payload)?;
        let len = payload.len();
        if len as u64 > s.max_frame {
            return Err(AmError::TooLarge {
                len,
                max: s.max_frame,
                payload,
            });
        }
        if len > s.rendezvous.limits.for_peer(peer) {
            return self.am_announce(node, handler, request, payload, target, wait);
        }
        let kind = match target {
            Some(thread) => {
                payload.push_bytes(thread.to_le_bytes().to_vec());
                FrameKind::AmAt
            }
            None => FrameKind::Am,
        };
        let len = payload.len();
        let budget = &s.rendezvous.budget;
        let cost = len + OVERHEAD;
        if !budget.try_take_alone(node, cost) {
            if !wait {
                return Err(AmError::WouldBlock { node, payload });
            }
            if !self.wait_for_budget(node, cost) {
                return lost(payload).map(drop);
            }
        }
        let id = handler.id;
        let header = FrameHeader::addressed(
            kind,
            self.address.thread,
            request,
            id as u32,
            (id >> 32) as u32,
            payload.format(),
            len as u64,
        );
        match self.hand_over(peer, &header, payload, len) {
            Ok(()) => Ok(()),
            Err((e, payload)) => {
                budget.returned(node, cost as u64);
                s.lose_peer(node, LossCause::Failed(Failure::Channel(e.to_string())));
                let lost = peer.lost().cloned().unwrap_or(PeerLost {
                    node,
                    cause: LossCause::Failed(Failure::Channel(e.to_string())),
                });
                Err(AmError::PeerLost { lost, payload })
            }
        }
    }
}

impl Endpoint {
    /// Step 2b: a large message announced (`AmRts`), its payload kept in
    /// this node's table of sends until the destination fetches it; waits
    /// (if `wait`) until it has: pulled, or handed to the connection.
    fn am_announce(
        &self,
        node: u32,
        handler: &Handler,
        request: u32,
        payload: Payload,
        target: Option<u32>,
        wait: bool,
    ) -> Result<(), AmError> {
        let shared = &*self.node.shared;
        let s = &shared.router;
        let peer = &s.peers[node as usize];
        let len = payload.len();
        let format = payload.format();
        crate::send::settle_before_large(shared, node, len);
        let fetch = crate::rendezvous::fetch_for(peer, &payload);
        let send_id = s.rendezvous.sends.next_id();
        let rts = super::large::encode(len, send_id, &fetch, target);
        let done = Arc::new(Done::new());
        // Registered first: the answer may come before the frame's send returns.
        s.rendezvous.sends.insert(
            send_id,
            Outbound {
                node,
                dest_thread: target.unwrap_or(0),
                payload: Some(payload),
                held: 0,
                pull: matches!(fetch, Fetch::Pull(_)),
                done: Some(done.clone()),
            },
        );
        let id = handler.id;
        let header = FrameHeader::addressed(
            FrameKind::AmRts,
            self.address.thread,
            request,
            id as u32,
            (id >> 32) as u32,
            format,
            rts.len() as u64,
        );
        if let Err((e, _)) = self.hand_over(peer, &header, Payload::from_vec(rts), len) {
            let kept = s.rendezvous.sends.remove(send_id).and_then(|o| o.payload);
            let cause = LossCause::Failed(Failure::Channel(e.to_string()));
            s.lose_peer(node, cause.clone());
            let lost = peer.lost().cloned().unwrap_or(PeerLost { node, cause });
            let payload = kept.unwrap_or_else(|| Payload::from_vec(Vec::new()));
            return Err(AmError::PeerLost { lost, payload });
        }
        if !wait {
            return Ok(());
        }
        let origin = crate::progress::Origin::Peer(node);
        shared.engine.wait_until(s, origin, || done.is_done());
        done.outcome().map_err(|lost| AmError::PeerLost {
            lost,
            payload: Payload::from_vec(Vec::new()),
        })
    }
}

impl Completion for Result<Payload, AmError> {
    #[allow(private_interfaces)]
    fn from_receive(r: &mut Receive) -> Self {
        match r.take() {
            Ok(Got::Message(m)) => decode_answer(&r.shared.router.am, m.source.node, m.into_payload()),
            Ok(Got::Status(_)) => unreachable!("an answer is received as a message"),
            Err(e) => Err(from_recv_error(e)),
        }
    }
    fn from_send(_: Result<(), crate::SendError>) -> Self {
        unreachable!("a request completes with its answer")
    }
}

/// Step 6: an answer (or report) as the requester's result.
fn decode_answer(registry: &super::Registry, node: u32, payload: Payload) -> Result<Payload, AmError> {
    let Failed { status, id, text } = match status::decode(payload) {
        Ok(answer) => return Ok(answer),
        Err(failed) => failed,
    };
    let name = registry.name_of(id);
    Err(match status {
        Status::Answer | Status::Unknown => AmError::UnknownHandler { node, name },
        Status::NoReply => AmError::NoReply { node, name },
        Status::Panicked => AmError::HandlerPanicked {
            node,
            name,
            message: text,
        },
        Status::NoFiber => AmError::NoFiber { node, why: text },
        Status::Refused => AmError::Refused { node, name, len: text },
    })
}

fn from_recv_error(e: RecvError) -> AmError {
    match e {
        RecvError::PeerLost(lost) => AmError::PeerLost {
            lost,
            payload: Payload::from_vec(Vec::new()),
        },
        RecvError::Cancelled => AmError::Cancelled,
        _ => AmError::Finalized,
    }
}
