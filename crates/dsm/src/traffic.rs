//! What a node's engine sends and how long its requests take: the
//! statistics of the seed's Table 3 (messages and bytes by kind, average
//! size, round trip including the remote processing).
//!
//! Every message of the engine is a request answered by a reply (module
//! `protocol`); the counters are of this node's requests, their payload
//! bytes each way (the active message's own header, which the transport
//! adds, is not counted) and the time from sending a request to holding
//! its reply.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The engine's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A unit asked of its home (`dsm.fetch`): the reply is the unit.
    Fetch,
    /// Diffs sent to a home (`dsm.diff`): the reply is their versions.
    Diff,
    /// A node's arrival at a barrier (`dsm.barrier`): the reply is the
    /// release, with every node's write notices.
    Barrier,
    /// A lock asked of its manager (`dsm.acquire`).
    Acquire,
    /// A lock's token asked of the node before in its queue
    /// (`dsm.follow`): the reply is the grant, with write notices.
    Follow,
}

impl Kind {
    /// Every kind, in table order.
    pub const ALL: [Kind; 5] = [
        Kind::Fetch,
        Kind::Diff,
        Kind::Barrier,
        Kind::Acquire,
        Kind::Follow,
    ];

    /// Its name in tables: `page`, `diff`, `barrier`, `lock acquire`,
    /// `lock grant`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fetch => "page",
            Kind::Diff => "diff",
            Kind::Barrier => "barrier",
            Kind::Acquire => "lock acquire",
            Kind::Follow => "lock grant",
        }
    }
}

/// One kind's counters.
#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    request_bytes: AtomicU64,
    replies: AtomicU64,
    reply_bytes: AtomicU64,
    round_trip_ns: AtomicU64,
}

/// A node's requests by kind.
#[derive(Debug, Default)]
pub struct Traffic {
    kinds: [Counters; 5],
}

/// One kind's figures: [`crate::Stats::traffic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindStats {
    /// Which requests.
    pub kind: Kind,
    /// Requests sent.
    pub requests: u64,
    /// Their payload bytes.
    pub request_bytes: u64,
    /// Replies received.
    pub replies: u64,
    /// Their payload bytes.
    pub reply_bytes: u64,
    /// Sum of the requests' round trips, from sending to holding the
    /// reply (remote processing and, for barriers and lock grants, the
    /// wait for other nodes included).
    pub round_trip: Duration,
}

impl KindStats {
    /// Mean round trip, or zero with no reply.
    pub fn mean_round_trip(&self) -> Duration {
        match self.replies {
            0 => Duration::ZERO,
            n => self.round_trip / n as u32,
        }
    }

    /// Mean payload of a message either way, or zero.
    pub fn mean_size(&self) -> u64 {
        let n = self.requests + self.replies;
        (self.request_bytes + self.reply_bytes)
            .checked_div(n)
            .unwrap_or(0)
    }
}

/// A request on its way: [`Traffic::answered`] closes it.
#[derive(Debug)]
pub struct Sent {
    kind: Kind,
    at: Instant,
}

impl Traffic {
    fn of(&self, kind: Kind) -> &Counters {
        &self.kinds[kind as usize]
    }

    /// Counts a request of `bytes` being sent.
    pub fn sent(&self, kind: Kind, bytes: usize) -> Sent {
        let c = self.of(kind);
        c.requests.fetch_add(1, Ordering::Relaxed);
        c.request_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        Sent {
            kind,
            at: Instant::now(),
        }
    }

    /// Counts the reply of `bytes` to `sent`, and its round trip.
    pub fn answered(&self, sent: &Sent, bytes: usize) {
        let c = self.of(sent.kind);
        c.replies.fetch_add(1, Ordering::Relaxed);
        c.reply_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        c.round_trip_ns
            .fetch_add(sent.at.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// The figures so far, in [`Kind::ALL`]'s order.
    pub fn snapshot(&self) -> [KindStats; 5] {
        Kind::ALL.map(|kind| {
            let c = self.of(kind);
            let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
            KindStats {
                kind,
                requests: get(&c.requests),
                request_bytes: get(&c.request_bytes),
                replies: get(&c.replies),
                reply_bytes: get(&c.reply_bytes),
                round_trip: Duration::from_nanos(get(&c.round_trip_ns)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_add_up_by_kind() {
        let t = Traffic::default();
        let s = t.sent(Kind::Fetch, 4);
        t.answered(&s, 8200);
        let _ = t.sent(Kind::Diff, 100);
        let snap = t.snapshot();
        assert_eq!(snap[0].kind, Kind::Fetch);
        assert_eq!(
            (snap[0].requests, snap[0].replies, snap[0].mean_size()),
            (1, 1, 4102)
        );
        assert_eq!((snap[1].requests, snap[1].replies), (1, 0));
        assert_eq!(snap[1].mean_round_trip(), Duration::ZERO);
    }
}
