//! A datagram's bytes: header, frames and authentication tag
//! (all integers little-endian).
//!
//! ```text
//! 0   "TU", protocol version, 0           4 B
//! 4   sender's node, receiver's node      4 + 4 B
//! 12  session                             4 B   (the pair's, `Keys`)
//! 16  packet number                       8 B   (never reused)
//! 24  frames …
//! end tag: HMAC-SHA256 of all before, truncated   16 B
//! ```
//!
//! Frames, each a type byte and its fields:
//!
//! - `STREAM` (1): offset u64, length u16, the bytes: a piece of the
//!   sender's byte stream.
//! - `ACK` (2): largest packet number received u64, the receive limit
//!   `max_data` u64 (flow control: the sender may send stream bytes below
//!   it), range count u8 (1 to [`MAX_ACK_RANGES`]), the first range's
//!   length u32 (`largest − len` to `largest` received), then per further
//!   range a gap u32 (missing numbers minus one) and a length u32, highest
//!   first.
//! - `PING` (3): asks for an acknowledgement.
//!
//! (A pair's goodbye is a frame of the stream, as over TCP.)

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::ops::RangeInclusive;
use threadwire_wire::PROTOCOL_VERSION;

pub(super) const HEADER_LEN: usize = 24;
pub(super) const TAG_LEN: usize = 16;
const MAGIC: [u8; 2] = *b"TU";
/// Ranges at most in one `ACK` frame.
pub(super) const MAX_ACK_RANGES: usize = 32;
/// Bytes of a `STREAM` frame besides its data.
pub(super) const STREAM_OVERHEAD: usize = 1 + 8 + 2;
/// Bytes of an `ACK` frame with `ranges` ranges.
pub(super) fn ack_len(ranges: usize) -> usize {
    1 + 8 + 8 + 1 + 4 + 8 * ranges.saturating_sub(1)
}

const STREAM: u8 = 1;
const ACK: u8 = 2;
const PING: u8 = 3;

/// A datagram's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) session: u32,
    pub(super) number: u64,
}

impl Header {
    pub(super) fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = PROTOCOL_VERSION;
        out[3] = 0;
        out[4..8].copy_from_slice(&self.from.to_le_bytes());
        out[8..12].copy_from_slice(&self.to.to_le_bytes());
        out[12..16].copy_from_slice(&self.session.to_le_bytes());
        out[16..24].copy_from_slice(&self.number.to_le_bytes());
    }

    /// The header of `datagram`, if it is one of ours in shape.
    pub(super) fn read(datagram: &[u8]) -> Result<Header, PacketError> {
        if datagram.len() < HEADER_LEN + TAG_LEN {
            return Err(PacketError::Short(datagram.len()));
        }
        if datagram[0..2] != MAGIC || datagram[3] != 0 {
            return Err(PacketError::Magic);
        }
        if datagram[2] != PROTOCOL_VERSION {
            return Err(PacketError::Version(datagram[2]));
        }
        Ok(Header {
            from: u32_at(datagram, 4),
            to: u32_at(datagram, 8),
            session: u32_at(datagram, 12),
            number: u64_at(datagram, 16),
        })
    }
}

/// The sender a datagram's header names, if it has a header at all.
pub(super) fn sender(datagram: &[u8]) -> Option<u32> {
    Header::read(datagram).ok().map(|h| h.from)
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
    /// Its tag does not prove the pair's key: forged or damaged.
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

/// An `ACK` frame: received packet-number ranges, highest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AckFrame {
    pub(super) max_data: u64,
    pub(super) ranges: Vec<RangeInclusive<u64>>,
}

