//! A wire frame's header as the UDP channel's stream carries it: the
//! 32 bytes of [`FrameHeader::encode`] less the magic, the version and
//! the reserved bytes (the session implies them), with its numbers as
//! varints (`packet`'s). Frames themselves are unchanged.
//!
//! ```text
//! kind                  1 B
//! payload format        1 B
//! source thread         varint
//! destination thread    varint
//! tag                   varint
//! auxiliary word        varint
//! payload length        varint
//! ```
//!
//! 1. **Sending.** The header is encoded as over TCP and its fields are
//!    read back from those bytes, so that every field travels as
//!    `threadwire_wire` lays it out: 7 to 10 bytes for a message between
//!    threads of small numbers, where TCP takes 32. On a shaped link
//!    every byte costs wire time.
//! 2. **Receiving.** The fields are laid back into the 32 bytes, with
//!    the magic and version of this build, and [`FrameHeader::decode`]
//!    checks them as it checks a TCP stream's: a UDP stream is held to
//!    the same rules (kinds, formats, reserved bytes, the longest frame).

use super::packet::{get_varint, put_varint};
use crate::ChannelError;
use std::io;
use threadwire_wire::{FrameHeader, FrameKind, HEADER_LEN};

/// The longest compact header: two bytes and five 8-byte varints.
pub(super) const MAX_LEN: usize = 2 + 5 * 8;

/// Writes `header` compactly into `out`: its length.
pub(super) fn encode(header: &FrameHeader, out: &mut [u8; MAX_LEN]) -> usize {
    let b = header.encode();
    out[0] = b[3];
    out[1] = b[4];
    let mut at = 2;
    for field in [8, 12, 16, 20] {
        at += put_varint(&mut out[at..], u64::from(word(&b, field)));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&b[24..32]);
    at + put_varint(&mut out[at..], u64::from_le_bytes(len))
}

fn word(b: &[u8; HEADER_LEN], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The header at the start of `b` and its length, `None` while `b` does
/// not hold all of it; an error for a header a peer must not send.
pub(super) fn decode(
    b: &[u8],
    max_frame: u64,
) -> Result<Option<(FrameHeader, usize)>, ChannelError> {
    if b.len() < 2 {
        return Ok(None);
    }
    // Magic and version as this build writes them.
    let mut raw = FrameHeader::control(FrameKind::Udp, 0, 0).encode();
    raw[3] = b[0];
    raw[4] = b[1];
    let mut at = 2;
    for field in [8, 12, 16, 20] {
        let Some((x, n)) = get_varint(&b[at..]) else {
            return Ok(None);
        };
        let x = u32::try_from(x).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "UDP frame header field beyond 32 bits",
            )
        })?;
        raw[field..field + 4].copy_from_slice(&x.to_le_bytes());
        at += n;
    }
    let Some((len, n)) = get_varint(&b[at..]) else {
        return Ok(None);
    };
    raw[24..32].copy_from_slice(&len.to_le_bytes());
    let header = FrameHeader::decode(&raw, max_frame)?;
    Ok(Some((header, at + n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadwire_wire::Format;

    #[test]
    fn headers_round_trip_and_are_checked_as_over_tcp() {
        let headers = [
            FrameHeader::data(1, 2, 3, Format::OPAQUE, 1000),
            FrameHeader::data(u32::MAX, 0, u32::MAX - 1, Format::OPAQUE, 1 << 40),
            FrameHeader::control(FrameKind::Udp, 4, 0),
        ];
        for h in headers {
            let mut out = [0u8; MAX_LEN];
            let len = encode(&h, &mut out);
            for cut in 0..len {
                assert!(matches!(decode(&out[..cut], u64::MAX), Ok(None)));
            }
            assert_eq!(decode(&out[..len], u64::MAX).unwrap(), Some((h, len)));
            assert!(decode(&out[..len], h.len.saturating_sub(1)).is_err() || h.len == 0);
        }
        let mut out = [0u8; MAX_LEN];
        let len = encode(&headers[0], &mut out);
        assert_eq!(len, 8);
        // An unknown kind, and a field beyond 32 bits, are refused.
        let mut bad = out;
        bad[0] = 0xee;
        assert!(decode(&bad[..len], u64::MAX).is_err());
        let wide = [out[0], out[1], 0xc0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(decode(&wide, u64::MAX).is_err());
    }
}
