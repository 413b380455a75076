//! Multicast: one message to an explicit list of endpoints (PVM's
//! `pvm_mcast`, NCS' broadcast to a list), crossing each remote node once.
//!
//! # Protocol
//!
//! 1. The sender checks the whole list first (every address of this job,
//!    the message within a frame) and sends nothing if one fails.
//! 2. It sorts the list and drops repeats: an address listed twice gets
//!    the message once.
//! 3. For each other node in the list it takes one copy's cost (the
//!    data's length plus the per-message overhead) per listed thread of
//!    that node from the node's eager budget, waiting for credit as an
//!    active message does when there is no room, and sends one multicast
//!    frame ([`FrameKind::Mcast`](threadwire_wire::FrameKind)): the data, then
//!    the node's listed threads as a trailer
//!    ([`threadwire_wire::mcast`]), on the same channel as its ordinary
//!    messages — so order per (sender thread, receiver thread) is kept
//!    between sends and multicasts alike.
//! 4. The receiving node's router checks the list (a malformed one is a
//!    protocol error that closes that peer's channel; nothing of the frame
//!    is delivered) and puts a copy of the data — the received buffer
//!    itself for the last thread — into each listed thread's mailbox, as
//!    an ordinary eager message from the sender with the tag, context 0:
//!    each copy's receipt returns its cost to the sender's budget.
//! 5. Threads of the sender's own node get theirs straight into their
//!    mailboxes, as a local send does.
//!
//! Costs: one frame per remote node, the data copied once per extra
//! destination (node or local thread), as sends of borrowed bytes would.

use crate::error::{Failure, LossCause, PeerLost};
use crate::mailbox::MAX_THREADS;
use crate::rendezvous::OVERHEAD;
use crate::{Address, Endpoint, Tag};
use std::sync::atomic::Ordering;
use threadwire_transport::SendOutcome;
use threadwire_wire::mcast::{encode_list, encode_nodes, THREAD_BYTES};
use threadwire_wire::{FrameHeader, Payload};

/// Why a multicast failed. Where nothing was sent the message is given
/// back; a lost node fails only its own destinations, the others get the
/// message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McastError {
    /// An address names no endpoint of this job; nothing was sent.
    #[error("multicast to {to}: no such endpoint in this job")]
    NoSuchEndpoint {
        /// The first such address in the list.
        to: Address,
        /// The message, unsent.
        payload: Payload,
    },
    /// The message and the list of one node's threads exceed a frame;
    /// nothing was sent.
    #[error("multicast of {len} bytes (with its list) exceeds the maximum frame of {max} bytes")]
    TooLarge {
        /// The frame's payload length: data and list.
        len: usize,
        /// The configured maximum.
        max: u64,
        /// The message, unsent.
        payload: Payload,
    },
    /// Some destination nodes are gone; every other destination got the
    /// message.
    #[error("multicast reached all but {} destinations: {}", missed.len(), lost[0])]
    PeerLost {
        /// The lost nodes (at least one).
        lost: Vec<PeerLost>,
        /// The destinations on them, which did not get it.
        missed: Vec<Address>,
    },
    /// This node has finalized.
    #[error("multicast after finalize")]
    Finalized,
}

impl Endpoint {
    /// Sends one message to each endpoint of `to` with `tag` (PVM's
    /// `pvm_mcast`): every destination receives it as an ordinary message
    /// from this endpoint (match it with [`recv`](Endpoint::recv)), and
    /// messages from this thread to each of them stay in the order sent.
    /// The data crosses to each other node once and is copied there to its
    /// listed threads (see the [protocol](crate::mcast)).
    ///
    /// An address listed twice gets the message once; the caller may list
    /// itself. An empty list sends nothing and succeeds. An address beyond
    /// the job's nodes or threads fails the whole call before anything is
    /// sent ([`McastError::NoSuchEndpoint`]); a thread number not (yet)
    /// started is a mailbox like any other, as for [`send`](Endpoint::send).
    pub fn mcast(&self, to: &[Address], tag: Tag, data: impl Into<Payload>) -> Result<(), McastError> {
        let payload = data.into();
        let s = &self.node().shared.router;
        if s.finalized.load(Ordering::Relaxed) {
            return Err(McastError::Finalized);
        }
        if let Some(&bad) = to.iter().find(|a| a.node >= s.nodes() || a.thread >= MAX_THREADS) {
            return Err(McastError::NoSuchEndpoint { to: bad, payload });
        }
        let mut to = to.to_vec();
        to.sort_unstable_by_key(|a| (a.node == s.id, a.node, a.thread));
        to.dedup();
        let Some(last) = to.last().copied() else {
            return Ok(());
        };
        // Remote nodes first, local threads last: the moved buffer goes to
        // the last destination, and a local one needs no trailer.
        let by_node: Vec<&[Address]> = to.chunk_by(|a, b| a.node == b.node).collect();
        let widest = by_node
            .iter()
            .filter(|g| g[0].node != s.id)
            .map(|g| g.len())
            .max()
            .unwrap_or(0);
        let frame_len = payload.len() + widest * THREAD_BYTES;
        if frame_len as u64 > s.max_frame {
            return Err(McastError::TooLarge {
                len: frame_len,
                max: s.max_frame,
                payload,
            });
        }
        let (mut lost, mut missed) = (Vec::new(), Vec::new());
        let mut payload = Some(payload);
        for group in by_node {
            let node = group[0].node;
            let is_last = group.last() == Some(&last);
            let data = if is_last {
                payload.take().expect("taken only for the last group")
            } else {
                let p = payload.as_ref().expect("kept until the last group");
                Payload::from_wire(p.format(), p.to_vec())
            };
            if node == s.id {
                self.deliver_locally(0, group, tag, data);
            } else if let Err(l) = self.send_mcast_frame(node, group, tag, data) {
                lost.push(l);
                missed.extend_from_slice(group);
            }
        }
        if lost.is_empty() {
            Ok(())
        } else {
            Err(McastError::PeerLost { lost, missed })
        }
    }

