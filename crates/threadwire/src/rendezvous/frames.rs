//! The rendezvous frames as the router receives them: an announcement
//! into its thread's mailbox (step 2), a `Cts` answered with the bytes
//! (step 4), a `Bulk` frame into its fetch (step 5).

use super::{codec, Outbound, RendezvousError};
use crate::error::{Failure, LossCause, PeerLost};
use crate::mailbox::remote_message;
use crate::message::Tail;
use crate::router::{ProtocolError, Router};
use std::sync::atomic::Ordering;
use threadwire_transport::Frame;
use threadwire_wire::{FrameHeader, Payload};

impl Router {
    /// Rendezvous step 2: an announcement into its thread's mailbox.
    pub(crate) fn on_rts(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        let Some(mailbox) = self.mailboxes.get(h.dest_thread) else {
            return Err(ProtocolError::NoSuchThread(h.dest_thread));
        };
        let announced = codec::decode_rts(frame.payload.into_vec(), h.format, self.max_frame)?;
        self.announced[peer as usize].fetch_add(1, Ordering::AcqRel);
        let mut m = remote_message(peer, h.source_thread, h.aux, h.tag, Payload::from_vec(Vec::new()));
        m.tail = Tail::Announced(Box::new(announced));
        mailbox.deliver(m);
        Ok(())
    }

    /// Rendezvous step 4 on a `Cts`: the payload as one `Bulk` frame, and
    /// the send is complete.
    pub(crate) fn on_cts(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let (send_id, recv_id, want, returns) = codec::decode_cts(&frame.payload)?;
        self.rendezvous.budget.returned(peer, returns);
        let mut out = self.take_send(peer, send_id)?;
        // A borrowed payload goes as it is: its sender waits until the
        // channel has dropped it (written out, or discarded on close).
        let mut payload = out.payload.take().unwrap_or_else(|| Payload::from_vec(Vec::new()));
        if want < payload.len() as u64 {
            // A truncated receive: only what fits travels.
            let mut bytes = payload.to_vec();
            bytes.truncate(want as usize);
            payload = Payload::from_wire(payload.format(), bytes);
        }
        let header = FrameHeader::bulk(
            out.dest_thread,
            recv_id,
            payload.format(),
            payload.len() as u64,
        );
        match self.peers[peer as usize].send(&header, payload) {
            Ok(_) => out.succeed(),
            Err((e, _)) => {
                self.lose_peer(peer, LossCause::Failed(Failure::Channel(e.to_string())));
                if let Some(lost) = self.peers[peer as usize].lost() {
                    out.fail(lost);
                }
            }
        }
        Ok(())
    }

    /// The announced send `send_id` to `peer`, answered.
    pub(crate) fn take_send(&self, peer: u32, send_id: u64) -> Result<Outbound, ProtocolError> {
        match self.rendezvous.sends.remove(send_id) {
            Some(out) if out.node == peer => {
                self.rendezvous.budget.returned(peer, out.held as u64);
                Ok(out)
            }
            Some(out) => {
                self.rendezvous.sends.insert(send_id, out);
                Err(RendezvousError::UnknownSend(send_id).into())
            }
            None => Err(RendezvousError::UnknownSend(send_id).into()),
        }
    }

    /// Rendezvous step 5: the bytes of a fetch have arrived — placed by the
    /// channel (an empty payload) or in the frame, copied now. A fetch
    /// given up meanwhile drops them.
    pub(crate) fn on_bulk(&self, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        let Some(entry) = self.rendezvous.fetches.remove(h.bulk_id()) else {
            return Ok(());
        };
        let placed = frame.payload.len() as u64 != h.len;
        if !placed && !entry.fill(&frame.payload) {
            entry.done.fail(&PeerLost {
                node: entry.node,
                cause: LossCause::Failed(Failure::Channel("bulk frame overran its buffer".into())),
            });
            return Err(ProtocolError::BulkOverrun { len: h.len });
        }
        entry.done.succeed();
        self.fetched_announced(entry.node);
        crate::am::large::fetched(self, h.bulk_id());
        Ok(())
    }
}
