//! The destination's side (protocol steps 3–5): running a handler, its
//! answer, and what follows it.

use super::pool::Work;
use super::registry::Run;
use super::status::Status;
use super::{ActiveMessage, AmError, Replier, REPLY_CONTEXT};
use crate::error::{Failure, LossCause, SendError};
use crate::mailbox::remote_message;
use crate::rendezvous::{codec, OVERHEAD};
use crate::router::Router;
use crate::{Address, Endpoint};
use std::panic::{catch_unwind, AssertUnwindSafe};
use threadwire_fiber::JoinError;
use threadwire_wire::{Format, FrameHeader, FrameKind, Payload};

/// An active message as it arrives (step 3).
pub(crate) struct Arrival {
    pub(crate) source: Address,
    /// The handler's id.
    pub(crate) id: u64,
    /// The request's number; 0 when one-way.
    pub(crate) request: u32,
    /// The thread of this node it was sent for (a group member), if any.
    pub(crate) target: Option<u32>,
    pub(crate) payload: Payload,
    /// Budget to give back to the source once handled (0 for a message
    /// of this node, and for a large one).
    pub(crate) cost: usize,
    /// For a large message (`large`), its length: bytes the node counts
    /// as held until the handler returns; else 0.
    pub(crate) large: usize,
}

/// Step 3: runs or hands over the handler of `message`.
pub(crate) fn arrive(router: &Router, message: Arrival) {
    let registry = &router.am;
    match registry.lookup(message.id) {
        None => {
            let via = Replier::Router(router);
            let Arrival {
                source,
                request,
                id,
                cost,
                large,
                ..
            } = message;
            fail(&via, source, request, Status::Unknown, id, "");
            give_back(router, source.node, cost, large);
        }
        Some(Run::Inline(f)) => run(Replier::Router(router), message, |am| f(am)),
        Some(Run::Fiber(handler)) => {
            let (source, request, id, cost, large) =
                (message.source, message.request, message.id, message.cost, message.large);
            if let Err(why) = registry.pool.hand(registry, Work { handler, message }) {
                tracing::warn!("n{}: no fiber for an active message: {why}", router.id);
                fail(&Replier::Router(router), source, request, Status::NoFiber, id, &why);
                give_back(router, source.node, cost, large);
            }
        }
    }
}

/// A pool fiber's run of one fiber handler (steps 4–5).
pub(super) fn run_fiber(ep: &Endpoint, work: Work) {
    let Work { handler, message } = work;
    run(Replier::Endpoint(ep), message, |am| handler(ep, am));
}

/// Steps 4–5 of one handler's run, answering through `via`.
fn run(via: Replier<'_>, message: Arrival, handler: impl FnOnce(&mut ActiveMessage<'_>)) {
    let router = via.router();
    let Arrival {
        source,
        id,
        request,
        target,
        payload,
        cost,
        large,
    } = message;
    let target = target.map(|t| Address::new(router.id, t));
    let mut am = ActiveMessage::new(source, payload, request, target, via);
    let ran = catch_unwind(AssertUnwindSafe(|| handler(&mut am)));
    am.finish(ran, id);
    give_back(router, source.node, cost, large);
}

impl<'a> ActiveMessage<'a> {
    fn new(
        source: Address,
        payload: Payload,
        request: u32,
        target: Option<Address>,
        via: Replier<'a>,
    ) -> Self {
        ActiveMessage {
            source,
            target,
            payload,
            request: (request != 0).then_some((source, request)),
            replied: false,
            via,
        }
    }

    /// Step 5: what follows a handler's return or panic.
    fn finish(self, ran: std::thread::Result<()>, id: u64) {
        let (status, text) = match ran {
            Ok(()) if self.request.is_none() || self.replied => return,
            Ok(()) => (Status::NoReply, String::new()),
            Err(panic) => {
                let text = match JoinError::from_panic(&*panic) {
                    JoinError::Panicked(message) => message.to_string(),
                    other => other.to_string(),
                };
                if self.replied {
                    // Answered before it panicked: the answer stands.
                    tracing::warn!("active message handler panicked after answering: {text}");
                    return;
                }
                (Status::Panicked, text)
            }
        };
        let request = self.request.map_or(0, |(_, n)| n);
        fail(&self.via, self.source, request, status, id, &text);
    }
}

