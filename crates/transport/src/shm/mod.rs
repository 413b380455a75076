//! The shared-memory channel between two nodes on one host.
//!
//! [`ring`] is its lock-free core: a multi-producer, single-consumer ring of
//! variable-length records in memory mapped by both processes.

#[doc(hidden)]
pub mod ring;

#[doc(hidden)]
pub mod region;
