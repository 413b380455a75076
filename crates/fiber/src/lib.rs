//! Threads and waiting for threadwire.
//!
//! Every blocking wait in threadwire goes through this crate: a waiter spins
//! for a bounded, measured while ([`SpinWait`]) and then parks ([`Parker`]);
//! whoever makes its condition true calls [`Unparker::unpark`]. An OS thread
//! parks in the kernel (futex); a thread that parks inside another blocking
//! call, such as the progress engine's `epoll_wait`, registers a [`Wake`]
//! that the unparker uses instead ([`Parker::park_external`]).
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::Arc;
//! use threadwire_fiber::{Parker, SpinWait};
//!
//! let parker = Parker::new();
//! let unparker = parker.unparker();
//! let flag = Arc::new(AtomicBool::new(false));
//! let setter = {
//!     let flag = flag.clone();
//!     std::thread::spawn(move || {
//!         flag.store(true, Ordering::Release);
//!         unparker.unpark();
//!     })
//! };
//! let mut spin = SpinWait::new();
//! while !flag.load(Ordering::Acquire) {
//!     if !spin.spin() {
//!         parker.park();
//!     }
//! }
//! setter.join().unwrap();
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod park;
mod spin;

pub use park::{current_unparker, with_current, Parker, Unparker, Wake};
pub use spin::{set_spin_budget, spin_budget, SpinWait};
