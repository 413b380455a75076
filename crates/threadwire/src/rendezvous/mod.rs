//! Announced messages: rendezvous, synchronous sends, and the eager
//! budget that bounds what a node holds for receivers that have not
//! received yet.
//!
//! # Which way a message goes
//!
//! A send to another node is *eager* — its bytes travel at once and wait
//! at the receiver, unexpected, until a receive takes them — when it is
//! no longer than the channel's eager limit ([`Limits`]: shared memory
//! and TCP each have theirs) and the peer node's [`Budget`] has room for
//! it. Otherwise it is *announced*: only a descriptor travels (an `Rts`
//! frame), it is matched like any message, and the bytes move once a
//! receive has matched it, straight into that receive's buffer. A
//! synchronous send (`ssend`) is always announced, with its bytes inside
//! the descriptor when it would have gone eagerly.
//!
//! # The protocol
//!
//! 1. The sender gives the message a send id, keeps its payload in this
//!    node's table of [`Sends`] (registered first: the answer may come
//!    before the announcement's send returns) and sends `Rts`: length,
//!    send id, and how to fetch the bytes — *inline* (in the descriptor),
//!    *pull* (the addresses of the payload's segments, on a shared-memory
//!    channel whose peer may read this process) or *push* (on request).
//! 2. The receiving router delivers the announcement to the destination
//!    thread's mailbox like a data frame: matching and order are those of
//!    every message (context, source, tag; per-pair FIFO).
//! 3. A receive that matches it fetches the bytes into its own buffer
//!    (the caller's for `recv_into`, a new one for `recv`):
//!    inline bytes are copied; *pull* reads them from the sender's memory
//!    with one `process_vm_readv`; *push* registers the buffer under a
//!    fresh receive id in this node's table of [`Fetches`] (and, on TCP,
//!    with the channel, whose reader then reads the bytes straight into
//!    it) and sends `Cts` with both ids and the bytes wanted (fewer when
//!    the buffer is too small: a truncated receive fetches only what fits).
//! 4. On `Cts` the sender's router sends the payload as one `Bulk` frame
//!    addressed by the receive id — from the reserved source
//!    `BULK_SOURCE`, not the announcing thread, which may be sending a
//!    chunked frame of its own on the same ring at that moment — and the
//!    send is complete. After an
//!    inline or pulled fetch the receiver sends `Fin` with the send id,
//!    which completes the send and drops its payload.
//! 5. When the `Bulk` frame has arrived (into the registered buffer, or
//!    copied there from the frame on a channel that cannot place it) the
//!    receive is complete.
//!
//! A send of borrowed bytes (`send(&buf[..])` beyond the eager limit, a
//! *direct* send) is announced with a payload that refers to them, and
//! returns only once that payload is dropped, wherever it went: after the
//! pull's `Fin`, once the connection has written the `Bulk` frame out of
//! them (step 4 hands the payload itself to the channel), or when a
//! closed connection discards its queue (`TcpChannel::close`, called on
//! every lost peer) — so no byte is copied at the sender, and nothing
//! reads the caller's buffer after `send` returns, even on failure. A
//! payload the connection discarded unwritten tells so as it goes
//! (`Payload::mark_undelivered`), and the send, though its `Cts` came,
//! fails with `PeerLost`: it returns `Ok` only when every byte was handed
//! to the connection.
//!
//! An announced standard send whose bytes fit the budget (below) is
//! *buffered*: it completes at once, its payload waiting in the table,
//! counted in the budget until step 4. Any other announced send is
//! complete only once its receiver has matched it (step 4): a blocking
//! `send` beyond the budget waits for the receive, as MPI's standard mode
//! allows, and `ssend` is always that wait. If either
//! node is lost meanwhile, the other's send or receive fails with
//! `PeerLost` (its table entries are failed by the router's loss); a
//! receive first withdraws its buffer from the channel, so nothing writes
//! to it after it returns.
//!
//! # The budget
//!
//! Each node may hold, per peer node, at most its budget's bytes of
//! messages sent to that peer and not yet taken by a receive there —
//! eager ones waiting at the peer, buffered announced ones waiting here —
//! each costing its length plus [`OVERHEAD`]. A buffered send's bytes
//! return to the budget at step 4; for eager ones the receiver counts what
//! its receives take from each sender and returns it in a `Credit` frame
//! once an eighth of its own budget has gathered, or sooner inside the `Cts`
//! and `Fin` it sends anyway. A message that does not fit the budget is
//! announced instead, so it waits at the sender, in its sender's buffer,
//! and never at the receiver: memory stays bounded whatever the traffic,
//! and since an announcement can always be matched, a program that is
//! correct under MPI's rules (it does not rely on a send's buffering)
//! never deadlocks for want of budget. Programs that do rely on buffering
//! — two threads that both send a large message before either receives —
//! wait, as they may under MPI's standard mode.

