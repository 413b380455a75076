//! The rendezvous frames' payloads, little-endian:
//!
//! | frame | payload |
//! |---|---|
//! | `Rts` | length u64, send id u64, how u32 (0 inline, 1 pull, 2 push), segments u32, then the bytes (inline) or (address u64, length u64) × segments (pull) |
//! | `Cts` | send id u64, receive id u64, bytes wanted u64, bytes returned u64 |
//! | `Fin` | send id u64, bytes returned u64 |
//! | `Credit` | bytes returned u64 |
//!
//! Decoding checks every field against the frame and the node's largest
//! message, so a malformed frame is refused whole.

use threadwire_wire::Format;

/// Most segments a pull may name.
pub const MAX_SEGMENTS: usize = 64;

const INLINE: u32 = 0;
const PULL: u32 = 1;
const PUSH: u32 = 2;
const RTS_FIXED: usize = 24;

/// How an announced message's bytes reach its receive.
#[derive(Debug)]
pub enum Fetch {
    /// In the announcement.
    Inline(Vec<u8>),
    /// From the sender's memory at these (address, length) segments.
    Pull(Vec<(u64, u64)>),
    /// Sent as a `Bulk` frame on request.
    Push,
}

/// An announced message as it waits in a mailbox.
#[derive(Debug)]
pub struct Announced {
    /// The sender's id for it.
    pub send_id: u64,
    /// The message's length.
    pub len: usize,
    /// The message's format.
    pub format: Format,
    /// How to fetch its bytes.
    pub fetch: Fetch,
}

/// A rendezvous frame no correct peer sends.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    /// The payload's length or fields are wrong for its frame.
    #[error("rendezvous frame of {0} bytes malformed")]
    Malformed(usize),
    /// The announced length exceeds the node's largest message.
    #[error("announced message of {len} bytes exceeds the maximum of {max}")]
    TooLong {
        /// The announced length.
        len: u64,
        /// The largest message accepted.
        max: u64,
    },
    /// A pull's segments do not add up to the announced length.
    #[error("announcement's segments do not add up to its length")]
    Segments,
    /// A `Cts` or `Fin` for a send id this node has no announcement of.
    #[error("answer for send {0}, which this node never announced")]
    UnknownSend(u64),
}

/// The `Rts` payload of a message of `len` bytes fetched as `how` (the
/// inline bytes are appended by the caller as a further segment).
pub fn encode_rts(len: usize, send_id: u64, how: &Fetch) -> Vec<u8> {
    let (kind, count) = match how {
        Fetch::Inline(_) => (INLINE, 0),
        Fetch::Pull(s) => (PULL, s.len() as u32),
        Fetch::Push => (PUSH, 0),
    };
    let mut b = Vec::with_capacity(RTS_FIXED + 16 * count as usize);
    b.extend_from_slice(&(len as u64).to_le_bytes());
    b.extend_from_slice(&send_id.to_le_bytes());
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    if let Fetch::Pull(segments) = how {
        for &(address, length) in segments {
            b.extend_from_slice(&address.to_le_bytes());
            b.extend_from_slice(&length.to_le_bytes());
        }
    }
    b
}

/// Reads an `Rts` payload.
pub fn decode_rts(
    mut b: Vec<u8>,
    format: Format,
    max: u64,
) -> Result<Announced, RendezvousError> {
    let malformed = RendezvousError::Malformed(b.len());
    if b.len() < RTS_FIXED {
        return Err(malformed);
    }
    let len = u64_at(&b, 0);
    let send_id = u64_at(&b, 8);
    let kind = u32_at(&b, 16);
    let count = u32_at(&b, 20) as usize;
    if len > max {
        return Err(RendezvousError::TooLong { len, max });
    }
    let rest = b.len() - RTS_FIXED;
    let fetch = match kind {
        INLINE if count == 0 && rest as u64 == len => {
            b.drain(..RTS_FIXED);
            Fetch::Inline(b)
        }
        PULL if count <= MAX_SEGMENTS && rest == 16 * count => {
            let segments: Vec<(u64, u64)> = (0..count)
                .map(|i| {
                    let at = RTS_FIXED + 16 * i;
                    (u64_at(&b, at), u64_at(&b, at + 8))
                })
                .collect();
            let total = segments
                .iter()
                .try_fold(0u64, |n, &(_, l)| n.checked_add(l));
            if total != Some(len) {
                return Err(RendezvousError::Segments);
            }
            Fetch::Pull(segments)
        }
        PUSH if count == 0 && rest == 0 => Fetch::Push,
        _ => return Err(malformed),
    };
    Ok(Announced {
        send_id,
        len: len as usize,
        format,
        fetch,
    })
}

