//! A mutual-exclusion lock for fibers and OS threads.
//!
//! The lock is one atomic word, `UNLOCKED`, `LOCKED` or `CONTENDED`
//! (locked, and someone may be queued), as in the futex mutexes of std
//! and Linux:
//!
//! 1. `lock`: one CAS `UNLOCKED → LOCKED`. If it fails, an OS thread spins
//!    for the spin budget retrying it; a fiber does not spin — the holder
//!    may be a fiber of its own worker, which cannot run while it spins.
//! 2. Then the waiter enqueues and, under the queue lock, swaps the word to
//!    `CONTENDED`. If the old value was `UNLOCKED` it owns the lock and
//!    leaves the queue; otherwise it parks.
//! 3. `unlock` swaps the word to `UNLOCKED`. If it was `CONTENDED`, it wakes
//!    the first acquirer and every observer (`Lockable`). A woken acquirer
//!    goes back to step 2 (another thread may have barged in meanwhile);
//!    it marks the word `CONTENDED`, so that its own unlock wakes the next.
//! 4. An observer enqueues and, under the queue lock, turns `LOCKED` into
//!    `CONTENDED`; if it finds `UNLOCKED` it leaves at once.
//!
//! No wake-up is lost: a waiter parks only after it marked the word
//! `CONTENDED` while it was locked, under the queue lock, so the unlock
//! that follows sees the mark and takes the queue lock after the push.

use super::wait_queue::{Interest, WaitQueue, Waiter};
use crate::loom::{AtomicU32, Ordering};
use crate::spin::SpinWait;
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::pin::pin;

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// Something whose availability a waiter can wait for without taking it.
///
/// `block_until(Condition::Lockable(&m))` waits through this: the wait is
/// event-driven, woken by the unlock itself rather than polled.
pub trait Lockable {
    /// Blocks until the lock is observed unlocked: returns at once if it
    /// is, otherwise after the next unlock. The lock may be taken again by
    /// the time this returns.
    fn wait_lockable(&self);
}

/// A mutual-exclusion lock protecting a `T`, usable from fibers and OS
/// threads alike.
///
/// Unlike `std::sync::Mutex` it is not poisoned by a panic: a guard
/// dropped during unwinding unlocks normally.
///
/// ```
/// use std::sync::Arc;
/// use threadwire_fiber::sync::Mutex;
///
/// let counter = Arc::new(Mutex::new(0));
/// let threads: Vec<_> = (0..4)
///     .map(|_| {
///         let counter = counter.clone();
///         std::thread::spawn(move || {
///             for _ in 0..1000 {
///                 *counter.lock() += 1;
///             }
///         })
///     })
///     .collect();
/// for t in threads {
///     t.join().unwrap();
/// }
/// assert_eq!(*counter.lock(), 4000);
/// ```
pub struct Mutex<T: ?Sized> {
    state: AtomicU32,
    queue: WaitQueue,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `data` to one thread at a time, so
// sharing the mutex moves `T`s between threads (hence `T: Send`) but never
// shares one.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

/// Access to the data of a locked [`Mutex`]; unlocks when dropped.
#[must_use = "the mutex unlocks at once if the guard is not kept"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    /// Like std's guard, it stays on the thread that locked.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared guard only gives `&T`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            state: AtomicU32::new(UNLOCKED),
            queue: WaitQueue::new(),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex and returns its data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, waiting while another holder has it. Locking a mutex the
    /// caller already holds deadlocks.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        MutexGuard {
            mutex: self,
            _not_send: PhantomData,
        }
    }

    /// Locks if nobody holds the mutex, without waiting.
    ///
    /// ```
    /// use threadwire_fiber::sync::Mutex;
    ///
    /// let m = Mutex::new(1);
    /// let guard = m.lock();
    /// assert!(m.try_lock().is_none());
    /// drop(guard);
    /// assert_eq!(*m.try_lock().unwrap(), 1);
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| MutexGuard {
                mutex: self,
                _not_send: PhantomData,
            })
    }

    /// The data, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Steps 1 (spin) and 2 of the module docs.
    #[cold]
    fn lock_contended(&self) {
        if !crate::in_fiber() {
            let mut spin = SpinWait::new();
            while spin.spin() {
                if self.state.load(Ordering::Relaxed) == UNLOCKED
                    && self
                        .state
                        .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    return;
                }
            }
        }
        let waiter = pin!(Waiter::new(&self.queue, Interest::Acquire));
        loop {
            let parked = waiter
                .as_ref()
                .enqueue_if(|| self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED);
            if !parked {
                return;
            }
            waiter.as_ref().wait();
            // Woken by an unlock: usually free now, no queue lock needed.
            if self.state.swap(CONTENDED, Ordering::Acquire) == UNLOCKED {
                return;
            }
        }
    }

    /// Step 3.
    fn unlock(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            self.queue.wake_acquirer_and_observers();
        }
    }
}

