//! Typed pack/unpack: turning numbers, arrays and strings into a [`Payload`]
//! and back, in one of four [`Encoding`]s.
//!
//! ```
//! use threadwire_wire::{Encoding, Packer};
//!
//! let mut packer = Packer::new(Encoding::Portable);
//! packer.pack(42u16).pack_slice(&[0.5f64, -1.0]).pack_str("grüße");
//! let payload = packer.finish();
//!
//! let mut unpacker = payload.unpack().unwrap();
//! assert_eq!(unpacker.unpack::<u16>().unwrap(), 42);
//! assert_eq!(unpacker.unpack_vec::<f64>().unwrap(), [0.5, -1.0]);
//! assert_eq!(unpacker.unpack_string().unwrap(), "grüße");
//! assert!(unpacker.is_done());
//! ```
//!
//! # Item layout
//!
//! A packed payload is a sequence of items with no padding between or inside
//! them. Each starts with a one-byte code:
//!
//! | item | code | then |
//! |---|---|---|
//! | scalar | type code, 1..=10 | the value |
//! | slice or vec | `0x80` \| type code | u32 element count, then the elements |
//! | string (UTF-8) | 11 | u32 byte count, then the bytes |
//! | bytes | 12 | u32 byte count, then the bytes |
//!
//! Type codes: 1 `u8`, 2 `i8`, 3 `u16`, 4 `i16`, 5 `u32`, 6 `i32`, 7 `u64`,
//! 8 `i64`, 9 `f32`, 10 `f64` (see [`Scalar::CODE`]). Values and counts are
//! in the payload's byte order ([`Format::order`](crate::Format)): big-endian
//! for [`Encoding::Portable`], the sender's order for the other three.
//!
//! For example, `pack(7u16)` then `pack_str("hi")` under `Portable` is
//! `03 00 07  0b 00 00 00 02 68 69`.
//!
//! # Reading untrusted bytes
//!
//! Payloads arrive from the network, so the [`Unpacker`] holds to these rules:
//!
//! 1. Every element count is checked against the bytes that remain before
//!    anything is allocated: a corrupt count of four billion costs nothing
//!    and is reported as [`UnpackError::Truncated`].
//! 2. Values are copied out of the payload into the destination's own
//!    (aligned) memory and swapped there; payload bytes are never
//!    reinterpreted in place, since items sit at any byte offset.
//! 3. An item may straddle segments (an in-place vector is its own segment
//!    after the header's); reads walk segments generically.
//! 4. A failed read consumes nothing: the unpacker stays before the item, so
//!    a caller may try another type.
//!
//! [`Payload`]: crate::Payload
//! [`Encoding`]: crate::Encoding
//! [`Encoding::Portable`]: crate::Encoding::Portable

mod packer;
mod scalar;
mod unpacker;

pub use packer::Packer;
pub use scalar::Scalar;
pub use unpacker::Unpacker;

use crate::payload::ByteOrder;

/// Added to a type code to mark a slice of that type.
const SLICE_FLAG: u8 = 0x80;
/// Code of a UTF-8 string item.
const STRING_CODE: u8 = 11;
/// Code of an untyped byte-string item.
const BYTES_CODE: u8 = 12;
/// Bytes of the element count that follows a slice, string or bytes code.
const COUNT_LEN: usize = 4;

/// What a code names, for error messages; `None` for codes no item uses.
fn item_name(code: u8) -> Option<&'static str> {
    match code {
        STRING_CODE => Some("string"),
        BYTES_CODE => Some("bytes"),
        _ if code & SLICE_FLAG != 0 => scalar::slice_name(code & !SLICE_FLAG),
        _ => scalar::scalar_name(code),
    }
}

/// An element count as it is written, in `order`.
fn count_bytes(count: u32, order: ByteOrder) -> [u8; COUNT_LEN] {
    match order {
        ByteOrder::Little => count.to_le_bytes(),
        ByteOrder::Big => count.to_be_bytes(),
    }
}

/// Why typed data could not be read from a payload.
///
/// Every variant but [`NotPacked`](UnpackError::NotPacked) and
/// [`ForeignByteOrder`](UnpackError::ForeignByteOrder) comes from a read, and
/// leaves the [`Unpacker`] where it was before that read.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnpackError {
    /// The payload holds opaque bytes, not packed items.
    #[error("payload is opaque bytes, not packed data")]
    NotPacked,
    /// Raw or in-place data from a machine of the other byte order; the
    /// sender should have used `Portable` or `ReceiverMakesRight`.
    #[error("raw data in {found:?}-endian byte order cannot be read on this machine")]
    ForeignByteOrder {
        /// The byte order the payload is tagged with.
        found: ByteOrder,
    },
    /// The next item is of another type than the one asked for.
    #[error("expected {expected}, found {found}")]
    TypeMismatch {
        /// The item asked for, e.g. `"u32"`, `"[f64]"`, `"string"`.
        expected: &'static str,
        /// The item the payload holds next.
        found: &'static str,
    },
    /// The next item's code is none that a packer writes: corrupt data or
    /// a read out of step with the writes.
    #[error("expected {expected}, found unknown item code {code:#04x}")]
    UnknownCode {
        /// The item asked for.
        expected: &'static str,
        /// The code byte found.
        code: u8,
    },
    /// The item needs more bytes than the payload has left.
    #[error("item needs {needed} bytes, only {available} remain")]
    Truncated {
        /// Bytes the next part of the item needs.
        needed: usize,
        /// Bytes left in the payload.
        available: usize,
    },
    /// [`Unpacker::unpack_into`] was given a slice of another length than
    /// the item's element count.
    #[error("destination holds {expected} elements, item has {found}")]
    LengthMismatch {
        /// Length of the destination slice.
        expected: usize,
        /// Element count of the item.
        found: usize,
    },
    /// A string item is not valid UTF-8.
    #[error("string item is not valid UTF-8")]
    InvalidUtf8,
    /// An element count too large for this machine's address space.
    #[error("item of {count} elements is too large for this machine")]
    TooLong {
        /// The element count found.
        count: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_a_packer_writes_has_a_name() {
        for code in 1..=10u8 {
            assert!(item_name(code).is_some());
            assert!(item_name(code | SLICE_FLAG).is_some());
        }
        assert_eq!(item_name(STRING_CODE), Some("string"));
        assert_eq!(item_name(BYTES_CODE), Some("bytes"));
        assert_eq!(item_name(9 | SLICE_FLAG), Some("[f32]"));
    }

    #[test]
    fn unused_codes_have_no_name() {
        for code in [0, 13, 0x7f, 0x80, 0x8b, 0x8c, 0xff] {
            assert_eq!(item_name(code), None, "code {code:#04x}");
        }
    }
}
