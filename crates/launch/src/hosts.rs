//! Where a job's nodes run: this host, a network namespace standing in for
//! another host, or a host reached over ssh.
//!
//! A host file lists one host per line (`#` starts a comment); node `i`
//! runs on host `i % hosts`:
//!
//! ```text
//! local          # this host, this network namespace
//! netns:twh0     # started with `ip netns exec twh0 …` (needs root)
//! ssh:node17     # started with `ssh node17 …`
//! ```
//!
//! Addresses, so that every node reaches the launcher and every other node:
//!
//! 1. With a namespace among the hosts, the rendezvous service listens on
//!    every interface, and a node in namespace `n` is told to reach it at
//!    `n`'s default gateway (the bridge of `threadwire net up`); a node on
//!    this host is told the first namespace's gateway, an address of this
//!    host that the namespaces can reach. Without namespaces it listens on
//!    [`JobSpec::bind`](super::JobSpec::bind) as before.
//! 2. A node listens on the address of its interface towards the
//!    rendezvous address (unless `THREADWIRE_BIND` says otherwise), so its
//!    peers on other hosts can connect to it.
//! 3. `ssh` hosts need `JobSpec::bind` set to an address of this host that
//!    they can reach.
//!
//! An `ssh:` host gets one ssh connection per job, whatever its number of
//! nodes: `ssh -T -o BatchMode=yes OPTIONS HOST 'EXE' proxy` runs the job's
//! proxy there, which starts that host's nodes — those the job starts with
//! and those added to it later — forwards their output, reports their
//! exits and signals, and kills them when the job ends, the host is
//! removed from it or the connection breaks ([`crate::proxy`] has the
//! protocol). So:
//!
//! - ssh must log in without asking (`BatchMode=yes` is given): keys, a
//!   known host key, and whatever else it needs, in the options of
//!   [`SshConfig`](crate::SshConfig) — by default the words of
//!   `$THREADWIRE_SSH`, e.g. `THREADWIRE_SSH="-F /path/ssh_config"`;
//! - `EXE` is the launcher's own executable (`threadwire`), and it and the
//!   node program must exist at the same paths on the host (a relative
//!   program path is taken from the launcher's working directory);
//! - the job secret travels inside the connection, never on a command line.
//!
//! `crates/cli/tests/cli_ssh_hosts.rs` runs jobs on three namespaces that
//! each run an `sshd`.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

/// One host of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// This host, in the launcher's network namespace.
    Local,
    /// A network namespace of this host (`ip netns exec NAME`).
    Netns(String),
    /// A host reached with `ssh HOST`.
    Ssh(String),
}

/// A host file that does not parse: its line (0 for the file as a whole)
/// and why.
#[derive(Debug, thiserror::Error)]
#[error("host file line {line}: {why}")]
pub struct HostFileError {
    line: usize,
    why: ParseHostError,
}

/// A host entry that is not `local`, `netns:NAME` or `ssh:HOST`, or a host
/// file that lists none.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseHostError {
    /// The entry, which names no host this launcher knows.
    #[error("{0:?} is not `local`, `netns:NAME` or `ssh:HOST`")]
    Unknown(String),
    /// The file lists no host.
    #[error("no hosts listed")]
    Empty,
}

/// Why a host cannot be used to start nodes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// `ip` could not be run.
    #[error("cannot run `ip`: {0}")]
    Ip(#[source] std::io::Error),
    /// `ip` refused the namespace.
    #[error("network namespace {name}: {why}")]
    Namespace {
        /// The namespace.
        name: String,
        /// What `ip` said.
        why: String,
    },
    /// The namespace has no way back to this host.
    #[error("network namespace {0} has no default route (create it with `threadwire net up`)")]
    NoRoute(String),
}

impl std::fmt::Display for Host {
    /// As a host file names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Local => write!(f, "local"),
            Host::Netns(n) => write!(f, "netns:{n}"),
            Host::Ssh(n) => write!(f, "ssh:{n}"),
        }
    }
}

impl std::str::FromStr for Host {
    type Err = ParseHostError;

