//! Large active messages (protocol steps 2b and 3b): announced with an
//! `AmRts` frame, their bytes fetched into a buffer of the destination —
//! a fresh one, or the handler's provider's — and only then dispatched as
//! an eager message is.
//!
//! The destination keeps, per sending thread, the messages that arrived
//! behind a large one still being fetched (or waiting for memory), and
//! dispatches them after it, in arrival order; and it keeps the bytes of
//! large messages fetching or being handled below the node's eager budget
//! (or one message, when that alone is more): the next announced message
//! is fetched once a handler of one returns.

use super::status::Status;
use super::Arrival;
use crate::error::{Failure, LossCause};
use crate::lock;
use crate::rendezvous::{codec, Announced, Done, Fetch, RendezvousError};
use crate::router::Router;
use crate::Address;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use threadwire_wire::{Format, FrameHeader, FrameKind, Payload};

/// A buffer provider ([`Node::register_fiber_into`](crate::Node::register_fiber_into)).
pub(crate) type Provider = dyn Fn(usize) -> Option<Vec<u8>> + Send + Sync;

/// No target thread, in an `AmRts` payload.
const NO_TARGET: u32 = u32::MAX;

/// The `AmRts` payload of a message of `len` bytes fetched as `how`:
/// the rendezvous descriptor, then the target thread.
pub fn encode(len: usize, send_id: u64, how: &Fetch, target: Option<u32>) -> Vec<u8> {
    let mut b = codec::encode_rts(len, send_id, how);
    b.extend_from_slice(&target.unwrap_or(NO_TARGET).to_le_bytes());
    b
}

/// Reads an `AmRts` payload: the announcement and the target thread.
/// Inline bytes are refused (a large message is never sent inline).
pub fn decode(mut b: Vec<u8>, format: Format, max: u64) -> Result<(Announced, Option<u32>), RendezvousError> {
    let Some(at) = b.len().checked_sub(4) else {
        return Err(RendezvousError::Malformed(b.len()));
    };
    let target = u32::from_le_bytes(b[at..].try_into().expect("4 bytes"));
    b.truncate(at);
    let announced = codec::decode_rts(b, format, max)?;
    if let Fetch::Inline(_) = announced.fetch {
        return Err(RendezvousError::Malformed(at + 4));
    }
    Ok((announced, (target != NO_TARGET).then_some(target)))
}

/// A large message announced and not yet dispatched.
pub(crate) struct Pending {
    pub(crate) source: Address,
    pub(crate) id: u64,
    pub(crate) request: u32,
    pub(crate) target: Option<u32>,
    pub(crate) announced: Announced,
}

/// What waits behind a large message from the same thread.
enum Queued {
    Eager(Arrival),
    Large(Pending),
}

/// A pushed fetch under way: the message and the buffer its bytes go to.
struct Fetching {
    message: Pending,
    buffer: Vec<u8>,
    /// Set once the `Bulk` frame filled the buffer, or the fetch failed.
    done: Arc<Done>,
}

#[derive(Default)]
struct State {
    /// Per sending thread whose oldest undispatched message is a large
    /// one (waiting for memory or fetching): what arrived after it.
    blocked: HashMap<Address, VecDeque<Queued>>,
    /// Large messages at the head of their thread's line, waiting for
    /// memory, in arrival order.
    waiting: VecDeque<Pending>,
    /// Bytes of large messages fetching or in handlers not yet returned.
    held: usize,
    /// Pushed fetches by receive id.
    fetching: HashMap<u64, Fetching>,
    /// A thread is starting the messages `waiting` that memory admits
    /// (`release`).
    pumping: bool,
}

/// The destination's side of large messages.
pub(crate) struct Large {
    state: Mutex<State>,
    /// Threads in `blocked` (changed under the lock): while none is, an
    /// eager message goes on without taking the lock.
    blocked: AtomicUsize,
    /// Bytes of large messages held at once (the eager budget), unless
    /// one alone is more.
    limit: usize,
}

impl Large {
    pub(crate) fn new(limit: usize) -> Large {
        Large {
            state: Mutex::default(),
            blocked: AtomicUsize::new(0),
            limit,
        }
    }

