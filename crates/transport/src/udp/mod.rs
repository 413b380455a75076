//! The reliable UDP channel's protocol: one pair's ordered byte stream
//! over authenticated datagrams, after QUIC's loss recovery and
//! congestion control (RFC 9002), sized for a LAN.
//!
//! [`Connection`] is the protocol without I/O (its caller reads and
//! writes the socket and keeps time), so that loss, reordering,
//! duplication and forgery are tested deterministically. The frames of
//! the wire crate travel in its stream as over TCP, their headers in 7 to
//! 42 bytes instead of 32 (`frame_header`).
//!
//! # The protocol
//!
//! Datagrams carry a header (protocol version, sender, packet number),
//! frames and a 16-byte tag (`packet` has the layout).
//!
//! 1. **Receiving a datagram.** It is refused, changing nothing but a
//!    counter, unless it names the pair's peer as its sender, its tag
//!    proves the pair's key for that direction of this session
//!    ([`Keys::derive`]: from the job secret and both sides' fresh
//!    nonces, exchanged over the pair's authenticated connection), its
//!    packet number was not received before (a replay, or the network's
//!    duplicate: answered with an acknowledgement), and every frame in it
//!    parses. Packet numbers never repeat, so a recorded datagram cannot
//!    be replayed into this session or another.
//! 2. **Sending.** Bytes written join the stream at the next offset.
//!    Every datagram takes a new packet number and as much of the lowest
//!    unsent (or lost) stream data as fits, below the peer's flow-control
//!    limit, while the congestion window has room; an acknowledgement due
//!    rides along. Full-sized datagrams leave in runs of up to
//!    [`Config::run`], one system call each (`batch`).
//! 3. **Acknowledging.** A datagram with stream data or a ping is
//!    acknowledged at once when it arrived out of order (a gap to
//!    repair), or is the second unacknowledged and this side sent nothing
//!    since the first (a one-way stream), or is the eighth; else by the
//!    next datagram with data once two wait — in a ping-pong every second
//!    answer carries the acknowledgement, sparing the others its bytes —
//!    or alone when this side's data is blocked, or after 1 ms (QUIC's
//!    max_ack_delay, which the peer's probe timeout adds). An acknowledgement lists the
//!    highest 32 ranges of packet numbers received, cumulative and
//!    selective at once, and the receive limit when it went up by an
//!    eighth of the window or the acknowledgement goes alone.
//! 4. **Loss.** A packet is lost once one sent three numbers later is
//!    acknowledged, or once the loss delay (9/8 of the larger of the
//!    latest and smoothed round trips, at least 1 ms) has passed since it
//!    was sent while a later one is acknowledged (RFC 9002, 6.1). Its
//!    stream data not acknowledged otherwise is sent again, in a new
//!    packet. Round trips are sampled on the largest newly acknowledged
//!    packet; before the first sample 2 ms is assumed (RFC 9002's 333 ms
//!    is the Internet's: GASNet's UDP conduit waits 100 ms for its first
//!    retransmission).
//! 5. **Probes.** With packets unacknowledged and no loss to find, a
//!    probe timeout (smoothed round trip + max(4 × variation, 1 ms) +
//!    the 1 ms acknowledgement delay, doubled at each expiry) sends a datagram that must be acknowledged —
//!    data if any waits, else a ping — so that a lost tail is found by the
//!    loss rules of step 4 one round trip later.
//! 6. **Flow control.** The receiver accepts stream bytes below the limit
//!    `read + window` and refuses a datagram beyond it as a breach; it
//!    sends its limit with acknowledgements (step 3), and makes one due when
//!    its reader has taken half a window since the last limit sent. A
//!    sender blocked at the limit with nothing in flight probes (step 5)
//!    so that a lost update costs a timeout, never a deadlock. Memory per
//!    peer is bounded by the window on the receiving side.
//! 7. **Reassembly.** Stream pieces may arrive in any order and overlap;
//!    the parts not received before are kept, and the in-order prefix is
//!    handed to the reader.
//! 8. **Loss of the peer.** With data unacknowledged, a peer not heard
//!    from for [`Config::lost_after`] is lost: the connection stops.
//!
//! Congestion control is NewReno in bytes (RFC 9002, 7; `recovery`):
//! slow start from ten datagrams, then one datagram more per window
//! acknowledged; a loss halves the window at most once per round trip.

mod batch;
mod channel;
mod connection;
mod frame_header;
pub mod mcast;
mod packet;
mod ranges;
mod recovery;
mod setup;

pub use batch::enable_receive_runs;
pub use channel::{receive_datagrams, UdpChannel};
pub use connection::{Config, Connection};
#[doc(hidden)]
pub use packet::seal_datagram;
pub use packet::{Keys, PacketError};
pub use setup::{UdpSetup, UdpSetupError};

/// Counters of one pair's datagrams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received and accepted.
    pub received: u64,
    /// Packets declared lost (their data sent again).
    pub lost: u64,
    /// Probe timeouts that fired.
    pub probes: u64,
    /// Datagrams refused as already received.
    pub duplicates: u64,
    /// Datagrams refused for a tag that does not prove the key: forged,
    /// damaged, or of another session.
    pub forged: u64,
    /// Datagrams refused otherwise: not ours, of another version or
    /// sender, malformed.
    pub refused: u64,
    /// Datagrams the socket would not send (a full buffer): lost, and
    /// their data sent again.
    pub unsent: u64,
}

#[cfg(test)]
mod tests;
