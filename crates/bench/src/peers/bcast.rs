//! The peers of `threadwire bench bcast`: PVM 3.4.6's `pvm_mcast` and
//! `pvm_bcast`, and `MPI_Bcast` in Open MPI and MPICH, each with its root
//! on the first of `k + 1` emulated hosts and one receiver on each other.
//!
//! Two C programs, embedded here, time their broadcasts inside
//! themselves as [`crate::bcast`] defines one (their headers say how):
//!
//! 1. **Build, once per run** ([`Programs::build`]). `bcastpvm.c` with
//!    the system `cc` against `pvm3.h`, `-lgpvm3 -lpvm3` (Debian's
//!    `pvm-dev`; [`crate::pvm::program`]); `bcastmpi.c` with each MPI's
//!    `mpicc` ([`crate::peers::coll::Program`]). A program that cannot be
//!    built takes its systems out, with the reason (a missing package is
//!    named).
//! 2. **Machines, once per `k`** ([`Machines::new`]). PVM: a private
//!    virtual machine of one pvmd per host, the master's on the root's
//!    host ([`crate::peers::pvm`]'s machinery of `bench pvm`, for any
//!    number of hosts); the root task runs in the first namespace and
//!    spawns one receiver on each other host by address (`PvmTaskHost`).
//!    MPI: the launcher in the root namespace starts one rank on each
//!    host through an ssh stand-in ([`crate::peers::mpi`]'s steps: UCX
//!    held to TCP, no binding, Hydra's `-localhost`).
//! 3. **Runs** ([`Machines::run`]): one program run measures every size,
//!    killed past a deadline computed from the sizes, the link's rate and
//!    `k` (a sender that sends `k` copies at the link's rate, three times
//!    over, plus a minute), so that a hang costs one row, never the run.
//!    The PVM program writes its lines to a results file, the MPI one to
//!    rank 0's standard output: `bcast size=BYTES ns=NS`, one per timed
//!    broadcast ([`parse`]). The MPI one ends its output with `done`
//!    before `MPI_Finalize`, which MPICH 4.0's ch4:ucx now and then never
//!    leaves across emulated hosts (one rank progressing its TCP
//!    endpoints, the others waiting in PMI's barrier; about half of the
//!    runs to 2 receivers): the launch is watched for that line, and one
//!    still running [`FINALIZE_GRACE`] after it is killed and its figures
//!    kept, with a warning in the log.

use std::ffi::OsString;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use threadwire_testbed::net::{Host, Link};
use threadwire_testbed::pvm::{Config, Daemon};
use threadwire_testbed::watch::{wait_until, Watched};

use crate::bcast::System;
use crate::peers::coll::{self as mpi, Mpi};
use crate::peers::process::{io, Group};
use crate::peers::ScratchDir;
use crate::pvm::program::Program as PvmProgram;

/// `bench-peers/pvm/bcastpvm.c`.
pub const PVM_SOURCE: &str = include_str!("../../../../bench-peers/pvm/bcastpvm.c");
/// `bench-peers/bcast/bcastmpi.c`.
pub const MPI_SOURCE: &str = include_str!("../../../../bench-peers/bcast/bcastmpi.c");

/// Where Debian's `pvm` keeps `pvmgs`, the group server that `pvm_bcast`'s
/// group needs: pvmd's search path, which its default
/// (`$PVM_ROOT/bin/$PVM_ARCH`) misses.
const PVM_GROUP_SERVER_DIR: &str = "/usr/lib/pvm3/lib";

/// The MPIs' ranks on emulated hosts that share this machine's cores:
/// with one slot per host each MPI thinks itself alone on each and polls
/// without yielding, so that `k + 1` polling ranks share 2 cores (Open
/// MPI: 8 B to 2 receivers took 11 ms; MPICH: 1000 B and 10^6 B to 2
/// receivers ran past a minute). Each is told to yield the core while it
/// polls: what a rank on a machine of its own would not need, and which
/// costs it little there.
fn yield_when_idle(mpi: Mpi) -> [&'static str; 3] {
    match mpi {
        Mpi::OpenMpi => ["--mca", "mpi_yield_when_idle", "1"],
        // Polls between yields (MPICH's default 1000).
        Mpi::Mpich => ["-genv", "MPIR_CVAR_POLLS_BEFORE_YIELD", "1"],
    }
}

/// The MPI program's last line, once every figure is out.
const DONE: &str = "done";
/// How long MPI_Finalize may take once every figure is out (step 3).
const FINALIZE_GRACE: Duration = Duration::from_secs(5);

