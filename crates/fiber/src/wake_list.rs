//! A worker's wake list: items that any thread pushes and one thread, the
//! worker, takes whole. A fiber made runnable by another thread joins its
//! worker's list (scheduler, rule 2), linked through a field of its own,
//! so a wake-up is one compare-and-swap on the list's head: no lock, no
//! buffer, no allocation.
//!
//! Rules (the loom model in `tests/loom_wake_list.rs` checks them):
//!
//! 1. A pusher links the item to the head it read, then swings the head to
//!    the item (compare-and-swap, `Release`), retrying from the new head
//!    if another push came first.
//! 2. The taker swaps the head for null (`Acquire`): it owns every item of
//!    the list from then on, and the pushes' writes before rule 1 are
//!    visible to it.
//! 3. An item is in at most one list at a time and is pushed again only
//!    after the taker handed it out: its link is the list's alone
//!    meanwhile (the scheduler keeps this by pushing a fiber only when its
//!    state went from parked to notified).
//! 4. The taker hands the items out oldest first: it reverses the links of
//!    the list it took, which are its own by rule 2.
//! 5. An item stays alive while in a list: the caller's to keep (a parked
//!    fiber lives in its worker's slab until it runs again).

use crate::loom::{AtomicPtr, Ordering};

/// An item with a link of its own for a [`WakeList`].
pub trait Linked: Sized {
    /// The item's link: the next item in its list while in one.
    fn link(&self) -> &AtomicPtr<Self>;
}

/// A list any thread pushes to and one thread takes whole (module docs).
pub struct WakeList<T> {
    head: AtomicPtr<T>,
}

impl<T> Default for WakeList<T> {
    fn default() -> Self {
        WakeList {
            head: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl<T: Linked> WakeList<T> {
    /// Rule 1.
    ///
    /// # Safety
    ///
    /// `item` is in no list (rule 3) and stays alive until the taker has
    /// handed it out (rule 5).
    pub unsafe fn push(&self, item: &T) {
        let me = item as *const T as *mut T;
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            item.link().store(head, Ordering::Relaxed);
            match self
                .head
                .compare_exchange_weak(head, me, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Whether the list looks empty now (a push racing with the look is
    /// seen by the next one).
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Acquire).is_null()
    }

    /// Rules 2 and 4: takes every item and hands each to `f`, oldest first.
    ///
    /// # Safety
    ///
    /// One taker at a time.
    pub unsafe fn take(&self, mut f: impl FnMut(&T)) {
        if self.head.load(Ordering::Relaxed).is_null() {
            return;
        }
        let mut head = self.head.swap(std::ptr::null_mut(), Ordering::Acquire);
        let mut oldest = std::ptr::null_mut();
        while !head.is_null() {
            // SAFETY: taken whole above (rule 2), alive by the pushers'
            // contract (rule 5); nobody else reads or writes its link now.
            let item = unsafe { &*head };
            let next = item.link().load(Ordering::Relaxed);
            item.link().store(oldest, Ordering::Relaxed);
            oldest = head;
            head = next;
        }
        while !oldest.is_null() {
            // SAFETY: as above.
            let item = unsafe { &*oldest };
            oldest = item.link().load(Ordering::Relaxed);
            f(item);
        }
    }
}