    /// Each of `threads` (of this node) gets a copy, the last the buffer
    /// itself, through the same local path as [`send`](Endpoint::send).
    fn deliver_locally(&self, context: u32, threads: &[Address], tag: Tag, data: Payload) {
        let (last, rest) = threads.split_last().expect("groups are not empty");
        for &to in rest {
            let copy = Payload::from_wire(data.format(), data.to_vec());
            // Cannot fail: checked in range, and the node is this one.
            let _ = self.send_in(context, to, tag, copy);
        }
        let _ = self.send_in(context, *last, tag, data);
    }

    /// Sends one message to every endpoint of `to` (sorted, no repeats, not
    /// this one) in `context` with `tag` by this node's multicast stream
    /// (`peer::multicast`, step 3): one frame for every other node, copies
    /// for this node's threads. The payload given back, nothing sent,
    /// where the stream does not reach one of the nodes or the frame would
    /// be too long; a node lost while its budget is awaited fails it.
    pub(crate) fn send_by_stream(
        &self,
        context: u32,
        to: &[Address],
        tag: Tag,
        payload: Payload,
    ) -> Result<Option<Payload>, PeerLost> {
        let shared = &*self.node().shared;
        let s = &shared.router;
        let Some(stream) = s.multicast.get() else {
            return Ok(Some(payload));
        };
        let by_node: Vec<&[Address]> = to.chunk_by(|a, b| a.node == b.node).collect();
        let remote = || by_node.iter().filter(|g| g[0].node != s.id);
        if let Some(g) = remote().find(|g| !s.multicast_reaches(g[0].node)) {
            s.multicast_unreached(g[0].node);
            return Ok(Some(payload));
        }
        let len = payload.len();
        let listed: usize = remote().map(|g| 2 + g.len()).sum();
        if (len + listed * THREAD_BYTES) as u64 > s.max_frame {
            return Ok(Some(payload));
        }
        let mut nodes: Vec<(u32, Vec<u32>, usize)> = Vec::new();
        for g in remote() {
            let node = g[0].node;
            let cost = g.len() * (len + OVERHEAD);
            if !self.wait_for_budget(node, cost) {
                for &(n, _, cost) in &nodes {
                    s.rendezvous.budget.returned(n, cost as u64);
                }
                return Err(s.peers[node as usize].lost().cloned().expect("the wait ends on budget or a loss"));
            }
            nodes.push((node, g.iter().map(|a| a.thread).collect(), cost));
        }
        if let Some(local) = by_node.iter().find(|g| g[0].node == s.id) {
            let copy = Payload::from_wire(payload.format(), payload.to_vec());
            self.deliver_locally(context, local, tag, copy);
        }
        if nodes.is_empty() {
            return Ok(None);
        }
        let listed: Vec<(u32, &[u32])> = nodes.iter().map(|(n, t, _)| (*n, t.as_slice())).collect();
        let trailer = encode_nodes(&listed);
        let words = (trailer.len() / THREAD_BYTES) as u32;
        let mut data = payload;
        data.push_bytes(trailer);
        let header = FrameHeader::bcast(
            context,
            self.address().thread,
            words,
            tag,
            data.format(),
            data.len() as u64,
        );
        if let Err((e, _)) = stream.channel.send(&header, data) {
            // The stream refuses a frame only when it cannot go on at all.
            for &(n, _, cost) in &nodes {
                s.rendezvous.budget.returned(n, cost as u64);
            }
            return Err(PeerLost {
                node: nodes[0].0,
                cause: LossCause::Failed(Failure::Channel(format!("multicast stream: {e}"))),
            });
        }
        for (_, threads, _) in &nodes {
            for _ in threads {
                self.mailbox().counters.sent(len);
            }
        }
        Ok(None)
    }

    fn send_mcast_frame(
        &self,
        node: u32,
        threads: &[Address],
        tag: Tag,
        mut data: Payload,
    ) -> Result<(), PeerLost> {
        let shared = &*self.node().shared;
        let s = &shared.router;
        let peer = &s.peers[node as usize];
        if let Some(lost) = peer.lost() {
            return Err(lost.clone());
        }
        let len = data.len();
        // Each listed thread's copy is held at the receiver until taken
        // (step 4), and returns its cost when received.
        let cost = threads.len() * (len + OVERHEAD);
        if !self.wait_for_budget(node, cost) {
            return Err(peer.lost().cloned().expect("the wait ends on budget or a loss"));
        }
        let list: Vec<u32> = threads.iter().map(|a| a.thread).collect();
        data.push_bytes(encode_list(&list));
        let header = FrameHeader::mcast(
            0,
            self.address().thread,
            list.len() as u32,
            tag,
            data.format(),
            data.len() as u64,
        );
        match peer.send(&header, data) {
            Ok(outcome) => {
                for _ in threads {
                    self.mailbox().counters.sent(len);
                }
                if outcome == SendOutcome::Queued {
                    shared.engine.try_progress(s);
                }
                Ok(())
            }
            Err((e, _)) => {
                s.rendezvous.budget.returned(node, cost as u64);
                s.lose_peer(node, LossCause::Failed(Failure::Channel(e.to_string())));
                Err(peer.lost().cloned().expect("just marked lost"))
            }
        }
    }
}
