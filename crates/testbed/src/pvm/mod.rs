//! PVM 3.4 under test: a private virtual machine of one host, started for
//! a run and always stopped after it, and programs run against it with a
//! deadline, their output captured. The benchmarks' PVM peer and the tests
//! of threadwire's libpvm3 (which run Debian's `pvm-examples` under real
//! PVM to pin what they print) share it.
//!
//! ```no_run
//! use std::time::{Duration, Instant};
//! use threadwire_testbed::pvm::{Config, Daemon};
//!
//! let deadline = Instant::now() + Duration::from_secs(30);
//! // `pvm_spawn` looks for programs where Debian installs the examples.
//! let config = Config { search_path: vec!["/usr/bin".into()], ..Config::default() };
//! let daemon = Daemon::start_with(&config, deadline)?;
//! let hello = daemon.start_task(daemon.command("hello.pvm"), b"")?;
//! let ran = hello.finish(deadline)?;
//! print!("{}", ran.stdout);
//! // What the tasks it spawned printed went to pvmd's log.
//! print!("{}", threadwire_testbed::pvm::task_lines(&daemon.log()));
//! daemon.stop();
//! # Ok::<(), threadwire_testbed::pvm::Error>(())
//! ```
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
//!    watched, with the daemon's pidfd ([`crate::watch`]), not polled. A
//!    pvmd that exits first is [`Error::Failed`]; one not ready by the
//!    deadline is killed, [`Error::TimedOut`]. With a
//!    [`search_path`](Config::search_path), pvmd is given a host file in
//!    the directory, `* ep=<path>`: Debian's pvmd otherwise looks for the
//!    programs of `pvm_spawn` only in `$HOME/pvm3/bin/LINUX64` and
//!    `$PVM_ROOT/bin/LINUX64`, and a spawn of `hello_other` fails with
//!    `PvmNoFile` (-7).
//! 2. Run: tasks get the daemon's environment ([`Daemon::command`]), and
//!    [`Daemon::start_task`] runs one with its standard input from bytes
//!    and its output captured ([`Task`]). Tasks that pvmd forks itself
//!    (`pvm_spawn`) stay in its process group; their standard output and
//!    error go to pvmd, which writes each line to its log `pvml.<uid>` as
//!    `[t80040000] <date> <time> [t<tid>] <line>` unless the parent asked
//!    for them with `pvm_catchout` ([`Daemon::log`], [`task_lines`]).
//!    [`Daemon::settle`] waits until the tasks have ended and pvmd has
//!    logged all they printed: a parent that has received its children's
//!    results may end before they do.
//! 3. Stop ([`Daemon::stop`], and `Drop`, so an error or a timeout anywhere
//!    stops the machine too): the console `pvm` is sent `halt`, on which
//!    pvmd kills its tasks and removes its files; after at most
//!    [`HALT_GRACE`], SIGKILL goes to the daemon's process group (the
//!    daemon if it did not halt, and any task it left), and the directory
//!    is removed.
//!
//! The parts: `daemon.rs` ([`Daemon`], [`Config`]), `task.rs` ([`Task`],
//! a program run against it, and its [`Ran`]) and [`normalize`] (two runs'
//! outputs made comparable: tids, contexts, times and host names).

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

mod daemon;
pub mod normalize;
mod task;

pub use daemon::{log_in, task_lines, Config, Daemon};
pub use task::{line_buffered, Ran, Task, OUTPUT_LIMIT};

/// The Debian package of the daemon, its console and (by dependency) libpvm3.
pub const PACKAGES: &str = "pvm";
/// How long `halt` may take before the daemon's group is killed.
pub const HALT_GRACE: Duration = Duration::from_secs(2);
/// The script, in the daemon's directory, that pvmd runs as `PVM_RSH HOST
/// COMMAND` to start a pvmd on another host when started in a
/// [`namespace`](Config::namespace); its writer puts it there.
pub const RSH: &str = "rsh";

/// What went wrong with a virtual machine or a program run against it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A program it needs is not installed.
    #[error("not installed ({program} missing): apt-get install {packages}")]
    Missing {
        /// The first missing program.
        program: &'static str,
        /// The Debian packages that provide it.
        packages: &'static str,
    },
    /// A process could not be started, or its output read.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The failure.
        source: std::io::Error,
    },
    /// It ran past its deadline and was killed.
    #[error("killed after {0:?}, its deadline")]
    TimedOut(Duration),
    /// It ended with a failure status.
    #[error("{status}: {output}")]
    Failed {
        /// Its exit status.
        status: ExitStatus,
        /// The last lines it printed.
        output: String,
    },
}

/// The start of the names of this process's scratch directories, under
/// [`std::env::temp_dir`]: `threadwire-pvm-<pid>-`. A test looks for them
/// (and for pvmds whose `PVM_TMP` starts so) to see that nothing is left.
pub fn scratch_prefix() -> String {
    format!("threadwire-pvm-{}-", std::process::id())
}

/// Processes (pvmds and their tasks) whose `PVM_TMP` is one of this
/// process's scratch directories: after a run, none should be left.
pub fn processes_left() -> Vec<u32> {
    let ours = format!(
        "PVM_TMP={}",
        std::env::temp_dir().join(scratch_prefix()).display()
    );
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|var| var.starts_with(ours.as_bytes()))
            })
        })
        .collect()
}

/// `$PVM_ROOT`, else Debian's `/usr/lib/pvm3`.
pub fn pvm_root() -> PathBuf {
    std::env::var_os("PVM_ROOT")
        .filter(|r| !r.is_empty())
        .map_or_else(|| PathBuf::from("/usr/lib/pvm3"), PathBuf::from)
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}
