//! The net's helper processes, the delay queues and the load's source:
//! starting one in a namespace, finding and stopping them, and the entry
//! a helper process runs ([`serve_helper`]).
//!
//! A helper is `HELPER net KIND PREFIX ARGS…` (`HELPER` is
//! [`NetConfig::helper`](super::NetConfig::helper), the `threadwire`
//! binary by default), run by `ip netns exec` in the namespace, in a
//! process group of its own (a Ctrl-C at the terminal that ran `net up`
//! does not reach it) with no standard input or error. Its arguments are
//! this module's own protocol, written and read here alone:
//!
//! - `delay-queue PREFIX DELAY_US JITTER_US`, one per host;
//! - `load-source PREFIX PERMILLE RATE_KBIT ADDR…`, in `pload`.
//!
//! 1. [`start`] spawns it and reads one line from its standard output:
//!    `ready` once it has bound its queue or opened its socket, else
//!    `error: …`, so that `up` returns only with the impairment working,
//!    or an error saying why not. A helper silent for 10 s is killed (a
//!    program that is no helper).
//! 2. The helper runs until killed. It is not waited for: `threadwire net
//!    up` exits at once, and the helper is then init's.
//! 3. [`stop`] finds the helpers in a net's namespaces (`ip netns pids`,
//!    and a command line of the form above with this prefix), sends each
//!    SIGTERM through a pidfd (no pid reuse can misdirect it), waits on the
//!    pidfds (2 s, then SIGKILL), and reaps those that were this process's
//!    children (a `ScopedNet` in a long-lived program).

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use super::command::run;
use super::error::NetErrorKind;
use super::{delay, load, Delay, Load, NetError};
use crate::process::{wait_all_exited, Pidfd};

/// How long a helper has to end after SIGTERM, and again after SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How long a helper has to say `ready`: its setup is a few system calls.
const READY_WAIT: Duration = Duration::from_secs(10);

/// A helper's kind, the word after `net`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    DelayQueue,
    LoadSource,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::DelayQueue => "delay-queue",
            Kind::LoadSource => "load-source",
        }
    }
}

/// The arguments after `net` of a host's delay queue.
pub(super) fn delay_queue_args(prefix: &str, delay: Delay) -> Vec<String> {
    vec![
        Kind::DelayQueue.word().to_string(),
        prefix.to_string(),
        delay.delay.as_micros().to_string(),
        delay.jitter.as_micros().to_string(),
    ]
}

/// The arguments after `net` of the load's source.
pub(super) fn load_source_args(
    prefix: &str,
    load: Load,
    rate_kbit: u32,
    hosts: &[Ipv4Addr],
) -> Vec<String> {
    let mut args = vec![
        Kind::LoadSource.word().to_string(),
        prefix.to_string(),
        load.permille().to_string(),
        rate_kbit.to_string(),
    ];
    args.extend(hosts.iter().map(Ipv4Addr::to_string));
    args
}

/// The helper program: `configured`, or this process's executable if it is
/// `threadwire` (a test binary must say which program serves its helpers,
/// lest its tests be run in their stead).
pub(super) fn program(configured: Option<&Path>) -> Result<PathBuf, NetError> {
    if let Some(path) = configured {
        return Ok(path.to_path_buf());
    }
    let exe = std::env::current_exe().map_err(|source| NetErrorKind::Io {
        what: "finding this program, the net's helper".to_string(),
        source,
    })?;
    if exe.file_name() == Some(OsStr::new("threadwire")) {
        Ok(exe)
    } else {
        Err(NetErrorKind::NoHelper(exe.display().to_string()).into())
    }
}

/// Starts a helper in `namespace` and waits for its `ready` (module docs,
/// step 1).
pub(super) fn start(program: &Path, namespace: &str, args: &[String]) -> Result<(), NetError> {
    let line = format!(
        "ip netns exec {namespace} {} net {}",
        program.display(),
        args.join(" ")
    );
    let mut child = Command::new("ip")
        .args(["netns", "exec", namespace])
        .arg(program)
        .arg("net")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| NetErrorKind::HelperSpawn {
            line: line.clone(),
            source,
        })?;
    let first = match child.stdout.take() {
        Some(stdout) => first_line(stdout, Instant::now() + READY_WAIT),
        None => String::new(),
    };
    if first.trim_end() == "ready" {
        // Not waited for (step 2); `stop` reaps it if it is still ours.
        drop(child);
        return Ok(());
    }
    // A program that is no helper may run on: it has had its time.
    let _ = child.kill();
    let status = child
        .wait()
        .map_or_else(|e| e.to_string(), |s| s.to_string());
    let message = match first.trim_end().strip_prefix("error: ") {
        Some(error) => error.to_string(),
        None => format!(
            "no `ready` from it before it ended or {} s passed ({status})",
            READY_WAIT.as_secs()
        ),
    };
    Err(NetErrorKind::Helper { line, message }.into())
}

/// The first line `stdout` gives before `deadline`, or what came of it:
/// empty if it closed or stayed silent.
fn first_line(mut stdout: ChildStdout, deadline: Instant) -> String {
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    while !line.contains(&b'\n') {
        match crate::poll::readable(&[stdout.as_fd()], Some(deadline)) {
            Ok(ready) if ready[0] => {}
            _ => break,
        }
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => line.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&line);
    text.lines().next().unwrap_or("").to_string()
}

