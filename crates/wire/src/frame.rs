//! The frame header: 32 bytes in front of every frame between two nodes.
//!
//! | offset | size | field                                             |
//! |-------:|-----:|---------------------------------------------------|
//! | 0      | 2    | magic `b"TW"`                                     |
//! | 2      | 1    | protocol version ([`PROTOCOL_VERSION`])           |
//! | 3      | 1    | kind ([`FrameKind`])                              |
//! | 4      | 1    | payload format ([`Format::to_byte`])              |
//! | 5      | 3    | reserved, zero                                    |
//! | 8      | 4    | source thread                                     |
//! | 12     | 4    | destination thread                                |
//! | 16     | 4    | tag                                               |
//! | 20     | 4    | auxiliary word (kind-specific; for data, context) |
//! | 24     | 8    | payload length in bytes                           |
//!
//! In a data frame the auxiliary word is the message's *context*: receives
//! match only messages of their own context, so the traffic of one group
//! (its point-to-point, its collectives) never meets another's. Context 0
//! is plain point-to-point between endpoints; the runtime's group module
//! allocates the others. Other kinds give the word their own meaning
//! (control messages and shared-memory set-up name their message type).
//!
//! Header fields are little-endian whatever the host; the payload's own byte
//! order is carried in the format byte. Decoding checks every field, so a
//! stream that lost its framing is caught at the next header rather than
//! misread as data.

use crate::{Format, FormatError};

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 32;
/// The protocol version this build speaks; peers must match exactly, so
/// that nodes of different builds refuse each other at the handshake
/// instead of dropping the connection at the first frame one of them does
/// not know. 2: active messages (`Am`, `AmAt`) and heartbeats. 3: the
/// control protocol of a job that grows (`Vm`, `Grown`, `Hosts`, the
/// directory's gone nodes). 4: large active messages announced
/// (`AmRts`) and fetched like rendezvous data. 5: connections made on
/// first use, and the handshake's Busy answer. 7: the UDP channel's
/// compact datagrams (varint header without receiver or session). 8:
/// the multicast streams carry frame headers compactly too.
pub const PROTOCOL_VERSION: u8 = 8;
const MAGIC: [u8; 2] = *b"TW";
/// The source thread of every bulk frame ([`FrameHeader::bulk`]): they are
/// sent by a node's progress engine, not by the thread that announced the
/// message, which may be sending a frame of its own at the same moment. A
/// channel that reassembles frames in chunks per source thread must never
/// mix the two.
pub const BULK_SOURCE: u32 = u32::MAX;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A user message from one thread to another.
    Data = 1,
    /// The sender has sent its last frame on this connection and is leaving
    /// in an orderly way; end of stream after it is not a failure.
    Bye = 2,
    /// A message between a node and its launcher (payload is portable-packed).
    Control = 3,
    /// Setting up a shared-memory channel between two nodes on one host
    /// (payload defined by the transport; `aux` says which message).
    Shm = 4,
    /// "Look at the shared-memory rings": sent on a pair's TCP connection
    /// only when the peer sleeps in the kernel; no payload.
    Doorbell = 5,
    /// One message for several threads of the receiving node: `dest_thread`
    /// is the number of threads listed at the end of the payload, `aux` the
    /// context of the copies (see [`mcast`](crate::mcast)).
    Mcast = 6,
    /// A request to the home node of a named group (`source_thread` the
    /// requester, `tag` the request's number; payload defined by the
    /// runtime's named-group protocol).
    Named = 7,
    /// A message announced instead of sent (rendezvous, synchronous
    /// sends): addressed as a data frame (`aux` the context, `format` the
    /// message's), its payload a descriptor defined by the runtime's
    /// rendezvous protocol (length, send id, and the data inline or where
    /// to fetch it).
    Rts = 8,
    /// The receiver matched an announced message and asks for its bytes
    /// (payload defined by the runtime's rendezvous protocol).
    Cts = 9,
    /// The receiver is done with an announced message (payload defined by
    /// the runtime's rendezvous protocol).
    Fin = 10,
    /// An announced message's bytes, sent after its [`Cts`](Self::Cts):
    /// `tag` and `aux` are the receive's id (low and high word),
    /// `dest_thread` the receiving thread. A TCP channel reads them
    /// straight into the buffer registered for that id.
    Bulk = 11,
    /// The receiver took eager messages and returns their bytes to the
    /// sender's budget (payload: the byte count, u64 little-endian).
    Credit = 12,
    /// An active message: a handler to run at the receiving node on
    /// arrival. `tag` and `aux` are the handler's id (low and high word),
    /// `dest_thread` the request's number (0 for a one-way message),
    /// `source_thread` the sending thread; the payload is the handler's
    /// argument.
    Am = 13,
    /// "I am here": sent on a pair's TCP connection (and to the launcher)
    /// by a node that has sent nothing else on it for a while, so that
    /// its peer can tell a quiet node from a silent one (the runtime's
    /// liveness protocol); `aux` the sender's peer timeout in
    /// milliseconds, no payload.
    Heartbeat = 14,
    /// An active message for one thread of the receiving node (a group
    /// member): as [`Am`](Self::Am), the payload ending with that
    /// thread's number (4 bytes, little-endian).
    AmAt = 15,
    /// A large active message announced instead of sent: addressed as
    /// [`Am`](Self::Am) (`tag` and `aux` the handler's id, `dest_thread`
    /// the request's number, `format` the message's), its payload a
    /// rendezvous descriptor (length, send id, where to fetch the bytes)
    /// followed by the target thread's number (4 bytes, little-endian,
    /// `u32::MAX` for none), as defined by the runtime's active-message
    /// protocol. The bytes move as for [`Rts`](Self::Rts): a `Cts` and
    /// `Bulk`, or a cross-memory read and `Fin`.
    AmRts = 16,
    /// Setting up the reliable UDP channel between two nodes, on their
    /// TCP connection (payload defined by the transport; `aux` says which
    /// message).
    Udp = 17,
    /// One message for threads of several nodes, on a node's multicast
    /// stream (sent once, received by every node of the job): addressed
    /// as [`Mcast`](Self::Mcast) (`aux` the context, `tag`, `source_thread`,
    /// `format` the message's), `dest_thread` the number of 4-byte words
    /// of the node list that ends the payload (see
    /// [`mcast::encode_nodes`](crate::mcast::encode_nodes)). A node not
    /// listed drops it.
    Bcast = 18,
    /// The multicast stream's control between two nodes, on their pair's
    /// channel: joining a node's stream, acknowledgements, repair requests
    /// (payload defined by the transport's multicast protocol).
    McastControl = 19,
}

