//! What other threads hand a mailbox's owner: a lock-free stack that any
//! thread pushes onto and only the owner empties, all at once.
//!
//! Steps (the loom model in `tests/loom_mailbox.rs` checks them):
//!
//! 1. A pusher boxes its item, links the box to the head it read and
//!    swings the head to the box with one compare-and-swap (AcqRel),
//!    retrying with the new head if another push came first. A push never
//!    waits for the owner nor for another pusher.
//! 2. The owner takes the whole stack with one swap to null (AcqRel),
//!    which makes every pushed item visible to it, and reverses the list:
//!    items come out in the order their pushes took effect, so two items
//!    pushed by one thread, or pushed in an order some lock fixed (the
//!    progress engine's driver), come out in that order.
//! 3. Nobody but the owner removes anything, and it removes everything:
//!    there is no single-item pop, so a box is never reused while a pusher
//!    still holds its address (no ABA).
//! 4. Both exchanges acquire as well as release: a push that follows a
//!    take in the head's order sees everything the owner did before the
//!    take. [`Incoming::take_all`] skips the exchange when it sees the
//!    stack empty; [`Incoming::take_all_synchronized`] always makes it, so
//!    that a push it misses sees what came before it (the mailbox's owner
//!    setting itself, `mailbox` rule 4).

use crate::loom::{AtomicPtr, Ordering};
use std::ptr;

struct Entry<T> {
    next: *mut Entry<T>,
    item: T,
}

/// A stack of items pushed by any thread, emptied by one (module docs,
/// steps 1–4).
pub struct Incoming<T> {
    head: AtomicPtr<Entry<T>>,
}

// SAFETY: items move from pushers to the owner (hence `T: Send`); the
// entries are reached only through `head`, whose swaps and
// compare-and-swaps order every access (steps 1–2).
unsafe impl<T: Send> Sync for Incoming<T> {}
// SAFETY: as above; the stack owns its entries.
unsafe impl<T: Send> Send for Incoming<T> {}

impl<T> Default for Incoming<T> {
    fn default() -> Self {
        Incoming::new()
    }
}

impl<T> Incoming<T> {
    /// An empty stack.
    pub fn new() -> Incoming<T> {
        Incoming {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Step 1: pushes `item`; any thread.
    pub fn push(&self, item: T) {
        let entry = Box::into_raw(Box::new(Entry {
            next: ptr::null_mut(),
            item,
        }));
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `entry` is this thread's until the exchange below
            // publishes it.
            unsafe { (*entry).next = head };
            match self
                .head
                .compare_exchange_weak(head, entry, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Whether nothing waits; a push racing with it is seen by the next
    /// look.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }

    /// Step 2: takes every item, oldest first. Only the owner calls it.
    #[inline]
    pub fn take_all(&self) -> Drain<T> {
        if self.is_empty() {
            return Drain {
                next: ptr::null_mut(),
            };
        }
        self.take_all_synchronized()
    }

    /// [`take_all`](Self::take_all), exchanging the head even when the
    /// stack looks empty (step 4).
    pub fn take_all_synchronized(&self) -> Drain<T> {
        let mut newest = self.head.swap(ptr::null_mut(), Ordering::AcqRel);
        let mut oldest = ptr::null_mut();
        while !newest.is_null() {
            // SAFETY: taken off the stack by the swap: this thread's alone.
            let next = unsafe { std::mem::replace(&mut (*newest).next, oldest) };
            oldest = newest;
            newest = next;
        }
        Drain { next: oldest }
    }
}

impl<T> Drop for Incoming<T> {
    fn drop(&mut self) {
        for item in self.take_all() {
            drop(item);
        }
    }
}

/// Items taken by [`Incoming::take_all`], oldest first; those not
/// iterated are dropped with it.
pub struct Drain<T> {
    next: *mut Entry<T>,
}

impl<T> Iterator for Drain<T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: every entry of the list came from `Box::into_raw` and is
        // this drain's alone (step 2); each is freed once, here.
        let entry = unsafe { Box::from_raw(self.next) };
        self.next = entry.next;
        Some(entry.item)
    }
}

impl<T> Drop for Drain<T> {
    fn drop(&mut self) {
        for item in self.by_ref() {
            drop(item);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_oldest_first() {
        let s = Incoming::new();
        assert!(s.is_empty());
        for i in 0..5 {
            s.push(i);
        }
        assert_eq!(s.take_all().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        assert!(s.is_empty());
        s.push(9);
        let mut d = s.take_all();
        assert_eq!(d.next(), Some(9));
        assert_eq!(d.next(), None);
    }

    #[test]
    fn untaken_items_are_dropped() {
        let counted = std::sync::Arc::new(());
        let s = Incoming::new();
        for _ in 0..3 {
            s.push(counted.clone());
        }
        let mut d = s.take_all();
        d.next();
        drop(d);
        s.push(counted.clone());
        drop(s);
        assert_eq!(std::sync::Arc::strong_count(&counted), 1);
    }
}