/// The helpers of `prefix` in `namespace`: each one's pid and arguments
/// after `net`.
pub(super) fn find(
    prefix: &str,
    namespace: &str,
) -> Result<Vec<(libc::pid_t, Vec<String>)>, NetError> {
    let pids = run("ip", &["netns", "pids", namespace])?;
    let mut found = Vec::new();
    for pid in pids
        .lines()
        .filter_map(|l| l.trim().parse::<libc::pid_t>().ok())
    {
        // Gone since, or not readable: not ours to stop either way.
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let ours = argv.get(1).map(String::as_str) == Some("net")
            && [Kind::DelayQueue, Kind::LoadSource]
                .iter()
                .any(|k| argv.get(2).map(String::as_str) == Some(k.word()))
            && argv.get(3).map(String::as_str) == Some(prefix);
        if ours {
            let mut args = argv[2..].to_vec();
            // The list ends with an empty string after its last NUL.
            if args.last().is_some_and(String::is_empty) {
                args.pop();
            }
            found.push((pid, args));
        }
    }
    Ok(found)
}

/// The delay of a delay queue's arguments (as [`delay_queue_args`] wrote).
pub(super) fn delay_of(args: &[String]) -> Option<Delay> {
    match args {
        [kind, _prefix, delay, jitter] if kind == Kind::DelayQueue.word() => Delay::new(
            Duration::from_micros(delay.parse().ok()?),
            Duration::from_micros(jitter.parse().ok()?),
        ),
        _ => None,
    }
}

/// The load of a load source's arguments (as [`load_source_args`] wrote).
pub(super) fn load_of(args: &[String]) -> Option<Load> {
    match args {
        [kind, _prefix, permille, ..] if kind == Kind::LoadSource.word() => {
            Load::from_permille(permille.parse().ok()?)
        }
        _ => None,
    }
}

/// Stops the helpers of `prefix` in these namespaces (module docs,
/// step 3).
pub(super) fn stop<'a>(
    prefix: &str,
    namespaces: impl IntoIterator<Item = &'a String>,
) -> Result<(), NetError> {
    let (mut pids, mut pidfds) = (Vec::new(), Vec::new());
    for namespace in namespaces {
        for (pid, _) in find(prefix, namespace)? {
            // Gone already if it cannot be opened.
            if let Ok(pidfd) = Pidfd::open(pid as u32) {
                pids.push(pid);
                pidfds.push(pidfd);
            }
        }
    }
    if pidfds.is_empty() {
        return Ok(());
    }
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        for pidfd in &pidfds {
            // SAFETY: pidfd_send_signal takes a live pidfd, a signal number
            // and no info (null); the pidfd names the process found, even
            // if its pid has been reused since.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    pidfd.as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            };
        }
        if wait_all_exited(&pidfds, Instant::now() + GRACE).unwrap_or(false) {
            break;
        }
    }
    for pid in &pids {
        // SAFETY: waitpid with a null status and WNOHANG; it reaps `pid`
        // only if it is an ended child of this process (ECHILD otherwise).
        unsafe { libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG) };
    }
    Ok(())
}

/// What a helper process runs: `args` are its arguments after `net`
/// (`delay-queue …` or `load-source …`, as `up` writes them; module
/// docs). Writes `ready` to `handshake` once set up, or `error: …` if it
/// cannot be, then serves until killed; returns only on an error.
///
/// The `threadwire` binary calls it for its hidden `net delay-queue` and
/// `net load-source` subcommands; a test program that builds nets with
/// impairments calls it when run with those arguments, and names itself
/// in [`NetConfig::helper`](super::NetConfig::helper).
pub fn serve_helper(args: &[String], handshake: &mut dyn Write) -> Result<(), NetError> {
    // `up` starts helpers with SIGINT, SIGTERM and SIGHUP held, and a
    // child inherits its parent's mask: let them through, so that `stop`'s
    // SIGTERM ends this process at once.
    let signals = crate::signals::signal_set();
    // SAFETY: `signals` is an initialised set; SIG_UNBLOCK is a valid `how`.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &signals, std::ptr::null_mut()) };
    let result = serve(args, &mut *handshake);
    if let Err(e) = &result {
        // Read by `start` only before `ready`; after it, nobody listens.
        let _ = writeln!(handshake, "error: {e}");
        let _ = handshake.flush();
    }
    result
}

fn serve(args: &[String], handshake: &mut dyn Write) -> Result<(), NetError> {
    let bad = || NetError::from(NetErrorKind::HelperArgs(args.to_vec()));
    let ready = || {
        let _ = writeln!(handshake, "ready");
        let _ = handshake.flush();
    };
    let io = |what: &str| {
        let what = what.to_string();
        move |source| NetError::from(NetErrorKind::Io { what, source })
    };
    match args.first().map(String::as_str) {
        Some("delay-queue") => {
            let delay = delay_of(args).ok_or_else(bad)?;
            delay::serve(delay, ready).map_err(io("the delay queue (NFQUEUE 0)"))
        }
        Some("load-source") => {
            let load = load_of(args).ok_or_else(bad)?;
            let rate_kbit: u32 = args.get(3).and_then(|r| r.parse().ok()).ok_or_else(bad)?;
            let hosts = args[4..]
                .iter()
                .map(|a| a.parse())
                .collect::<Result<Vec<Ipv4Addr>, _>>()
                .map_err(|_| bad())?;
            load::serve(load, rate_kbit, &hosts, ready).map_err(io("the load's source"))
        }
        _ => Err(bad()),
    }
}