/// How long a machine may take to start, past which it is given up.
const START_DEADLINE: Duration = Duration::from_secs(60);
/// What a run may take beyond its estimate.
const RUN_GRACE: Duration = Duration::from_secs(60);

/// Why a peer has no figures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Starting or running a program, or PVM's machine.
    #[error(transparent)]
    Peer(#[from] crate::peers::Error),
    /// The program's lines are not as documented.
    #[error("the program's results are not as documented: {0:?}")]
    Results(String),
    /// The program or the machine it needs could not be had (the
    /// reason was reported once, where it arose).
    #[error("{0}")]
    Unavailable(String),
}

/// What one run measures.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Sizes in bytes.
    pub sizes: Vec<usize>,
    /// Timed broadcasts of a size go on while they have taken less.
    pub per_size: Duration,
    /// The hosts' link, for the deadline.
    pub link: Link,
}

impl RunOptions {
    /// The deadline of a run to `receivers` (module docs, step 3).
    fn deadline(&self, receivers: u32) -> Instant {
        let bytes_per_second = self.link.rate_mbit().unwrap_or(1000.0) * 1e6 / 8.0;
        let estimate: f64 = self
            .sizes
            .iter()
            .map(|&size| {
                let broadcast = f64::from(receivers) * size as f64 / bytes_per_second + 0.05;
                self.per_size.as_secs_f64() + 3.0 * 2.0 * broadcast
            })
            .sum();
        Instant::now() + Duration::from_secs_f64(estimate) + RUN_GRACE
    }

    fn sizes_argument(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|s| s.to_string()).collect();
        sizes.join(",")
    }

    fn ms_argument(&self) -> String {
        self.per_size.as_millis().max(1).to_string()
    }
}

/// The programs of the systems asked for (module docs, step 1).
pub struct Programs {
    pvm: Option<Result<PvmProgram, String>>,
    mpis: Vec<(Mpi, Result<mpi::Program, String>)>,
}

/// The MPI of a system, if it is one.
fn mpi_of(system: System) -> Option<Mpi> {
    match system {
        System::OpenMpi => Some(Mpi::OpenMpi),
        System::Mpich => Some(Mpi::Mpich),
        _ => None,
    }
}

fn is_pvm(system: System) -> bool {
    matches!(system, System::PvmMcast | System::PvmBcast)
}

impl Programs {
    /// Builds the programs `systems` need.
    pub fn build(systems: &[System]) -> Programs {
        let pvm = systems.iter().any(|&s| is_pvm(s)).then(|| {
            PvmProgram::build_from("bcastpvm", PVM_SOURCE, &["-lgpvm3", "-lpvm3"])
                .map_err(|e| format!("bcastpvm.c cannot be built: {e}"))
        });
        let mpis = systems
            .iter()
            .filter_map(|&s| mpi_of(s))
            .map(|m| {
                let program = mpi::Program::build_from(m, "bcastmpi", MPI_SOURCE, &["-O2"])
                    .map_err(|e| format!("bcastmpi.c cannot be built: {e}"));
                (m, program)
            })
            .collect();
        Programs { pvm, mpis }
    }

    /// Each system asked for whose program could not be built, and why.
    pub fn failures(&self) -> Vec<(System, String)> {
        let mut failures = Vec::new();
        if let Some(Err(e)) = &self.pvm {
            failures.push((System::PvmMcast, e.clone()));
            failures.push((System::PvmBcast, e.clone()));
        }
        for (m, program) in &self.mpis {
            if let Err(e) = program {
                failures.push((system_of(*m), e.clone()));
            }
        }
        failures
    }

    /// Whether `system`'s program is built.
    pub fn has(&self, system: System) -> bool {
        match mpi_of(system) {
            Some(m) => self.mpi(m).is_some(),
            None => is_pvm(system) && matches!(self.pvm, Some(Ok(_))),
        }
    }

    fn mpi(&self, m: Mpi) -> Option<&mpi::Program> {
        self.mpis
            .iter()
            .find(|(each, _)| *each == m)
            .and_then(|(_, p)| p.as_ref().ok())
    }
}

fn system_of(m: Mpi) -> System {
    match m {
        Mpi::OpenMpi => System::OpenMpi,
        Mpi::Mpich => System::Mpich,
    }
}

/// The machinery of one `k` (module docs, step 2).
pub struct Machines<'a> {
    programs: &'a Programs,
    hosts: Vec<Host>,
    /// The virtual machine, if a PVM system is run.
    pvm: Option<Result<Daemon, String>>,
    /// The launchers' arguments per MPI.
    mpi: Option<Result<MpiLaunchers, String>>,
}

