//! Active messages: a message that names a handler, which runs at the
//! destination node when the message arrives — a remote update, lookup or
//! lock in one message, with no receive posted for it.
//!
//! ```no_run
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = threadwire::init()?;
//! let node = me.node().clone();
//! // Every node registers the same names, before any node calls them.
//! let counter = Arc::new(AtomicU64::new(0));
//! let c = counter.clone();
//! let add = node.register_inline("counter.add", move |am| {
//!     let by = u64::from_le_bytes(am.payload().to_vec().try_into().unwrap_or([0; 8]));
//!     let before = c.fetch_add(by, Ordering::Relaxed);
//!     let _ = am.reply(before.to_le_bytes().to_vec());
//! })?;
//! threadwire::Group::world(&me)?.barrier()?;
//! // From any thread: one message to node 0, the handler's reply back.
//! let before = me.am_request(0, &add, 5u64.to_le_bytes().to_vec()).wait()?;
//! me.am_send(0, &add, 1u64.to_le_bytes().to_vec())?; // one-way
//! # let _ = before;
//! # Ok(())
//! # }
//! ```
//!
//! # Handlers
//!
//! A handler is registered by name on a node
//! ([`Node::register_inline`](crate::Node::register_inline),
//! [`Node::register_fiber`](crate::Node::register_fiber), or with a buffer
//! provider for large messages:
//! [`Node::register_inline_into`](crate::Node::register_inline_into),
//! [`Node::register_fiber_into`](crate::Node::register_fiber_into)) and called by a
//! [`Handler`] of the same name ([`Node::handler`](crate::Node::handler)
//! gives one without registering anything). Its id is the 64-bit FNV-1a
//! hash of the name (`crate::name_hash`): every node
//! computes the same id from the same name whatever order it registers
//! in, and no message is needed to agree. Two names of one node with one
//! id are refused at registration. A message for an id the destination
//! has not registered is answered with [`AmError::UnknownHandler`],
//! named by the sender's own record of the name.
//!
//! - **Inline** handlers run in whichever thread is driving the node's
//!   progress when the frame arrives (a waiting thread, an idle fiber
//!   worker or the communication thread), before the next frame from that
//!   node is read. They get no endpoint, so they cannot send, receive or
//!   wait on messages: a handler must be short, and one that blocks (on a
//!   lock, in the kernel) holds back every frame this node's driver would
//!   read meanwhile, though the node's other threads go on computing.
//! - **Fiber** handlers run in a fiber of the node's pool, with an
//!   endpoint of their own: they may block, send, receive, spawn and call
//!   other handlers. A pool fiber that has finished a handler waits for
//!   the next; a message that finds none idle starts a new one, so
//!   handlers never wait for each other, up to a bound
//!   ([`DEFAULT_FIBERS`], `THREADWIRE_AM_FIBERS`): beyond it, messages wait
//!   in arrival order for a fiber to finish (their bytes still counted in
//!   their senders' budgets), so that memory stays bounded however many
//!   handlers block. Handlers that wait for each other beyond the bound
//!   deadlock, as threads of a bounded pool do. A fiber handler's address
//!   is its pool fiber's: valid while it runs, and reused by later
//!   handlers.
//!
//! Where the handler runs decides its latency. A fiber handler read by a
//! fiber worker (one idle, driving the node's progress) runs on that
//! worker at once; one read by an OS thread waiting in a receive is handed
//! over to a worker, which may have to be woken (tens of µs when it
//! sleeps). A node that mostly serves fiber handlers or remote spawns
//! (`remote_spawn`) is fastest with its work in fibers and its main
//! thread parked (joining them, or on a lock): `bench am` and `bench
//! spawn` serve so, and then a fiber handler's round trip and a remote
//! spawn cost about one inline round trip (docs/PERFORMANCE.md).
//!
//! # The protocol
//!
//! 1. The sender takes the message's cost (its length plus
//!    per-message overhead of 64 bytes) from the destination's
//!    eager budget. With no room, [`Endpoint::am_send`] and
//!    [`Endpoint::am_request`] wait (parking only the calling fiber or
//!    thread, which meanwhile drives progress to receive the credit) and
//!    [`Endpoint::try_am_send`] gives the payload back in
//!    [`AmError::WouldBlock`]. A message longer than the whole budget
//!    goes alone, once nothing else is outstanding. A *large* message —
//!    longer than the eager limit of the channel to the destination
//!    (`THREADWIRE_EAGER_SHM`, 16 KiB by default, to a node of this host
//!    that reads this node's memory; `THREADWIRE_EAGER_TCP`, 256 KiB,
//!    otherwise) — takes nothing from the budget and goes by step 2b.
//! 2. It sends one `Am` frame: the handler's id in `tag` and `aux`, the
//!    request's number in `dest_thread` (0 for a one-way message; numbers
//!    come from a counter of the sending node), the payload as it is.
//!
//!    2b. A large message is announced instead, as a rendezvous data
//!    message is ([`rendezvous`](crate::rendezvous), step 1): its payload
//!    stays in this node's table of sends under a send id, and an `AmRts`
//!    frame — addressed as `Am`, its payload the length, the send id,
//!    how to fetch the bytes (a cross-memory *pull* on shared memory, else
//!    *push*) and the target thread — goes instead. `am_send` and
//!    `am_request` then wait, as in step 1, until the destination has
//!    the bytes: pulled (its `Fin`), or handed to the connection after its
//!    `Cts` (a `Bulk` frame); `try_am_send` returns at once, the payload
//!    waiting in the table. If the destination is lost first they fail
//!    with [`AmError::PeerLost`] (with an empty payload).
//!
//!    Messages from one thread to one node are handled in the order
//!    sent, large or small (step 3).
//! 3. The destination's router looks the id up. An inline handler runs at
//!    once, in arrival order; a fiber handler is handed to an idle pool
//!    fiber or a new one, in arrival order (they then run side by side).
//!    A message to the sender's own node takes the same path, inline
//!    handlers running in the sending thread (and is never large: its
//!    payload moves as it is).
//!
//!    3b. A large message's announcement takes a buffer — the handler's
//!    provider's ([`Node::register_fiber_into`](crate::Node::register_fiber_into)),
//!    else a new vector of its length — fetches the bytes into it as a
//!    receive does (rendezvous, steps 3–5: one `process_vm_readv` and a
//!    `Fin`, or a `Cts` and the `Bulk` frame, which TCP reads straight into
//!    the buffer when its reader is free to be told, else copies) and only
//!    then goes on as in step 3, its payload that buffer. A provider that
//!    refuses (`None`) answers [`AmError::Refused`] (a one-way message's
//!    failure is reported as in step 5) and releases the sender with a
//!    `Fin`; an unknown handler is answered before any byte moves.
//!
//!    *Order.* While a large message is not yet dispatched (waiting for
//!    memory, or fetching), every later message from the same sending
//!    thread — eager or large — waits behind it at the destination, and
//!    they are dispatched after it in arrival order. So frames from one
//!    thread to one node arrive in order, and their handlers are
//!    dispatched in the order sent: inline ones run in that order, fiber
//!    ones are handed out in it. Those that waited behind a large message
//!    are dispatched by whichever thread completed its fetch (the
//!    progress driver, or a thread whose handler returned), so an inline
//!    handler may then run there. Messages of different threads keep no
//!    order between them.
//!
//!    *Memory.* A node holds at most its eager budget
//!    (`THREADWIRE_EAGER_BUDGET`, 32 MiB by default) of large messages'
//!    bytes at once — fetching, handed to a fiber or queued for one, or
//!    in a handler that has not returned — or a single message, when that
//!    alone is more; a provider's buffers count too. Further large
//!    messages wait, announced (a few dozen bytes each), in arrival order,
//!    and their senders wait with them; a TCP `Bulk` frame that could not
//!    be placed costs one more copy of the message being fetched. As for
//!    the pool's bound, handlers of large messages that wait for other
//!    large messages to their node beyond this bound deadlock.
//! 4. The handler may take the payload (keeping its buffer, no copy) and
//!    answer a request once ([`ActiveMessage::reply`]): a data message in
//!    the reply context (`group::context`), tag the request's number, its
//!    payload the answer followed by one status byte. An inline handler's
//!    answer is sent eagerly whatever the budget (the driver may not
//!    wait); a fiber handler's goes like any send of its endpoint.
//! 5. When the handler returns, the message's cost goes back to the
//!    sender's budget (a `Credit` frame, gathered as for eager data). A
//!    request left unanswered is answered [`AmError::NoReply`]; a handler
//!    that panicked is answered [`AmError::HandlerPanicked`] with its
//!    message, or — for a one-way message — reported to the sending
//!    thread: an active message for it (`AmAt`) to the built-in handler
//!    `threadwire.report` of its node, which keeps the first 16 reports
//!    per thread (and counts the rest) until [`Endpoint::am_check`] takes
//!    them.
//!    The panic goes no further: the node runs on.
//! 6. The requester's [`AmRequest`] is a receive in the reply context from
//!    the destination node with the request's number as tag: it completes
//!    with the answer, the error the status byte names, or
//!    [`AmError::PeerLost`] when that node is lost first.

