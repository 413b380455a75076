//! Requests to a name's home and its replies, as bytes.
//!
//! A request is a [`FrameKind::Named`](threadwire_wire::FrameKind) frame:
//! `source_thread` the requesting thread, `tag` the request's number, and
//! the payload
//!
//! ```text
//! | op (1) | name length (2, LE) | name (UTF-8) | argument words (u32 LE) |
//! ```
//!
//! with no argument for join, leave, size, members and freeze, one word
//! (the instance) for "address of", two (node, thread) for "instance of".
//! The reply is an ordinary data frame to the requesting thread in context
//! `REPLY_CONTEXT`, with the request's number as tag: a status byte
//! (`Status`) and then `u32` words, little-endian.
//!
//! Between a home and its backup (`Replica`), `Named` frames whose first
//! byte is 8 to 11 (numbers little-endian):
//!
//! ```text
//! update, a request:  | 8 | seq (8) | node (4) | thread (4) | id (4) | request |
//! update, node gone:  | 9 | seq (8) | node (4) |
//! ack:                | 10 | seq (8) |
//! snapshot:           | 11 | seq (8) | table (see table.rs) |
//! ```

use super::table::Table;
use crate::Address;

/// The context of replies from a home: no group's (those stay below
/// `4096 << 2`), never plain point-to-point.
pub(crate) const REPLY_CONTEXT: u32 = u32::MAX;

/// Longest name, in bytes.
pub const MAX_NAME: usize = 1024;

/// What a request asks of a name's home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Join: the requester gets the lowest free instance.
    Join,
    /// Leave: the requester's instance becomes free.
    Leave,
    /// The number of members.
    Size,
    /// Every member with its instance.
    Members,
    /// The instance of a member.
    InstanceOf(Address),
    /// The member holding an instance.
    AddressOf(u32),
    /// The membership of the freeze the requester takes part in.
    Freeze,
}

/// A reply's status byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Done; the words are the answer.
    Ok = 0,
    /// No member has the name.
    UnknownName = 1,
    /// The requester (or the address asked about) is not a member.
    NotMember = 2,
    /// The requester is a member already; the word is its instance.
    AlreadyMember = 3,
    /// No member holds the instance; the word is the instance.
    NoSuchInstance = 4,
    /// The node asked does not serve the name (its view of which nodes
    /// are gone differs from the requester's for a moment): ask again.
    NotHome = 5,
}

/// A reply: the answer's words, or a status and its word.
pub type Reply = Result<Vec<u32>, (Status, u32)>;

/// Why bytes from a peer are no request or reply.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than the fields need, or more than they use.
    #[error("named-group message of {0} bytes has the wrong length")]
    Length(usize),
    /// An operation or status byte no peer sends.
    #[error("unknown named-group operation or status {0}")]
    Unknown(u8),
    /// The name is longer than [`MAX_NAME`] or not UTF-8.
    #[error("bad group name")]
    Name,
}

fn words(bytes: &[u8]) -> Result<Vec<u32>, DecodeError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(DecodeError::Length(bytes.len()));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// A request's payload.
pub fn encode_request(op: Op, name: &str) -> Vec<u8> {
    let (code, args): (u8, Vec<u32>) = match op {
        Op::Join => (1, vec![]),
        Op::Leave => (2, vec![]),
        Op::Size => (3, vec![]),
        Op::Members => (4, vec![]),
        Op::InstanceOf(a) => (5, vec![a.node, a.thread]),
        Op::AddressOf(i) => (6, vec![i]),
        Op::Freeze => (7, vec![]),
    };
    let mut b = Vec::with_capacity(3 + name.len() + 4 * args.len());
    b.push(code);
    b.extend((name.len() as u16).to_le_bytes());
    b.extend(name.as_bytes());
    b.extend(args.iter().flat_map(|w| w.to_le_bytes()));
    b
}