mod budget;
pub(crate) mod codec;
mod done;
mod frames;
mod tables;

pub(crate) use budget::{Budget, OVERHEAD};
pub(crate) use codec::{encode_rts, Announced, Fetch, RendezvousError, MAX_SEGMENTS};
pub(crate) use done::Done;
pub(crate) use tables::{Fetches, Outbound, Sends};

use crate::config::Settings;

/// Eager limits per channel: longer messages are announced.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Between nodes on one host that read each other's memory.
    pub(crate) shm: usize,
    /// Over TCP, and between nodes on one host that cannot read each
    /// other's memory (their announced bytes would be pushed through the
    /// ring, a copy more than going eagerly).
    pub(crate) tcp: usize,
}

impl Limits {
    /// The limit of the channel that reaches `peer`.
    #[inline]
    pub(crate) fn for_peer(&self, peer: &crate::peer::Peer) -> usize {
        match peer.shm() {
            Some(shm) if shm.uses_cross_memory() => self.shm,
            _ => self.tcp,
        }
    }

    pub(crate) fn from_settings(settings: &Settings) -> Limits {
        Limits {
            shm: settings.eager_shm,
            tcp: settings.eager_tcp,
        }
    }
}

/// How the receiver will fetch `payload`, announced to `peer`: pulled
/// where it is by cross-memory copy if the pair's channel allows it and
/// the payload is in few enough pieces, else pushed in a `Bulk` frame
/// when the receiver asks (point-to-point and large active messages
/// alike).
pub(crate) fn fetch_for(peer: &crate::peer::Peer, payload: &threadwire_wire::Payload) -> Fetch {
    match peer.shm() {
        Some(shm) if shm.uses_cross_memory() && payload.segments().count() <= MAX_SEGMENTS => {
            Fetch::Pull(
                payload
                    .segments()
                    .map(|b| (b.as_ptr() as u64, b.len() as u64))
                    .collect(),
            )
        }
        _ => Fetch::Push,
    }
}

/// The rendezvous state of a node: its tables, its budget, its limits.
pub(crate) struct Rendezvous {
    pub(crate) sends: Sends,
    pub(crate) fetches: Fetches,
    pub(crate) budget: Budget,
    pub(crate) limits: Limits,
}

impl Rendezvous {
    pub(crate) fn new(nodes: u32, settings: &Settings) -> Rendezvous {
        Rendezvous {
            sends: Sends::default(),
            fetches: Fetches::default(),
            budget: Budget::new(nodes, settings.eager_budget),
            limits: Limits::from_settings(settings),
        }
    }

    /// A lost peer: the sends it will never receive fail, and, if it
    /// failed, the fetches from it. A peer that said goodbye still
    /// answers the fetches asked of it before (its goodbye waits for
    /// ours), so those go on.
    pub(crate) fn lose(&self, lost: &crate::PeerLost) {
        self.sends.fail_node(lost);
        if matches!(lost.cause, crate::LossCause::Failed(_)) {
            self.fetches.fail_node(lost);
        }
    }
}
