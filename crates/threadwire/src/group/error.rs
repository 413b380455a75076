//! The errors of groups and collectives, and how a member's error reaches
//! the others (the abort message).

use super::element::Op;
use crate::error::{PeerLost, RecvError, SendError};
use crate::Address;

/// Why a group could not be built, or a collective or group message failed.
///
/// A collective that fails at one member fails at every member that takes
/// part, with the same error where it can be carried, never by hanging:
/// with the argument check ([`Group::set_checks`](super::Group::set_checks))
/// the members agree on their arguments before any data moves; without
/// it, the member that saw an error tells those still in the call (see
/// the [group docs](super#failures) for what that leaves out). A lost
/// member's node is seen by every member as [`CollError::PeerLost`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CollError {
    /// The calling thread is not in the group it tries to build or use.
    #[error("{0} is not a member of the group")]
    NotMember(Address),
    /// A group needs at least one member.
    #[error("a group needs at least one member")]
    Empty,
    /// A member appears twice in the list.
    #[error("{0} appears twice in the group's list")]
    DuplicateMember(Address),
    /// A member names no endpoint of this job.
    #[error("{0} is no endpoint of this job")]
    NoSuchEndpoint(Address),
    /// The members passed different lists (found when they agreed on the
    /// group's context).
    #[error("the members passed different lists for the group")]
    MembersDiffer,
    /// A rank (a root, a destination) is outside the group.
    #[error("rank {rank} is out of range for a group of {size}")]
    RankOutOfRange {
        /// The rank given.
        rank: usize,
        /// The group's size.
        size: usize,
    },
    /// Lengths disagree: a buffer's or count's length with the group's
    /// size, or data from a member with what this member expected.
    #[error("length mismatch seen by rank {rank}: expected {expected}, found {found}")]
    LengthMismatch {
        /// The member that saw it.
        rank: usize,
        /// The length it expected (elements or entries).
        expected: usize,
        /// The length it found.
        found: usize,
    },
    /// The operation does not apply to the element type (bitwise on
    /// floats, min-with-location on plain numbers).
    #[error("{op:?} does not apply to elements of type {element}")]
    Unsupported {
        /// The operation.
        op: Op,
        /// The element type.
        element: &'static str,
    },
    /// A forced algorithm cannot run this call (e.g. a ring allreduce with
    /// a non-commutative operation).
    #[error("algorithm {algorithm} cannot run this call: {why}")]
    NotApplicable {
        /// The algorithm forced.
        algorithm: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// A message is longer than a frame may be.
    #[error("{len} bytes exceed the maximum frame of {max} bytes")]
    TooLarge {
        /// The message length.
        len: usize,
        /// The configured maximum.
        max: u64,
    },
    /// The members' calls differ: another collective, root, element type,
    /// length, operation or forced algorithm at some member (found by the
    /// argument check, `group/check.rs`).
    #[error("the members passed different arguments to the collective")]
    CallsDiffer,
    /// Another member failed this collective with an error that does not
    /// travel (this member saw it from its abort message).
    #[error("rank {0} failed the collective")]
    Aborted(usize),
    /// A member's node is gone.
    #[error("a member is gone: {0}")]
    PeerLost(PeerLost),
    /// A member revoked the group ([`Group::revoke`](super::Group::revoke)): only `agree` and
    /// `shrink` still run on it.
    #[error("the group was revoked")]
    Revoked,
    /// Every group id is in use at some member.
    #[error("no group id is free at every member")]
    ContextsExhausted,
    /// This node has finalized.
    #[error("group operation after finalize")]
    Finalized,
}

impl From<SendError> for CollError {
    fn from(e: SendError) -> CollError {
        match e {
            SendError::PeerLost { lost, .. } => CollError::PeerLost(lost),
            SendError::NoSuchEndpoint { to, .. } => CollError::NoSuchEndpoint(to),
            SendError::TooLarge { len, max, .. } => CollError::TooLarge { len, max },
            _ => CollError::Finalized,
        }
    }
}

impl From<RecvError> for CollError {
    fn from(e: RecvError) -> CollError {
        match e {
            RecvError::PeerLost(lost) => CollError::PeerLost(lost),
            RecvError::NoSuchNode(n) => CollError::NoSuchEndpoint(Address::new(n, 0)),
            RecvError::Revoked => CollError::Revoked,
            _ => CollError::Finalized,
        }
    }
}

impl CollError {
    /// Whether the other members must be told: not for a lost node (each
    /// member sees the loss itself) nor after finalize (nothing can be sent).
    pub(crate) fn travels(&self) -> bool {
        !matches!(
            self,
            CollError::PeerLost(_) | CollError::Finalized | CollError::Revoked
        )
    }

    /// Whether every member whose arguments agree finds it alike (the
    /// operation's or a forced algorithm's), so that no abort need tell
    /// them (`check.rs`).
    pub(crate) fn follows_from_arguments(&self) -> bool {
        matches!(
            self,
            CollError::Unsupported { .. } | CollError::NotApplicable { .. }
        )
    }

    /// The abort message for this error, raised at `rank`: kind, then
    /// three little-endian words.
    pub(crate) fn encode(&self, rank: usize) -> Vec<u8> {
        let (kind, a, b, c): (u8, u64, u64, u64) = match *self {
            CollError::RankOutOfRange { rank, size } => (1, rank as u64, size as u64, 0),
            CollError::LengthMismatch {
                rank,
                expected,
                found,
            } => (2, rank as u64, expected as u64, found as u64),
            CollError::MembersDiffer => (3, 0, 0, 0),
            CollError::TooLarge { len, max } => (4, len as u64, max, 0),
            CollError::Aborted(r) => (5, r as u64, 0, 0),
            CollError::CallsDiffer => (6, 0, 0, 0),
            _ => (5, rank as u64, 0, 0),
        };
        let mut out = vec![kind];
        for w in [a, b, c] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The error an abort message from `from` carries; malformed ones are
    /// taken as a plain abort by `from`.
    pub(crate) fn decode(bytes: &[u8], from: usize) -> CollError {
        let word = |i: usize| -> Option<u64> {
            let at = 1 + 8 * i;
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        let (Some(a), Some(b), Some(c)) = (word(0), word(1), word(2)) else {
            return CollError::Aborted(from);
        };
        match bytes[0] {
            1 => CollError::RankOutOfRange {
                rank: a as usize,
                size: b as usize,
            },
            2 => CollError::LengthMismatch {
                rank: a as usize,
                expected: b as usize,
                found: c as usize,
            },
            3 => CollError::MembersDiffer,
            4 => CollError::TooLarge {
                len: a as usize,
                max: b,
            },
            6 => CollError::CallsDiffer,
            _ => CollError::Aborted(a as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn travelling_errors_round_trip() {
        for e in [
            CollError::RankOutOfRange { rank: 9, size: 4 },
            CollError::LengthMismatch {
                rank: 2,
                expected: 10,
                found: 11,
            },
            CollError::MembersDiffer,
            CollError::TooLarge { len: 5, max: 4 },
            CollError::Aborted(3),
            CollError::CallsDiffer,
        ] {
            assert_eq!(CollError::decode(&e.encode(1), 1), e);
        }
        assert_eq!(
            CollError::decode(&CollError::Empty.encode(6), 6),
            CollError::Aborted(6)
        );
        assert_eq!(CollError::decode(&[2, 1], 4), CollError::Aborted(4));
    }
}
