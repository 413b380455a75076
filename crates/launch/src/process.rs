//! Starting node processes and watching them.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

use crate::proxy::ProxyHandle;
use crate::watch::Watcher;

/// How a node process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeExit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl NodeExit {
    pub(crate) fn from_status(s: ExitStatus) -> NodeExit {
        match (s.code(), s.signal()) {
            (Some(c), _) => NodeExit::Code(c),
            (None, Some(sig)) => NodeExit::Signal(sig),
            (None, None) => NodeExit::Code(-1),
        }
    }

    /// Whether this is a clean exit (status 0).
    pub fn success(self) -> bool {
        self == NodeExit::Code(0)
    }

    /// The exit status a shell would report: the code, or 128 + signal.
    pub fn shell_status(self) -> i32 {
        match self {
            NodeExit::Code(c) => c,
            NodeExit::Signal(s) => 128 + s,
        }
    }
}

impl std::fmt::Display for NodeExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            NodeExit::Code(c) => write!(f, "exited with status {c}"),
            NodeExit::Signal(s) => write!(f, "was killed by signal {s} ({})", signal_name(s)),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "unnamed",
    }
}

/// Starts node `node` with `cmd` (program, arguments and environment set
/// by its host), standard input empty, its output and exit watched by
/// `watcher`. The node is told this launcher's pid
/// (`THREADWIRE_LAUNCHER_PID`), and its `init` has it die with the
/// launcher (`PR_SET_PDEATHSIG`), so a killed launcher leaves no node
/// behind. Setting that here, between `fork` and `exec`, would make std
/// `fork` the launcher instead of `posix_spawn` it, copying the launcher's
/// mappings for every node: 0.75 s against 1.1 s for 256 nodes.
pub(crate) fn start(
    node: u32,
    mut cmd: Command,
    stdin: bool,
    watcher: &Watcher,
) -> std::io::Result<u32> {
    cmd.stdin(if stdin {
        Stdio::inherit()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .env(
        threadwire::env::LAUNCHER_PID,
        std::process::id().to_string(),
    );
    let child: Child = cmd.spawn()?;
    let pid = child.id();
    watcher.add(node, child);
    Ok(pid)
}

/// Calls `f` with each line of `pipe`, without its newline, until the
/// pipe ends or `f` says to stop (returns false).
pub(crate) fn for_each_line(pipe: impl Read, mut f: impl FnMut(Vec<u8>) -> bool) {
    let mut reader = BufReader::new(pipe);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if !f(line) {
                    return;
                }
            }
        }
    }
}

/// Makes the process `cmd` starts die (SIGKILL) when the thread that
/// starts it ends (`PR_SET_PDEATHSIG`): the proxy's, which starts programs
/// that may not be threadwire nodes, from a process of few threads.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1); // the parent died before prctl took effect
            }
            Ok(())
        });
    }
}

/// Waits until the child `pid` has ended, leaving it to be reaped
/// (`waitid` with `WNOWAIT`): until then its pid is not reused.
pub(crate) fn wait_exited(pid: u32) -> std::io::Result<()> {
    loop {
        // SAFETY: `info` is valid for writes of a siginfo_t; waitid(2) has
        // no other memory-safety preconditions.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Sends SIGKILL to `pid`.
pub(crate) fn kill(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid belongs to
    // a child not yet reaped, so it cannot have been reused.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// A node's process, as the launcher reaches it.
pub(crate) enum NodeProcess {
    /// A child of the launcher.
    Local { pid: u32 },
    /// A child of the job's proxy on an ssh host (`proxy` module); its pid
    /// there once the proxy has said it.
    Proxied {
        proxy: ProxyHandle,
        node: u32,
        pid: Option<u32>,
    },
    /// Started by someone else (`threadwire pvm --join`), which was given
    /// its environment: it ends when its control connection does.
    External,
}

impl NodeProcess {
    /// Kills it (SIGKILL); its exit is reported as any other.
    pub(crate) fn kill(&self) {
        match self {
            NodeProcess::Local { pid } => kill(*pid),
            NodeProcess::Proxied { proxy, node, .. } => proxy.kill(*node),
            // Not ours to kill; its end comes through its connection.
            NodeProcess::External => {}
        }
    }

    /// Its pid on its host, if known.
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            NodeProcess::Local { pid } => Some(*pid),
            NodeProcess::Proxied { pid, .. } => *pid,
            NodeProcess::External => None,
        }
    }
}
