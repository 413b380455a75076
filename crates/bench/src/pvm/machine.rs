//! Where `pvmbench` runs (steps 2 and 3 of the module docs): under
//! `threadwire pvm`, or against a private pvmd; on this host, or with its
//! partners on a second emulated host.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use threadwire_testbed::net::Net;
use threadwire_testbed::pvm::{Config, Daemon};

use super::program::{self, Line, Mode, Program};
use super::{Error, Options};
use crate::peers::process::{io, Group};

/// A way to run the program: one [`Runner`] per runtime and placement,
/// kept for all the repetitions there.
pub enum Runner {
    /// `threadwire pvm [--hosts FILE] -- pvmbench …`.
    Threadwire {
        /// The `threadwire` binary.
        binary: PathBuf,
        /// Its host file, on two emulated hosts.
        hosts: Option<PathBuf>,
        /// Where the partners go: the second host's namespace.
        partner_host: Option<String>,
    },
    /// The program as a task of a private virtual machine.
    Pvm {
        /// Its pvmd (the master's, on two hosts).
        daemon: Daemon,
        /// The namespace the program starts in, on two hosts.
        namespace: Option<String>,
        /// Where the partners go: the second host's address.
        partner_host: Option<String>,
    },
}

/// Runs of this process so far, for unique file names.
static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Runner {
    /// threadwire's libpvm3 under `binary`, which must find it beside
    /// itself; on `net`'s first two hosts if given, with a host file in
    /// `dir`.
    pub fn threadwire(binary: &Path, net: Option<&Net>, dir: &Path) -> Result<Runner, Error> {
        let built = binary.parent().unwrap_or(Path::new("."));
        threadwire_launch::pvm::library_dir(built)?;
        let (hosts, partner_host) = match net {
            Some(net) => {
                let file = dir.join("hosts.txt");
                let lines: String = net.hosts[..2]
                    .iter()
                    .map(|h| format!("netns:{}\n", h.name))
                    .collect();
                std::fs::write(&file, lines).map_err(io("writing a host file"))?;
                (Some(file), Some(net.hosts[1].name.clone()))
            }
            None => (None, None),
        };
        Ok(Runner::Threadwire {
            binary: binary.to_path_buf(),
            hosts,
            partner_host,
        })
    }

    /// A private pvmd on this host, or one on each of `net`'s first two
    /// hosts ([`crate::peers::pvm::two_hosts`]).
    pub fn pvm(net: Option<&Net>, deadline: Instant) -> Result<Runner, Error> {
        Ok(match net {
            None => Runner::Pvm {
                daemon: Daemon::start_with(&Config::default(), deadline)
                    .map_err(crate::peers::Error::from)?,
                namespace: None,
                partner_host: None,
            },
            Some(net) => {
                let [first, second] = [&net.hosts[0], &net.hosts[1]];
                let daemon =
                    crate::peers::pvm::two_hosts(Config::default(), first, second, deadline)?;
                Runner::Pvm {
                    daemon,
                    namespace: Some(first.name.clone()),
                    partner_host: Some(second.addr.to_string()),
                }
            }
        })
    }

    /// One run of `program` in `mode` to its end, and the lines of its
    /// results file.
    pub fn run(
        &self,
        program: &Program,
        options: &Options,
        mode: Mode,
        deadline: Instant,
    ) -> Result<Vec<Line>, Error> {
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let results = program.results_file(&format!("results-{run}"));
        let log = program.results_file(&format!("log-{run}"));
        let _ = std::fs::remove_file(&results);
        let partner_host = match self {
            Runner::Threadwire { partner_host, .. } | Runner::Pvm { partner_host, .. } => {
                partner_host.as_deref()
            }
        };
        let args = program::args(options, mode, &results, partner_host);
        let cmd = self.command(program.path(), args);
        let status = Group::spawn(cmd, &log, &log)?.wait(deadline)?;
        if !status.success() {
            return Err(Group::failed_log(status, &log).into());
        }
        let text = std::fs::read_to_string(&results).map_err(io("reading pvmbench's results"))?;
        let _ = std::fs::remove_file(&results);
        let _ = std::fs::remove_file(&log);
        program::parse(&text).ok_or(Error::Results(text))
    }

    fn command(&self, program: &Path, args: Vec<OsString>) -> Command {
        match self {
            Runner::Threadwire { binary, hosts, .. } => {
                let mut cmd = Command::new(binary);
                cmd.arg("pvm");
                if let Some(hosts) = hosts {
                    cmd.arg("--hosts").arg(hosts);
                }
                cmd.arg("--").arg(program).args(args);
                cmd
            }
            Runner::Pvm {
                daemon, namespace, ..
            } => {
                let mut cmd =
                    crate::peers::pvm::in_namespace(daemon, namespace.as_deref(), program);
                cmd.args(args);
                cmd
            }
        }
    }
}
