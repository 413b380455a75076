//! The one wait queue every primitive of this module parks through.
//!
//! A waiter is a [`Waiter`] on the waiting thread's own stack (a fiber's
//! stack stays put while it is parked), so waiting allocates nothing. The
//! queue holds pointers to the waiters' nodes, in arrival order, under a
//! short lock. A node carries the waiter's [`Unparker`], a `woken` flag, the
//! value a waker hands over, and the waiter's [`Interest`]: what it waits
//! for, so that a waker can pick whom to wake.
//!
//! # Protocol
//!
//! 1. The waiter builds its `Waiter` and pins it. [`Waiter::enqueue_if`]
//!    takes the queue lock, pushes the node, publishes the new length in
//!    `len`, and re-checks the primitive's condition (`park_if`). If the
//!    waiter need not park after all, it pops its node again before the
//!    lock is released. The re-check runs under the lock, so no waker's
//!    scan (step 3) falls between the push and the re-check.
//! 2. The waiter parks until it reads `woken == true` (Acquire). A spurious
//!    return from `park` loops without re-enqueueing.
//! 3. A waker first changes the primitive's state, then takes the lock and
//!    pops the nodes it picks. For each one it clones the `Unparker`, writes
//!    the handed value and sets `woken` (Release). That store is its last
//!    access to the node: the waiter may now return and its node vanish.
//! 4. The waker releases the lock, then unparks the clones, so no futex
//!    call or fiber switch happens under the lock.
//! 5. A waiter that gives up (timeout, panic, drop) takes the lock and
//!    removes its node. If the node is not there, a waker popped it in
//!    step 3, under this same lock, so `woken` is already set.
//!
//! Wake-ups are not lost because each primitive keeps, in its own state
//! word, a "someone may be queued" mark that the re-check of step 1 sets
//! under the lock and that a waker reads after its state change. For
//! `Word`, which has no spare bit, `len` is the mark (see `word.rs`). Nodes
//! are not freed too early: a node is in the queue only between steps 1 and
//! 3 (or 5), and `Waiter`'s `Drop` runs step 5, so a pinned `Waiter` cannot
//! go away while it is queued.

use crate::loom::{lock, AtomicBool, AtomicU32, AtomicUsize, Mutex, Ordering};
use sleep::Unparker;
use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::ptr::NonNull;
use std::time::Instant;

/// How a waiter sleeps and is woken: through `crate::park`, so a fiber
/// switches to its scheduler. Under loom, through a token per waiter on
/// loom's `Mutex` and `Condvar`: the loom build of `crate::park` spins on
/// `yield_now`, which makes models of three threads explode, and loom's
/// own `thread::park` breaks when a stale unpark reaches a thread blocked in
/// `join`. The contract is the same (one pending token, woken from any
/// thread); `tests/loom_park.rs` models `crate::park` itself.
#[cfg(not(loom))]
mod sleep {
    pub(super) use crate::park::{current_unparker as current, Unparker};

    pub(super) fn park(_me: &Unparker) {
        crate::park::park()
    }

    pub(super) fn park_timeout(_me: &Unparker, timeout: std::time::Duration) {
        crate::park::park_timeout(timeout)
    }
}

#[cfg(loom)]
mod sleep {
    use loom::sync::{Arc, Condvar, Mutex};

    #[derive(Clone)]
    pub(super) struct Unparker(Arc<(Mutex<bool>, Condvar)>);

    impl Unparker {
        pub(super) fn unpark(&self) {
            *self.0 .0.lock().unwrap() = true;
            self.0 .1.notify_one();
        }
    }

    pub(super) fn current() -> Unparker {
        Unparker(Arc::new((Mutex::new(false), Condvar::new())))
    }

    pub(super) fn park(me: &Unparker) {
        let (token, condvar) = &*me.0;
        let mut token = token.lock().unwrap();
        while !*token {
            token = condvar.wait(token).unwrap();
        }
        *token = false;
    }

    /// Loom has no time; no model times out.
    pub(super) fn park_timeout(me: &Unparker, _timeout: std::time::Duration) {
        park(me)
    }
}

/// What a waiter waits for.
#[derive(Clone, Copy)]
pub(crate) enum Interest<'a> {
    /// Wants what the queue guards (a lock, a permit, a notification).
    Acquire,
    /// Watches for an event and takes nothing (`Lockable`, `Event`).
    Observe,
    /// Waits until the watched word satisfies this (`Word`). Wakers call it
    /// under the queue lock.
    Condition(&'a (dyn Fn(u32) -> bool + Sync)),
}

