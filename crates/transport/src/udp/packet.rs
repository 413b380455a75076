//! A datagram's bytes: header, frames and authentication tag. Integers
//! are QUIC's variable-length integers (RFC 9000, section 16: the two
//! high bits of the first byte give the length, 1, 2, 4 or 8 bytes,
//! big-endian; values below 2^62), so that the small numbers of a LAN
//! session take one or two bytes.
//!
//! ```text
//! 0   protocol version                    1 B
//! 1   sender's node                       varint
//!     packet number                       varint (never reused)
//!     frames …
//! end tag: HMAC-SHA256 of all before, truncated   16 B
//! ```
//!
//! Neither the receiving node nor the session is written: the tag's key
//! is the pair's, for one direction of one session (`Keys::derive`), so
//! a datagram of another pair, direction or session fails its tag.
//!
//! Frames, each a type byte and its fields:
//!
//! 1. `PING` (1): asks for an acknowledgement.
//! 2. `ACK` (2, or 3 with a receive limit): the largest packet number
//!    received, then with type 3 the receive limit `max_data` (flow
//!    control: the sender may send stream bytes below it), the count of
//!    further ranges (0 to [`MAX_ACK_RANGES`] − 1), the first range's
//!    length (`largest − len` to `largest` received), then per further
//!    range a gap (missing numbers minus one) and a length, highest
//!    first; all varints.
//! 3. `STREAM` (8, or 9 running to the tag): the offset, with type 8 the
//!    length, then the bytes: a piece of the sender's byte stream. A
//!    datagram's last piece takes type 9 and carries no length.
//!
//! A datagram is read in this order:
//!
//! 1. The version byte: another version is refused before anything else.
//! 2. The sender: the node's engine hands the datagram to that pair's
//!    channel ([`sender`]); a channel refuses a sender not its peer.
//! 3. The tag, under the pair's key for that direction: a forged, damaged
//!    or foreign datagram stops here ([`open`]).
//! 4. The packet number: one received before, or below the oldest kept,
//!    is a duplicate (the connection's check).
//! 5. The frames, every one parsed before any is applied ([`frames`]).
//!
//! Every datagram is sealed on its own, so that runs of them may leave
//! in one system call and arrive cut apart (`batch`).
//!
//! On a shaped link every byte costs wire time (0.08 µs on 100 Mbit/s).
//! Measured with `bench pingpong --link fast100`, a 1000-byte message is
//! a datagram of 1036 bytes, 1042 when it also acknowledges (every
//! second answer does, step 3 of `udp`): header 4 (packet numbers of 64
//! to 16383), `STREAM` 5, `ACK` 6, the frame's header 8 (`frame_header`)
//! and the tag 16. In protocol version 6 it was 1105 bytes (header 24,
//! `ACK` 22 on every datagram, `STREAM` 11, frame header 32, tag 16);
//! an 8-byte message went from 113 bytes to 43 or 49. (A pair's goodbye
//! is a frame of the stream, as over TCP.)

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::ops::RangeInclusive;
use threadwire_wire::PROTOCOL_VERSION;

pub(super) const TAG_LEN: usize = 16;
/// Ranges at most in one `ACK` frame.
pub(super) const MAX_ACK_RANGES: usize = 32;

const PING: u8 = 1;
const ACK: u8 = 2;
const ACK_WITH_LIMIT: u8 = 3;
const STREAM: u8 = 8;
const STREAM_TO_END: u8 = 9;

/// The largest value a varint holds.
pub(super) const VARINT_MAX: u64 = (1 << 62) - 1;

/// Bytes of `x` as a varint.
pub(super) fn varint_len(x: u64) -> usize {
    match x {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=0x3fff_ffff => 4,
        _ => 8,
    }
}

/// Writes `x` (at most [`VARINT_MAX`]) at the start of `b`: its length.
pub(super) fn put_varint(b: &mut [u8], x: u64) -> usize {
    debug_assert!(x <= VARINT_MAX);
    let len = varint_len(x);
    let tag = match len {
        1 => 0u64,
        2 => 1,
        4 => 2,
        _ => 3,
    };
    let bytes = (x | tag << (8 * len - 2)).to_be_bytes();
    b[..len].copy_from_slice(&bytes[8 - len..]);
    len
}