    fn from_str(s: &str) -> Result<Host, ParseHostError> {
        let s = s.trim();
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b))
        };
        match s.split_once(':') {
            None if s == "local" => Ok(Host::Local),
            Some(("netns", n)) if name_ok(n) => Ok(Host::Netns(n.to_string())),
            Some(("ssh", n)) if name_ok(n) => Ok(Host::Ssh(n.to_string())),
            _ => Err(ParseHostError::Unknown(s.to_string())),
        }
    }
}

/// Parses a host file (module docs).
pub fn parse_host_file(text: &str) -> Result<Vec<Host>, HostFileError> {
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let entry = line.split('#').next().unwrap_or("").trim();
        if entry.is_empty() {
            continue;
        }
        hosts.push(
            entry
                .parse()
                .map_err(|why| HostFileError { line: i + 1, why })?,
        );
    }
    if hosts.is_empty() {
        return Err(HostFileError {
            line: 0,
            why: ParseHostError::Empty,
        });
    }
    Ok(hosts)
}

impl Host {
    /// The command that starts `program args` on this host, `local` or
    /// `netns:`, with `vars` in its environment; ssh hosts start their
    /// nodes through their proxy ([`crate::proxy`]).
    pub(crate) fn command(
        &self,
        program: &Path,
        args: &[OsString],
        vars: &[(String, String)],
    ) -> Command {
        let mut cmd = Command::new(program);
        if let Host::Netns(name) = self {
            enter_namespace(&mut cmd, name);
        }
        cmd.args(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// The namespace's default gateway: how a node in it reaches this host.
    pub(crate) fn gateway(&self) -> Result<Option<IpAddr>, HostError> {
        let Host::Netns(name) = self else {
            return Ok(None);
        };
        let out = Command::new("ip")
            .args(["-n", name, "-4", "route", "show", "default"])
            .output()
            .map_err(HostError::Ip)?;
        if !out.status.success() {
            return Err(HostError::Namespace {
                name: name.clone(),
                why: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let via = text
            .split_whitespace()
            .skip_while(|w| *w != "via")
            .nth(1)
            .and_then(|a| a.parse().ok());
        match via {
            Some(addr) => Ok(Some(addr)),
            None => Err(HostError::NoRoute(name.clone())),
        }
    }
}

/// Makes `cmd` start in network namespace `name` (`/var/run/netns/NAME`,
/// as `ip netns add` makes it): the child enters it between fork and exec
/// (`setns`). Starting the node through `ip netns exec` instead cost one
/// more exec, and a mount namespace, per node (`pvm_spawn` of 16 tasks
/// onto another emulated host: 1.05× PVM's time; docs/PERFORMANCE.md). A
/// namespace that cannot be opened fails the start with the cause.
fn enter_namespace(cmd: &mut Command, name: &str) {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let path = Path::new("/var/run/netns").join(name);
    // Opened here, close-on-exec, so the child needs no allocation.
    let ns: Result<OwnedFd, i32> = std::fs::File::open(&path)
        .map(OwnedFd::from)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::ENOENT));
    // SAFETY: the closure runs in the child between fork and exec and
    // only calls setns(2), which is async-signal-safe, and makes errors
    // from raw numbers, which allocates nothing; `ns` is owned by the
    // closure and outlives the spawn.
    unsafe {
        cmd.pre_exec(move || match &ns {
            Ok(fd) => match libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            },
            Err(errno) => Err(std::io::Error::from_raw_os_error(*errno)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_files_parse_and_garbage_is_named() {
        let hosts =
            parse_host_file("# two hosts\nlocal\nnetns:twh0  # a namespace\n\nssh:node-1\n")
                .unwrap();
        assert_eq!(
            hosts,
            [
                Host::Local,
                Host::Netns("twh0".into()),
                Host::Ssh("node-1".into())
            ]
        );
        let e = parse_host_file("local\nnetns:a b\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(parse_host_file("# nothing\n").is_err());
        assert!("ssh:".parse::<Host>().is_err());
        assert!("netns:x;rm -rf".parse::<Host>().is_err());
        for h in hosts {
            assert_eq!(h.to_string().parse::<Host>().unwrap(), h);
        }
    }
}