/// A waker's verdict on one queued waiter, in queue order.
pub(crate) enum Pick {
    /// Wake it, handing it this value, and go on.
    Wake(u32),
    /// Leave it queued and go on.
    Skip,
}

/// Waiters in arrival order.
pub(crate) struct WaitQueue {
    waiters: Mutex<Waiters>,
    /// `waiters.nodes.len()`, written under the lock, read without it.
    len: AtomicUsize,
}

struct Waiters {
    nodes: VecDeque<NonNull<Node<'static>>>,
    /// How many queued nodes have `Interest::Observe`.
    observers: usize,
}

// SAFETY: the pointers are dereferenced only under the queue lock while
// their nodes are queued (rule of step 3), and `Node` is `Sync`.
unsafe impl Send for Waiters {}

/// The part of a waiter that wakers touch (step 3).
struct Node<'a> {
    unparker: Unparker,
    interest: Interest<'a>,
    woken: AtomicBool,
    handed: AtomicU32,
}

impl Waiters {
    fn push(&mut self, node: NonNull<Node<'static>>, interest: Interest<'_>) {
        self.nodes.push_back(node);
        if matches!(interest, Interest::Observe) {
            self.observers += 1;
        }
    }

    /// Removes the node at `index`, wakes it with `value` (step 3) and
    /// queues its unparker in `wakeups`.
    fn wake_at(&mut self, index: usize, value: u32, wakeups: &mut Wakeups) {
        let node = self.nodes.remove(index).expect("index in range");
        // SAFETY: the node was queued until the line above and we hold the
        // lock, so its waiter is still parked or about to park (step 2) and
        // cannot return before `woken` is set below.
        let node = unsafe { node.as_ref() };
        if matches!(node.interest, Interest::Observe) {
            self.observers -= 1;
        }
        wakeups.push(node.unparker.clone());
        node.handed.store(value, Ordering::Relaxed);
        node.woken.store(true, Ordering::Release);
    }

    fn interest_at(&self, index: usize) -> Interest<'_> {
        // SAFETY: queued nodes are alive while we hold the lock (step 3).
        unsafe { self.nodes[index].as_ref().interest }
    }
}

/// Unparkers collected under the lock; dropping it unparks them (step 4),
/// also when a `Condition` panics mid-scan. Declared before the lock guard
/// so that the guard is released first.
struct Wakeups {
    first: Option<Unparker>,
    rest: Vec<Unparker>,
}

impl Wakeups {
    fn new() -> Wakeups {
        Wakeups {
            first: None,
            rest: Vec::new(),
        }
    }

    fn push(&mut self, unparker: Unparker) {
        if self.first.is_none() {
            self.first = Some(unparker);
        } else {
            self.rest.push(unparker);
        }
    }

    fn count(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        if let Some(first) = self.first.take() {
            first.unpark();
        }
        for unparker in self.rest.drain(..) {
            unparker.unpark();
        }
    }
}

impl WaitQueue {
    pub(crate) fn new() -> WaitQueue {
        WaitQueue {
            waiters: Mutex::new(Waiters {
                nodes: VecDeque::new(),
                observers: 0,
            }),
            len: AtomicUsize::new(0),
        }
    }

    /// Whether a waiter may be queued. Relaxed: callers order it after
    /// their state change themselves (`word.rs`).
    pub(crate) fn has_waiters(&self) -> bool {
        self.len.load(Ordering::Relaxed) != 0
    }

    /// How many waiters are queued (a snapshot).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Wakes the longest-waiting waiter; `false` if there was none.
    pub(crate) fn wake_one(&self) -> bool {
        self.wake_first_then(|_| {})
    }

    /// Wakes the longest-waiting waiter, then, still under the lock, calls
    /// `then` with the number of waiters left.
    pub(crate) fn wake_first_then(&self, then: impl FnOnce(usize)) -> bool {
        let mut wakeups = Wakeups::new();
        let mut waiters = lock(&self.waiters);
        if !waiters.nodes.is_empty() {
            waiters.wake_at(0, 0, &mut wakeups);
        }
        self.len.store(waiters.nodes.len(), Ordering::Relaxed);
        then(waiters.nodes.len());
        wakeups.count() == 1
    }

    /// Wakes every waiter; returns how many.
    pub(crate) fn wake_all(&self) -> usize {
        self.wake_where(|_| Pick::Wake(0))
    }

