//! A watched 32-bit word: wait until its value satisfies a condition.
//!
//! Waiting is event-driven: a waiter's condition sits in its queue node
//! (`Interest::Condition`), and every modification made through `Word`
//! evaluates the queued conditions against the new value and wakes exactly
//! the waiters whose condition holds. Without waiters a modification costs
//! its atomic read-modify-write plus one load of the queue length.
//!
//! 1. `wait_until(f)` returns if `f(load())` holds; otherwise an OS thread
//!    spins for the spin budget re-testing it (a fiber does not spin).
//! 2. Then the waiter enqueues (publishing the queue length `len`) and,
//!    under the queue lock, re-reads the value with a read-modify-write
//!    (`fetch_add(0)`) and tests `f`; if it holds it leaves, else parks.
//! 3. A modification is a read-modify-write (`store` is a `swap`), then a
//!    load of `len`. If `len` is non-zero it takes the queue lock, loads the
//!    value, and wakes every waiter whose condition holds, handing it that
//!    value.
//!
//! No wake-up is lost, and without `SeqCst`: the word has no spare bit for
//! a "waiters" mark, so step 2's `len` store and value re-read pair with
//! step 3's modification and `len` load. Every access to the value is a
//! read-modify-write (AcqRel), so the waiter's re-read and the modification
//! are ordered in the value's modification order. If the re-read comes
//! first, the modification reads from it and synchronizes with it, so the
//! `len` load sees the waiter counted. If the modification comes first,
//! the re-read sees the new value (or a later one, whose own modification
//! runs step 3).

use super::wait_queue::{Interest, Pick, WaitQueue, Waiter};
use crate::loom::{AtomicU32, Ordering};
use crate::spin::SpinWait;
use std::fmt;
use std::pin::pin;

/// A 32-bit word that fibers and OS threads can wait on until its value
/// satisfies a condition; every change made through its methods wakes
/// exactly the waiters whose condition now holds.
///
/// ```
/// use std::sync::Arc;
/// use threadwire_fiber::sync::Word;
///
/// let pending = Arc::new(Word::new(3));
/// let workers: Vec<_> = (0..3)
///     .map(|_| {
///         let pending = pending.clone();
///         std::thread::spawn(move || {
///             pending.fetch_sub(1);
///         })
///     })
///     .collect();
/// pending.wait_equal(0);
/// for w in workers {
///     w.join().unwrap();
/// }
/// ```
pub struct Word {
    value: AtomicU32,
    queue: WaitQueue,
}

impl Word {
    /// A word holding `value`, with no waiters.
    pub fn new(value: u32) -> Word {
        Word {
            value: AtomicU32::new(value),
            queue: WaitQueue::new(),
        }
    }

    /// The current value.
    pub fn load(&self) -> u32 {
        self.value.load(Ordering::Acquire)
    }

    /// Sets the value, waking the waiters it satisfies.
    pub fn store(&self, value: u32) {
        self.swap(value);
    }

    /// Sets the value and returns the old one, waking the waiters it
    /// satisfies.
    pub fn swap(&self, value: u32) -> u32 {
        let old = self.value.swap(value, Ordering::AcqRel);
        self.changed();
        old
    }

    /// Adds `delta` (wrapping) and returns the old value, waking the
    /// waiters the new value satisfies.
    pub fn fetch_add(&self, delta: u32) -> u32 {
        let old = self.value.fetch_add(delta, Ordering::AcqRel);
        self.changed();
        old
    }

    /// Subtracts `delta` (wrapping) and returns the old value, waking the
    /// waiters the new value satisfies.
    pub fn fetch_sub(&self, delta: u32) -> u32 {
        let old = self.value.fetch_sub(delta, Ordering::AcqRel);
        self.changed();
        old
    }

