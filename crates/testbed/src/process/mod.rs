//! Child processes and deadlines: waiting for a process to end on its
//! pidfd (never a loop of `try_wait` and sleep), and the process table.
//!
//! - [`wait_deadline`]: a [`Child`](std::process::Child) ends, or a
//!   deadline passes, whichever comes first; the one wait to use for a
//!   child in a program or a test.
//! - [`Pidfd`]: the same for any process, child or not, without reaping
//!   it; [`wait_all_exited`] for several.
//! - [`run_supervised`]: a child that must not outlive this process nor
//!   run past a deadline (stopped with `SIGTERM`, then `SIGKILL`).
//! - [`kill_groups_and_descendants`]: process groups killed with every
//!   descendant, whatever group it took.
//! - [`on_path`], [`is_executable`] and [`last_lines`]: whether a program
//!   is installed, and what of its output a failure quotes.
//! - [`descendants`], [`groups_working_in`] and [`is_live`]: what `/proc`
//!   says about processes that are not ours to wait for.
//!
//! A process group of its own, killed with its descendants on a signal,
//! is [`crate::group::ProcessGroup`].

mod kill;
mod pidfd;
mod programs;
mod supervised;
mod table;

pub use kill::kill_groups_and_descendants;
pub use pidfd::{wait_all_exited, wait_deadline, Pidfd};
pub use programs::{is_executable, last_lines, on_path};
pub use supervised::{run_supervised, Finished};
pub use table::{descendants, groups_working_in, is_live};
