//! Received messages and their status.

use crate::rendezvous::{Announced, Done};
use crate::{Address, Tag};
use std::sync::Arc;
use threadwire_wire::{Payload, UnpackError, Unpacker};

/// What is known of a message before it is received: sender, tag, length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sending thread.
    pub source: Address,
    /// The message's tag.
    pub tag: Tag,
    /// Payload length in bytes.
    pub len: usize,
}

/// A received message.
#[derive(Debug)]
pub struct Message {
    pub(crate) source: Address,
    /// The context it was sent in (0: plain point-to-point); receives
    /// match it exactly. Not public: only the group module sends in others.
    pub(crate) context: u32,
    pub(crate) tag: Tag,
    pub(crate) payload: Payload,
    /// What its receipt must still do.
    pub(crate) tail: Tail,
}

/// What receiving a message must still do, besides handing it over.
#[derive(Debug)]
pub(crate) enum Tail {
    /// Nothing: a message of this node.
    None,
    /// An eager message from another node: these bytes go back to its
    /// sender's budget.
    Eager(u32),
    /// The bytes are still to be fetched (`rendezvous`, step 3); the
    /// payload is empty until then.
    Announced(Box<Announced>),
    /// A synchronous send of this node waits for its receipt.
    Sync(Arc<Done>),
}

impl Message {
    /// The sending thread.
    pub fn source(&self) -> Address {
        self.source
    }

    /// The message's tag.
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        match &self.tail {
            Tail::Announced(a) => a.len,
            _ => self.payload.len(),
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sender, tag and length.
    pub fn status(&self) -> Status {
        Status {
            source: self.source,
            tag: self.tag,
            len: self.len(),
        }
    }

    /// The payload.
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The payload, taken out of the message.
    pub fn into_payload(self) -> Payload {
        self.payload
    }

    /// The payload as contiguous bytes (no copy for a message sent as bytes).
    pub fn into_vec(self) -> Vec<u8> {
        self.payload.into_vec()
    }

    /// An unpacker over a message built with a [`Packer`](threadwire_wire::Packer).
    pub fn unpack(self) -> Result<Unpacker, UnpackError> {
        self.payload.unpack()
    }
}
