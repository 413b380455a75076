//! Where a posted receive's result lands: a slot completed once by any
//! thread and read by its owner, without a lock of its own.
//!
//! Rules (the mailbox keeps them; the loom model in
//! `tests/loom_mailbox.rs` checks the slot under them):
//!
//! 1. The slot is completed at most once, by whoever removed it from its
//!    mailbox's posted queue (a delivery, or a loss failing it) — so there
//!    is one writer.
//! 2. The writer stores the result, then sets `done` (Release).
//! 3. Only the owner reads the result, and only after seeing `done`
//!    (Acquire), so the write is complete and visible and nobody writes
//!    any more.
//! 4. The arrival stamp is written before `done` and read by the owner
//!    under the mailbox lock the writer held (rule 5 of the mailbox).

use crate::loom::{AtomicBool, AtomicU64, Ordering, UnsafeCell};

/// A once-completed result slot (module docs, rules 1–4).
#[derive(Debug)]
pub struct Slot<T> {
    done: AtomicBool,
    result: UnsafeCell<Option<T>>,
    /// Arrival stamp of the message that completed it (rule 4).
    arrival: AtomicU64,
}

// SAFETY: `result` is written by one thread before `done` is set (Release)
// and read only by the owner after seeing `done` (Acquire); rules 1–3. The
// value moves between threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Slot<T> {}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot::new()
    }
}

impl<T> Slot<T> {
    /// An empty slot.
    pub fn new() -> Slot<T> {
        Slot {
            done: AtomicBool::new(false),
            result: UnsafeCell::new(None),
            arrival: AtomicU64::new(0),
        }
    }

    /// Whether the result is there.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Stores the result and its arrival stamp (rule 2).
    ///
    /// # Safety
    ///
    /// At most once per slot, by the one thread that removed it from the
    /// posted queue (rule 1).
    pub unsafe fn complete(&self, result: T, arrival: u64) {
        self.arrival.store(arrival, Ordering::Relaxed);
        // SAFETY: the only writer (the caller's contract), and nobody reads
        // before `done` is set below.
        self.result.with_mut(|r| unsafe { *r = Some(result) });
        self.done.store(true, Ordering::Release);
    }

    /// The result, once [`is_done`](Self::is_done) (rule 3); `None` before,
    /// and after it was taken.
    ///
    /// # Safety
    ///
    /// Only the slot's owner calls it, never from two threads at once.
    pub unsafe fn take(&self) -> Option<T> {
        if !self.is_done() {
            return None;
        }
        // SAFETY: `done` was seen, so the one write is complete and
        // visible; the owner is the only reader (the caller's contract).
        self.result.with_mut(|r| unsafe { (*r).take() })
    }

    /// The result, left in place, once [`is_done`](Self::is_done).
    ///
    /// # Safety
    ///
    /// As [`take`](Self::take): only the owner, never from two threads at
    /// once, and the reference is dropped before the owner takes it.
    pub unsafe fn peek(&self) -> Option<&T> {
        if !self.is_done() {
            return None;
        }
        // SAFETY: `done` was seen, so the one write is complete and
        // visible and nobody writes any more; the owner alone reads.
        self.result.with(|r| unsafe { (*r).as_ref() })
    }

    /// The arrival stamp stored by [`complete`](Self::complete).
    pub fn arrival(&self) -> u64 {
        self.arrival.load(Ordering::Relaxed)
    }
}