/// Decodes a request's payload: the operation and the name.
pub fn decode_request(b: &[u8]) -> Result<(Op, &str), DecodeError> {
    let [code, l0, l1, rest @ ..] = b else {
        return Err(DecodeError::Length(b.len()));
    };
    let len = usize::from(u16::from_le_bytes([*l0, *l1]));
    if len > MAX_NAME {
        return Err(DecodeError::Name);
    }
    if rest.len() < len {
        return Err(DecodeError::Length(b.len()));
    }
    let (name, args) = rest.split_at(len);
    let name = std::str::from_utf8(name).map_err(|_| DecodeError::Name)?;
    let args = words(args)?;
    let op = match (code, args.as_slice()) {
        (1, []) => Op::Join,
        (2, []) => Op::Leave,
        (3, []) => Op::Size,
        (4, []) => Op::Members,
        (5, &[node, thread]) => Op::InstanceOf(Address::new(node, thread)),
        (6, &[i]) => Op::AddressOf(i),
        (7, []) => Op::Freeze,
        (1..=7, _) => return Err(DecodeError::Length(b.len())),
        _ => return Err(DecodeError::Unknown(*code)),
    };
    Ok((op, name))
}

/// A reply's payload.
pub fn encode_reply(reply: &Reply) -> Vec<u8> {
    let (status, words) = match reply {
        Ok(w) => (Status::Ok, w.as_slice()),
        Err((s, w)) => (*s, std::slice::from_ref(w)),
    };
    let mut b = vec![status as u8];
    b.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    b
}

/// Decodes a reply's payload.
pub fn decode_reply(b: &[u8]) -> Result<Reply, DecodeError> {
    let [status, rest @ ..] = b else {
        return Err(DecodeError::Length(0));
    };
    let words = words(rest)?;
    let status = match status {
        0 => return Ok(Ok(words)),
        1 => Status::UnknownName,
        2 => Status::NotMember,
        3 => Status::AlreadyMember,
        4 => Status::NoSuchInstance,
        5 => Status::NotHome,
        &s => return Err(DecodeError::Unknown(s)),
    };
    match words.as_slice() {
        &[w] => Ok(Err((status, w))),
        _ => Err(DecodeError::Length(b.len())),
    }
}

/// A change a home applied, in the order it applied them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Update {
    /// Request `id` of thread `from`.
    Request {
        /// The requesting thread.
        from: Address,
        /// Its request number.
        id: u32,
        /// The operation.
        op: Op,
        /// The name.
        name: String,
    },
    /// A node is gone: its threads leave every name the home serves.
    Gone(u32),
}

/// What a home and its backup tell each other.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Replica {
    /// The home's update number `seq`.
    Update {
        /// Its number.
        seq: u64,
        /// What changed.
        update: Update,
    },
    /// The backup has applied every update up to `seq`.
    Ack {
        /// The last applied.
        seq: u64,
    },
    /// Every name the home serves, as of its update `seq`.
    Snapshot {
        /// The last update it holds.
        seq: u64,
        /// The names and threads' last changes.
        table: Table,
    },
}

/// Whether a `Named` payload is a [`Replica`] message (else a request).
pub(crate) fn is_replica(b: &[u8]) -> bool {
    matches!(b.first(), Some(8..=11))
}

