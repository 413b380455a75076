//! Benchmarks of threadwire, written against its public API.
//!
//! - [`pingpong`]: one-way latency and bandwidth between two endpoints.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod pingpong;
