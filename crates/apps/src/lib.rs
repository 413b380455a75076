//! Distributed applications on threadwire, written against the public API
//! only, as a user would write them.
//!
//! - [`matmul`]: the host–node matrix multiply.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod matmul;