    /// Replaces `current` by `new` if the word holds `current`: `Ok(old)`
    /// on success (waking the waiters `new` satisfies), `Err(actual)` if it
    /// held another value.
    pub fn compare_exchange(&self, current: u32, new: u32) -> Result<u32, u32> {
        let result = self
            .value
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire);
        if result.is_ok() {
            self.changed();
        }
        result
    }

    /// Waits until `condition(value)` holds and returns that value.
    ///
    /// `condition` may run on other threads, inside their modifications of
    /// the word and under its queue lock, so it must be quick, must not
    /// block, and must not touch this word.
    ///
    /// ```
    /// use threadwire_fiber::sync::Word;
    ///
    /// let w = Word::new(5);
    /// assert_eq!(w.wait_until(|v| v % 5 == 0), 5);
    /// ```
    pub fn wait_until(&self, condition: impl Fn(u32) -> bool + Sync) -> u32 {
        let value = self.load();
        if condition(value) {
            return value;
        }
        if !crate::in_fiber() {
            let mut spin = SpinWait::new();
            while spin.spin() {
                let value = self.load();
                if condition(value) {
                    return value;
                }
            }
        }
        self.wait_queued(&condition)
    }

    /// Waits until the word holds `value`.
    pub fn wait_equal(&self, value: u32) {
        self.wait_until(|v| v == value);
    }

    /// Waits until the word holds less than `bound`; returns the value.
    pub fn wait_less_than(&self, bound: u32) -> u32 {
        self.wait_until(|v| v < bound)
    }

    /// Step 2 of the module docs.
    #[cold]
    fn wait_queued(&self, condition: &(dyn Fn(u32) -> bool + Sync)) -> u32 {
        let waiter = pin!(Waiter::new(&self.queue, Interest::Condition(condition)));
        let mut seen = 0;
        let parked = waiter.as_ref().enqueue_if(|| {
            seen = self.value.fetch_add(0, Ordering::AcqRel);
            !condition(seen)
        });
        if parked {
            seen = waiter.as_ref().wait();
        }
        seen
    }

    /// Step 3 of the module docs.
    fn changed(&self) {
        if self.queue.has_waiters() {
            self.wake_satisfied();
        }
    }

    #[cold]
    fn wake_satisfied(&self) {
        let mut value = None;
        self.queue.wake_where(|interest| {
            let value = *value.get_or_insert_with(|| self.value.load(Ordering::Acquire));
            match interest {
                Interest::Condition(condition) if condition(value) => Pick::Wake(value),
                _ => Pick::Skip,
            }
        });
    }
}

impl Default for Word {
    fn default() -> Self {
        Self::new(0)
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Word")
            .field("value", &self.load())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn modifications_return_old_values() {
        let w = Word::new(1);
        assert_eq!(w.fetch_add(2), 1);
        assert_eq!(w.fetch_sub(1), 3);
        assert_eq!(w.swap(9), 2);
        assert_eq!(w.compare_exchange(9, 4), Ok(9));
        assert_eq!(w.compare_exchange(9, 5), Err(4));
        w.store(0);
        assert_eq!(w.fetch_sub(1), 0);
        assert_eq!(w.load(), u32::MAX);
        assert_eq!(
            format!("{w:?}"),
            format!("Word {{ value: {}, .. }}", u32::MAX)
        );
    }

    #[test]
    fn wakes_exactly_the_satisfied_waiters() {
        let w = Arc::new(Word::new(0));
        let spawn = |target: u32| {
            let w = w.clone();
            std::thread::spawn(move || w.wait_until(|v| v >= target))
        };
        let low = spawn(1);
        let high = spawn(10);
        while w.queue.len() < 2 {
            std::thread::yield_now();
        }
        w.store(5);
        assert_eq!(low.join().unwrap(), 5);
        // The high waiter stays queued until its condition holds.
        assert!(w.queue.has_waiters());
        w.fetch_add(5);
        assert_eq!(high.join().unwrap(), 10);
    }

    #[test]
    fn less_than_and_equal() {
        let w = Arc::new(Word::new(3));
        let t = {
            let w = w.clone();
            std::thread::spawn(move || {
                w.wait_equal(7);
                w.store(0);
            })
        };
        w.store(7);
        assert_eq!(w.wait_less_than(1), 0);
        t.join().unwrap();
    }
}