impl<T: ?Sized> Lockable for Mutex<T> {
    /// Step 4 of the module docs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use threadwire_fiber::sync::{Lockable, Mutex};
    ///
    /// let m = Arc::new(Mutex::new(()));
    /// let guard = m.lock();
    /// let watcher = {
    ///     let m = m.clone();
    ///     std::thread::spawn(move || m.wait_lockable())
    /// };
    /// drop(guard);
    /// watcher.join().unwrap();
    /// ```
    fn wait_lockable(&self) {
        if self.state.load(Ordering::Acquire) == UNLOCKED {
            return;
        }
        if !crate::in_fiber() {
            let mut spin = SpinWait::new();
            while spin.spin() {
                if self.state.load(Ordering::Acquire) == UNLOCKED {
                    return;
                }
            }
        }
        let waiter = pin!(Waiter::new(&self.queue, Interest::Observe));
        let parked = waiter.as_ref().enqueue_if(|| {
            let mut state = self.state.load(Ordering::Acquire);
            loop {
                match state {
                    UNLOCKED => return false,
                    CONTENDED => return true,
                    _ => match self.state.compare_exchange(
                        LOCKED,
                        CONTENDED,
                        Ordering::Acquire,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return true,
                        Err(now) => state = now,
                    },
                }
            }
        });
        if parked {
            waiter.as_ref().wait();
        }
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard locks (for `Condvar`).
    pub(super) fn mutex(&self) -> &'a Mutex<T> {
        self.mutex
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held, so no one else has a
        // reference into `data`.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Mutex<T> {
        Mutex::new(value)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn lock_try_lock_get_mut_into_inner() {
        let mut m = Mutex::new(vec![1]);
        m.lock().push(2);
        assert!(m.try_lock().is_some());
        m.get_mut().push(3);
        assert_eq!(format!("{m:?}"), "Mutex { data: [1, 2, 3], .. }");
        assert_eq!(m.into_inner(), vec![1, 2, 3]);
    }

    #[test]
    fn a_parked_waiter_gets_the_lock() {
        let m = Arc::new(Mutex::new(0));
        let guard = m.lock();
        let waiter = {
            let m = m.clone();
            std::thread::spawn(move || *m.lock() += 1)
        };
        while !m.queue.has_waiters() {
            std::thread::yield_now();
        }
        drop(guard);
        waiter.join().unwrap();
        assert_eq!(*m.lock(), 1);
        assert_eq!(m.state.load(Ordering::Relaxed), UNLOCKED);
    }

    #[test]
    fn observers_return_when_unlocked() {
        let m = Arc::new(Mutex::new(()));
        m.wait_lockable();
        let guard = m.lock();
        let observers: Vec<_> = (0..3)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || m.wait_lockable())
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(guard);
        for o in observers {
            o.join().unwrap();
        }
    }

    #[test]
    fn a_panicking_holder_unlocks() {
        let m = Arc::new(Mutex::new(0));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _guard = m2.lock();
            panic!("holder fails");
        })
        .join();
        *m.lock() += 1;
        assert_eq!(*m.lock(), 1);
    }
}
