//! Bytes on the wire for threadwire: frame headers, data encodings, and typed
//! pack/unpack. This crate does no I/O; the transport moves what it builds.
//!
//! ```
//! use threadwire_wire::{Encoding, FrameHeader, FrameKind, Packer};
//!
//! let mut packer = Packer::new(Encoding::Portable);
//! packer.pack(7u32).pack_slice(&[1.5f64, 2.5]).pack_str("hello");
//! let payload = packer.finish();
//!
//! let header = FrameHeader::data(1, 4, 99, payload.format(), payload.len() as u64);
//! let bytes = header.encode();
//! assert_eq!(FrameHeader::decode(&bytes, 1 << 20).unwrap(), header);
//!
//! let mut unpacker = payload.unpack().unwrap();
//! assert_eq!(unpacker.unpack::<u32>().unwrap(), 7);
//! assert_eq!(unpacker.unpack_vec::<f64>().unwrap(), vec![1.5, 2.5]);
//! assert_eq!(unpacker.unpack_string().unwrap(), "hello");
//! ```
#![warn(missing_docs)]

mod bytes;
mod frame;
pub mod mcast;
mod pack;
mod payload;
pub mod pmi;

pub use bytes::{FrameBytes, INLINE_LEN};
pub use frame::*;
pub use pack::*;
pub use payload::*;
