//! Upkeep of a node's connections between messages: uncorking TCP
//! connections that stopped streaming (transport's `cork`), and the UDP
//! channels' timers — asked for by the progress engine's waits and polls
//! and by the liveness thread.

use crate::error::{Failure, LossCause};
use crate::router::Router;
use std::time::Instant;
use threadwire_transport::{Channel, TcpChannel};

impl Router {
    /// Uncorks every corked connection (transport's `cork`, step 4): a
    /// thread is about to wait, perhaps for an answer to what they hold.
    /// One load when none is corked.
    #[inline]
    pub(crate) fn uncork(&self) {
        if self.corking.get().is_some_and(|w| w.any()) {
            self.each_tcp(|c| {
                c.uncork();
            });
        }
    }

    /// Uncorks the corked connections that sent nothing since the last
    /// look (`progress::liveness`, step 5).
    pub(crate) fn uncork_idle(&self) {
        if self.corking.get().is_some_and(|w| w.any()) {
            self.each_tcp(|c| {
                c.uncork_if_idle();
            });
        }
    }

    /// Fires the UDP channels' timers due by `now` (a peer found silent
    /// is lost) and returns when the next is due.
    pub(crate) fn udp_timers(&self, now: Instant) -> Option<Instant> {
        self.udp.get()?;
        let mut next: Option<Instant> = None;
        for (j, peer) in self.peers[..self.nodes() as usize].iter().enumerate() {
            let Some(c) = peer.udp() else {
                continue;
            };
            // A peer that said goodbye may still miss acknowledgements
            // of ours: its channel runs on until the peer's process ends.
            let Some(due) = c.timeout() else {
                continue;
            };
            if due <= now {
                if let Err(e) = c.on_timeout(now) {
                    self.lose_peer(j as u32, LossCause::Failed(Failure::Channel(e.to_string())));
                    continue;
                }
            }
            if let Some(due) = c.timeout() {
                next = Some(next.map_or(due, |n| n.min(due)));
            }
        }
        next
    }

    /// Whether a UDP channel or the multicast stream has a timer running
    /// (data unacknowledged, a repair or acknowledgement due).
    pub(crate) fn udp_waiting(&self) -> bool {
        self.udp.get().is_some()
            && (self.multicast.get().is_some_and(|m| m.channel.timeout().is_some())
                || self.peers[..self.nodes() as usize]
                    .iter()
                    .any(|p| p.udp().is_some_and(|c| c.timeout().is_some())))
    }

    fn each_tcp(&self, mut f: impl FnMut(&TcpChannel)) {
        for peer in &self.peers[..self.nodes() as usize] {
            if let Some(c) = peer.tcp().and_then(Channel::as_tcp) {
                f(c);
            }
        }
    }
}
