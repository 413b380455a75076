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
//! [`REPLY_CONTEXT`], with the request's number as tag: a status byte
//! ([`Status`]) and then `u32` words, little-endian.

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
        &s => return Err(DecodeError::Unknown(s)),
    };
    match words.as_slice() {
        &[w] => Ok(Err((status, w))),
        _ => Err(DecodeError::Length(b.len())),
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