    fn admits(&self, state: &State, len: usize) -> bool {
        state.held == 0 || state.held.saturating_add(len) <= self.limit
    }
}

/// An eager active message from a peer: dispatched now, or queued behind
/// a large message of its sending thread.
pub(crate) fn eager(router: &Router, message: Arrival) {
    // A thread becomes blocked only by an announcement read from its own
    // node's frames, which are read in order, before this one.
    if router.am.large.blocked.load(Ordering::Acquire) > 0 {
        let mut state = lock(&router.am.large.state);
        if let Some(line) = state.blocked.get_mut(&message.source) {
            line.push_back(Queued::Eager(message));
            return;
        }
    }
    super::arrive(router, message);
}

/// An announced large message (step 3b): fetched when memory allows and
/// nothing from its sending thread is before it.
pub(crate) fn announced(router: &Router, message: Pending) {
    let large = &router.am.large;
    {
        let mut state = lock(&large.state);
        if let Some(line) = state.blocked.get_mut(&message.source) {
            line.push_back(Queued::Large(message));
            return;
        }
        state.blocked.insert(message.source, VecDeque::new());
        large.blocked.fetch_add(1, Ordering::AcqRel);
        if !large.admits(&state, message.announced.len) {
            state.waiting.push_back(message);
            return;
        }
        state.held += message.announced.len;
    }
    proceed(router, message);
}

/// What [`start`] did with a message.
enum Started {
    /// Its bytes are in the buffer: dispatch it.
    Fetched(Pending, Vec<u8>),
    /// Answered without running (unknown handler, refused): its thread's
    /// line goes on.
    Skipped,
    /// Its bytes come later (`fetched`), or never (its node is lost).
    Later,
}

/// Starts `message` (its memory counted) and, if that completes it at
/// once, dispatches it and what waits behind it.
fn proceed(router: &Router, message: Pending) {
    let source = message.source;
    match start(router, message) {
        Started::Fetched(message, buffer) => deliver(router, message, buffer),
        Started::Skipped => {}
        Started::Later => return,
    }
    drain(router, source);
}

/// A handler of a large message of `len` bytes returned (or the message
/// was dropped): its bytes leave the count, and messages waiting for
/// memory start — by this thread, unless one is starting them already
/// (perhaps this very thread, further up its stack), which then also
/// starts those this release admits.
pub(crate) fn release(router: &Router, len: usize) {
    let large = &router.am.large;
    {
        let mut state = lock(&large.state);
        state.held = state.held.saturating_sub(len);
        if state.pumping {
            return;
        }
        state.pumping = true;
    }
    loop {
        let next = {
            let mut state = lock(&large.state);
            match state.waiting.front() {
                Some(front) if large.admits(&state, front.announced.len) => {
                    let message = state.waiting.pop_front().expect("a front");
                    state.held += message.announced.len;
                    Some(message)
                }
                _ => {
                    state.pumping = false;
                    None
                }
            }
        };
        match next {
            Some(message) => proceed(router, message),
            None => return,
        }
    }
}