impl Replica {
    /// The payload.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let head = |code: u8, seq: u64, b: &mut Vec<u8>| {
            b.push(code);
            b.extend(seq.to_le_bytes());
        };
        match self {
            Replica::Update {
                seq,
                update: Update::Request { from, id, op, name },
            } => {
                head(8, *seq, &mut b);
                for w in [from.node, from.thread, *id] {
                    b.extend(w.to_le_bytes());
                }
                b.extend(encode_request(*op, name));
            }
            Replica::Update {
                seq,
                update: Update::Gone(node),
            } => {
                head(9, *seq, &mut b);
                b.extend(node.to_le_bytes());
            }
            Replica::Ack { seq } => head(10, *seq, &mut b),
            Replica::Snapshot { seq, table } => {
                head(11, *seq, &mut b);
                table.encode(&mut b);
            }
        }
        b
    }

    /// Decodes a payload for which [`is_replica`] holds.
    pub(crate) fn decode(b: &[u8]) -> Result<Replica, DecodeError> {
        let short = || DecodeError::Length(b.len());
        let [code, rest @ ..] = b else {
            return Err(short());
        };
        let (seq, rest) = rest.split_at_checked(8).ok_or_else(short)?;
        let seq = u64::from_le_bytes(seq.try_into().expect("8 bytes"));
        let word = |at: usize| -> Result<u32, DecodeError> {
            let w = rest.get(at..at + 4).ok_or_else(short)?;
            Ok(u32::from_le_bytes(w.try_into().expect("4 bytes")))
        };
        Ok(match code {
            8 => {
                let from = Address::new(word(0)?, word(4)?);
                let id = word(8)?;
                let (op, name) = decode_request(&rest[12..])?;
                let name = name.to_owned();
                Replica::Update {
                    seq,
                    update: Update::Request { from, id, op, name },
                }
            }
            9 if rest.len() == 4 => Replica::Update {
                seq,
                update: Update::Gone(word(0)?),
            },
            10 if rest.is_empty() => Replica::Ack { seq },
            11 => Replica::Snapshot {
                seq,
                table: Table::decode(rest)?,
            },
            8..=11 => return Err(short()),
            &c => return Err(DecodeError::Unknown(c)),
        })
    }
}

/// For the fuzz target: `bytes` as a message between a home and its
/// backup decode to a typed error or to a message that round-trips
/// (panics otherwise). Not part of the API.
#[doc(hidden)]
pub fn check_replica_bytes(bytes: &[u8]) {
    if !is_replica(bytes) {
        return;
    }
    if let Ok(m) = Replica::decode(bytes) {
        assert_eq!(Replica::decode(&m.encode()).as_ref(), Ok(&m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for op in [
            Op::Join,
            Op::Leave,
            Op::Size,
            Op::Members,
            Op::InstanceOf(Address::new(3, 70_000)),
            Op::AddressOf(9),
            Op::Freeze,
        ] {
            assert_eq!(decode_request(&encode_request(op, "wörkers")), Ok((op, "wörkers")));
        }
        for r in [Ok(vec![]), Ok(vec![1, 2, 3]), Err((Status::AlreadyMember, 4))] {
            assert_eq!(decode_reply(&encode_reply(&r)), Ok(r));
        }
        let mut table = Table::default();
        let _ = table.apply(Address::new(1, 2), 3, Op::Join, "g");
        for m in [
            Replica::Update {
                seq: 5,
                update: Update::Request {
                    from: Address::new(1, 2),
                    id: 9,
                    op: Op::AddressOf(4),
                    name: "g".into(),
                },
            },
            Replica::Update {
                seq: u64::MAX,
                update: Update::Gone(3),
            },
            Replica::Ack { seq: 7 },
            Replica::Snapshot { seq: 8, table },
        ] {
            let b = m.encode();
            assert!(is_replica(&b));
            assert_eq!(Replica::decode(&b), Ok(m));
            for cut in 0..b.len() {
                assert!(Replica::decode(&b[..cut]).is_err(), "{cut}");
            }
        }
    }

    #[test]
    fn refuses_malformed_bytes() {
        assert!(decode_request(b"").is_err());
        assert!(decode_request(&[1, 5, 0, b'a']).is_err());
        assert!(decode_request(&[6, 0, 0]).is_err());
        assert!(decode_request(&[9, 0, 0]).is_err());
        assert!(decode_request(&[1, 1, 0, 0xff]).is_err());
        assert!(decode_reply(&[]).is_err());
        assert!(decode_reply(&[0, 1]).is_err());
        assert!(decode_reply(&[2]).is_err());
        assert!(decode_reply(&[8, 0, 0, 0, 0]).is_err());
    }
}
