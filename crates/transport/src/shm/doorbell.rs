//! The doorbell: how a shared-memory channel wakes its peer's progress
//! engine.
//!
//! The rings need no system call while both engines poll. An engine that
//! sleeps does so in `epoll_wait`, having said so in the ring's `sleeping`
//! word (the consumer's sleeping steps, [`super::ring`]); a producer that
//! finds the word set, or one that waits for space, must wake it with
//! something epoll sees. The channel decides when (its sends, flushes and
//! receives report it) and rings the doorbell it was given at set-up
//! itself, so the runtime above never has to.

use crate::TcpChannel;
use std::sync::Arc;
use threadwire_wire::{FrameHeader, FrameKind, Payload};

/// What a shared-memory channel does to wake its peer's engine.
pub struct Doorbell {
    ring: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Doorbell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Doorbell")
    }
}

impl Doorbell {
    /// A doorbell frame on the pair's TCP connection, which wakes the
    /// peer's `epoll_wait`. A failure to send it is not reported here: it
    /// shows as the connection's loss on its read side.
    pub fn tcp(connection: Arc<TcpChannel>) -> Doorbell {
        Doorbell::new(move || {
            let _ = connection.send(
                &FrameHeader::control(FrameKind::Doorbell, 0, 0),
                Payload::from_vec(Vec::new()),
            );
        })
    }

    /// Calls `ring` to wake the peer (tests; peers that never sleep).
    pub fn new(ring: impl Fn() + Send + Sync + 'static) -> Doorbell {
        Doorbell {
            ring: Box::new(ring),
        }
    }

    pub(crate) fn ring(&self) {
        (self.ring)()
    }
}