/// A failure to the requester (its request's answer) or, for a one-way
/// message, to the sending thread's reports.
pub(super) fn fail(via: &Replier<'_>, source: Address, request: u32, status: Status, id: u64, text: &str) {
    let payload = Payload::from_vec(status.encode(id, text));
    let sent = match request {
        0 => report(via.router(), source, payload),
        _ => answer(via, source, request, payload),
    };
    if let Err(e) = sent {
        tracing::debug!("active message failure not delivered to {source}: {e}");
    }
}

/// Step 4: an answer, a data message in the reply context to `to` with
/// `tag`, from the driving thread (eagerly, whatever the budget: it may
/// not wait) or from the handler's endpoint.
pub(super) fn answer(via: &Replier<'_>, to: Address, tag: u32, payload: Payload) -> Result<(), AmError> {
    let router = match via {
        Replier::Endpoint(ep) => {
            return ep.send_in(REPLY_CONTEXT, to, tag, payload).map_err(from_send_error);
        }
        Replier::Router(router) => *router,
    };
    if to.node == router.id {
        if let Some(mailbox) = router.mailboxes.get(to.thread) {
            mailbox.deliver(remote_message(router.id, 0, REPLY_CONTEXT, tag, payload));
        }
        return Ok(());
    }
    let header = |len: usize, format| FrameHeader::data_in(REPLY_CONTEXT, 0, to.thread, tag, format, len as u64);
    send_eagerly(router, to.node, header, payload)
}

/// Step 5, one-way: the report goes to the sending thread's node as an
/// active message of its own for that thread (the built-in handler
/// `threadwire.report`, which keeps it in the node's bounded table).
fn report(router: &Router, to: Address, mut payload: Payload) -> Result<(), AmError> {
    if to.node == router.id {
        router.am.reports.add(to.thread, router.id, payload);
        return Ok(());
    }
    payload.push_bytes(to.thread.to_le_bytes().to_vec());
    let id = crate::name_hash::name_hash(super::reports::REPORT_HANDLER);
    let header = |len: usize, format| {
        FrameHeader::addressed(FrameKind::AmAt, 0, 0, id as u32, (id >> 32) as u32, format, len as u64)
    };
    send_eagerly(router, to.node, header, payload)
}

/// A frame from the driving thread to `node`, its cost forced into the
/// budget (the driver may not wait for credit).
fn send_eagerly(
    router: &Router,
    node: u32,
    header: impl FnOnce(usize, threadwire_wire::Format) -> FrameHeader,
    payload: Payload,
) -> Result<(), AmError> {
    let peer = &router.peers[node as usize];
    if let Some(lost) = peer.lost() {
        return Err(AmError::PeerLost {
            lost: lost.clone(),
            payload,
        });
    }
    let len = payload.len();
    router.rendezvous.budget.force_take(node, len + OVERHEAD);
    match peer.send(&header(len, payload.format()), payload) {
        Ok(_) => Ok(()),
        Err((e, payload)) => {
            router.lose_peer(node, LossCause::Failed(Failure::Channel(e.to_string())));
            let lost = peer.lost().cloned().unwrap_or(crate::PeerLost {
                node,
                cause: LossCause::Failed(Failure::Channel(e.to_string())),
            });
            Err(AmError::PeerLost { lost, payload })
        }
    }
}

/// An endpoint's send error as an active message's.
pub(super) fn from_send_error(e: SendError) -> AmError {
    match e {
        SendError::PeerLost { lost, payload, .. } => AmError::PeerLost { lost, payload },
        SendError::NoSuchEndpoint { to, payload: _ } => AmError::NoSuchNode {
            node: to.node,
            nodes: 0,
        },
        SendError::TooLarge {
            len, max, payload, ..
        } => AmError::TooLarge { len, max, payload },
        _ => AmError::Finalized,
    }
}

/// Step 5: a remote message's cost back to its sender's budget, in a
/// `Credit` frame once enough has gathered (as for eager data); a large
/// message's bytes out of the node's count (`large`).
fn give_back(router: &Router, node: u32, cost: usize, large: usize) {
    if large > 0 {
        super::large::release(router, large);
    }
    if cost == 0 || node == router.id {
        return;
    }
    let Some(returns) = router.rendezvous.budget.took(node, cost) else {
        return;
    };
    let payload = codec::encode_credit(returns);
    let header = FrameHeader::addressed(
        FrameKind::Credit,
        0,
        0,
        0,
        0,
        Format::OPAQUE,
        payload.len() as u64,
    );
    if let Err((e, _)) = router.peers[node as usize].send(&header, Payload::from_vec(payload)) {
        router.lose_peer(node, LossCause::Failed(Failure::Channel(e.to_string())));
    }
}
