//! The shared-memory channel between two nodes on one host.
//!
//! [`ring`] is its lock-free core: a multi-producer, single-consumer ring of
//! variable-length records in memory mapped by both processes.
//! [`region`] makes that memory: an anonymous memfd, opened by the peer
//! through `/proc/<pid>/fd`, so no name ever exists in `/dev/shm`.
//!
//! The channel built on them (next) keeps the pair's authenticated TCP
//! connection for what is not data: setting up (the region offer and its
//! acceptance, which also tells whether both nodes share a host), the
//! consumer's doorbell (a frame sent only when the ring's `sleeping` flag
//! says the peer sleeps in `epoll_wait`), goodbye and loss detection.
//! Frames too large for one record go by cross-memory attach
//! (`process_vm_readv`) when the kernel allows it, else in fragments.

#[doc(hidden)]
pub mod ring;

#[doc(hidden)]
pub mod region;
