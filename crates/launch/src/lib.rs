//! The threadwire launcher: starts a job's nodes on this host (or on the
//! hosts of a host file, [`hosts`]) and watches them.
//!
//! [`run`] is what `threadwire run` calls. It
//!
//! 1. draws a job id and a secret and opens the rendezvous service on a port
//!    the OS chooses, and the job's [`console`] for `threadwire vm`;
//! 2. starts N node processes with the [environment
//!    contract](threadwire::env);
//! 3. gives every node the directory of listen addresses once all have
//!    registered;
//! 4. reports each line a node prints ([`Event::Output`]), each result a
//!    node reports ([`Event::Report`]) and each exit;
//! 5. when a node fails, tells the others
//!    ([`Control::PeerLost`](threadwire::control::Control::PeerLost)), and
//!    under [`FailurePolicy::Abort`] kills whatever still runs after a
//!    grace period, so the job ends within two seconds with the cause named;
//! 6. returns a [`JobReport`] with every node's exit and counters.
//!
//! Nodes are started with `posix_spawn` (one thread watches them all, the
//! `watch` module) and told the launcher's pid: their `init` sets
//! `PR_SET_PDEATHSIG`, so no node outlives a killed launcher (a program
//! that never calls `init` does; `threadwire run` is for nodes). On ssh
//! hosts a per-job [`proxy`] starts them, and kills them when its
//! connection to the launcher ends. The launcher never prints:
//! the caller renders the events.
//!
//! The launcher and the nodes share only the contract in the runtime:
//! [`threadwire::env`] (what a node finds in its environment) and
//! [`threadwire::control`] (the messages on the control connection).
//!
//! ```no_run
//! use threadwire_launch::{run, Event, JobSpec};
//!
//! let spec = JobSpec::new(2, "target/release/examples/hello");
//! let report = run(&spec, |event| {
//!     if let Event::Output { node, line, .. } = event {
//!         println!("[n{node}] {line}");
//!     }
//! })?;
//! assert_eq!(report.status, 0);
//! # Ok::<(), threadwire_launch::LaunchError>(())
//! ```
#![warn(missing_docs)]

pub mod console;
mod event;
mod grow;
pub mod hosts;
mod job;
mod process;
pub mod proxy;
pub mod pvm;
mod rendezvous;
mod spec;
mod start;
mod watch;

pub use event::{Event, JobReport, LaunchError, OutputStream};
pub use hosts::{parse_host_file, Host, HostError, HostFileError, ParseHostError};
pub use job::run;
pub use process::NodeExit;
pub use spec::{FailurePolicy, JobSpec, SshConfig, DEFAULT_MAX_NODES, GRACE, SSH_OPTIONS};
