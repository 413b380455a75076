//! Threads and waiting for threadwire.
//!
//! (crate docs are rewritten at the end of the fiber work)
#![deny(unsafe_op_in_unsafe_fn)]
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
pub use block::{block_until, Condition};
#[cfg(not(loom))]
pub use bound::bound;
pub use park::{
    current_unparker, in_fiber, park, park_timeout, with_thread_parker, Parker, Unparker, Wake,
};
#[cfg(not(loom))]
pub use scheduler::{
    sleep, spawn, yield_now, Builder, FiberBuilder, Handle, Idle, JoinError, JoinHandle, Priority,
    Scheduler,
};
pub use spin::{set_spin_budget, spin_budget, SpinWait};