impl FrameKind {
    fn from_byte(b: u8) -> Option<FrameKind> {
        match b {
            1 => Some(FrameKind::Data),
            2 => Some(FrameKind::Bye),
            3 => Some(FrameKind::Control),
            4 => Some(FrameKind::Shm),
            5 => Some(FrameKind::Doorbell),
            6 => Some(FrameKind::Mcast),
            7 => Some(FrameKind::Named),
            8 => Some(FrameKind::Rts),
            9 => Some(FrameKind::Cts),
            10 => Some(FrameKind::Fin),
            11 => Some(FrameKind::Bulk),
            12 => Some(FrameKind::Credit),
            13 => Some(FrameKind::Am),
            14 => Some(FrameKind::Heartbeat),
            15 => Some(FrameKind::AmAt),
            16 => Some(FrameKind::AmRts),
            17 => Some(FrameKind::Udp),
            18 => Some(FrameKind::Bcast),
            19 => Some(FrameKind::McastControl),
            _ => None,
        }
    }
}

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameHeader {
    /// What the frame carries.
    pub kind: FrameKind,
    /// How the payload is encoded.
    pub format: Format,
    /// Sending thread number on the sending node.
    pub source_thread: u32,
    /// Receiving thread number on the receiving node.
    pub dest_thread: u32,
    /// User tag.
    pub tag: u32,
    /// Kind-specific word; for data frames the context (0: plain
    /// point-to-point; see the module docs).
    pub aux: u32,
    /// Payload bytes that follow the header.
    pub len: u64,
}

