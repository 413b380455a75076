//! Control messages between a sender and one receiver, carried by the
//! pair's unicast channel (integers little-endian):
//!
//! - `JOIN` (1)
//! - `JOINED` (2): from u64, session 16 B
//! - `ACK` (3): offset u64
//! - `NAK` (4): count u8 (1 to 32), then per range start u64, end u64

use std::ops::Range;

/// Ranges at most in one NAK.
pub(super) const MAX_NAK_RANGES: usize = 32;

const JOIN: u8 = 1;
const JOINED: u8 = 2;
const ACK: u8 = 3;
const NAK: u8 = 4;

/// A message between a sender and one of its receivers (steps 3, 5 and
/// 7 of the module docs).
///
/// ```
/// use threadwire_transport::udp::mcast::Control;
///
/// let nak = Control::Nak { ranges: vec![100..200, 300..301] };
/// let bytes = nak.encode();
/// assert_eq!(Control::decode(&bytes), Ok(nak));
/// assert!(Control::decode(&bytes[..bytes.len() - 1]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Receiver to sender: add me as a receiver of your stream.
    Join,
    /// Sender to receiver: you receive my stream from offset `from`, of
    /// my session `session`.
    Joined {
        /// The first stream offset the receiver gets (a frame boundary).
        from: u64,
        /// The sender's session: its datagrams' key.
        session: [u8; 16],
    },
    /// Receiver to sender: I hold your stream below `offset`, in order.
    Ack {
        /// The receiver's in-order offset.
        offset: u64,
    },
    /// Receiver to sender: multicast these byte ranges again.
    Nak {
        /// Missing ranges, each non-empty; at most 32.
        ranges: Vec<Range<u64>>,
    },
}

/// Why bytes are not a [`Control`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// No bytes at all.
    #[error("empty control message")]
    Empty,
    /// A message type this side does not know.
    #[error("unknown control message type {0}")]
    Unknown(u8),
    /// Fewer or more bytes than the message's type takes.
    #[error("control message of type {kind} has {len} bytes")]
    Length {
        /// The message type.
        kind: u8,
        /// Its bytes.
        len: usize,
    },
    /// A NAK with no ranges or more than 32.
    #[error("NAK of {0} ranges")]
    RangeCount(usize),
    /// A NAK range that is empty.
    #[error("empty NAK range {start}..{end}")]
    EmptyRange {
        /// Its start.
        start: u64,
        /// Its end, not above the start.
        end: u64,
    },
}

impl Control {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Control::Join => out.push(JOIN),
            Control::Joined { from, session } => {
                out.push(JOINED);
                out.extend_from_slice(&from.to_le_bytes());
                out.extend_from_slice(session);
            }
            Control::Ack { offset } => {
                out.push(ACK);
                out.extend_from_slice(&offset.to_le_bytes());
            }
            Control::Nak { ranges } => {
                out.push(NAK);
                out.push(ranges.len().min(u8::MAX as usize) as u8);
                for r in ranges {
                    out.extend_from_slice(&r.start.to_le_bytes());
                    out.extend_from_slice(&r.end.to_le_bytes());
                }
            }
        }
        out
    }

    /// The message of `bytes`, which must be exactly one.
    pub fn decode(bytes: &[u8]) -> Result<Control, ControlError> {
        let (&kind, body) = bytes.split_first().ok_or(ControlError::Empty)?;
        let need = |len: usize| match body.len() == len {
            true => Ok(()),
            false => Err(ControlError::Length {
                kind,
                len: bytes.len(),
            }),
        };
        let u64_at = |at: usize| {
            let mut x = [0; 8];
            x.copy_from_slice(&body[at..at + 8]);
            u64::from_le_bytes(x)
        };
        match kind {
            JOIN => need(0).map(|()| Control::Join),
            JOINED => {
                need(24)?;
                let mut session = [0; 16];
                session.copy_from_slice(&body[8..24]);
                Ok(Control::Joined {
                    from: u64_at(0),
                    session,
                })
            }
            ACK => need(8).map(|()| Control::Ack { offset: u64_at(0) }),
            NAK => {
                let count = *body.first().ok_or(ControlError::Length { kind, len: 1 })? as usize;
                if count == 0 || count > MAX_NAK_RANGES {
                    return Err(ControlError::RangeCount(count));
                }
                need(1 + 16 * count)?;
                let ranges = (0..count)
                    .map(|i| {
                        let (start, end) = (u64_at(1 + 16 * i), u64_at(9 + 16 * i));
                        match start < end {
                            true => Ok(start..end),
                            false => Err(ControlError::EmptyRange { start, end }),
                        }
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Control::Nak { ranges })
            }
            _ => Err(ControlError::Unknown(kind)),
        }
    }
}
