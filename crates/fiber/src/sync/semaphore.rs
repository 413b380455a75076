//! A counting semaphore for fibers and OS threads.
//!
//! One atomic word holds the permits (`permits << 1`) and, in bit 0,
//! `WAITERS`: someone may be queued.
//!
//! 1. `wait` takes a permit with a CAS. If there is none, an OS thread
//!    spins for the spin budget retrying; a fiber does not spin.
//! 2. Then the waiter enqueues and, under the queue lock, either takes a
//!    permit after all, or sets `WAITERS` and parks.
//! 3. `post` adds a permit; if `WAITERS` was set it wakes the first waiter
//!    and, if the queue is now empty, clears `WAITERS` under the queue lock.
//! 4. A woken waiter goes back to step 1 without spinning: it competes
//!    with threads that never queued, and re-enqueues if it loses.
//!
//! No wake-up is lost: `WAITERS` is cleared only under the queue lock when
//! the queue is empty, so while a waiter is queued every `post` sees it.

use super::wait_queue::{Interest, WaitQueue, Waiter};
use crate::loom::{AtomicU32, Ordering};
use crate::spin::SpinWait;
use std::fmt;
use std::pin::pin;

const WAITERS: u32 = 1;
const ONE_PERMIT: u32 = 2;

/// A counting semaphore: [`wait`](Semaphore::wait) takes a permit, waiting
/// for one if there is none, [`post`](Semaphore::post) gives one back.
/// Usable from fibers and OS threads alike.
///
/// ```
/// use std::sync::Arc;
/// use threadwire_fiber::sync::Semaphore;
///
/// // At most two threads at a time in the section below.
/// let slots = Arc::new(Semaphore::new(2));
/// let threads: Vec<_> = (0..5)
///     .map(|_| {
///         let slots = slots.clone();
///         std::thread::spawn(move || {
///             slots.wait();
///             // ... at most two threads here ...
///             slots.post();
///         })
///     })
///     .collect();
/// for t in threads {
///     t.join().unwrap();
/// }
/// assert_eq!(slots.value(), 2);
/// ```
pub struct Semaphore {
    state: AtomicU32,
    queue: WaitQueue,
}

impl Semaphore {
    /// The most permits a semaphore can hold, 2³¹ − 1.
    pub const MAX_PERMITS: u32 = u32::MAX >> 1;

    /// A semaphore holding `permits` permits.
    ///
    /// # Panics
    /// If `permits` exceeds [`MAX_PERMITS`](Semaphore::MAX_PERMITS).
    pub fn new(permits: u32) -> Semaphore {
        assert!(
            permits <= Self::MAX_PERMITS,
            "Semaphore::new: {permits} permits exceed MAX_PERMITS"
        );
        Semaphore {
            state: AtomicU32::new(permits << 1),
            queue: WaitQueue::new(),
        }
    }

    /// Takes a permit, waiting for one if there is none.
    pub fn wait(&self) {
        if self.try_wait() {
            return;
        }
        if !crate::in_fiber() {
            let mut spin = SpinWait::new();
            while spin.spin() {
                if self.try_wait() {
                    return;
                }
            }
        }
        self.wait_queued();
    }

    /// Takes a permit if one is available, without waiting.
    ///
    /// ```
    /// use threadwire_fiber::sync::Semaphore;
    ///
    /// let s = Semaphore::new(1);
    /// assert!(s.try_wait());
    /// assert!(!s.try_wait());
    /// s.post();
    /// assert!(s.try_wait());
    /// ```
    pub fn try_wait(&self) -> bool {
        let mut state = self.state.load(Ordering::Relaxed);
        while state >= ONE_PERMIT {
            match self.state.compare_exchange_weak(
                state,
                state - ONE_PERMIT,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
        false
    }

    /// Gives a permit back, waking a waiter if there is one.
    ///
    /// # Panics
    /// If the semaphore already holds
    /// [`MAX_PERMITS`](Semaphore::MAX_PERMITS).
    pub fn post(&self) {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            assert!(
                state >> 1 < Self::MAX_PERMITS,
                "Semaphore::post: more than MAX_PERMITS permits"
            );
            match self.state.compare_exchange_weak(
                state,
                state + ONE_PERMIT,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        if state & WAITERS != 0 {
            self.wake_one();
        }
    }

    /// The permits available now (a snapshot).
    pub fn value(&self) -> u32 {
        self.state.load(Ordering::Relaxed) >> 1
    }

    /// Steps 2 and 4 of the module docs.
    #[cold]
    fn wait_queued(&self) {
        let waiter = pin!(Waiter::new(&self.queue, Interest::Acquire));
        loop {
            if !waiter.as_ref().enqueue_if(|| self.take_or_mark()) {
                return;
            }
            waiter.as_ref().wait();
            if self.try_wait() {
                return;
            }
        }
    }

    /// Under the queue lock: takes a permit (`false`: need not park) or
    /// sets `WAITERS` (`true`).
    fn take_or_mark(&self) -> bool {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            let (new, park) = if state >= ONE_PERMIT {
                (state - ONE_PERMIT, false)
            } else if state & WAITERS != 0 {
                return true;
            } else {
                (state | WAITERS, true)
            };
            match self
                .state
                .compare_exchange(state, new, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return park,
                Err(now) => state = now,
            }
        }
    }

    /// Step 3, after the permit was added.
    #[cold]
    fn wake_one(&self) {
        self.queue.wake_first_then(|left| {
            if left == 0 {
                self.state.fetch_and(!WAITERS, Ordering::Relaxed);
            }
        });
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("value", &self.value())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_permits() {
        let s = Semaphore::new(2);
        assert_eq!(s.value(), 2);
        s.wait();
        assert!(s.try_wait());
        assert!(!s.try_wait());
        s.post();
        assert_eq!(s.value(), 1);
        assert_eq!(format!("{s:?}"), "Semaphore { value: 1, .. }");
    }

    #[test]
    fn post_wakes_a_parked_waiter_and_clears_the_mark() {
        let s = Arc::new(Semaphore::new(0));
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || s.wait())
        };
        while !s.queue.has_waiters() {
            std::thread::yield_now();
        }
        s.post();
        waiter.join().unwrap();
        assert_eq!(s.state.load(Ordering::Relaxed), 0);
    }

    #[test]
    #[should_panic(expected = "exceed MAX_PERMITS")]
    fn too_many_permits() {
        Semaphore::new(u32::MAX);
    }
}
