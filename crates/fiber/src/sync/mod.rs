//! Synchronization for fibers and OS threads alike.
//!
//! | Type        | For                                                         |
//! |-------------|-------------------------------------------------------------|
//! | [`Mutex`]   | exclusive access to data; [`Lockable`] waits for an unlock  |
//! | [`Condvar`] | waiting for a condition on data behind a [`Mutex`]          |
//! | [`Semaphore`] | bounding concurrency: `wait` takes a permit, `post` returns it |
//! | [`Barrier`] | `n` threads meeting, round after round                      |
//! | [`Event`]   | a one-shot "it happened": `set` once, every `wait` returns   |
//! | [`Word`]    | waiting until a 32-bit value satisfies a condition          |
//!
//! Every one of them works between fibers, between OS threads, and between
//! the two: a fiber may wait for an OS thread and the other way round.
//!
//! # How waiting works
//!
//! Each operation first tries a lock-free fast path (one atomic operation
//! when uncontended). If it has to wait:
//!
//! - an OS thread spins for the spin budget ([`SpinWait`](crate::SpinWait),
//!   ~50 µs by default), re-testing the fast path, because a reply that
//!   arrives within that time would otherwise cost a kernel wake-up (20–30
//!   µs measured on the development VM);
//! - a fiber never spins: what it waits for may be another fiber of its own
//!   worker, which cannot run while it spins.
//!
//! Then the waiter queues a node on its own stack in the primitive's wait
//! queue (no allocation) and parks through [`park`](crate::park): a fiber
//! switches to its scheduler and the worker runs other fibers, an OS thread
//! sleeps in a futex. The waker removes the node and unparks the waiter;
//! spurious returns from `park` are absorbed inside. The protocol is written
//! out in `wait_queue.rs`, and each primitive's module docs give its own
//! steps.
//!
//! ```
//! use std::sync::Arc;
//! use threadwire_fiber::sync::{Event, Mutex};
//!
//! let log = Arc::new(Mutex::new(Vec::new()));
//! let done = Arc::new(Event::new());
//! let writer = {
//!     let (log, done) = (log.clone(), done.clone());
//!     std::thread::spawn(move || {
//!         log.lock().push("written");
//!         done.set();
//!     })
//! };
//! done.wait();
//! assert_eq!(*log.lock(), ["written"]);
//! writer.join().unwrap();
//! ```

mod barrier;
mod condvar;
mod event;
mod mutex;
mod semaphore;
mod wait_queue;
mod word;

pub use barrier::{Barrier, BarrierWaitResult};
pub use condvar::{Condvar, WaitTimeoutResult};
pub use event::Event;
pub use mutex::{Lockable, Mutex, MutexGuard};
pub use semaphore::Semaphore;
pub use word::Word;