/// A `Cts` payload.
pub fn encode_cts(send_id: u64, recv_id: u64, want: usize, returns: u64) -> Vec<u8> {
    words(&[send_id, recv_id, want as u64, returns])
}

/// `(send id, receive id, bytes wanted, bytes returned)` of a `Cts`.
pub fn decode_cts(b: &[u8]) -> Result<(u64, u64, u64, u64), RendezvousError> {
    match b.len() {
        32 => Ok((u64_at(b, 0), u64_at(b, 8), u64_at(b, 16), u64_at(b, 24))),
        n => Err(RendezvousError::Malformed(n)),
    }
}

/// A `Fin` payload.
pub fn encode_fin(send_id: u64, returns: u64) -> Vec<u8> {
    words(&[send_id, returns])
}

/// `(send id, bytes returned)` of a `Fin`.
pub fn decode_fin(b: &[u8]) -> Result<(u64, u64), RendezvousError> {
    match b.len() {
        16 => Ok((u64_at(b, 0), u64_at(b, 8))),
        n => Err(RendezvousError::Malformed(n)),
    }
}

/// A `Credit` payload.
pub fn encode_credit(returns: u64) -> Vec<u8> {
    words(&[returns])
}

/// The bytes returned by a `Credit`.
pub fn decode_credit(b: &[u8]) -> Result<u64, RendezvousError> {
    match b.len() {
        8 => Ok(u64_at(b, 0)),
        n => Err(RendezvousError::Malformed(n)),
    }
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_round_trip() {
        let mut inline = encode_rts(3, 7, &Fetch::Inline(Vec::new()));
        inline.extend_from_slice(b"abc");
        let a = decode_rts(inline, Format::OPAQUE, 100).unwrap();
        assert!(matches!(a.fetch, Fetch::Inline(ref b) if b == b"abc"));
        assert_eq!((a.send_id, a.len), (7, 3));
        let pull = encode_rts(30, 8, &Fetch::Pull(vec![(0x1000, 10), (0x2000, 20)]));
        let a = decode_rts(pull, Format::OPAQUE, 100).unwrap();
        assert!(matches!(a.fetch, Fetch::Pull(ref s) if s.len() == 2));
        let push = encode_rts(50, 9, &Fetch::Push);
        assert!(matches!(
            decode_rts(push, Format::OPAQUE, 100).unwrap().fetch,
            Fetch::Push
        ));
        assert_eq!(decode_cts(&encode_cts(1, 2, 3, 4)).unwrap(), (1, 2, 3, 4));
        assert_eq!(decode_fin(&encode_fin(5, 6)).unwrap(), (5, 6));
        assert_eq!(decode_credit(&encode_credit(9)).unwrap(), 9);
    }

    #[test]
    fn malformed_announcements_are_refused() {
        let short = encode_rts(3, 7, &Fetch::Inline(Vec::new()));
        assert!(decode_rts(short, Format::OPAQUE, 100).is_err(), "bytes missing");
        let big = encode_rts(1000, 7, &Fetch::Push);
        assert!(matches!(
            decode_rts(big, Format::OPAQUE, 100),
            Err(RendezvousError::TooLong { .. })
        ));
        let wrong_sum = encode_rts(31, 8, &Fetch::Pull(vec![(0x1000, 10), (0x2000, 20)]));
        assert!(matches!(
            decode_rts(wrong_sum, Format::OPAQUE, 100),
            Err(RendezvousError::Segments)
        ));
        let overflow = encode_rts(5, 8, &Fetch::Pull(vec![(0, u64::MAX), (0, 6)]));
        assert!(decode_rts(overflow, Format::OPAQUE, u64::MAX).is_err());
        let mut bad_kind = encode_rts(0, 1, &Fetch::Push);
        bad_kind[16] = 9;
        assert!(decode_rts(bad_kind, Format::OPAQUE, 100).is_err());
        assert!(decode_cts(&[0; 31]).is_err());
        assert!(decode_fin(&[0; 17]).is_err());
        assert!(decode_credit(&[]).is_err());
        for n in 0..64 {
            let _ = decode_rts(vec![0xff; n], Format::OPAQUE, u64::MAX);
        }
    }
}