/// Writes frames into a datagram buffer, then seals it.
pub(super) struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl<'a> Writer<'a> {
    /// A datagram of at most `buf.len()` bytes, tag included.
    pub(super) fn new(buf: &'a mut [u8], header: &Header) -> Writer<'a> {
        header.write(buf);
        Writer {
            buf,
            at: HEADER_LEN,
        }
    }

    /// Bytes left for frames.
    pub(super) fn room(&self) -> usize {
        self.buf.len() - TAG_LEN - self.at
    }

    /// Whether no frame was written.
    pub(super) fn is_empty(&self) -> bool {
        self.at == HEADER_LEN
    }

    pub(super) fn stream(&mut self, offset: u64, data: &[u8]) {
        let b = &mut self.buf[self.at..];
        b[0] = STREAM;
        b[1..9].copy_from_slice(&offset.to_le_bytes());
        b[9..11].copy_from_slice(&(data.len() as u16).to_le_bytes());
        b[11..11 + data.len()].copy_from_slice(data);
        self.at += STREAM_OVERHEAD + data.len();
    }

    /// An `ACK` of `ranges` (highest first, disjoint, not adjacent; at
    /// most [`MAX_ACK_RANGES`], at least one).
    pub(super) fn ack(&mut self, max_data: u64, ranges: &[RangeInclusive<u64>]) {
        let b = &mut self.buf[self.at..];
        let largest = *ranges[0].end();
        b[0] = ACK;
        b[1..9].copy_from_slice(&largest.to_le_bytes());
        b[9..17].copy_from_slice(&max_data.to_le_bytes());
        b[17] = ranges.len() as u8;
        let first = (ranges[0].end() - ranges[0].start()) as u32;
        b[18..22].copy_from_slice(&first.to_le_bytes());
        let mut at = 22;
        for w in ranges.windows(2) {
            let gap = (w[0].start() - w[1].end() - 2) as u32;
            let len = (w[1].end() - w[1].start()) as u32;
            b[at..at + 4].copy_from_slice(&gap.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&len.to_le_bytes());
            at += 8;
        }
        self.at += at;
    }

    pub(super) fn ping(&mut self) {
        self.buf[self.at] = PING;
        self.at += 1;
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
pub fn seal_datagram(keys: &Keys, from: u32, to: u32, number: u64, body: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; HEADER_LEN + body.len() + TAG_LEN];
    let header = Header {
        from,
        to,
        session: keys.session,
        number,
    };
    header.write(&mut buf);
    buf[HEADER_LEN..HEADER_LEN + body.len()].copy_from_slice(body);
    append_tag(&mut buf, HEADER_LEN + body.len(), &keys.send);
    buf
}

/// Checks `datagram`'s tag with `key`: its frames' bytes if authentic.
pub(super) fn open<'d>(datagram: &'d [u8], key: &Hmac<Sha256>) -> Result<&'d [u8], PacketError> {
    Ok(&check_tag(datagram, key)?[HEADER_LEN..])
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

fn parse(b: &[u8]) -> Result<(FrameRef<'_>, usize), PacketError> {
    let need = |n: usize| {
        if b.len() < n {
            Err(PacketError::Malformed("frame runs past the datagram"))
        } else {
            Ok(())
        }
    };
    match b[0] {
        STREAM => {
            need(STREAM_OVERHEAD)?;
            let offset = u64_at(b, 1);
            let len = u16::from_le_bytes([b[9], b[10]]) as usize;
            need(STREAM_OVERHEAD + len)?;
            if offset.checked_add(len as u64).is_none() {
                return Err(PacketError::Malformed("stream offset overflows"));
            }
            let data = &b[STREAM_OVERHEAD..STREAM_OVERHEAD + len];
            Ok((FrameRef::Stream { offset, data }, STREAM_OVERHEAD + len))
        }
        ACK => {
            need(22)?;
            let largest = u64_at(b, 1);
            let max_data = u64_at(b, 9);
            let count = b[17] as usize;
            if count == 0 || count > MAX_ACK_RANGES {
                return Err(PacketError::Malformed("ack range count"));
            }
            let len = ack_len(count);
            need(len)?;
            let bad = || PacketError::Malformed("ack range below zero");
            let first = u64::from(u32_at(b, 18));
            let mut start = largest.checked_sub(first).ok_or_else(bad)?;
            let mut ranges = vec![start..=largest];
            for i in 1..count {
                let gap = u64::from(u32_at(b, 14 + 8 * i));
                let run = u64::from(u32_at(b, 18 + 8 * i));
                let end = start.checked_sub(gap + 2).ok_or_else(bad)?;
                start = end.checked_sub(run).ok_or_else(bad)?;
                ranges.push(start..=end);
            }
            Ok((FrameRef::Ack(AckFrame { max_data, ranges }), len))
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
    pub(super) session: u32,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys of node `me`'s side of its session with `peer` in job
    /// `job`: each side picks a fresh random nonce and learns the other's
    /// over the pair's authenticated connection. A key per direction,
    /// `HMAC(secret, "threadwire udp key" ‖ job ‖ sender ‖ receiver ‖
    /// sender's nonce ‖ receiver's nonce)`, and a session number both
    /// compute alike; datagrams of another session or job fail.
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
        let (low, high) = match me < peer {
            true => ((me, my_nonce), (peer, peer_nonce)),
            false => ((peer, peer_nonce), (me, my_nonce)),
        };
        let mut mac = hmac_of(secret);
        mac.update(b"threadwire udp session");
        mac.update(&job.to_le_bytes());
        mac.update(&low.0.to_le_bytes());
        mac.update(&high.0.to_le_bytes());
        mac.update(low.1);
        mac.update(high.1);
        let digest = mac.finalize().into_bytes();
        Keys {
            send: key(me, peer, my_nonce, peer_nonce),
            recv: key(peer, me, peer_nonce, my_nonce),
            session: u32_at(&digest, 0),
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
    fn frames_round_trip_and_tags_check() {
        let (a, b) = keys();
        assert_eq!(a.session, b.session);
        let h = Header {
            from: 0,
            to: 1,
            session: a.session,
            number: 42,
        };
        let mut buf = [0u8; 1472];
        let mut w = Writer::new(&mut buf, &h);
        w.stream(1000, b"hello");
        let ranges = [40..=41, 30..=37, 5..=5];
        w.ack(1 << 20, &ranges);
        w.ping();
        let len = w.seal(&a.send);
        let d = &buf[..len];
        assert_eq!(Header::read(d).unwrap(), h);
        let body = open(d, &b.recv).unwrap();
        let got: Vec<_> = frames(body).map(Result::unwrap).collect();
        assert_eq!(
            got,
            vec![
                FrameRef::Stream {
                    offset: 1000,
                    data: b"hello"
                },
                FrameRef::Ack(AckFrame {
                    max_data: 1 << 20,
                    ranges: ranges.to_vec()
                }),
                FrameRef::Ping,
            ]
        );
        // The receiver's own key, or a flipped bit, fails.
        assert_eq!(open(d, &a.recv), Err(PacketError::Forged));
        let mut bad = d.to_vec();
        bad[30] ^= 1;
        assert_eq!(open(&bad, &b.recv), Err(PacketError::Forged));
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
            if Header::read(&d).is_ok() {
                assert!(open(&d, &b.recv).is_err());
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
