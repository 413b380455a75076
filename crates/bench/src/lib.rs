//! Benchmarks of threadwire, written against its public API.
//!
//! - [`pingpong`]: one-way latency and bandwidth between two endpoints.
//! - [`threads`]: the classic thread-package measurements, fibers beside
//!   OS threads.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod pingpong;
pub mod threads;
