//! Starting node processes and watching them.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Sender;

use crate::event::OutputStream;
use crate::job::Internal;

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

/// Starts node `node` with `vars` and threads that forward its output and
/// report its exit. The child dies with the thread that started it
/// (`PR_SET_PDEATHSIG`), so a killed launcher leaves no node behind.
/// Starts node `node` with `cmd` (program, arguments and environment set
/// by its host); `stdin_line` is written to its standard input (the secret,
/// for ssh), which is otherwise empty.
pub(crate) fn start(
    node: u32,
    mut cmd: Command,
    stdin_line: Option<String>,
    events: &Sender<Internal>,
) -> std::io::Result<(u32, Vec<std::thread::JoinHandle<()>>)> {
    cmd.stdin(if stdin_line.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1); // the launcher died before prctl took effect
            }
            Ok(())
        });
    }
    let mut child: Child = cmd.spawn()?;
    let pid = child.id();
    if let (Some(line), Some(mut stdin)) = (stdin_line, child.stdin.take()) {
        use std::io::Write;
        stdin.write_all(format!("{line}\n").as_bytes())?;
    }
    let mut threads = Vec::new();
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    threads.push(forward(node, OutputStream::Stdout, stdout, events.clone()));
    threads.push(forward(node, OutputStream::Stderr, stderr, events.clone()));
    let tx = events.clone();
    std::thread::Builder::new()
        .name(format!("wait-n{node}"))
        .spawn(move || {
            let exit = match child.wait() {
                Ok(s) => NodeExit::from_status(s),
                Err(_) => NodeExit::Code(-1),
            };
            let _ = tx.send(Internal::Exited { node, exit });
        })?;
    Ok((pid, threads))
}

fn forward(
    node: u32,
    stream: OutputStream,
    pipe: impl Read + Send + 'static,
    tx: Sender<Internal>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(format!("out-n{node}"))
        .spawn(move || {
            let mut reader = BufReader::new(pipe);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        let text = String::from_utf8_lossy(&line).into_owned();
                        if tx
                            .send(Internal::Output {
                                node,
                                stream,
                                line: text,
                            })
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
        })
        .expect("the OS refused to start a thread")
}

/// Sends SIGKILL to `pid`.
pub(crate) fn kill(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid belongs to
    // a child not yet reaped, so it cannot have been reused.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}
