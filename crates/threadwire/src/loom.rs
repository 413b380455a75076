//! The synchronization primitives this crate's lock-free code is built on,
//! swapped for loom's under `--cfg loom` so that the models in
//! `tests/loom_*.rs` explore every interleaving of the mailbox's incoming
//! stack (as `crates/fiber/src/loom.rs` and `crates/transport/src/loom.rs`
//! do for theirs).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, Ordering};