/// The varint at the start of `b` and its length, if `b` holds it.
pub(super) fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1 << (first >> 6);
    let bytes = b.get(..len)?;
    let mut x = u64::from(first & 0x3f);
    for &byte in &bytes[1..] {
        x = x << 8 | u64::from(byte);
    }
    Some((x, len))
}

/// A datagram's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) from: u32,
    pub(super) number: u64,
}

impl Header {
    /// Bytes of this header.
    pub(super) fn len(&self) -> usize {
        1 + varint_len(u64::from(self.from)) + varint_len(self.number)
    }

    /// Writes the header at the start of `out`: its length.
    pub(super) fn write(&self, out: &mut [u8]) -> usize {
        out[0] = PROTOCOL_VERSION;
        let at = 1 + put_varint(&mut out[1..], u64::from(self.from));
        at + put_varint(&mut out[at..], self.number)
    }

    /// The header of `datagram` and its length, if it is one of ours in
    /// shape.
    pub(super) fn read(datagram: &[u8]) -> Result<(Header, usize), PacketError> {
        let short = PacketError::Short(datagram.len());
        let version = *datagram.first().ok_or(short.clone())?;
        if version != PROTOCOL_VERSION {
            return Err(PacketError::Version(version));
        }
        let (from, a) = get_varint(&datagram[1..]).ok_or(short.clone())?;
        let (number, b) = get_varint(&datagram[1 + a..]).ok_or(short.clone())?;
        let len = 1 + a + b;
        if datagram.len() < len + TAG_LEN {
            return Err(short);
        }
        let from = u32::try_from(from).map_err(|_| PacketError::Foreign)?;
        Ok((Header { from, number }, len))
    }
}

/// The sender a datagram's header names, if it has a header at all.
pub(super) fn sender(datagram: &[u8]) -> Option<u32> {
    Header::read(datagram).ok().map(|(h, _)| h.from)
}

/// Why a datagram was dropped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// Shorter than a header and a tag.
    #[error("datagram of {0} bytes is too short")]
    Short(usize),
    /// Not a threadwire datagram.
    #[error("not a threadwire datagram")]
    Magic,
    /// Another protocol version.
    #[error("datagram of protocol version {0}")]
    Version(u8),
    /// From a node, to a node or of a session this channel does not serve.
    #[error("datagram of another pair or session")]
    Foreign,
    /// Its tag does not prove the pair's key: forged or damaged, or of
    /// another pair, direction or session.
    #[error("datagram fails authentication")]
    Forged,
    /// A packet number received before (a replay or a duplicate), or too
    /// old to tell.
    #[error("packet number {0} already received")]
    Duplicate(u64),
    /// Authentic but malformed: a peer that breaks the protocol.
    #[error("malformed frame in datagram: {0}")]
    Malformed(&'static str),
}

/// One frame, borrowed from its datagram.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FrameRef<'a> {
    Stream { offset: u64, data: &'a [u8] },
    Ack(AckFrame),
    Ping,
}

/// An `ACK` frame: received packet-number ranges, highest first, and
/// the receive limit if it is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AckFrame {
    pub(super) max_data: Option<u64>,
    pub(super) ranges: Vec<RangeInclusive<u64>>,
}

/// Bytes of an `ACK` frame of `ranges` (highest first, disjoint, not
/// adjacent) and `max_data`.
pub(super) fn ack_len(max_data: Option<u64>, ranges: &[RangeInclusive<u64>]) -> usize {
    let largest = *ranges[0].end();
    let mut len = 1
        + varint_len(largest)
        + max_data.map_or(0, varint_len)
        + varint_len(ranges.len() as u64 - 1)
        + varint_len(largest - ranges[0].start());
    for w in ranges.windows(2) {
        len += varint_len(w[0].start() - w[1].end() - 2) + varint_len(w[1].end() - w[1].start());
    }
    len
}

