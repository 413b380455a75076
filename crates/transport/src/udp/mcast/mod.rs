//! Reliable multicast: each node's one ordered stream of wire frames
//! (their headers compact, as on the unicast channel: `frame_header`),
//! multicast once to the job's group and received reliably and in order
//! by every other node of the job.
//!
//! The protocol is [`Endpoint`] (its sending half `sender`, its
//! receiving half a `receiver` per sender), without I/O: the caller
//! feeds it datagrams, control messages and time, so that loss,
//! reordering, duplication and forgery are tested deterministically.
//! [`McastChannel`] is that endpoint on the node's multicast socket.
//!
//! Only data and heartbeats are multicast. Control messages — join,
//! acknowledgements, NAKs — go from one node to one other, and the
//! channel hands them to its caller ([`McastChannel::poll_control`]),
//! which carries them over the pair's reliable unicast channel and hands
//! the ones received back ([`McastChannel::on_control`]): they are never
//! lost, only late, and they are authenticated by that channel.
//!
//! # The protocol
//!
//! 1. **Group.** A job's nodes share one group, 239.255.x.y
//!    (administratively scoped, RFC 2365) with a port in 40000–59999,
//!    both derived from the job id ([`group_for`]). The socket
//!    ([`open_socket`]) sends only to the group, through one interface,
//!    with TTL 1: multicast never leaves the LAN.
//! 2. **Datagrams.** A `DATA` datagram carries a piece of the sender's
//!    stream (its offset and bytes) and the end of what the sender has
//!    sent; a `HEARTBEAT` only that end (`packet` has the layout). Each
//!    sender picks a random 16-byte session when it starts; its
//!    datagrams are tagged (HMAC-SHA256, truncated to 16 bytes, as the
//!    unicast channel's) with `HMAC(secret, "threadwire mcast" ‖ job ‖
//!    sender ‖ session)`. A datagram that is malformed, of a sender or
//!    session this node does not receive, forged, or wholly received
//!    before is dropped and counted; a replay is such a duplicate.
//! 3. **Join.** A datagram from a sender this node has no receiver for
//!    makes it ask that sender to `Join` (at most once per 10 ms per
//!    sender). The sender adds the node as a receiver from its stream's
//!    end (a frame boundary) and answers `Joined { from, session }`; the
//!    node then receives the stream from `from` with the session's key.
//!    Either side forgets the other on [`McastChannel::remove_peer`].
//! 4. **Sending.** Frames are appended to the stream. New data leaves,
//!    in pieces of at most `max_datagram` bytes, while the bytes sent
//!    beyond the slowest receiver's acknowledgement stay below the
//!    congestion window and `window`, and as fast as pacing allows:
//!    1.25 × the window per smoothed round trip (RFC 9002, 7.7), with
//!    bursts of at most ten datagrams or a millisecond's worth, whichever
//!    is more (the engine's timers count whole milliseconds; a smaller
//!    burst would cap the rate below the pacing rate), so a window whose
//!    round trip is longer than a millisecond never lands at once in a
//!    shaped link's queue. Round trips are sampled when a receiver's
//!    acknowledgement first covers a datagram whose send time was kept.
//!    Congestion control is NewReno in bytes (RFC 9002, 7; the unicast
//!    channel's `recovery`): a NAK is the loss signal, and halves the
//!    window at most once per recovery period (until data sent after the
//!    halving is acknowledged by all). A window the sender does not fill
//!    — a broadcast's tail, the idle time between broadcasts — does not
//!    grow (RFC 9002, 7.8): it had grown to 6 MB between 1 MB broadcasts,
//!    and each next broadcast left at a rate no link carried. A datagram
//!    the socket refuses (its
//!    send buffer full, or — the socket has `IP_RECVERR` — the
//!    interface's queue full: the link drains slower than the window
//!    fills it) is no loss: its data goes again, first, after a timer's
//!    tick, and nothing leaves meanwhile — no receiver has to miss it and
//!    ask. (Before, refusals were left to the NAKs: 93 of 1497 datagrams
//!    on 100 Mbit, each halving the window; after, no NAK at all. Without
//!    `IP_RECVERR` a full 10 Mbit queue dropped datagrams silently.)
//! 5. **Repair by NAK** (NORM, RFC 5740, 5.3; PGM, RFC 3208, 9). A
//!    receiver that finds a gap — data beyond what it holds, or an end
//!    beyond it — waits `nak_delay` (reordering may fill it; 200 µs is
//!    Aeron's LAN-scale NAK delay, not the Internet's randomised
//!    back-off), then sends the sender a `Nak` of the missing ranges
//!    (at most 32), again after `nak_repeat` while any is missing, the
//!    wait doubling at each NAK that brought nothing (up to 64 ms) and
//!    starting over when data comes in order — a repair may wait behind
//!    a slow link's queue, and at a fixed 2 ms eight receivers' NAKs
//!    filled the sender's own 10 Mbit/s link. The
//!    sender multicasts each requested range once: a range repaired less
//!    than `repair_suppress` (or the smoothed round trip, if longer) ago
//!    is not repaired again, so receivers that lost the same datagram
//!    cost one repair. A NAK is a loss signal only for what is not on
//!    its way already: a range repaired lately, or refused by the socket
//!    and waiting for its tick, is no news.
//! 6. **Heartbeats.** While the sender has data not acknowledged by all,
//!    has nothing that only pacing or a refused send's tick holds back
//!    (that data will carry the end itself), and has sent nothing for
//!    `heartbeat` (doubling up to 50 ms while nothing changes), it
//!    multicasts a heartbeat with its end, so a lost tail is found by
//!    step 5, and a receiver whose acknowledgement is stale acknowledges
//!    again. (On 10 Mbit/s, where a paced datagram leaves every 1.2 ms, a
//!    heartbeat had gone between every two.) [`McastChannel::announce`] sends one at
//!    once: a hello that makes the others join (step 3).
//! 7. **Stability** (JGroups' STABLE, sent straight to the sender, as
//!    NAKACK2 keeps retransmission to the original sender). Receivers
//!    acknowledge their in-order offset at least every `ack_every` bytes
//!    and `ack_delay` (5 ms) after a receipt not yet acknowledged — every
//!    acknowledgement is a datagram to the sender and another back over
//!    the pair's channel, and at 1 ms eight receivers' made 1 MB to them
//!    over 10 Mbit/s take 1095 ms against 958 at 5 ms; the sender
//!    frees the stream below the lowest acknowledgement of its live
//!    receivers. A sender holds only unacknowledged and unsent bytes; a
//!    receiver holds out-of-order bytes only in
//!    `[delivered, delivered + window)` and drops (counts) the rest, to
//!    be repaired later.
//! 8. **Lost receivers.** A receiver whose acknowledgement has not
//!    advanced for `lost_after` while the sender has data beyond it is
//!    removed and reported ([`McastChannel::on_timeout`]): the others go
//!    on, and the caller learns which node is missing data, never
//!    silently.

