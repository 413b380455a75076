//! The synchronization primitives this crate's lock-free code is built on,
//! swapped for loom's under `--cfg loom` so that the models in
//! `tests/loom_*.rs` explore every interleaving of the mailbox's receive
//! slot (as `crates/fiber/src/loom.rs` and `crates/transport/src/loom.rs`
//! do for theirs).

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `std`'s cell with loom's access API, so that one source serves both.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to the value; the caller upholds the
    /// aliasing rules when it dereferences it.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer for reading the value.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
}