/// Fetches a large message's bytes (memory counted already): by one
/// cross-memory read now, or by `Cts` and a `Bulk` frame later.
fn start(router: &Router, mut message: Pending) -> Started {
    let node = message.source.node;
    let len = message.announced.len;
    let registry = &router.am;
    let refuse = |status: Status, text: &str| {
        let via = super::Replier::Router(router);
        super::arrive::fail(&via, message.source, message.request, status, message.id, text);
        fin(router, message.source, message.announced.send_id);
        router.fetched_announced(node);
        release(router, len);
        Started::Skipped
    };
    let provider = match registry.lookup_with_provider(message.id) {
        None => return refuse(Status::Unknown, ""),
        Some((_, provider)) => provider,
    };
    let mut buffer = match provider {
        None => Vec::with_capacity(len),
        Some(provide) => {
            let given = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| provide(len)));
            match given {
                Ok(Some(mut v)) => {
                    v.clear();
                    v.reserve_exact(len);
                    v
                }
                Ok(None) => return refuse(Status::Refused, &format!("{len} B")),
                Err(_) => return refuse(Status::Refused, &format!("{len} B (the provider panicked)")),
            }
        }
    };
    let peer = &router.peers[node as usize];
    let ptr = buffer.as_mut_ptr();
    match std::mem::replace(&mut message.announced.fetch, Fetch::Push) {
        Fetch::Pull(segments) => {
            // SAFETY: the buffer has room for `len` bytes (reserved above);
            // the kernel writes at most that many.
            let buf = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
            let pulled = match peer.shm() {
                Some(shm) => shm.pull(&segments, buf).map_err(|e| e.to_string()),
                None => Err("announced for shared memory on a TCP pair".into()),
            };
            if let Err(why) = pulled {
                router.lose_peer(node, LossCause::Failed(Failure::Channel(why)));
                release(router, len);
                return Started::Later;
            }
            // SAFETY: the pull wrote all `len` bytes.
            unsafe { buffer.set_len(len) };
            fin(router, message.source, message.announced.send_id);
            router.fetched_announced(node);
            Started::Fetched(message, buffer)
        }
        Fetch::Push => {
            let done = Arc::new(Done::new());
            let send_id = message.announced.send_id;
            let source = message.source;
            let mut state = lock(&registry.large.state);
            // SAFETY: the buffer's heap block stays put (the vector moves
            // into `fetching`, its block does not) and untouched until the
            // entry leaves the fetch table: by the `Bulk` frame, after
            // which `fetched` takes it, or by the peer's loss, after which
            // `lost` withdraws it from the channel before dropping it.
            let id = unsafe { router.rendezvous.fetches.register(node, ptr, len, done.clone()) };
            // The connection's reader reads the bytes straight into the
            // buffer if it can be told now; this may run inside its own
            // frame's handling (it is locked then), and the `Bulk` frame
            // then comes in a buffer of its own and is copied.
            if let Some(tcp) = peer.data_tcp() {
                // SAFETY: as for the registration above.
                unsafe { tcp.try_place(id, ptr, len) };
            }
            state.fetching.insert(id, Fetching { message, buffer, done });
            drop(state);
            let returns = router.rendezvous.budget.take_returns(node);
            send_to(router, source, FrameKind::Cts, codec::encode_cts(send_id, id, len, returns));
            Started::Later
        }
        Fetch::Inline(_) => unreachable!("refused by decode"),
    }
}

/// Rendezvous step 5 for a large message: its bytes have come by the
/// `Bulk` frame of fetch `id` (if it is one of these).
pub(crate) fn fetched(router: &Router, id: u64) {
    let Some(Fetching {
        message, mut buffer, ..
    }) = lock(&router.am.large.state).fetching.remove(&id)
    else {
        return;
    };
    // SAFETY: the bulk frame filled all `len` bytes before its entry left
    // the fetch table.
    unsafe { buffer.set_len(message.announced.len) };
    let source = message.source;
    deliver(router, message, buffer);
    drain(router, source);
}

/// Step 3 for a fetched large message.
fn deliver(router: &Router, message: Pending, buffer: Vec<u8>) {
    let arrival = Arrival {
        source: message.source,
        id: message.id,
        request: message.request,
        target: message.target,
        payload: Payload::from_wire(message.announced.format, buffer),
        cost: 0,
        large: message.announced.len,
    };
    super::arrive(router, arrival);
}

