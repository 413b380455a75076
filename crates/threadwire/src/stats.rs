//! Per-node counters, readable at run time and reported to the launcher.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A node's message counters (messages to and from other nodes and to
/// threads of the same node alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages sent by this node's threads.
    pub messages_sent: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Messages delivered to this node's threads.
    pub messages_received: u64,
    /// Payload bytes delivered.
    pub bytes_received: u64,
}

impl Stats {
    /// Mean payload size of the messages sent, in bytes.
    pub fn mean_sent_size(&self) -> f64 {
        if self.messages_sent == 0 {
            0.0
        } else {
            self.bytes_sent as f64 / self.messages_sent as f64
        }
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    messages_sent: AtomicU64,
    bytes_sent: AtomicU64,
    messages_received: AtomicU64,
    bytes_received: AtomicU64,
}

impl Counters {
    #[inline]
    pub(crate) fn sent(&self, bytes: usize) {
        self.messages_sent.fetch_add(1, Relaxed);
        self.bytes_sent.fetch_add(bytes as u64, Relaxed);
    }

    #[inline]
    pub(crate) fn received(&self, bytes: usize) {
        self.messages_received.fetch_add(1, Relaxed);
        self.bytes_received.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            messages_sent: self.messages_sent.load(Relaxed),
            bytes_sent: self.bytes_sent.load(Relaxed),
            messages_received: self.messages_received.load(Relaxed),
            bytes_received: self.bytes_received.load(Relaxed),
        }
    }
}