/// Why a header was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The first two bytes are not `TW`: not a threadwire stream, or framing lost.
    #[error("bad magic {0:02x?}: not a threadwire frame")]
    BadMagic([u8; 2]),
    /// The peer speaks another protocol version.
    #[error("protocol version {found}, this node speaks {PROTOCOL_VERSION}")]
    VersionMismatch {
        /// The version in the frame.
        found: u8,
    },
    /// The kind byte names no known frame kind.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// The format byte is invalid.
    #[error("bad payload format: {0}")]
    BadFormat(#[from] FormatError),
    /// Reserved bytes are not zero.
    #[error("reserved header bytes are not zero")]
    Reserved,
    /// The payload is longer than this node accepts.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    TooLong {
        /// Length claimed by the header.
        len: u64,
        /// The configured maximum.
        max: u64,
    },
}

impl FrameHeader {
    /// A data frame header of plain point-to-point (context 0).
    pub fn data(source_thread: u32, dest_thread: u32, tag: u32, format: Format, len: u64) -> Self {
        FrameHeader::data_in(0, source_thread, dest_thread, tag, format, len)
    }

    /// A data frame header in `context` (carried in `aux`).
    #[inline]
    pub fn data_in(
        context: u32,
        source_thread: u32,
        dest_thread: u32,
        tag: u32,
        format: Format,
        len: u64,
    ) -> Self {
        FrameHeader {
            kind: FrameKind::Data,
            format,
            source_thread,
            dest_thread,
            tag,
            aux: context,
            len,
        }
    }

    /// A multicast frame header: `count` threads listed in the payload's
    /// trailer (see [`mcast`](crate::mcast)), copies delivered in `context`.
    pub fn mcast(
        context: u32,
        source_thread: u32,
        count: u32,
        tag: u32,
        format: Format,
        len: u64,
    ) -> Self {
        FrameHeader {
            kind: FrameKind::Mcast,
            format,
            source_thread,
            dest_thread: count,
            tag,
            aux: context,
            len,
        }
    }

    /// A multicast-stream frame header ([`FrameKind::Bcast`]): `words`
    /// 4-byte words of node list end the payload (see
    /// [`mcast::encode_nodes`](crate::mcast::encode_nodes)), copies
    /// delivered in `context`.
    pub fn bcast(
        context: u32,
        source_thread: u32,
        words: u32,
        tag: u32,
        format: Format,
        len: u64,
    ) -> Self {
        FrameHeader {
            kind: FrameKind::Bcast,
            ..FrameHeader::mcast(context, source_thread, words, tag, format, len)
        }
    }

    /// A header of `kind` addressed like a data frame: the protocol frames
    /// of a rendezvous.
    pub fn addressed(
        kind: FrameKind,
        source_thread: u32,
        dest_thread: u32,
        tag: u32,
        aux: u32,
        format: Format,
        len: u64,
    ) -> Self {
        FrameHeader {
            kind,
            format,
            source_thread,
            dest_thread,
            tag,
            aux,
            len,
        }
    }

    /// The header of an announced message's bytes for receive `id`
    /// ([`FrameKind::Bulk`]: the id's low word in `tag`, its high word in
    /// `aux`, the source [`BULK_SOURCE`]).
    pub fn bulk(dest_thread: u32, id: u64, format: Format, len: u64) -> Self {
        FrameHeader::addressed(
            FrameKind::Bulk,
            BULK_SOURCE,
            dest_thread,
            id as u32,
            (id >> 32) as u32,
            format,
            len,
        )
    }

    /// The receive id of a [`bulk`](Self::bulk) header.
    pub fn bulk_id(&self) -> u64 {
        (u64::from(self.aux) << 32) | u64::from(self.tag)
    }

    /// A header of `kind` with no addressing and a payload of `len` bytes.
    pub fn control(kind: FrameKind, aux: u32, len: u64) -> Self {
        FrameHeader {
            kind,
            format: Format::OPAQUE,
            source_thread: 0,
            dest_thread: 0,
            tag: 0,
            aux,
            len,
        }
    }