mod arrive;
mod group;
pub(crate) mod large;
mod pool;
pub(crate) mod registry;
pub(crate) mod reports;
mod send;
pub(crate) mod status;

pub(crate) use arrive::{arrive, Arrival};
pub(crate) use registry::Registry;
pub use registry::Handler;
pub use send::AmRequest;

use crate::{Address, Endpoint, PeerLost};
use threadwire_wire::Payload;

/// Fiber handlers that run at once on a node, by default
/// ([`env::AM_FIBERS`](crate::env::AM_FIBERS)); more wait their turn.
pub const DEFAULT_FIBERS: usize = 256;

/// The context of answers to requests (`group::context`).
pub(crate) const REPLY_CONTEXT: u32 = u32::MAX - 1;

/// An inline handler: runs in the thread driving progress.
pub(crate) type InlineFn = dyn Fn(&mut ActiveMessage<'_>) + Send + Sync;
/// A fiber handler: runs in a pool fiber, with its endpoint.
pub(crate) type FiberFn = dyn Fn(&Endpoint, &mut ActiveMessage<'_>) + Send + Sync;

/// An active message as its handler sees it: who sent it, its payload
/// (which the handler may keep), and the way to answer it.
pub struct ActiveMessage<'a> {
    source: Address,
    /// The group member it was sent for (`Group::am_send_all`).
    target: Option<Address>,
    payload: Payload,
    /// The requester and the request's number; `None` for a one-way message.
    request: Option<(Address, u32)>,
    replied: bool,
    via: Replier<'a>,
}

/// How an answer leaves: from the driving thread (inline) or from the
/// handler's endpoint (fiber).
pub(crate) enum Replier<'a> {
    Router(&'a crate::router::Router),
    Endpoint(&'a Endpoint),
}

impl<'a> Replier<'a> {
    /// The router of the node the handler runs on.
    pub(crate) fn router(&self) -> &'a crate::router::Router {
        match self {
            Replier::Router(router) => router,
            Replier::Endpoint(ep) => &ep.node.shared.router,
        }
    }
}

impl std::fmt::Debug for ActiveMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveMessage")
            .field("source", &self.source)
            .field("len", &self.payload.len())
            .field("request", &self.request)
            .finish()
    }
}

