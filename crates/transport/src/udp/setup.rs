//! The messages that set up a pair's UDP channel, sent on the pair's
//! authenticated TCP connection as [`FrameKind::Udp`] frames whose `aux`
//! word names the message.
//!
//! 1. The pair's higher node sends **Offer**: its UDP socket's address
//!    and a fresh 32-byte nonce.
//! 2. The lower node makes its side of the channel ([`Keys::derive`](super::Keys::derive)
//!    from both nonces) and answers **Accept**: its own address and nonce;
//!    or **Decline** with a reason, and the pair stays on TCP.
//! 3. The higher node, on Accept, makes its side, sends its frames on it
//!    from then on, and sends **Ready**.
//! 4. The lower node, on Ready, sends its frames on it too: whatever the
//!    higher node sent over UDP meanwhile was received all along.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use threadwire_wire::{FrameHeader, FrameKind};

const OFFER: u32 = 1;
const ACCEPT: u32 = 2;
const DECLINE: u32 = 3;
const READY: u32 = 4;
const MAX_REASON: usize = 200;

/// A UDP set-up message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UdpSetup {
    /// Step 1.
    Offer {
        /// The offering node's UDP socket.
        addr: SocketAddr,
        /// Its fresh nonce.
        nonce: [u8; 32],
    },
    /// Step 2.
    Accept {
        /// The accepting node's UDP socket.
        addr: SocketAddr,
        /// Its fresh nonce.
        nonce: [u8; 32],
    },
    /// Step 2, refused: the pair stays on TCP.
    Decline(String),
    /// Step 3.
    Ready,
}

/// A set-up message that does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed UDP set-up message: {0}")]
pub struct UdpSetupError(&'static str);

impl UdpSetup {
    /// The frame header and payload.
    pub fn encode(&self) -> (FrameHeader, Vec<u8>) {
        let mut b = Vec::new();
        let aux = match self {
            UdpSetup::Offer { addr, nonce } | UdpSetup::Accept { addr, nonce } => {
                encode_addr(addr, &mut b);
                b.extend_from_slice(nonce);
                if matches!(self, UdpSetup::Offer { .. }) {
                    OFFER
                } else {
                    ACCEPT
                }
            }
            UdpSetup::Decline(why) => {
                let mut end = why.len().min(MAX_REASON);
                while !why.is_char_boundary(end) {
                    end -= 1;
                }
                b.extend_from_slice(&why.as_bytes()[..end]);
                DECLINE
            }
            UdpSetup::Ready => READY,
        };
        (FrameHeader::control(FrameKind::Udp, aux, b.len() as u64), b)
    }

    /// Decodes a [`FrameKind::Udp`] frame.
    pub fn decode(header: &FrameHeader, payload: &[u8]) -> Result<UdpSetup, UdpSetupError> {
        match header.aux {
            OFFER | ACCEPT => {
                let (addr, rest) = decode_addr(payload)?;
                let nonce: [u8; 32] = rest
                    .try_into()
                    .map_err(|_| UdpSetupError("nonce is not 32 bytes"))?;
                Ok(match header.aux {
                    OFFER => UdpSetup::Offer { addr, nonce },
                    _ => UdpSetup::Accept { addr, nonce },
                })
            }
            DECLINE if payload.len() <= MAX_REASON => String::from_utf8(payload.to_vec())
                .map(UdpSetup::Decline)
                .map_err(|_| UdpSetupError("reason is not UTF-8")),
            DECLINE => Err(UdpSetupError("reason too long")),
            READY if payload.is_empty() => Ok(UdpSetup::Ready),
            READY => Err(UdpSetupError("ready with a payload")),
            _ => Err(UdpSetupError("unknown message")),
        }
    }
}

fn encode_addr(addr: &SocketAddr, b: &mut Vec<u8>) {
    match addr.ip() {
        IpAddr::V4(ip) => {
            b.push(4);
            b.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            b.push(6);
            b.extend_from_slice(&ip.octets());
        }
    }
    b.extend_from_slice(&addr.port().to_le_bytes());
}

fn decode_addr(b: &[u8]) -> Result<(SocketAddr, &[u8]), UdpSetupError> {
    let short = UdpSetupError("address too short");
    let (ip, rest): (IpAddr, &[u8]) = match b.first() {
        Some(4) if b.len() >= 5 => {
            let o: [u8; 4] = b[1..5].try_into().map_err(|_| short)?;
            (Ipv4Addr::from(o).into(), &b[5..])
        }
        Some(6) if b.len() >= 17 => {
            let o: [u8; 16] = b[1..17].try_into().map_err(|_| short)?;
            (Ipv6Addr::from(o).into(), &b[17..])
        }
        Some(4 | 6) => return Err(short),
        _ => return Err(UdpSetupError("unknown address family")),
    };
    if rest.len() < 2 {
        return Err(short);
    }
    let port = u16::from_le_bytes([rest[0], rest[1]]);
    Ok((SocketAddr::new(ip, port), &rest[2..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        let v4: SocketAddr = "10.77.3.1:4567".parse().unwrap();
        let v6: SocketAddr = "[fe80::1]:9".parse().unwrap();
        for m in [
            UdpSetup::Offer {
                addr: v4,
                nonce: [3; 32],
            },
            UdpSetup::Accept {
                addr: v6,
                nonce: [4; 32],
            },
            UdpSetup::Decline("THREADWIRE_CHANNEL=tcp".into()),
            UdpSetup::Ready,
        ] {
            let (h, b) = m.encode();
            assert_eq!(UdpSetup::decode(&h, &b), Ok(m));
            for cut in 0..b.len() {
                let _ = UdpSetup::decode(&h, &b[..cut]);
            }
        }
        let (mut h, b) = UdpSetup::Ready.encode();
        h.aux = 99;
        assert!(UdpSetup::decode(&h, &b).is_err());
    }
}
