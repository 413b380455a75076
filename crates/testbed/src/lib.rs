//! The testbed of threadwire's benchmarks and tests: emulated hosts joined
//! by shaped links, child processes with deadlines, and cleanup on SIGINT,
//! SIGTERM and SIGHUP, so that an interrupted run leaves no namespace,
//! process or scratch directory behind.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::{Duration, Instant};
//! use threadwire_testbed::net::{Link, ScopedNet};
//! use threadwire_testbed::wait_deadline;
//!
//! // Before any other thread starts: a Ctrl-C now removes the hosts too.
//! threadwire_testbed::interrupt::install(|done| tracing::warn!("{done}"));
//! // Two network namespaces on a 100 Mbit/s link, removed when dropped.
//! let net = ScopedNet::up_with_free_prefix("tw", 2, Link::Fast100)?;
//! let mut ping = Command::new("ip")
//!     .args(["netns", "exec", &net.hosts[0].name, "ping", "-c1"])
//!     .arg(net.hosts[1].addr.to_string())
//!     .spawn()?;
//! // Waits on the child's pidfd: no polling, and no waiting past 10 s.
//! match wait_deadline(&mut ping, Instant::now() + Duration::from_secs(10))? {
//!     Some(status) => assert!(status.success()),
//!     None => ping.kill()?,
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The modules, each built on those before it:
//!
//! - [`process`]: waiting for a process to end or a deadline, on its pidfd
//!   ([`wait_deadline`]), and the process table for processes that are
//!   not ours.
//! - [`watch`]: waiting for a file to show up or change, on inotify.
//! - [`retry`]: the one bounded retry, for what signals nothing, and why.
//! - [`interrupt`]: on a signal, killing the registered process groups
//!   and their descendants, removing the scratch directories and nets,
//!   and exiting with 128 + the signal (numbered steps in its docs).
//! - [`group`]: a child in a process group of its own, registered there.
//! - [`net`]: emulated hosts, network namespaces on a bridge with links
//!   shaped to 10 Mbit/s … 1 Gbit/s (`threadwire net up` / `net down`;
//!   numbered steps in its docs).
//! - [`pvm`]: a private PVM virtual machine (a pvmd, halted and killed
//!   after the run) and programs run against it with a deadline, their
//!   input given and their output captured.
//! - [`slurm`]: a real one-machine Slurm cluster (slurmctld, a slurmd per
//!   emulated host, munged), private to a test and torn down after it.
//!
//! Nothing here prints: results are return values, and the rest goes to
//! `tracing`. Linux only (pidfds, inotify, network namespaces; 5.3 or
//! later).
#![warn(missing_docs)]

pub mod group;
pub mod interrupt;
pub mod net;
mod poll;
pub mod process;
pub mod pvm;
pub mod retry;
mod signals;
pub mod slurm;
pub mod watch;

pub use process::wait_deadline;
