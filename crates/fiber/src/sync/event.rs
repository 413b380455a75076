//! A one-shot event: set once, then every wait returns.
//!
//! One atomic word, `UNSET`, `UNSET_WAITING` (someone may be queued) or
//! `SET`:
//!
//! 1. `wait` returns if the word is `SET`; otherwise an OS thread spins for
//!    the spin budget re-reading it (a fiber does not spin).
//! 2. Then the waiter enqueues and, under the queue lock, turns `UNSET`
//!    into `UNSET_WAITING`; if it finds `SET` it leaves, otherwise parks.
//! 3. `set` swaps the word to `SET`; if it was `UNSET_WAITING`, it wakes
//!    every waiter.

use super::wait_queue::{Interest, WaitQueue, Waiter};
use crate::loom::{AtomicU32, Ordering};
use crate::spin::SpinWait;
use std::fmt;
use std::pin::pin;
use std::time::{Duration, Instant};

const UNSET: u32 = 0;
const UNSET_WAITING: u32 = 1;
const SET: u32 = 2;

/// A one-shot event: [`set`](Event::set) releases every waiter, and later
/// [`wait`](Event::wait)s return at once. Usable from fibers and OS
/// threads alike. What the setter wrote before `set` is visible to a
/// waiter after `wait`.
///
/// ```
/// use std::sync::Arc;
/// use threadwire_fiber::sync::Event;
///
/// let started = Arc::new(Event::new());
/// let worker = {
///     let started = started.clone();
///     std::thread::spawn(move || started.set())
/// };
/// started.wait();
/// assert!(started.is_set());
/// worker.join().unwrap();
/// ```
pub struct Event {
    state: AtomicU32,
    queue: WaitQueue,
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}

impl Event {
    /// An event not yet set.
    pub fn new() -> Event {
        Event {
            state: AtomicU32::new(UNSET),
            queue: WaitQueue::new(),
        }
    }

    /// Sets the event, releasing every waiter. Setting it again does
    /// nothing.
    pub fn set(&self) {
        if self.state.swap(SET, Ordering::Release) == UNSET_WAITING {
            self.queue.wake_all();
        }
    }

    /// Whether the event is set.
    pub fn is_set(&self) -> bool {
        self.state.load(Ordering::Acquire) == SET
    }

    /// Waits until the event is set.
    pub fn wait(&self) {
        self.wait_inner(None);
    }

    /// Waits until the event is set or `timeout` passes; returns
    /// [`is_set`](Event::is_set).
    ///
    /// ```
    /// use std::time::Duration;
    /// use threadwire_fiber::sync::Event;
    ///
    /// let e = Event::new();
    /// assert!(!e.wait_timeout(Duration::from_millis(1)));
    /// e.set();
    /// assert!(e.wait_timeout(Duration::from_millis(1)));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.wait_inner(Some(Instant::now() + timeout))
    }

    fn wait_inner(&self, deadline: Option<Instant>) -> bool {
        if self.is_set() {
            return true;
        }
        if !crate::in_fiber() {
            let mut spin = SpinWait::new();
            while spin.spin() {
                if self.is_set() {
                    return true;
                }
            }
        }
        let waiter = pin!(Waiter::new(&self.queue, Interest::Observe));
        let parked = waiter.as_ref().enqueue_if(|| {
            match self.state.compare_exchange(
                UNSET,
                UNSET_WAITING,
                Ordering::Relaxed,
                Ordering::Acquire,
            ) {
                Ok(_) | Err(UNSET_WAITING) => true,
                Err(_) => false,
            }
        });
        if parked {
            match deadline {
                None => {
                    waiter.as_ref().wait();
                }
                Some(deadline) => {
                    waiter.as_ref().wait_deadline(deadline);
                }
            }
        }
        // Only `set` wakes, so a woken waiter finds `SET` here.
        self.is_set()
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("set", &self.is_set())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn set_releases_every_waiter_and_later_waits() {
        let e = Arc::new(Event::new());
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let e = e.clone();
                std::thread::spawn(move || e.wait())
            })
            .collect();
        std::thread::sleep(Duration::from_millis(5));
        e.set();
        e.set();
        for w in waiters {
            w.join().unwrap();
        }
        e.wait();
        assert_eq!(format!("{e:?}"), "Event { set: true, .. }");
    }

    #[test]
    fn timed_out_waiters_leave_the_queue() {
        let e = Event::new();
        assert!(!e.wait_timeout(Duration::from_millis(2)));
        assert!(!e.queue.has_waiters());
        e.set();
        assert!(e.wait_timeout(Duration::ZERO));
    }
}
