//! Messages between a node and its launcher, on the control connection:
//! the half of the launcher–node contract that is not the environment
//! ([`crate::env`]). The launcher (`threadwire-launch`) and the runtime
//! both speak it.
//!
//! The control connection is authenticated like any peer connection (the
//! launcher accepts as node [`LAUNCHER`]) and carries `Control` frames whose
//! `aux` word is the message type and whose payload is portable-packed.
//!
//! 1. Node → launcher: `Register { addr }`, the address it listens on.
//! 2. Launcher → node, once all nodes registered: `Directory { addrs }`.
//! 3. Launcher → node, at any time: `PeerLost { node, cause }`.
//! 4. Node → launcher, once joined: `Channels { routes }`.
//! 5. Node → launcher, at any time: `Report { data }`, a result the
//!    program reports ([`Node::report`](crate::Node::report)).
//! 6. Node → launcher, at finalize: `Stats`, then a `Bye` frame.
//! 7. Node → launcher, from joining until its `Bye`, whenever the
//!    connection was otherwise quiet for a liveness tick: `Heartbeat
//!    { timeout_ms }`, a bare [`FrameKind::Heartbeat`] frame whose `aux`
//!    word is the node's peer timeout (the runtime's liveness protocol).
//!    A launcher that has heard one may take a node whose connection then
//!    stays silent for longer than the timeout to be lost, and end it.

use crate::Stats;
use std::io::{self, Read, Write};
use threadwire_wire::{
    Encoding, FrameError, FrameHeader, FrameKind, Packer, Payload, UnpackError, Unpacker,
    HEADER_LEN,
};

/// The node number the launcher uses in handshakes.
pub const LAUNCHER: u32 = u32::MAX;
/// Longest control payload accepted.
pub const MAX_CONTROL: u64 = 1 << 20;

const REGISTER: u32 = 1;
const DIRECTORY: u32 = 2;
const PEER_LOST: u32 = 3;
const STATS: u32 = 4;
const CHANNELS: u32 = 5;
const REPORT: u32 = 6;

/// A control message.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// The address a node listens on for its peers.
    Register {
        /// `ip:port`.
        addr: String,
    },
    /// Every node's listen address, by node number.
    Directory {
        /// `ip:port` of each node.
        addrs: Vec<String>,
    },
    /// A node has died.
    PeerLost {
        /// The node.
        node: u32,
        /// How it died.
        cause: String,
    },
    /// A node's final counters.
    Stats(Stats),
    /// The channel a node uses to each peer, by node number (`-` for
    /// itself), sent once it has joined.
    Channels {
        /// One entry per node.
        routes: Vec<String>,
    },
    /// A result the node's program reports, in a codec of the program's.
    Report {
        /// The report's bytes.
        data: Vec<u8>,
    },
    /// The node is alive (step 7); sent as a [`FrameKind::Heartbeat`]
    /// frame, not a `Control` one.
    Heartbeat {
        /// The node's peer timeout, in milliseconds.
        timeout_ms: u32,
    },
}

/// A list of strings: its length, then each.
fn pack_strings(p: &mut Packer, strings: &[String]) {
    p.pack(strings.len() as u32);
    for s in strings {
        p.pack_str(s);
    }
}

fn unpack_strings(u: &mut Unpacker) -> Result<Vec<String>, UnpackError> {
    let n = u.unpack::<u32>()?;
    let mut strings = Vec::with_capacity(n.min(1 << 16) as usize);
    for _ in 0..n {
        strings.push(u.unpack_string()?);
    }
    Ok(strings)
}

