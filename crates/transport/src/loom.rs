//! The synchronization primitives this crate's lock-free code is built on,
//! swapped for loom's under `--cfg loom` so that the models in
//! `tests/loom_*.rs` explore every interleaving of the shared-memory ring's
//! flow-control protocol.

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::{
        atomic::{fence, AtomicU32, AtomicU64, Ordering},
        Arc,
    },
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
