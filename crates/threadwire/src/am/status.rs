//! The status byte that ends every answer and report (protocol steps 4
//! and 5): an answer is the handler's bytes and `0`; anything else is the
//! text of what went wrong, the handler's id (8 bytes, little-endian) and
//! the status.

use threadwire_wire::Payload;

/// What an answer or report says.
#[allow(missing_docs)] // for the fuzz target only
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The handler's answer.
    Answer = 0,
    /// The request was not answered.
    NoReply = 1,
    /// The handler panicked; the text is its message.
    Panicked = 2,
    /// No handler of this id.
    Unknown = 3,
    /// A fiber handler could not start; the text says why.
    NoFiber = 4,
    /// A large message's buffer provider refused it; the text says its length.
    Refused = 5,
}

/// A failure as the requester decodes it.
#[allow(missing_docs)] // for the fuzz target only
#[derive(Debug, PartialEq, Eq)]
pub struct Failed {
    pub status: Status,
    pub id: u64,
    pub text: String,
}

impl Status {
    /// The status's bytes: for an answer the one byte to append to the
    /// handler's, for a failure the whole payload.
    pub fn encode(self, id: u64, text: &str) -> Vec<u8> {
        if self == Status::Answer {
            return vec![0];
        }
        let mut b = Vec::with_capacity(text.len() + 9);
        b.extend_from_slice(text.as_bytes());
        b.extend_from_slice(&id.to_le_bytes());
        b.push(self as u8);
        b
    }

    fn from_byte(b: u8) -> Option<Status> {
        Some(match b {
            0 => Status::Answer,
            1 => Status::NoReply,
            2 => Status::Panicked,
            3 => Status::Unknown,
            4 => Status::NoFiber,
            5 => Status::Refused,
            _ => return None,
        })
    }
}

/// The answer's bytes, or what failed. Bytes no correct node sends (no
/// status, an unknown one, a failure shorter than its id) decode as a
/// failure with the status [`Status::Unknown`] and a text saying so.
pub fn decode(payload: Payload) -> Result<Payload, Failed> {
    let format = payload.format();
    let mut bytes = payload.into_vec();
    let malformed = |why: &str| Failed {
        status: Status::Unknown,
        id: 0,
        text: format!("malformed answer: {why}"),
    };
    let status = match bytes.pop().map(Status::from_byte) {
        Some(Some(s)) => s,
        Some(None) => return Err(malformed("unknown status")),
        None => return Err(malformed("empty")),
    };
    if status == Status::Answer {
        return Ok(Payload::from_wire(format, bytes));
    }
    let Some(at) = bytes.len().checked_sub(8) else {
        return Err(malformed("too short"));
    };
    let mut id = [0u8; 8];
    id.copy_from_slice(&bytes[at..]);
    bytes.truncate(at);
    Err(Failed {
        status,
        id: u64::from_le_bytes(id),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_failures_round_trip() {
        let mut answer = Payload::from_vec(b"result".to_vec());
        answer.push_bytes(Status::Answer.encode(7, "ignored"));
        assert_eq!(decode(answer).unwrap().into_vec(), b"result");
        let failed = Payload::from_vec(Status::Panicked.encode(0xabcd, "boom"));
        assert_eq!(
            decode(failed).unwrap_err(),
            Failed {
                status: Status::Panicked,
                id: 0xabcd,
                text: "boom".into()
            }
        );
    }

    #[test]
    fn malformed_answers_are_failures() {
        for bytes in [vec![], vec![9], vec![1, 2, 3, 2]] {
            let got = decode(Payload::from_vec(bytes.clone()));
            assert!(got.is_err(), "{bytes:?}");
        }
    }
}
