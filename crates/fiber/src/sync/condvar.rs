//! A condition variable over this module's [`Mutex`].
//!
//! 1. `wait` enqueues while the caller still holds the mutex, then unlocks
//!    it and parks until woken, then locks it again.
//! 2. `notify_one` / `notify_all` wake the first / every queued waiter.
//!
//! A notifier that holds the mutex therefore finds every waiter that
//! checked its condition under the mutex before: the waiter was queued
//! before it unlocked. Waking is not tied to one mutex, so a condvar may be
//! used with several (unlike std's, which panics).

use super::mutex::MutexGuard;
use super::wait_queue::{Interest, WaitQueue, Waiter};
use std::fmt;
use std::pin::pin;
use std::time::{Duration, Instant};

/// A condition variable: waits for a notification while releasing a
/// [`Mutex`](super::Mutex). Usable from fibers and OS threads alike.
/// Waits may return spuriously; [`wait_while`](Condvar::wait_while)
/// re-checks the condition for you.
///
/// ```
/// use std::sync::Arc;
/// use threadwire_fiber::sync::{Condvar, Mutex};
///
/// let ready = Arc::new((Mutex::new(false), Condvar::new()));
/// let setter = {
///     let ready = ready.clone();
///     std::thread::spawn(move || {
///         *ready.0.lock() = true;
///         ready.1.notify_all();
///     })
/// };
/// let (flag, condvar) = &*ready;
/// let guard = condvar.wait_while(flag.lock(), |ready| !*ready);
/// assert!(*guard);
/// drop(guard);
/// setter.join().unwrap();
/// ```
pub struct Condvar {
    queue: WaitQueue,
}

/// Whether [`Condvar::wait_timeout`] returned because time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// `true` if the wait ended by timeout rather than a notification.
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

impl Condvar {
    /// A condition variable with no waiters.
    pub fn new() -> Condvar {
        Condvar {
            queue: WaitQueue::new(),
        }
    }

    /// Unlocks the guard's mutex, waits for a notification, locks again.
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let mutex = guard.mutex();
        let waiter = pin!(Waiter::new(&self.queue, Interest::Acquire));
        waiter.as_ref().enqueue_if(|| true);
        drop(guard);
        waiter.as_ref().wait();
        mutex.lock()
    }

    /// Waits while `condition` holds on the data, re-checking it after
    /// each wake-up; returns with the mutex locked and `condition` false.
    pub fn wait_while<'a, T: ?Sized>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T> {
        while condition(&mut *guard) {
            guard = self.wait(guard);
        }
        guard
    }

    /// Like [`wait`](Condvar::wait), but gives up after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use threadwire_fiber::sync::{Condvar, Mutex};
    ///
    /// let (m, c) = (Mutex::new(()), Condvar::new());
    /// let (_guard, result) = c.wait_timeout(m.lock(), Duration::from_millis(1));
    /// assert!(result.timed_out());
    /// ```
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
        let deadline = Instant::now() + timeout;
        let mutex = guard.mutex();
        let waiter = pin!(Waiter::new(&self.queue, Interest::Acquire));
        waiter.as_ref().enqueue_if(|| true);
        drop(guard);
        let woken = waiter.as_ref().wait_deadline(deadline).is_some();
        (mutex.lock(), WaitTimeoutResult(!woken))
    }

    /// Wakes one waiter, the longest waiting.
    pub fn notify_one(&self) {
        // Relaxed is enough: a notifier holding the mutex synchronized with
        // every waiter queued before its unlock (module docs).
        if self.queue.has_waiters() {
            self.queue.wake_one();
        }
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        if self.queue.has_waiters() {
            self.queue.wake_all();
        }
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::Mutex;
    use super::*;
    use std::sync::Arc;

    #[test]
    fn notify_one_wakes_one_waiter_at_a_time() {
        let shared = Arc::new((Mutex::new(0u32), Condvar::new()));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let (m, c) = &*shared;
                    let mut tickets = c.wait_while(m.lock(), |t| *t == 0);
                    *tickets -= 1;
                })
            })
            .collect();
        for _ in 0..3 {
            *shared.0.lock() += 1;
            shared.1.notify_one();
        }
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*shared.0.lock(), 0);
    }

    #[test]
    fn notified_wait_timeout_is_not_timed_out() {
        let shared = Arc::new((Mutex::new(false), Condvar::new()));
        let waiter = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let (m, c) = &*shared;
                let mut guard = m.lock();
                while !*guard {
                    let (g, result) = c.wait_timeout(guard, Duration::from_secs(60));
                    assert!(!result.timed_out() || *g);
                    guard = g;
                }
            })
        };
        *shared.0.lock() = true;
        shared.1.notify_all();
        waiter.join().unwrap();
    }
}