mod channel;
mod control;
mod endpoint;
mod packet;
mod receiver;
mod sender;

pub use channel::{group_for, open_socket, receive_datagrams, McastChannel};
pub use control::{Control, ControlError};
pub use endpoint::Endpoint;
#[doc(hidden)]
pub use packet::seal_datagram;

use std::time::Duration;

/// How a multicast stream is sized and timed (the steps are in the
/// module docs).
#[derive(Clone, Debug)]
pub struct McastConfig {
    /// Largest datagram, tag included (1472 on Ethernet's 1500).
    pub max_datagram: usize,
    /// Bytes in flight beyond the slowest receiver's acknowledgement at
    /// most; also the out-of-order bytes a receiver holds (step 7).
    pub window: u64,
    /// How long a receiver waits for reordering to fill a gap before it
    /// sends a NAK (step 5).
    pub nak_delay: Duration,
    /// How often a NAK repeats while data is missing (step 5).
    pub nak_repeat: Duration,
    /// A range repaired less than this ago is not repaired again; the
    /// smoothed round trip when longer (step 5).
    pub repair_suppress: Duration,
    /// Quiet time before the first heartbeat, doubled up to 50 ms while
    /// nothing changes (step 6).
    pub heartbeat: Duration,
    /// A receiver acknowledges at least every this many bytes (step 7).
    pub ack_every: u64,
    /// …and this long after a receipt not yet acknowledged (step 7).
    pub ack_delay: Duration,
    /// How long a receiver may leave data unacknowledged before it is
    /// removed as lost (step 8).
    pub lost_after: Duration,
}

impl Default for McastConfig {
    fn default() -> McastConfig {
        McastConfig {
            max_datagram: 1472,
            window: 4 << 20,
            nak_delay: Duration::from_micros(200),
            nak_repeat: Duration::from_millis(2),
            repair_suppress: Duration::from_millis(1),
            heartbeat: Duration::from_millis(1),
            ack_every: 64 << 10,
            ack_delay: Duration::from_millis(5),
            lost_after: Duration::from_secs(5),
        }
    }
}

/// Counters of one node's multicast stream and the streams it receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McastStats {
    /// Datagrams of new data sent.
    pub sent: u64,
    /// Datagrams of repaired data sent.
    pub repairs: u64,
    /// Requested ranges not repaired, as repaired just before (step 5).
    pub suppressed: u64,
    /// Heartbeats sent.
    pub heartbeats: u64,
    /// Datagrams received and accepted.
    pub received: u64,
    /// Authentic datagrams with nothing new.
    pub duplicates: u64,
    /// Datagrams whose tag does not prove the sender's key.
    pub forged: u64,
    /// Datagrams refused otherwise: malformed, or of a sender or session
    /// not received.
    pub refused: u64,
    /// NAKs sent.
    pub naks_sent: u64,
    /// Datagrams with bytes beyond the receive window (those dropped).
    pub beyond_window: u64,
    /// Receivers removed as lost (step 8).
    pub lost_receivers: u64,
    /// Datagrams the socket would not send (a full buffer).
    pub unsent: u64,
}

#[cfg(test)]
mod tests;