/// Bytes of a `STREAM` frame's type and offset (and not its length).
pub(super) fn stream_overhead(offset: u64) -> usize {
    1 + varint_len(offset)
}

/// Writes frames into a datagram buffer, then seals it.
pub(super) struct Writer<'a> {
    buf: &'a mut [u8],
    header_len: usize,
    at: usize,
}

impl<'a> Writer<'a> {
    /// A datagram of at most `buf.len()` bytes, tag included.
    pub(super) fn new(buf: &'a mut [u8], header: &Header) -> Writer<'a> {
        let header_len = header.write(buf);
        Writer {
            buf,
            header_len,
            at: header_len,
        }
    }

    /// Bytes left for frames.
    pub(super) fn room(&self) -> usize {
        self.buf.len() - TAG_LEN - self.at
    }

    /// Whether no frame was written.
    pub(super) fn is_empty(&self) -> bool {
        self.at == self.header_len
    }

    fn varint(&mut self, x: u64) {
        self.at += put_varint(&mut self.buf[self.at..], x);
    }

    fn byte(&mut self, b: u8) {
        self.buf[self.at] = b;
        self.at += 1;
    }

    /// A `STREAM` frame; `to_end` when it is the datagram's last frame.
    pub(super) fn stream(&mut self, offset: u64, data: &[u8], to_end: bool) {
        self.byte(if to_end { STREAM_TO_END } else { STREAM });
        self.varint(offset);
        if !to_end {
            self.varint(data.len() as u64);
        }
        self.buf[self.at..self.at + data.len()].copy_from_slice(data);
        self.at += data.len();
    }

    /// An `ACK` of `ranges` (highest first, disjoint, not adjacent; at
    /// most [`MAX_ACK_RANGES`], at least one).
    pub(super) fn ack(&mut self, max_data: Option<u64>, ranges: &[RangeInclusive<u64>]) {
        let largest = *ranges[0].end();
        self.byte(if max_data.is_some() {
            ACK_WITH_LIMIT
        } else {
            ACK
        });
        self.varint(largest);
        if let Some(max) = max_data {
            self.varint(max);
        }
        self.varint(ranges.len() as u64 - 1);
        self.varint(largest - ranges[0].start());
        for w in ranges.windows(2) {
            self.varint(w[0].start() - w[1].end() - 2);
            self.varint(w[1].end() - w[1].start());
        }
    }

    pub(super) fn ping(&mut self) {
        self.byte(PING);
    }

    /// Appends the tag: the datagram's length.
    pub(super) fn seal(self, key: &Hmac<Sha256>) -> usize {
        append_tag(self.buf, self.at, key)
    }
}

/// Writes after `buf[..len]` the tag of those bytes under `key`: the
/// sealed datagram's length (the unicast and multicast datagrams' one
/// authentication).
pub(super) fn append_tag(buf: &mut [u8], len: usize, key: &Hmac<Sha256>) -> usize {
    let mut mac = key.clone();
    mac.update(&buf[..len]);
    let tag = mac.finalize().into_bytes();
    buf[len..len + TAG_LEN].copy_from_slice(&tag[..TAG_LEN]);
    len + TAG_LEN
}

/// `datagram` without its tag, if the tag proves `key` (the caller has
/// checked it is at least [`TAG_LEN`] long).
pub(super) fn check_tag<'d>(
    datagram: &'d [u8],
    key: &Hmac<Sha256>,
) -> Result<&'d [u8], PacketError> {
    let body = datagram.len() - TAG_LEN;
    let mut mac = key.clone();
    mac.update(&datagram[..body]);
    mac.verify_truncated_left(&datagram[body..])
        .map_err(|_| PacketError::Forged)?;
    Ok(&datagram[..body])
}

/// `body` (frames) as an authentic datagram from the owner of `keys`:
/// for fuzzing a receiver with frames a peer could send, past the tag.
#[doc(hidden)]
pub fn seal_datagram(keys: &Keys, from: u32, number: u64, body: &[u8]) -> Vec<u8> {
    let header = Header { from, number };
    let mut buf = vec![0u8; header.len() + body.len() + TAG_LEN];
    let at = header.write(&mut buf);
    buf[at..at + body.len()].copy_from_slice(body);
    append_tag(&mut buf, at + body.len(), &keys.send);
    buf
}