    /// Wakes the first `Acquire` waiter and every `Observe` waiter (a
    /// mutex unlock).
    pub(crate) fn wake_acquirer_and_observers(&self) {
        let mut wakeups = Wakeups::new();
        let mut waiters = lock(&self.waiters);
        let mut acquirer_woken = false;
        let mut index = 0;
        while index < waiters.nodes.len() && !(acquirer_woken && waiters.observers == 0) {
            match waiters.interest_at(index) {
                Interest::Acquire if acquirer_woken => index += 1,
                Interest::Acquire => {
                    acquirer_woken = true;
                    waiters.wake_at(index, 0, &mut wakeups);
                }
                _ => waiters.wake_at(index, 0, &mut wakeups),
            }
        }
        self.len.store(waiters.nodes.len(), Ordering::Relaxed);
    }

    /// Scans every waiter in queue order under the lock and wakes those
    /// `pick` chooses; returns how many it woke.
    pub(crate) fn wake_where(&self, mut pick: impl FnMut(Interest<'_>) -> Pick) -> usize {
        let mut wakeups = Wakeups::new();
        let mut waiters = lock(&self.waiters);
        let mut index = 0;
        while index < waiters.nodes.len() {
            match pick(waiters.interest_at(index)) {
                Pick::Wake(value) => waiters.wake_at(index, value, &mut wakeups),
                Pick::Skip => index += 1,
            }
        }
        self.len.store(waiters.nodes.len(), Ordering::Relaxed);
        wakeups.count()
    }
}

/// One wait, on the waiting thread's stack; pin it (`std::pin::pin!`) and
/// [`enqueue_if`](Waiter::enqueue_if), then [`wait`](Waiter::wait). It may
/// be enqueued again after each wake-up.
pub(crate) struct Waiter<'a> {
    queue: &'a WaitQueue,
    node: Node<'a>,
    /// Owner only: pushed and not yet seen woken or removed.
    queued: Cell<bool>,
    _pinned: PhantomPinned,
}