impl ActiveMessage<'_> {
    /// The thread that sent it.
    pub fn source(&self) -> Address {
        self.source
    }

    /// The group member it was sent for, when sent to every member of a
    /// group ([`Group::am_send_all`](crate::Group::am_send_all)): a thread
    /// of the node the handler runs on.
    pub fn target(&self) -> Option<Address> {
        self.target
    }

    /// Payload length in bytes (0 once taken).
    pub fn len(&self) -> usize {
        self.payload.len()
    }

    /// Whether the payload is empty (or taken).
    pub fn is_empty(&self) -> bool {
        self.payload.is_empty()
    }

    /// The payload.
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The payload, taken out to keep: its buffer moves, nothing is
    /// copied. Later calls get an empty payload.
    pub fn take_payload(&mut self) -> Payload {
        std::mem::replace(&mut self.payload, Payload::from_vec(Vec::new()))
    }

    /// The router of the node the handler runs on.
    pub(crate) fn router(&self) -> &crate::router::Router {
        self.via.router()
    }

    /// Whether the sender waits for an answer ([`Endpoint::am_request`]).
    pub fn is_request(&self) -> bool {
        self.request.is_some()
    }

    /// Answers the request: the requester's [`AmRequest`] completes with
    /// `data`. Once per request.
    ///
    /// # Errors
    ///
    /// [`AmError::NotARequest`] for a one-way message,
    /// [`AmError::AlreadyReplied`] the second time, and
    /// [`AmError::PeerLost`] when the requester's node is gone.
    pub fn reply(&mut self, data: impl Into<Payload>) -> Result<(), AmError> {
        let Some((to, number)) = self.request else {
            return Err(AmError::NotARequest);
        };
        if self.replied {
            return Err(AmError::AlreadyReplied);
        }
        self.replied = true;
        let mut payload = data.into();
        payload.push_bytes(status::Status::Answer.encode(0, ""));
        arrive::answer(&self.via, to, number, payload)
    }
}