/// Each MPI's launcher arguments for the hosts, and the scratch directory
/// of their agent script and host file.
struct MpiLaunchers {
    _dir: ScratchDir,
    arguments: Vec<(Mpi, Vec<String>)>,
}

/// Machines of this process so far, for unique directory names.
static MACHINES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl<'a> Machines<'a> {
    /// Sets up what `systems` need on `hosts` (the root's first) whose
    /// bridge is `gateway`.
    pub fn new(
        programs: &'a Programs,
        systems: &[System],
        hosts: &[Host],
        gateway: Ipv4Addr,
    ) -> Machines<'a> {
        let pvm = systems
            .iter()
            .any(|&s| is_pvm(s) && programs.has(s))
            .then(|| {
                let others: Vec<&Host> = hosts[1..].iter().collect();
                let deadline = Instant::now() + START_DEADLINE;
                let config = Config {
                    search_path: vec![PVM_GROUP_SERVER_DIR.into()],
                    ..Config::default()
                };
                crate::peers::pvm::virtual_machine(config, &hosts[0], &others, deadline)
                    .map_err(|e| format!("PVM's virtual machine of {} hosts: {e}", hosts.len()))
            });
        let mpis: Vec<Mpi> = systems
            .iter()
            .filter(|&&s| programs.has(s))
            .filter_map(|&s| mpi_of(s))
            .collect();
        let mpi = (!mpis.is_empty()).then(|| {
            let number = MACHINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = ScratchDir::named(&format!("bcast-mpi-{number}"))
                .map_err(|e| format!("creating a scratch directory: {e}"))?;
            let each: Vec<&Host> = hosts.iter().collect();
            let arguments = mpis
                .iter()
                .map(|&m| {
                    let mpich = m == Mpi::Mpich;
                    crate::peers::mpi::across_hosts(mpich, &each, gateway, &dir.0)
                        .map(|mut args| {
                            args.extend(yield_when_idle(m).map(String::from));
                            (m, args)
                        })
                        .map_err(|e| format!("MPI's host list: {e}"))
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(MpiLaunchers {
                _dir: dir,
                arguments,
            })
        });
        Machines {
            programs,
            hosts: hosts.to_vec(),
            pvm,
            mpi,
        }
    }

    /// Each system whose machine could not be set up, and why.
    pub fn failures(&self) -> Vec<(System, String)> {
        let mut failures = Vec::new();
        if let Some(Err(e)) = &self.pvm {
            failures.push((System::PvmMcast, e.clone()));
            failures.push((System::PvmBcast, e.clone()));
        }
        if let Some(Err(e)) = &self.mpi {
            failures.push((System::OpenMpi, e.clone()));
            failures.push((System::Mpich, e.clone()));
        }
        failures
    }

    /// One run of `system`'s program: the times of each size, in the
    /// order measured.
    pub fn run(
        &self,
        system: System,
        options: &RunOptions,
    ) -> Result<Vec<(usize, Vec<u64>)>, Error> {
        let receivers = self.hosts.len() as u32 - 1;
        let deadline = options.deadline(receivers);
        let text = match mpi_of(system) {
            Some(m) => self.run_mpi(m, options, deadline)?,
            None => self.run_pvm(system, options, deadline)?,
        };
        parse(&text).ok_or(Error::Results(text))
    }

    fn run_pvm(
        &self,
        system: System,
        options: &RunOptions,
        deadline: Instant,
    ) -> Result<String, Error> {
        let unavailable = || Error::Unavailable("PVM is not set up".to_string());
        let Some(Ok(daemon)) = &self.pvm else {
            return Err(unavailable());
        };
        let Some(Ok(program)) = &self.programs.pvm else {
            return Err(unavailable());
        };
        let run = MACHINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let results = program.results_file(&format!("results-{run}"));
        let log = program.results_file(&format!("log-{run}"));
        let mode = match system {
            System::PvmBcast => "bcast",
            _ => "mcast",
        };
        let receivers: Vec<String> = self.hosts[1..].iter().map(|h| h.addr.to_string()).collect();
        let args: Vec<OsString> = vec![
            "-o".into(),
            results.clone().into(),
            "-m".into(),
            mode.into(),
            "-H".into(),
            receivers.join(",").into(),
            "-s".into(),
            options.sizes_argument().into(),
            "-t".into(),
            options.ms_argument().into(),
        ];
        let mut cmd =
            crate::peers::pvm::in_namespace(daemon, Some(&self.hosts[0].name), program.path());
        cmd.args(args);
        let status = Group::spawn(cmd, &log, &log)?.wait(deadline)?;
        if !status.success() {
            return Err(Group::failed_log(status, &log).into());
        }
        let text = std::fs::read_to_string(&results).map_err(io("reading bcastpvm's results"))?;
        let _ = std::fs::remove_file(&results);
        let _ = std::fs::remove_file(&log);
        Ok(text)
    }

    fn run_mpi(&self, m: Mpi, options: &RunOptions, deadline: Instant) -> Result<String, Error> {
        let unavailable = || Error::Unavailable(format!("{} is not set up", m.name()));
        let program = self.programs.mpi(m).ok_or_else(unavailable)?;
        let Some(Ok(launchers)) = &self.mpi else {
            return Err(unavailable());
        };
        let launcher = launchers
            .arguments
            .iter()
            .find(|(each, _)| *each == m)
            .map(|(_, args)| args)
            .ok_or_else(unavailable)?;
        let launcher: Vec<&str> = launcher.iter().map(String::as_str).collect();
        let mut args = vec![options.ms_argument()];
        args.extend(options.sizes.iter().map(|s| s.to_string()));
        let run = MACHINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ranks = self.hosts.len() as u32;
        let (output, log) = program.files(&format!("bcast-{ranks}-{run}"));
        let started = Instant::now();
        let mut launcher = Group::spawn(program.command(ranks, &launcher, &args), &output, &log)?;
        let done =
            || std::fs::read_to_string(&output).is_ok_and(|text| text.lines().any(|l| l == DONE));
        let dir = output.parent().unwrap_or(Path::new("."));
        let watched = wait_until(dir, done, Some(launcher.process().pidfd()), deadline)
            .map_err(io("watching an MPI launch's output"))?;
        let status = match watched {
            Watched::Ready => match launcher.wait(Instant::now() + FINALIZE_GRACE) {
                Err(crate::peers::Error::TimedOut(_)) => {
                    // Killed by `wait`: step 3's MPI_Finalize that never
                    // returns; every figure is out.
                    tracing::warn!(
                        mpi = m.name(),
                        ranks,
                        "MPI_Finalize did not return; launch killed"
                    );
                    return read(&output);
                }
                other => other?,
            },
            Watched::ProcessExited => launcher.wait(deadline)?,
            Watched::TimedOut => {
                launcher.kill();
                return Err(crate::peers::Error::TimedOut(started.elapsed()).into());
            }
        };
        if !status.success() {
            return Err(Group::failed_log(status, &log).into());
        }
        read(&output)
    }
}

/// The figures of a launch's output.
fn read(output: &Path) -> Result<String, Error> {
    Ok(std::fs::read_to_string(output).map_err(io("reading bcastmpi's output"))?)
}

/// The programs' lines, `bcast size=BYTES ns=NS`, as each size's times in
/// the order the sizes first appear; `None` for anything else.
pub fn parse(text: &str) -> Option<Vec<(usize, Vec<u64>)>> {
    let mut sizes: Vec<(usize, Vec<u64>)> = Vec::new();
    for line in text.lines().filter(|&l| l != DONE) {
        let rest = line.strip_prefix("bcast size=")?;
        let (size, ns) = rest.split_once(" ns=")?;
        let (size, ns): (usize, u64) = (size.parse().ok()?, ns.trim().parse().ok()?);
        match sizes.iter_mut().find(|(s, _)| *s == size) {
            Some((_, times)) => times.push(ns),
            None => sizes.push((size, vec![ns])),
        }
    }
    Some(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_parse_into_times_per_size() {
        let text =
            "bcast size=8 ns=100\nbcast size=8 ns=120\nbcast size=1000000 ns=900000000\ndone\n";
        assert_eq!(
            parse(text),
            Some(vec![(8, vec![100, 120]), (1_000_000, vec![900_000_000])])
        );
        assert_eq!(parse("bcast size=8 ns=x"), None);
        assert_eq!(parse("libpvm [t40001]: pvm_mcast(): Bad parameter"), None);
    }

    #[test]
    fn a_deadline_grows_with_receivers_and_size() {
        let options = RunOptions {
            sizes: vec![1_000_000],
            per_size: Duration::from_millis(100),
            link: Link::Ethernet10,
        };
        let now = Instant::now();
        let one = options.deadline(1) - now;
        let eight = options.deadline(8) - now;
        assert!(eight > one + Duration::from_secs(30), "{one:?} {eight:?}");
    }
}