    /// The header's 32 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC);
        b[2] = PROTOCOL_VERSION;
        b[3] = self.kind as u8;
        b[4] = self.format.to_byte();
        b[8..12].copy_from_slice(&self.source_thread.to_le_bytes());
        b[12..16].copy_from_slice(&self.dest_thread.to_le_bytes());
        b[16..20].copy_from_slice(&self.tag.to_le_bytes());
        b[20..24].copy_from_slice(&self.aux.to_le_bytes());
        b[24..32].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decodes and validates a header; `max_len` bounds the payload length.
    pub fn decode(b: &[u8; HEADER_LEN], max_len: u64) -> Result<FrameHeader, FrameError> {
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if b[0..2] != MAGIC {
            return Err(FrameError::BadMagic([b[0], b[1]]));
        }
        if b[2] != PROTOCOL_VERSION {
            return Err(FrameError::VersionMismatch { found: b[2] });
        }
        let kind = FrameKind::from_byte(b[3]).ok_or(FrameError::UnknownKind(b[3]))?;
        let format = Format::from_byte(b[4])?;
        if b[5..8] != [0, 0, 0] {
            return Err(FrameError::Reserved);
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&b[24..32]);
        let len = u64::from_le_bytes(len);
        if len > max_len {
            return Err(FrameError::TooLong { len, max: max_len });
        }
        Ok(FrameHeader {
            kind,
            format,
            source_thread: word(8),
            dest_thread: word(12),
            tag: word(16),
            aux: word(20),
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ByteOrder, Encoding};

    fn sample() -> FrameHeader {
        let format = Format {
            encoding: Some(Encoding::ReceiverMakesRight),
            order: ByteOrder::Big,
        };
        FrameHeader::data(3, 70_000, 0xdead_beef, format, 12345)
    }

    #[test]
    fn round_trip() {
        let h = sample();
        assert_eq!(FrameHeader::decode(&h.encode(), u64::MAX), Ok(h));
        let bye = FrameHeader::control(FrameKind::Bye, 9, 0);
        assert_eq!(FrameHeader::decode(&bye.encode(), 0), Ok(bye));
    }

    #[test]
    fn context_rides_in_aux() {
        let h = FrameHeader::data_in(0x1234_5678, 1, 2, 3, Format::OPAQUE, 4);
        let b = h.encode();
        assert_eq!(&b[20..24], &0x1234_5678u32.to_le_bytes());
        assert_eq!(FrameHeader::decode(&b, u64::MAX).unwrap().aux, 0x1234_5678);
        assert_eq!(sample().aux, 0);
    }

    #[test]
    fn layout_is_fixed() {
        let b = sample().encode();
        assert_eq!(&b[0..4], &[b'T', b'W', PROTOCOL_VERSION, 1]);
        assert_eq!(&b[8..12], &3u32.to_le_bytes());
        assert_eq!(&b[24..32], &12345u64.to_le_bytes());
    }

    #[test]
    fn refuses_bad_fields() {
        let good = sample().encode();
        let mut b = good;
        b[0] = b'X';
        assert!(matches!(
            FrameHeader::decode(&b, u64::MAX),
            Err(FrameError::BadMagic(_))
        ));
        let mut b = good;
        b[2] = 99;
        assert_eq!(
            FrameHeader::decode(&b, u64::MAX),
            Err(FrameError::VersionMismatch { found: 99 })
        );
        let mut b = good;
        b[3] = 0;
        assert_eq!(
            FrameHeader::decode(&b, u64::MAX),
            Err(FrameError::UnknownKind(0))
        );
        let mut b = good;
        b[6] = 1;
        assert_eq!(FrameHeader::decode(&b, u64::MAX), Err(FrameError::Reserved));
        let mut b = good;
        b[4] = 0x7f;
        assert!(matches!(
            FrameHeader::decode(&b, u64::MAX),
            Err(FrameError::BadFormat(_))
        ));
        assert_eq!(
            FrameHeader::decode(&good, 100),
            Err(FrameError::TooLong {
                len: 12345,
                max: 100
            })
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        // xorshift: deterministic, no dependency
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            let mut b = [0u8; HEADER_LEN];
            for chunk in b.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            if x.is_multiple_of(2) {
                b[0..3].copy_from_slice(&[b'T', b'W', PROTOCOL_VERSION]);
            }
            let _ = FrameHeader::decode(&b, 1 << 30);
        }
    }
}