/// A control stream that does not follow the protocol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// I/O failure or end of stream.
    #[error("control connection: {0}")]
    Io(#[from] io::Error),
    /// Bad frame header.
    #[error("control connection: {0}")]
    Frame(#[from] FrameError),
    /// Bad payload.
    #[error("control connection: bad message: {0}")]
    Unpack(#[from] UnpackError),
    /// Unknown message type or frame kind.
    #[error("control connection: unexpected message {0}")]
    Unexpected(u32),
}

impl Control {
    /// The frame header and payload of this message.
    pub fn encode(&self) -> (FrameHeader, Payload) {
        if let Control::Heartbeat { timeout_ms } = self {
            let header = FrameHeader::control(FrameKind::Heartbeat, *timeout_ms, 0);
            return (header, Payload::from_vec(Vec::new()));
        }
        let mut p = Packer::new(Encoding::Portable);
        let kind = match self {
            Control::Register { addr } => {
                p.pack_str(addr);
                REGISTER
            }
            Control::Directory { addrs } => {
                pack_strings(&mut p, addrs);
                DIRECTORY
            }
            Control::PeerLost { node, cause } => {
                p.pack(*node).pack_str(cause);
                PEER_LOST
            }
            Control::Stats(s) => {
                p.pack_slice(&[
                    s.messages_sent,
                    s.bytes_sent,
                    s.messages_received,
                    s.bytes_received,
                ]);
                STATS
            }
            Control::Channels { routes } => {
                pack_strings(&mut p, routes);
                CHANNELS
            }
            Control::Report { data } => {
                p.pack_bytes(data);
                REPORT
            }
            Control::Heartbeat { .. } => unreachable!("encoded above"),
        };
        let payload = p.finish();
        let mut header = FrameHeader::control(FrameKind::Control, kind, payload.len() as u64);
        header.format = payload.format();
        (header, payload)
    }

    /// Decodes a control frame's payload.
    pub fn decode(header: &FrameHeader, payload: Vec<u8>) -> Result<Control, ControlError> {
        if header.kind == FrameKind::Heartbeat {
            return Ok(Control::Heartbeat {
                timeout_ms: header.aux,
            });
        }
        if header.kind != FrameKind::Control {
            return Err(ControlError::Unexpected(header.kind as u32));
        }
        let mut u = Payload::from_wire(header.format, payload).unpack()?;
        Ok(match header.aux {
            REGISTER => Control::Register {
                addr: u.unpack_string()?,
            },
            DIRECTORY => Control::Directory {
                addrs: unpack_strings(&mut u)?,
            },
            PEER_LOST => Control::PeerLost {
                node: u.unpack()?,
                cause: u.unpack_string()?,
            },
            STATS => {
                let mut v = [0u64; 4];
                u.unpack_into(&mut v)?;
                Control::Stats(Stats {
                    messages_sent: v[0],
                    bytes_sent: v[1],
                    messages_received: v[2],
                    bytes_received: v[3],
                })
            }
            CHANNELS => Control::Channels {
                routes: unpack_strings(&mut u)?,
            },
            REPORT => Control::Report {
                data: u.unpack_bytes()?,
            },
            other => return Err(ControlError::Unexpected(other)),
        })
    }
}

/// Writes a frame on a blocking stream.
pub fn write_frame(mut w: impl Write, header: &FrameHeader, payload: &Payload) -> io::Result<()> {
    w.write_all(&header.encode())?;
    for seg in payload.segments() {
        w.write_all(seg)?;
    }
    w.flush()
}

/// Writes a control message on a blocking stream.
pub fn write_control(w: impl Write, msg: &Control) -> io::Result<()> {
    let (h, p) = msg.encode();
    write_frame(w, &h, &p)
}

/// Reads one control message from a blocking stream; `None` on a `Bye` frame.
pub fn read_control(mut r: impl Read) -> Result<Option<Control>, ControlError> {
    let mut h = [0u8; HEADER_LEN];
    r.read_exact(&mut h)?;
    let header = FrameHeader::decode(&h, MAX_CONTROL)?;
    let mut payload = vec![0u8; header.len as usize];
    r.read_exact(&mut payload)?;
    if header.kind == FrameKind::Bye {
        return Ok(None);
    }
    Control::decode(&header, payload).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let msgs = [
            Control::Register {
                addr: "127.0.0.1:4000".into(),
            },
            Control::Directory {
                addrs: vec!["a".into(), "b".into()],
            },
            Control::PeerLost {
                node: 3,
                cause: "killed by signal 9".into(),
            },
            Control::Stats(Stats {
                messages_sent: 1,
                bytes_sent: 2,
                messages_received: 3,
                bytes_received: 4,
            }),
            Control::Channels {
                routes: vec![
                    "-".into(),
                    "shm (large messages in chunks)".into(),
                    "tcp".into(),
                ],
            },
            Control::Report {
                data: b"{\"rows\": []}".to_vec(),
            },
            Control::Report { data: Vec::new() },
            Control::Heartbeat { timeout_ms: 1000 },
        ];
        let mut buf = Vec::new();
        for m in &msgs {
            write_control(&mut buf, m).unwrap();
        }
        let mut r = &buf[..];
        for m in &msgs {
            assert_eq!(&read_control(&mut r).unwrap().unwrap(), m);
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(read_control(&[7u8; 64][..]).is_err());
        let (mut h, p) = Control::Register { addr: "x".into() }.encode();
        h.aux = 99;
        let mut buf = Vec::new();
        write_frame(&mut buf, &h, &p).unwrap();
        assert!(matches!(
            read_control(&buf[..]),
            Err(ControlError::Unexpected(99))
        ));
    }
}
