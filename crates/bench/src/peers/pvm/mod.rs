//! PVM 3.4, the 1998 peer: NetPIPE's `NPpvm` beside the ping-pong and the
//! time of `pvm_spawn` beside `bench spawn`, each under a private virtual
//! machine started for the run and always stopped after it.
//!
//! # A private virtual machine
//!
//! [`Daemon`] runs `$PVM_ROOT/lib/pvmd` (`PVM_ROOT` from the environment,
//! else Debian's `/usr/lib/pvm3`) with a scratch directory of its own,
//! `$TMPDIR/threadwire-pvm-<pid>-<n>`, as `PVM_TMP` and `HOME`. PVM 3.4.6
//! keeps everything that names a virtual machine under `PVM_TMP`: the
//! daemon's address file `pvmd.<uid>`, its log `pvml.<uid>` and the tasks'
//! sockets `pvmtmp<pid>.<n>`. So a pvmd of the same user elsewhere, found
//! through `/tmp/pvmd.<uid>`, and this one never meet, and `PVM_VMID` is
//! not needed; it is removed with every other inherited `PVM_*` variable.
//! `HOME` keeps the user's `~/.pvmrc` and `~/pvm3/bin` out.
//! `PVM_ALLOW_ROOT=yes` lets the daemon and its tasks run as root, which PVM
//! refuses by default (for the sake of rsh to other hosts, unused here).
//!
//! 1. Start: pvmd in a process group of its own, its stdout to a file. It
//!    is ready once it has printed its socket's path, one line: the file is
//!    watched, with the daemon's pidfd ([`threadwire_testbed::watch`]), not
//!    polled. A pvmd that exits first is
//!    [`Error::Failed`](crate::peers::Error::Failed); one not ready by the
//!    deadline is killed, [`Error::TimedOut`](crate::peers::Error::TimedOut).
//! 2. Run: tasks get the daemon's environment ([`Daemon::command`]).
//!    Tasks that pvmd forks itself (`pvm_spawn`) stay in its process group.
//! 3. Stop ([`Daemon::stop`], and `Drop`, so an error or a timeout anywhere
//!    stops the machine too): the console `pvm` is sent `halt`, on which
//!    pvmd kills its tasks and removes its files; after at most
//!    [`HALT_GRACE`], SIGKILL goes to the daemon's process group (the
//!    daemon if it did not halt, and any task it left), and the directory
//!    is removed.
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
//! The parts: `daemon.rs` ([`Daemon`]), `netpipe.rs` ([`netpipe`], and
//! adding an emulated host), `spawn.rs` ([`spawn_times`], [`task_main`]
//! and libpvm3).

use std::time::Duration;

mod daemon;
mod netpipe;
mod spawn;

pub use daemon::Daemon;
pub use netpipe::netpipe;
pub use spawn::{spawn_times, task_main, Task, TaskError};

/// The Debian package of the daemon, its console and (by dependency) libpvm3.
pub const PACKAGES: &str = "pvm";
/// The library [`task_main`] loads.
pub const LIBRARY: &str = "libpvm3.so.3";
/// How long `halt` may take before the daemon's group is killed.
pub const HALT_GRACE: Duration = Duration::from_secs(2);

/// The start of the names of this process's scratch directories, under
/// [`std::env::temp_dir`]: `threadwire-pvm-<pid>-`. A test looks for them
/// (and for pvmds whose `PVM_TMP` starts so) to see that nothing is left.
pub fn scratch_prefix() -> String {
    format!("threadwire-pvm-{}-", std::process::id())
}

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
