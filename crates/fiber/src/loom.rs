//! The synchronization primitives this crate is built on, swapped for loom's
//! under `--cfg loom` so that the models in `tests/loom_*.rs` and the unit
//! models explore every interleaving of the park/unpark and wait-queue
//! protocols.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering},
    Arc, Mutex, MutexGuard,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering},
    Arc, Mutex, MutexGuard,
};

/// Sleeps while `*word == expected` (may return spuriously).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) {
    #[cfg(loom)]
    {
        let _ = (word, expected);
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    atomic_wait::wait(word, expected);
}

/// Wakes one sleeper of `futex_wait` on `word`.
pub(crate) fn futex_wake_one(word: &AtomicU32) {
    #[cfg(loom)]
    let _ = word;
    #[cfg(not(loom))]
    atomic_wait::wake_one(word);
}

/// Locks, ignoring poison: every critical section here leaves its data
/// consistent before anything that can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(loom)]
    return m.lock().unwrap();
    #[cfg(not(loom))]
    m.lock().unwrap_or_else(|e| e.into_inner())
}