/// Checks `datagram`'s tag with `key`: its frames' bytes (after its
/// header of `header_len` bytes) if authentic.
pub(super) fn open<'d>(
    datagram: &'d [u8],
    header_len: usize,
    key: &Hmac<Sha256>,
) -> Result<&'d [u8], PacketError> {
    Ok(&check_tag(datagram, key)?[header_len..])
}

/// The frames of an authentic datagram's body, in order; the first
/// malformed one ends the walk with an error.
pub(super) fn frames(mut body: &[u8]) -> impl Iterator<Item = Result<FrameRef<'_>, PacketError>> {
    std::iter::from_fn(move || {
        if body.is_empty() {
            return None;
        }
        let parsed = parse(body);
        match parsed {
            Ok((frame, used)) => {
                body = &body[used..];
                Some(Ok(frame))
            }
            Err(e) => {
                body = &[];
                Some(Err(e))
            }
        }
    })
}

/// Reads a frame's fields in turn.
struct Fields<'b> {
    b: &'b [u8],
    at: usize,
}

impl Fields<'_> {
    fn varint(&mut self) -> Result<u64, PacketError> {
        let (x, len) = get_varint(&self.b[self.at..])
            .ok_or(PacketError::Malformed("frame runs past the datagram"))?;
        self.at += len;
        Ok(x)
    }
}

