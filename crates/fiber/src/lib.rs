//! Threads and waiting for threadwire: fibers, their scheduler, and the one
//! park/unpark point every blocking wait goes through. Nothing about
//! networking lives here.
//!
//! ```
//! use std::sync::Arc;
//! use threadwire_fiber::sync::Mutex;
//! use threadwire_fiber::{yield_now, Scheduler};
//!
//! let scheduler = Scheduler::builder().workers(2).build().unwrap();
//! let total = Arc::new(Mutex::new(0u64));
//! let fibers: Vec<_> = (0..1000u64)
//!     .map(|i| {
//!         let total = total.clone();
//!         scheduler.spawn(move || {
//!             yield_now(); // let the others run: round robin within a priority
//!             *total.lock() += i;
//!         })
//!     })
//!     .collect();
//! for f in fibers {
//!     f.join().unwrap();
//! }
//! assert_eq!(*total.lock(), 499_500);
//! ```
//!
//! # What is here
//!
//! - [`Scheduler`]: one worker OS thread per core (configurable); fibers
//!   with 16 [`Priority`] levels, round robin within a level; [`spawn`],
//!   [`yield_now`], [`sleep`], [`JoinHandle`] (any number of joiners, a
//!   panic comes back as [`JoinError::Panicked`]); stacks from a per-worker
//!   pool with a guard page, and a stack overflow stops the process with a
//!   line naming the fiber.
//! - [`block_until`]: wait until a [`sync::Word`] equals or is below a
//!   value, a lock can be taken (event-driven), or a predicate holds
//!   (polled by the worker when it looks for work).
//! - [`bound`]: run blocking kernel calls on an OS thread of their own
//!   while the fiber waits, without stalling its worker.
//! - [`sync`]: mutex, semaphore, condition variable, barrier, one-shot
//!   event and watched word, for fibers and OS threads alike.
//! - [`park`]/[`current_unparker`]: the primitive under all of it. A fiber
//!   parks by switching to its worker; an OS thread spins for the
//!   [spin budget](spin_budget), then sleeps in a futex ([`Parker`]), or
//!   inside another blocking call such as `epoll_wait`
//!   ([`Parker::park_external`]).
//!
//! # Safety model
//!
//! A fiber runs only on the worker that created it, from its first
//! instruction to its last: the scheduler never migrates a started fiber,
//! so thread-locals a fiber sees stay those of one OS thread, and data that
//! is not `Send` may live on a fiber's stack across switches. The types
//! enforce it: a fiber's closure and result must be `Send` (they cross
//! threads before it starts and after it ends), a running fiber's state is
//! reachable only from its worker, and other threads hold only an
//! [`Unparker`] (which enqueues, never resumes). [`bound`] does not move
//! the fiber either: it runs a `Send` closure on another thread while the
//! fiber stays parked. The one named point where code runs elsewhere is
//! that closure. Two consequences to know:
//! - a fiber that blocks in the kernel (a blocking `read`, `std::sync`
//!   waits, `std::thread::sleep`) holds up its worker's other fibers: use
//!   this crate's primitives, [`sleep`], or [`bound`];
//! - a `RefCell` borrow or thread-local borrow held across a yield is seen
//!   by the worker's other fibers, as with any cooperative scheduler.
//!
//! # Spinning and sleeping
//!
//! A worker with nothing runnable polls its idle hook (threadwire's
//! progress engine) and its blocked predicates for the spin budget, then
//! sleeps in the kernel until it is woken or a timer is due. After the
//! first 2 µs of the budget it yields the core between polls instead of
//! pausing ([`SpinWait`]): on an oversubscribed host the thread it waits
//! for may be queued behind it. On the
//! development VM a sleeping thread takes 20–30 µs to wake on another core
//! while a cache line crosses in under 0.1 µs; the budget (default 50 µs,
//! `THREADWIRE_SPIN_US`) is about twice the wake-up cost, the classic
//! competitive rule: spinning that long at most doubles the cost of a wait
//! that ends up sleeping, and saves the whole wake-up on every wait that
//! ends sooner. Measured with `THREADWIRE_SPIN_US=N threadwire bench
//! pingpong` (8 B one-way, µs; fibers on two workers, and TCP between two
//! nodes):
//!
//! | spin budget | 0 | 5 µs | 20 µs | 50 µs (default) | 100 µs |
//! |---|---|---|---|---|---|
//! | fiber → fiber, two workers | 32.5 | 1.74 | 0.57 | 0.53 | 0.50 |
//! | TCP, node to node | 45.3 | 35.7 | 5.5 | 5.7 | 5.3 |
//!
//! The knee lies between 5 and 20 µs, where the spin starts to cover a
//! loopback TCP round trip (about 11 µs). 50 µs leaves margin for slower
//! peers at no cost to latency, and an idle node still sleeps after 50 µs.
//!
//! Fibers themselves never spin: parking is a switch (tens of
//! nanoseconds), so the spinning is done once per worker, not per waiter,
//! and 10,000 parked fibers cost nothing while no event arrives.
#![warn(missing_docs)]

#[cfg(not(loom))]
mod block;
#[cfg(not(loom))]
mod bound;
mod loom;
mod park;
#[cfg(not(loom))]
mod scheduler;
mod spin;
pub mod sync;
#[cfg(not(loom))]
mod wake_list;
/// The wake list alone, for its loom model.
#[cfg(loom)]
pub mod wake_list;

#[cfg(not(loom))]
pub use block::{block_until, Condition};
#[cfg(not(loom))]
pub use bound::bound;
pub use park::{
    current_unparker, in_fiber, park, park_timeout, with_thread_parker, Parker, Unparker, Wake,
};
#[cfg(not(loom))]
pub use scheduler::{
    install_fault_handlers, sleep, spawn, yield_now, Builder, FiberBuilder, Handle, Idle,
    JoinError, JoinHandle, Priority, Scheduler,
};
pub use spin::{set_crowded, set_spin_budget, spin_budget, SpinWait};
