//! A peer node as this node sees it: the pair's TCP connection, the
//! shared-memory channel when both share a host, and what became of it.
//!
//! # Choosing the channel
//!
//! Every pair gets its authenticated TCP connection at init. The higher
//! node of the pair then offers a shared-memory region over it (or says it
//! will not), the lower one attaches if both run on one host and in one
//! network namespace, and both finish the exchange before `init` returns
//! ([`threadwire_transport::shm::setup`], steps 1–4). From then on every
//! frame to that peer — data and goodbye — goes through the rings; the TCP
//! connection carries only doorbells and tells of the peer's death. With
//! `THREADWIRE_CHANNEL=tcp` no region is offered; with `shm` a pair that
//! cannot share memory fails `init`.

use crate::error::{LossCause, PeerLost};
use crate::lock;
use crate::node::NodeShared;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use threadwire_transport::shm::setup::{self, Attached, Offering, Pair, Setup};
use threadwire_transport::shm::ShmChannel;
use threadwire_transport::{Channel, ChannelError, Frame, SendOutcome};
use threadwire_wire::{FrameHeader, FrameKind, Payload};

/// Which channel nodes on one host use between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChannelChoice {
    /// Shared memory between nodes on one host, TCP between hosts.
    #[default]
    Auto,
    /// TCP everywhere (for measurement).
    Tcp,
    /// Shared memory; `init` fails if a peer cannot share memory.
    Shm,
}

impl FromStr for ChannelChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<ChannelChoice, String> {
        match s.trim() {
            "auto" | "" => Ok(ChannelChoice::Auto),
            "tcp" => Ok(ChannelChoice::Tcp),
            "shm" => Ok(ChannelChoice::Shm),
            other => Err(format!("unknown channel {other:?} (auto, tcp or shm)")),
        }
    }
}

/// Where a pair stands in the shared-memory setup.
enum SetupState {
    /// Nothing sent or received yet.
    Idle,
    /// This node offered a region (it is the pair's higher node).
    Offered(Offering),
    /// This node attached to the peer's region and waits for `Ready`.
    Attached(Attached),
    /// Finished: `Some(reason)` when the pair stays on TCP.
    Done(Option<String>),
}

pub(crate) struct Peer {
    tcp: OnceLock<Channel>,
    shm: OnceLock<ShmChannel>,
    setup: Mutex<SetupState>,
    setup_done: AtomicBool,
    lost: OnceLock<PeerLost>,
}

impl Peer {
    pub(crate) fn new() -> Peer {
        Peer {
            tcp: OnceLock::new(),
            shm: OnceLock::new(),
            setup: Mutex::new(SetupState::Idle),
            setup_done: AtomicBool::new(false),
            lost: OnceLock::new(),
        }
    }

    /// The pair's TCP connection.
    pub(crate) fn tcp(&self) -> Option<&Channel> {
        self.tcp.get()
    }

    pub(crate) fn has_tcp(&self) -> bool {
        self.tcp.get().is_some()
    }

    pub(crate) fn set_tcp(&self, c: Channel) {
        if self.tcp.set(c).is_err() {
            tracing::warn!("second connection to the same peer ignored");
        }
    }

    /// The shared-memory channel, once set up.
    pub(crate) fn shm(&self) -> Option<&ShmChannel> {
        self.shm.get()
    }

    pub(crate) fn lost(&self) -> Option<&PeerLost> {
        self.lost.get()
    }

    /// Records the loss; `false` if one was recorded already.
    pub(crate) fn set_lost(&self, lost: PeerLost) -> bool {
        self.lost.set(lost).is_ok()
    }

    /// Whether the channel choice is settled (or the peer is gone).
    pub(crate) fn ready(&self) -> bool {
        self.setup_done.load(Ordering::Acquire) || self.lost().is_some()
    }

    /// Sends one frame on the pair's data channel. On failure nothing of it
    /// was written and the payload is given back.
    pub(crate) fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        if let Some(shm) = self.shm.get() {
            let progress = shm.send(header, payload);
            if progress.doorbell {
                self.ring_doorbell();
            }
            return Ok(if progress.queued {
                SendOutcome::Queued
            } else {
                SendOutcome::Written
            });
        }
        match self.tcp.get() {
            Some(c) => c.send(header, payload),
            None => Err((
                std::io::Error::from(std::io::ErrorKind::NotConnected).into(),
                payload,
            )),
        }
    }

    /// Wakes the peer's engine to look at its rings. A failure shows on
    /// the connection's read side, so it is not reported here.
    pub(crate) fn ring_doorbell(&self) {
        if let Some(c) = self.tcp.get() {
            let _ = c.send(
                &FrameHeader::control(FrameKind::Doorbell, 0, 0),
                Payload::from_vec(Vec::new()),
            );
        }
    }

    /// Bytes accepted but not yet handed to the peer on either channel.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.tcp.get().map_or(0, Channel::queued_bytes)
            + self.shm.get().map_or(0, ShmChannel::queued_bytes)
    }

    /// The data channel in words, for `threadwire run --verbose`.
    pub(crate) fn route(&self) -> &'static str {
        match self.shm.get() {
            Some(s) if s.uses_cross_memory() => "shm (large messages by cross-memory copy)",
            Some(_) => "shm (large messages in chunks)",
            None => "tcp",
        }
    }

    fn finish_setup(&self, state: &mut SetupState, outcome: Option<String>) {
        *state = SetupState::Done(outcome);
        self.setup_done.store(true, Ordering::Release);
    }

    /// Why the pair stays on TCP, once settled (`None` on shared memory or
    /// while setting up).
    pub(crate) fn tcp_reason(&self) -> Option<String> {
        match &*lock(&self.setup) {
            SetupState::Done(reason) => reason.clone(),
            _ => None,
        }
    }
}