fn parse(b: &[u8]) -> Result<(FrameRef<'_>, usize), PacketError> {
    let mut f = Fields { b, at: 1 };
    match b[0] {
        STREAM | STREAM_TO_END => {
            let offset = f.varint()?;
            let len = match b[0] {
                STREAM => f.varint()?,
                _ => (b.len() - f.at) as u64,
            };
            if len > (b.len() - f.at) as u64 {
                return Err(PacketError::Malformed("frame runs past the datagram"));
            }
            if offset.checked_add(len).is_none_or(|end| end > VARINT_MAX) {
                return Err(PacketError::Malformed("stream offset overflows"));
            }
            let end = f.at + len as usize;
            let data = &b[f.at..end];
            Ok((FrameRef::Stream { offset, data }, end))
        }
        ACK | ACK_WITH_LIMIT => {
            let largest = f.varint()?;
            let max_data = match b[0] {
                ACK_WITH_LIMIT => Some(f.varint()?),
                _ => None,
            };
            let more = f.varint()?;
            if more >= MAX_ACK_RANGES as u64 {
                return Err(PacketError::Malformed("ack range count"));
            }
            let bad = || PacketError::Malformed("ack range below zero");
            let first = f.varint()?;
            let mut start = largest.checked_sub(first).ok_or_else(bad)?;
            let mut ranges = vec![start..=largest];
            for _ in 0..more {
                let gap = f.varint()?;
                let run = f.varint()?;
                let end = start.checked_sub(gap + 2).ok_or_else(bad)?;
                start = end.checked_sub(run).ok_or_else(bad)?;
                ranges.push(start..=end);
            }
            Ok((FrameRef::Ack(AckFrame { max_data, ranges }), f.at))
        }
        PING => Ok((FrameRef::Ping, 1)),
        _ => Err(PacketError::Malformed("unknown frame type")),
    }
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// The keys of one pair's session, each side's own: datagrams it sends
/// are tagged with `send`, those it receives checked with `recv`.
pub struct Keys {
    pub(super) send: Hmac<Sha256>,
    pub(super) recv: Hmac<Sha256>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys of node `me`'s side of its session with `peer` in job
    /// `job`: each side picks a fresh random nonce and learns the other's
    /// over the pair's authenticated connection. A key per direction,
    /// `HMAC(secret, "threadwire udp key" ‖ job ‖ sender ‖ receiver ‖
    /// sender's nonce ‖ receiver's nonce)`: datagrams of another pair,
    /// direction, session or job fail.
    pub fn derive(
        secret: &[u8; 32],
        job: u64,
        me: u32,
        peer: u32,
        my_nonce: &[u8; 32],
        peer_nonce: &[u8; 32],
    ) -> Keys {
        let key = |from: u32, to: u32, from_nonce: &[u8; 32], to_nonce: &[u8; 32]| {
            let mut mac = hmac_of(secret);
            mac.update(b"threadwire udp key");
            mac.update(&job.to_le_bytes());
            mac.update(&from.to_le_bytes());
            mac.update(&to.to_le_bytes());
            mac.update(from_nonce);
            mac.update(to_nonce);
            hmac_of(&mac.finalize().into_bytes().into())
        };
        Keys {
            send: key(me, peer, my_nonce, peer_nonce),
            recv: key(peer, me, peer_nonce, my_nonce),
        }
    }
}

pub(super) fn hmac_of(key: &[u8; 32]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (Keys, Keys) {
        let s = [7u8; 32];
        let (na, nb) = ([1u8; 32], [2u8; 32]);
        (
            Keys::derive(&s, 9, 0, 1, &na, &nb),
            Keys::derive(&s, 9, 1, 0, &nb, &na),
        )
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        for x in [
            0,
            63,
            64,
            16_383,
            16_384,
            0x3fff_ffff,
            0x4000_0000,
            VARINT_MAX,
        ] {
            let mut b = [0u8; 8];
            let len = put_varint(&mut b, x);
            assert_eq!(len, varint_len(x));
            assert_eq!(get_varint(&b[..len]), Some((x, len)));
            assert_eq!(get_varint(&b[..len - 1]), None);
        }
    }

    #[test]
    fn frames_round_trip_and_tags_check() {
        let (a, b) = keys();
        let h = Header {
            from: 0,
            number: 42,
        };
        let mut buf = [0u8; 1472];
        let mut w = Writer::new(&mut buf, &h);
        let ranges = [40..=41, 30..=37, 5..=5];
        w.ack(Some(1 << 20), &ranges);
        w.ack(None, &ranges[..1]);
        w.ping();
        w.stream(1000, b"hello", false);
        w.stream(70_000, b"world", true);
        let len = w.seal(&a.send);
        let d = &buf[..len];
        assert_eq!(
            len,
            h.len()
                + ack_len(Some(1 << 20), &ranges)
                + ack_len(None, &ranges[..1])
                + 1
                + (1 + 2 + 1 + 5)
                + (1 + 4 + 5)
                + TAG_LEN
        );
        assert_eq!(Header::read(d).unwrap(), (h, 3));
        let body = open(d, 3, &b.recv).unwrap();
        let got: Vec<_> = frames(body).map(Result::unwrap).collect();
        assert_eq!(
            got,
            vec![
                FrameRef::Ack(AckFrame {
                    max_data: Some(1 << 20),
                    ranges: ranges.to_vec()
                }),
                FrameRef::Ack(AckFrame {
                    max_data: None,
                    ranges: ranges[..1].to_vec()
                }),
                FrameRef::Ping,
                FrameRef::Stream {
                    offset: 1000,
                    data: b"hello"
                },
                FrameRef::Stream {
                    offset: 70_000,
                    data: b"world"
                },
            ]
        );
        // The receiver's own key, or a flipped bit, fails.
        assert_eq!(open(d, 3, &a.recv), Err(PacketError::Forged));
        let mut bad = d.to_vec();
        bad[20] ^= 1;
        assert_eq!(open(&bad, 3, &b.recv), Err(PacketError::Forged));
    }

    #[test]
    fn garbage_is_refused_without_panic() {
        let (_, b) = keys();
        let mut state = 1u64;
        for len in 0..200 {
            let d: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (state >> 33) as u8
                })
                .collect();
            if let Ok((_, len)) = Header::read(&d) {
                assert!(open(&d, len, &b.recv).is_err());
            }
            // Bodies walked as if authentic never panic.
            for f in frames(&d) {
                if f.is_err() {
                    break;
                }
            }
        }
    }
}
