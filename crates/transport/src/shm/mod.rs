//! The shared-memory channel between two nodes on one host.
//!
//! - [`ring`] is its lock-free core: a multi-producer, single-consumer ring
//!   of variable-length records in memory mapped by both processes, with
//!   its flow-control, sleeping and waiting-for-space steps.
//! - [`region`] makes that memory: an anonymous memfd, opened by the peer
//!   through `/proc/<pid>/fd`, so no name ever exists in `/dev/shm` and
//!   nothing outlives the two processes, however they end.
//! - [`setup`] is the offer and acceptance over the pair's TCP connection,
//!   which also tells whether both nodes share a host and whether each may
//!   read the other's memory.
//! - [`ShmChannel`] carries frames: small ones inline in the ring, large
//!   ones by rendezvous and one cross-memory copy (`process_vm_readv`), or
//!   in chunks where the kernel refuses that.
//!
//! The pair's TCP connection stays open beside it for what is not data:
//! the [`Doorbell`] (a frame the channel sends itself, only when the ring's
//! `sleeping` or `wanted` word says the peer waits in `epoll_wait`) and
//! loss detection (end of stream; the engine drains the ring before it
//! believes one).

// The ring alone is modelled under loom; the channel needs real memory.
#[cfg(not(loom))]
mod channel;
#[cfg(not(loom))]
mod cma;
#[cfg(not(loom))]
mod doorbell;
#[doc(hidden)]
pub mod region;
#[doc(hidden)]
pub mod ring;
#[cfg(not(loom))]
pub mod setup;

#[cfg(not(loom))]
pub use channel::{pull, ShmChannel, ShmConfig, ShmError, COPY_WINDOW};
#[cfg(not(loom))]
pub use doorbell::Doorbell;
