//! Distributed applications on threadwire, written against the public API
//! only, as a user would write them.
//!
//! - [`matmul`]: the host–node matrix multiply.
#![warn(missing_docs)]

pub mod matmul;