impl<'a> Waiter<'a> {
    /// A waiter for the calling thread (its fiber, if it runs in one).
    pub(crate) fn new(queue: &'a WaitQueue, interest: Interest<'a>) -> Waiter<'a> {
        Waiter {
            queue,
            node: Node {
                unparker: sleep::current(),
                interest,
                woken: AtomicBool::new(false),
                handed: AtomicU32::new(0),
            },
            queued: Cell::new(false),
            _pinned: PhantomPinned,
        }
    }

    /// Step 1: enqueues, then runs `park_if` under the queue lock; if it
    /// returns `false` the waiter leaves the queue again. Returns whether the
    /// waiter stays queued (and must [`wait`](Waiter::wait)).
    pub(crate) fn enqueue_if(self: Pin<&Self>, park_if: impl FnOnce() -> bool) -> bool {
        assert!(!self.queued.get(), "a waiter is enqueued twice");
        let queue = self.queue;
        let mut waiters = lock(&queue.waiters);
        // Not queued, so no waker can see the node: plain reset.
        self.node.woken.store(false, Ordering::Relaxed);
        let node = NonNull::from(&self.node).cast::<Node<'static>>();
        waiters.push(node, self.node.interest);
        // Set before `park_if` runs: if it panics, `drop` removes the node.
        self.queued.set(true);
        queue.len.store(waiters.nodes.len(), Ordering::Relaxed);
        if park_if() {
            return true;
        }
        let last = waiters.nodes.len() - 1;
        debug_assert!(waiters.nodes[last] == node);
        waiters.nodes.pop_back();
        if matches!(self.node.interest, Interest::Observe) {
            waiters.observers -= 1;
        }
        queue.len.store(waiters.nodes.len(), Ordering::Relaxed);
        self.queued.set(false);
        false
    }

    /// Step 2: parks until woken; returns the value the waker handed over.
    pub(crate) fn wait(self: Pin<&Self>) -> u32 {
        assert!(self.queued.get(), "wait without enqueue_if");
        while !self.node.woken.load(Ordering::Acquire) {
            sleep::park(&self.node.unparker);
        }
        self.queued.set(false);
        self.node.handed.load(Ordering::Relaxed)
    }

    /// Like [`wait`](Waiter::wait), but gives up at `deadline` (step 5):
    /// `None` if it timed out without being woken.
    pub(crate) fn wait_deadline(self: Pin<&Self>, deadline: Instant) -> Option<u32> {
        assert!(self.queued.get(), "wait without enqueue_if");
        loop {
            if self.node.woken.load(Ordering::Acquire) {
                self.queued.set(false);
                return Some(self.node.handed.load(Ordering::Relaxed));
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            sleep::park_timeout(&self.node.unparker, deadline - now);
        }
        if self.cancel() {
            None
        } else {
            Some(self.node.handed.load(Ordering::Relaxed))
        }
    }

    /// Step 5: removes the node if it is still queued; `true` if it was
    /// (not woken), `false` if a waker popped it first.
    fn cancel(&self) -> bool {
        let mut waiters = lock(&self.queue.waiters);
        self.queued.set(false);
        let me = NonNull::from(&self.node).cast::<Node<'static>>();
        match waiters.nodes.iter().position(|&node| node == me) {
            Some(index) => {
                waiters.nodes.remove(index);
                if matches!(self.node.interest, Interest::Observe) {
                    waiters.observers -= 1;
                }
                self.queue.len.store(waiters.nodes.len(), Ordering::Relaxed);
                true
            }
            None => {
                debug_assert!(self.node.woken.load(Ordering::Relaxed));
                false
            }
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if self.queued.get() && !self.node.woken.load(Ordering::Acquire) {
            self.cancel();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_waiter_that_need_not_park_leaves_the_queue() {
        let queue = WaitQueue::new();
        let waiter = pin!(Waiter::new(&queue, Interest::Acquire));
        assert!(!waiter.as_ref().enqueue_if(|| false));
        assert!(!queue.has_waiters());
        assert!(!queue.wake_one());
    }

    #[test]
    fn a_wake_before_the_park_is_kept() {
        let queue = WaitQueue::new();
        let waiter = pin!(Waiter::new(&queue, Interest::Acquire));
        assert!(waiter.as_ref().enqueue_if(|| true));
        assert!(queue.has_waiters());
        assert!(queue.wake_one());
        waiter.as_ref().wait();
        assert!(!queue.has_waiters());
    }

    #[test]
    fn wakes_a_parked_thread_and_hands_over_a_value() {
        let queue = Arc::new(WaitQueue::new());
        let q = queue.clone();
        let waker = std::thread::spawn(move || {
            while !q.has_waiters() {
                std::thread::yield_now();
            }
            q.wake_where(|_| Pick::Wake(7))
        });
        let waiter = pin!(Waiter::new(&queue, Interest::Acquire));
        assert!(waiter.as_ref().enqueue_if(|| true));
        assert_eq!(waiter.as_ref().wait(), 7);
        assert_eq!(waker.join().unwrap(), 1);
    }

    #[test]
    fn a_timed_out_waiter_removes_itself() {
        let queue = WaitQueue::new();
        let waiter = pin!(Waiter::new(&queue, Interest::Observe));
        assert!(waiter.as_ref().enqueue_if(|| true));
        let deadline = Instant::now() + Duration::from_millis(5);
        assert_eq!(waiter.as_ref().wait_deadline(deadline), None);
        assert!(!queue.has_waiters());
        assert_eq!(queue.wake_all(), 0);
    }

    #[test]
    fn dropping_a_queued_waiter_removes_it() {
        let queue = WaitQueue::new();
        {
            let waiter = pin!(Waiter::new(&queue, Interest::Observe));
            assert!(waiter.as_ref().enqueue_if(|| true));
        }
        assert!(!queue.has_waiters());
    }

    #[test]
    fn an_unlock_wakes_one_acquirer_and_all_observers() {
        let queue = WaitQueue::new();
        let a = pin!(Waiter::new(&queue, Interest::Acquire));
        let o1 = pin!(Waiter::new(&queue, Interest::Observe));
        let b = pin!(Waiter::new(&queue, Interest::Acquire));
        let o2 = pin!(Waiter::new(&queue, Interest::Observe));
        for w in [a.as_ref(), o1.as_ref(), b.as_ref(), o2.as_ref()] {
            assert!(w.enqueue_if(|| true));
        }
        queue.wake_acquirer_and_observers();
        for w in [&a, &o1, &o2] {
            assert!(w.node.woken.load(Ordering::Acquire));
        }
        assert!(!b.node.woken.load(Ordering::Acquire));
        assert!(queue.wake_one());
        b.as_ref().wait();
        for w in [a.as_ref(), o1.as_ref(), o2.as_ref()] {
            w.wait();
        }
    }

    #[test]
    fn conditions_pick_their_waiters() {
        let queue = WaitQueue::new();
        let even = |v: u32| v & 1 == 0;
        let odd = |v: u32| v & 1 == 1;
        let e = pin!(Waiter::new(&queue, Interest::Condition(&even)));
        let o = pin!(Waiter::new(&queue, Interest::Condition(&odd)));
        assert!(e.as_ref().enqueue_if(|| true));
        assert!(o.as_ref().enqueue_if(|| true));
        let woken = queue.wake_where(|interest| match interest {
            Interest::Condition(f) if f(3) => Pick::Wake(3),
            _ => Pick::Skip,
        });
        assert_eq!(woken, 1);
        assert_eq!(o.as_ref().wait(), 3);
        assert!(queue.has_waiters());
    }
}
