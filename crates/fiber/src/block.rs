//! `block_until`: waiting for a condition, by event where possible.
//!
//! The classic thread packages let a thread block until a memory word has
//! some value or a lock is free, and had the scheduler test those
//! conditions when it looked for work. Here three of the four kinds are
//! *event-driven* — whoever changes a [`Word`] or unlocks a [`Mutex`]
//! wakes exactly the waiters whose condition now holds — so a thousand
//! blocked fibers cost nothing. Only [`Condition::Predicate`], arbitrary
//! code, is polled: by the fiber's worker each time it looks for work (and
//! every 200 µs while it has nothing else to do), or, on an OS thread, by
//! the thread itself with a backoff up to 1 ms.
//!
//! [`Mutex`]: crate::sync::Mutex
//!
//! ```
//! use std::sync::Arc;
//! use threadwire_fiber::sync::Word;
//! use threadwire_fiber::{block_until, Condition, Scheduler};
//!
//! let scheduler = Scheduler::builder().workers(2).build().unwrap();
//! let word = Arc::new(Word::new(0));
//! let waiter = {
//!     let word = word.clone();
//!     scheduler.spawn(move || block_until(Condition::Equals(&word, 3)))
//! };
//! for _ in 0..3 {
//!     word.fetch_add(1);
//! }
//! waiter.join().unwrap();
//! ```

use crate::sync::{Lockable, Word};
use std::time::Duration;

/// What [`block_until`] waits for.
pub enum Condition<'a> {
    /// The word equals the value (event-driven).
    Equals(&'a Word, u32),
    /// The word is less than the value (event-driven).
    LessThan(&'a Word, u32),
    /// The lock can be taken, i.e. it was seen unlocked (event-driven; it
    /// is not taken for you).
    Lockable(&'a dyn Lockable),
    /// Arbitrary code returning `true` when the wait is over (polled).
    Predicate(&'a dyn Fn() -> bool),
}

/// Blocks the calling fiber (or OS thread) until `condition` holds; other
/// fibers run meanwhile.
pub fn block_until(condition: Condition<'_>) {
    match condition {
        Condition::Equals(word, value) => word.wait_equal(value),
        Condition::LessThan(word, value) => {
            word.wait_less_than(value);
        }
        Condition::Lockable(lock) => lock.wait_lockable(),
        Condition::Predicate(predicate) => poll_until(predicate),
    }
}

fn poll_until(predicate: &dyn Fn() -> bool) {
    if predicate() {
        return;
    }
    if crate::in_fiber() {
        return crate::scheduler::park_until(predicate);
    }
    let mut spin = crate::SpinWait::new();
    let mut backoff = Duration::from_micros(50);
    while !predicate() {
        if !spin.spin() {
            crate::park_timeout(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(1));
        }
    }
}
