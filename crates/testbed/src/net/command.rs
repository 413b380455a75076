//! Running `ip` and `tc`: the one place the net runs a command, each in a
//! process group of its own ("Interruption" in the module docs), and the
//! checks made before any is run.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

use super::error::NetErrorKind;
use super::NetError;

/// Runs `cmd args`, the one place this module runs a command, and returns
/// its standard output; a failure to start or a non-zero exit is an error
/// holding the command line and its standard error.
pub(super) fn run(cmd: &str, args: &[&str]) -> Result<String, NetError> {
    let line = || {
        std::iter::once(cmd)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let output = Command::new(cmd)
        .args(args)
        // Out of the terminal's foreground group, a Ctrl-C reaches only us,
        // where it is held (module docs), and never kills a step half-way.
        .process_group(0)
        .output()
        .map_err(|source| NetErrorKind::Spawn {
            line: line(),
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        let stderr = match output.status.signal() {
            Some(signal) if stderr.is_empty() => format!("killed by signal {signal}"),
            _ => stderr,
        };
        return Err(NetErrorKind::Command {
            line: line(),
            status: output.status,
            stderr,
        }
        .into());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Why emulated hosts cannot be made here, if they cannot: not root, or a
/// kernel or container that refuses `ip netns add` (tried with a throwaway
/// namespace `{prefix}probe`, removed at once). For callers that skip, and
/// say why, where there are no namespaces.
pub fn unavailable(prefix: &str) -> Option<String> {
    if let Err(e) = require_root("creating") {
        return Some(e.to_string());
    }
    let probe = format!("{prefix}probe");
    match run("ip", &["netns", "add", &probe]) {
        Ok(_) => {
            let _ = run("ip", &["netns", "del", &probe]);
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

pub(super) fn require_root(action: &'static str) -> Result<(), NetError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok(())
    } else {
        Err(NetErrorKind::NotRoot(action).into())
    }
}
