//! PVM 3.4, the 1998 peer: NetPIPE's `NPpvm` beside the ping-pong and the
//! time of `pvm_spawn` beside `bench spawn`, each under a private virtual
//! machine started for the run and always stopped after it.
//!
//! # A private virtual machine
//!
//! [`Daemon`] is [`threadwire_testbed::pvm`]'s: a pvmd of one host with a
//! scratch directory of its own as `PVM_TMP` and `HOME`, ready once it has
//! printed its socket's path, and halted (then its process group killed)
//! when stopped or dropped, so an error or a timeout anywhere stops the
//! machine too; its module docs give the steps. The peers' failures take
//! its errors as they are ([`Error`](crate::peers::Error) from
//! [`threadwire_testbed::pvm::Error`]).
//!
//! # NPpvm
//!
//! NetPIPE 3.7.2's PVM module does not spawn its partner: both sides are
//! started by hand and enroll with `pvm_mytid`; the receiver waits for any
//! message, and the transmitter (`-h`, whose host name PVM ignores) takes
//! the other task from `pvm_tasks` and exits with "Start a clean machine"
//! unless the virtual machine holds exactly two tasks. So [`netpipe`] starts
//! the receiver, waits until pvmd logs its enrollment (pvmd runs with debug
//! mask 4, which logs "new task"; the log is watched as in step 1), and only then starts the transmitter:
//! retrying a transmitter that came too early could let the next one see
//! the dying one as its partner. NetPIPE sets `PvmRouteDirect`, so the
//! messages go task to task over TCP: the figures are PVM's packing and its
//! direct route, not the daemons'.
//!
//! **Across emulated hosts** ([`Placement::Namespaces`](crate::peers::Placement::Namespaces)): a virtual machine
//! of two hosts, one pvmd in each namespace.
//!
//! 1. The master pvmd starts in the transmitter's namespace with
//!    `-n<transmitter's address>`: it takes its own address from that name,
//!    not from the host name, which every namespace shares and which
//!    resolves to loopback.
//! 2. The console `add`s the receiver's address. pvmd starts a pvmd there
//!    as `$PVM_RSH HOST COMMAND`; `PVM_RSH` is a script in the scratch
//!    directory that refuses any other host and runs the command with `ip
//!    netns exec` in the receiver's namespace, with `PVM_TMP` a
//!    subdirectory of its own (two pvmds of one user in one `PVM_TMP`
//!    would take each other's address file). That pvmd is a child of the
//!    master's and stays in its process group, so stopping the machine
//!    stops both.
//! 3. The receiver runs in its namespace against the second pvmd, the
//!    transmitter in its own against the first; `-h` gets the receiver's
//!    address, which PVM ignores.
//!
//! # pvm_spawn
//!
//! [`spawn_times`] measures what the 1998 figure (57.75 ms to start one
//! process) measured: a PVM parent task spawns N tasks with one `pvm_spawn`
//! (`PvmTaskDefault`, on this host) and receives one message from each.
//! Timed per repetition: from the call of `pvm_spawn` until the N-th message
//! has been received, by the parent's monotonic clock; that covers pvmd
//! forking and exec'ing each task, the task's start and enrollment
//! (`pvm_mytid`) and one message to the parent. One untimed warm-up comes
//! first. The daemon's start and stop are not timed.
//!
//! libpvm3 is loaded at run time with `libloading` (`libpvm3.so.3`, Debian's
//! `libpvm3`, which `pvm` depends on), so threadwire builds and runs where
//! PVM is absent and then reports it missing. The parent and the tasks are
//! the caller's own program run again ([`Task`]), which must call
//! [`task_main`] first: it acts on `THREADWIRE_PVM_TASK`, set by
//! [`spawn_times`] for the parent and by the daemon's environment for the
//! tasks. This beats the alternatives: a C helper compiled at run time needs
//! a compiler and `pvm-dev` on the machine, and loading libpvm3 into the
//! calling process would need PVM's variables in its environment, which a
//! multithreaded process cannot safely change. The functions used take and
//! return `int`s and C strings only, which their prototypes in `pvm3.h` fix.
//!
//! The parts: `netpipe.rs` ([`netpipe`], and
//! a machine of two emulated hosts, which `bench pvm` runs on too), `spawn.rs` ([`spawn_times`], [`task_main`]
//! and libpvm3).

mod netpipe;
mod spawn;

pub use netpipe::netpipe;
pub(crate) use netpipe::{in_namespace, two_hosts, virtual_machine};
pub use spawn::{spawn_times, task_main, Task, TaskError};
pub use threadwire_testbed::pvm::{scratch_prefix, Daemon, HALT_GRACE, PACKAGES};

/// The library [`task_main`] loads.
pub const LIBRARY: &str = "libpvm3.so.3";

#[cfg(test)]
mod tests {
    use crate::peers::process::require;

    #[test]
    fn a_missing_program_names_the_packages() {
        let e = require(
            &["threadwire-no-such-program"],
            crate::peers::Peer::Pvm.packages(),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("threadwire-no-such-program missing")
                && text.contains("apt-get install netpipe-pvm pvm"),
            "{text}"
        );
    }
}