impl NodeShared {
    fn pair(&self, peer: u32) -> Pair {
        Pair {
            job_id: self.job_id,
            me: self.id,
            peer,
        }
    }

    fn send_message(&self, peer: u32, message: &Setup) -> Result<(), String> {
        let (header, bytes) = message.encode();
        match self.peers[peer as usize].tcp() {
            Some(c) => c
                .send(&header, Payload::from_vec(bytes))
                .map(|_| ())
                .map_err(|(e, _)| e.to_string()),
            None => Err("no connection to the peer".into()),
        }
    }

    /// Setup step 1, on the pair's higher node right after connecting.
    pub(crate) fn offer_shm(&self, peer: u32) {
        let p = &self.peers[peer as usize];
        let mut state = lock(&p.setup);
        let (message, next) = match self.channel_choice {
            ChannelChoice::Tcp => {
                let why = "THREADWIRE_CHANNEL=tcp".to_string();
                (Setup::NoOffer(why.clone()), SetupState::Done(Some(why)))
            }
            _ => match setup::offer(self.pair(peer), &self.shm_config) {
                Ok((offering, message)) => (message, SetupState::Offered(offering)),
                Err(e) => {
                    let why = format!("cannot create a shared region: {e}");
                    (Setup::NoOffer(why.clone()), SetupState::Done(Some(why)))
                }
            },
        };
        if let Err(e) = self.send_message(peer, &message) {
            tracing::warn!("n{}: shared-memory offer to n{peer}: {e}", self.id);
        }
        match next {
            SetupState::Done(why) => p.finish_setup(&mut state, why),
            other => *state = other,
        }
    }

    /// Steps 2–4 as the messages arrive; an error is a protocol violation.
    pub(crate) fn on_shm_setup(&self, peer: u32, frame: Frame) -> Result<(), String> {
        let message = Setup::decode(&frame.header, &frame.payload).map_err(|e| e.to_string())?;
        let p = &self.peers[peer as usize];
        let mut state = lock(&p.setup);
        let current = std::mem::replace(&mut *state, SetupState::Idle);
        match (current, message) {
            (SetupState::Idle, Setup::NoOffer(why)) => {
                p.finish_setup(&mut state, Some(format!("n{peer} offered none: {why}")));
            }
            (SetupState::Idle, Setup::Offer(offer)) if peer > self.id => {
                let attached = match self.channel_choice {
                    ChannelChoice::Tcp => Err("THREADWIRE_CHANNEL=tcp".to_string()),
                    _ => setup::attach(self.pair(peer), &offer, &self.shm_config),
                };
                match attached {
                    Ok((attached, accept)) => {
                        self.send_message(peer, &accept)?;
                        *state = SetupState::Attached(attached);
                    }
                    Err(why) => {
                        self.send_message(peer, &Setup::Decline(why.clone()))?;
                        p.finish_setup(&mut state, Some(why));
                    }
                }
            }
            (SetupState::Offered(offering), Setup::Accept(accept)) => {
                let (channel, ready) = offering
                    .complete(&accept)
                    .map_err(|e| format!("shared-memory channel: {e}"))?;
                self.install_shm(peer, channel);
                self.send_message(peer, &ready)?;
                p.finish_setup(&mut state, None);
            }
            (SetupState::Offered(_), Setup::Decline(why)) => {
                p.finish_setup(&mut state, Some(format!("n{peer} declined: {why}")));
            }
            (SetupState::Attached(attached), Setup::Ready { can_read }) => {
                let channel = attached
                    .complete(can_read)
                    .map_err(|e| format!("shared-memory channel: {e}"))?;
                self.install_shm(peer, channel);
                p.finish_setup(&mut state, None);
            }
            (current, message) => {
                *state = current;
                return Err(format!(
                    "unexpected shared-memory setup message {message:?}"
                ));
            }
        }
        Ok(())
    }

    fn install_shm(&self, peer: u32, channel: ShmChannel) {
        let p = &self.peers[peer as usize];
        if self.shm_config.cma && !channel.uses_cross_memory() {
            tracing::warn!(
                "n{}: the kernel refuses cross-memory attach with n{peer}; \
                 large messages to it go in chunks through the shared rings",
                self.id
            );
        }
        if p.shm.set(channel).is_ok() {
            self.shm_peers.fetch_add(1, Ordering::AcqRel);
        }
        tracing::debug!("n{}: n{peer} via {}", self.id, p.route());
    }

    /// Whether a peer is reading one of this node's rendezvous messages
    /// (progress engine, step 7).
    pub(crate) fn peer_is_copying(&self) -> bool {
        self.shm_peers.load(Ordering::Relaxed) > 0
            && self
                .peers
                .iter()
                .any(|p| p.shm().is_some_and(ShmChannel::reading_our_memory) && p.lost().is_none())
    }

    /// After a loss, whether frames from `peer` may still be read (a
    /// goodbye does not end reading: answers may follow it).
    pub(crate) fn readable(&self, peer: u32) -> bool {
        !matches!(
            self.peers[peer as usize].lost(),
            Some(PeerLost {
                cause: LossCause::Failed(_),
                ..
            })
        )
    }
}