/// Why an active-message operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AmError {
    /// The destination node has no handler of this name (it registered
    /// none, another name, or not yet).
    #[error("node n{node} has no handler {name} (register the same names on every node, before any node calls them)")]
    UnknownHandler {
        /// The destination.
        node: u32,
        /// The handler's name as the sender knows it (its id in hex if
        /// the sender's node never saw the name).
        name: String,
    },
    /// The handler panicked; the node it ran on goes on.
    #[error("handler {name} panicked on node n{node}: {message}")]
    HandlerPanicked {
        /// Where it ran.
        node: u32,
        /// The handler.
        name: String,
        /// The panic's message.
        message: String,
    },
    /// The handler returned without answering the request.
    #[error("handler {name} on node n{node} returned without answering")]
    NoReply {
        /// Where it ran.
        node: u32,
        /// The handler.
        name: String,
    },
    /// The destination (or, for an answer, the requester) is gone.
    #[error("{lost}")]
    PeerLost {
        /// Which node, and why.
        lost: PeerLost,
        /// The message, given back where it was not sent.
        payload: Payload,
    },
    /// No such node in the job.
    #[error("no node n{node} in a job of {nodes}")]
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// Nodes in the job.
        nodes: u32,
    },
    /// The destination's budget has no room now
    /// ([`Endpoint::try_am_send`]); try again later.
    #[error("no room in node n{node}'s budget now")]
    WouldBlock {
        /// The destination.
        node: u32,
        /// The message, given back.
        payload: Payload,
    },
    /// Longer than the largest frame.
    #[error("active message of {len} B, the largest frame is {max} B")]
    TooLarge {
        /// The payload's length.
        len: usize,
        /// The configured maximum frame.
        max: u64,
        /// The message, given back.
        payload: Payload,
    },
    /// [`ActiveMessage::reply`] on a one-way message.
    #[error("a one-way active message has nobody to answer")]
    NotARequest,
    /// [`ActiveMessage::reply`] a second time.
    #[error("the request is answered already")]
    AlreadyReplied,
    /// This node registered the name already.
    #[error("handler {name} is registered already")]
    AlreadyRegistered {
        /// The name.
        name: String,
    },
    /// Two names hash to one id (FNV-1a, 64-bit): rename one.
    #[error("handlers {name} and {other} have the same id; rename one")]
    IdCollision {
        /// The name being registered.
        name: String,
        /// The name registered before with the same id.
        other: String,
    },
    /// A fiber handler could not start: the node's thread numbers are
    /// exhausted or the OS refused its workers.
    #[error("could not start the handler's fiber on node n{node}: {why}")]
    NoFiber {
        /// Where.
        node: u32,
        /// The spawn's error.
        why: String,
    },
    /// The handler's buffer provider refused a large message
    /// ([`Node::register_fiber_into`](crate::Node::register_fiber_into)):
    /// the handler did not run.
    #[error("handler {name} on node n{node} refused a message of {len}")]
    Refused {
        /// The destination.
        node: u32,
        /// The handler.
        name: String,
        /// The message's length, as the destination says it.
        len: String,
    },
    /// The request was cancelled ([`Request::cancel`](crate::Request::cancel)).
    #[error("active message request cancelled")]
    Cancelled,
    /// More one-way messages of this thread failed than
    /// [`Endpoint::am_check`] keeps reports of (16): the rest were counted.
    #[error("{count} more one-way active messages failed; their reports were not kept")]
    ReportsDropped {
        /// How many.
        count: u64,
    },
    /// This node has finalized.
    #[error("active message after finalize")]
    Finalized,
}