/// Dispatches what waited behind `source`'s large message, in order, up
/// to a large one that must wait (for memory, or for its bytes).
fn drain(router: &Router, source: Address) {
    let large = &router.am.large;
    loop {
        let next = {
            let mut state = lock(&large.state);
            let Some(line) = state.blocked.get_mut(&source) else {
                return;
            };
            match line.pop_front() {
                None => {
                    state.blocked.remove(&source);
                    large.blocked.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
                Some(Queued::Large(message)) if !large.admits(&state, message.announced.len) => {
                    state.waiting.push_back(message);
                    return;
                }
                Some(Queued::Large(message)) => {
                    state.held += message.announced.len;
                    Queued::Large(message)
                }
                Some(eager) => eager,
            }
        };
        match next {
            Queued::Eager(arrival) => super::arrive(router, arrival),
            Queued::Large(message) => match start(router, message) {
                Started::Fetched(message, buffer) => deliver(router, message, buffer),
                Started::Skipped => {}
                Started::Later => return,
            },
        }
    }
}

/// A peer failed: its large messages will never come, and what waited
/// behind them never runs (their senders are gone).
pub(crate) fn lost(router: &Router, node: u32) {
    let large = &router.am.large;
    let (dropped, freed) = {
        let mut state = lock(&large.state);
        let mut dropped = Vec::new();
        state.blocked.retain(|source, line| {
            if source.node == node {
                dropped.extend(line.drain(..));
            }
            source.node != node
        });
        state.waiting.retain(|m| m.source.node != node);
        let ids: Vec<u64> = state
            .fetching
            .iter()
            .filter(|(_, f)| f.message.source.node == node)
            .map(|(&id, _)| id)
            .collect();
        let mut freed = Vec::new();
        for id in ids {
            if let Some(f) = state.fetching.remove(&id) {
                freed.push((id, f));
            }
        }
        large.blocked.store(state.blocked.len(), Ordering::Release);
        (dropped, freed)
    };
    let peer = &router.peers[node as usize];
    let mut len = 0;
    for (id, f) in freed {
        // Nobody writes the buffer any more if its entry was still in the
        // fetch table, or its outcome is set (failed by the loss, or
        // filled); else a `Bulk` frame's handling is copying into it now.
        let taken = router.rendezvous.fetches.withdraw(id) || f.done.is_done();
        len += f.message.announced.len;
        // The reader may be busy, perhaps with the frame whose handling
        // lost the peer: then it may still write the buffer. Either way
        // the buffer is leaked rather than freed under a writer (a failed
        // peer's fetch only).
        let withdrawn = taken
            && match peer.tcp().and_then(|c| c.as_tcp()) {
                Some(tcp) => tcp.try_unplace(id),
                None => true,
            };
        match withdrawn {
            true => drop(f),
            false => std::mem::forget(f.buffer),
        }
    }
    drop(dropped);
    // Memory freed, or the head of the waiting line gone: others may start.
    release(router, len);
}

/// `Fin` for the large message `send_id` of `to`: its sender drops it.
fn fin(router: &Router, to: Address, send_id: u64) {
    let returns = router.rendezvous.budget.take_returns(to.node);
    send_to(router, to, FrameKind::Fin, codec::encode_fin(send_id, returns));
}

fn send_to(router: &Router, to: Address, kind: FrameKind, payload: Vec<u8>) {
    let header = FrameHeader::addressed(kind, 0, to.thread, 0, 0, Format::OPAQUE, payload.len() as u64);
    let peer = &router.peers[to.node as usize];
    if let Err((e, _)) = peer.send(&header, Payload::from_vec(payload)) {
        router.lose_peer(to.node, LossCause::Failed(Failure::Channel(e.to_string())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_round_trip_and_malformed_ones_are_refused() {
        let b = encode(1 << 20, 5, &Fetch::Push, Some(3));
        let (a, target) = decode(b, Format::OPAQUE, 1 << 30).unwrap();
        assert_eq!((a.len, a.send_id, target), (1 << 20, 5, Some(3)));
        let b = encode(30, 6, &Fetch::Pull(vec![(0x1000, 10), (0x2000, 20)]), None);
        let (a, target) = decode(b, Format::OPAQUE, 100).unwrap();
        assert!(matches!(a.fetch, Fetch::Pull(ref s) if s.len() == 2));
        assert_eq!(target, None);
        let mut inline = encode(3, 7, &Fetch::Inline(Vec::new()), None);
        inline.splice(inline.len() - 4..inline.len() - 4, *b"abc");
        assert!(decode(inline, Format::OPAQUE, 100).is_err(), "inline");
        assert!(decode(vec![1, 2, 3], Format::OPAQUE, 100).is_err());
        for n in 0..64 {
            let _ = decode(vec![0xff; n], Format::OPAQUE, u64::MAX);
        }
    }
}
