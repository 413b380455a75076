//! Whole jobs under launchers (issue 15): for each N, the wall time from
//! starting a launcher until it exits, for a job of N processes that each
//! initialize, pass one message to the right neighbour in a ring (rank + 1
//! mod N) while receiving one from the left, and exit.
//!
//! | Row | Launcher and program |
//! |---|---|
//! | threadwire run | `threadwire run -n N -- NODE`, the bench's node in its ring mode ([`RING_VARIABLE`], [`super::node::ring`]) |
//! | mpiexec.hydra (threadwire) | `mpiexec.hydra -n N NODE`: the same node, joining through PMI |
//! | srun (threadwire) | `srun --jobid=J --mpi=pmi2 -n N NODE`: a step in an allocation `J` of a one-host Slurm cluster ([`threadwire_testbed::slurm`]) |
//! | mpirun (Open MPI) | `mpirun.openmpi --allow-run-as-root --oversubscribe -np N --mca pml ob1 --mca btl self,vader ring` ([`OPEN_MPI_SELECTION`]) |
//! | mpiexec.hydra (MPICH) | `mpiexec.mpich -n N ring` (Debian's `mpiexec.mpich` is a link to `mpiexec.hydra`) |
//!
//! `ring` is `bench-peers/spawn/ring.c` ([`SOURCE`]), built with each MPI's
//! `mpicc`. Open MPI gets the shared-memory selection because it is its
//! fastest start here: a ring of 16 took 0.43–0.54 s so against 0.69–0.80
//! s with Debian's default selection; the peer is measured at its best.
//!
//! 1. **Prepare** each launcher once: nothing for `threadwire run`; for
//!    Hydra, find it; for Slurm, bring up the cluster with as many CPUs
//!    as the largest N and allocate them all (`salloc -n MAX`), so every
//!    row is a step, which needs no scheduling; for the MPIs, build
//!    `ring.c`. A launcher that cannot be prepared (not installed, no
//!    root for Slurm) is not measured, and [`Report::not_measured`] says
//!    why.
//! 2. **Alternate.** Per N, one untimed warm-up round and then the timed
//!    repetitions, each round running every launcher once in table order,
//!    so that a change in the machine's load falls on all of them alike.
//! 3. **Deadline.** Every launch runs in a process group of its own
//!    ([`crate::peers::process`]) and is killed with it past
//!    [`deadline`]; a launch that fails or is killed ends its launcher's
//!    rows at this N and every larger one ([`Report::failed`]), the others
//!    go on. (A killed `srun` leaves its step's tasks to slurmd; the
//!    cluster's teardown ends them.)

pub(crate) mod report;

pub use report::Goals;

use super::Millis;
use crate::peers::coll::{self, Mpi};
use crate::peers::process::{self, Group};
use crate::peers::ScratchDir;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire_testbed::slurm::{JobId, SlurmCluster, SlurmError, SlurmPlan};

/// Where the bench's node learns it runs a launcher row's job: the ring
/// mode of [`super::node`], any value.
pub const RING_VARIABLE: &str = "THREADWIRE_BENCH_SPAWN_RING";

/// The tag of the ring's message, in the node and in `ring.c`.
pub const RING_TAG: u32 = 15;

/// `bench-peers/spawn/ring.c`.
pub const SOURCE: &str = include_str!("../../../../../bench-peers/spawn/ring.c");

/// Open MPI's selection for the ring: ob1 over shared memory (module docs).
pub const OPEN_MPI_SELECTION: [&str; 6] = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"];

/// The launchers measured, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Launcher {
    /// `threadwire run` of the bench's node.
    Run,
    /// MPICH's Hydra starting the bench's node (PMI).
    Hydra,
    /// Slurm's `srun --mpi=pmi2` starting the bench's node.
    Srun,
    /// Open MPI's `mpirun` of `ring.c`.
    OpenMpi,
    /// MPICH's `mpiexec.hydra` of `ring.c`.
    Mpich,
}

impl Launcher {
    /// Every launcher, in table order.
    pub const ALL: [Launcher; 5] = [
        Launcher::Run,
        Launcher::Hydra,
        Launcher::Srun,
        Launcher::OpenMpi,
        Launcher::Mpich,
    ];

    /// Its row's name.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Run => "threadwire run",
            Launcher::Hydra => "mpiexec.hydra (threadwire)",
            Launcher::Srun => "srun (threadwire)",
            Launcher::OpenMpi => "mpirun (Open MPI)",
            Launcher::Mpich => "mpiexec.hydra (MPICH)",
        }
    }

    /// Whether it starts an MPI program: the yardsticks.
    pub fn is_mpi(self) -> bool {
        matches!(self, Launcher::OpenMpi | Launcher::Mpich)
    }
}

/// What the launcher rows need besides the node program.
#[derive(Clone, Debug)]
pub struct Options {
    /// `threadwire run`: the program and the arguments that come before
    /// `-n N -- NODE`.
    pub run: (PathBuf, Vec<OsString>),
}

/// The node program every threadwire row starts, with its arguments.
#[derive(Clone, Copy, Debug)]
pub struct Node<'a> {
    /// Its path.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [OsString],
}

/// One row: N processes under one launcher.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// The launcher.
    pub launcher: Launcher,
    /// N.
    pub count: u32,
    /// From starting the launcher until it exited.
    pub finished: Millis,
}

/// A launch that failed or was killed (module docs, step 3).
#[derive(Clone, Debug)]
pub struct Failure {
    /// The launcher.
    pub launcher: Launcher,
    /// The N it failed at; it has no rows from there on.
    pub count: u32,
    /// Why.
    pub error: Arc<Error>,
}

/// Everything [`run`] measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Timed repetitions per row.
    pub repetitions: u32,
    /// Launcher-major in [`Launcher::ALL`] order, then by N.
    pub rows: Vec<Row>,
    /// The launchers that could not be prepared, and why.
    pub not_measured: Vec<(Launcher, Arc<Error>)>,
    /// The launches that failed or hung.
    pub failed: Vec<Failure>,
}

/// Why a launcher has no rows, or no more.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The launcher is not installed, or a launch could not be started.
    #[error(transparent)]
    Peer(#[from] crate::peers::Error),
    /// `ring.c` could not be built with an MPI.
    #[error(transparent)]
    Mpi(#[from] coll::Error),
    /// The Slurm cluster could not be brought up or allocated.
    #[error("the Slurm cluster: {0}")]
    Slurm(#[from] SlurmError),
    /// A launch ended with a failure status.
    #[error("{status}: {log}")]
    Failed {
        /// Its exit status.
        status: ExitStatus,
        /// The end of its output.
        log: String,
    },
    /// A launch ran past its deadline and was killed.
    #[error("killed after {after:?}, its deadline: {log}")]
    TimedOut {
        /// How long it had run.
        after: Duration,
        /// The end of its output.
        log: String,
    },
}

/// How long a launch of `count` processes may take: 20 s and 200 ms a
/// process. MPICH's ranks busy-poll, so 256 of them on 2 cores are slow
/// to pass a ring, not hung.
pub fn deadline(count: u32) -> Duration {
    Duration::from_secs(20) + Duration::from_millis(200) * count
}

/// A launcher made ready (step 1).
enum Prepared {
    /// Nothing to make: `threadwire run`, `mpiexec.hydra`.
    Ready,
    /// An allocation in a cluster of its own (boxed: a cluster is large).
    Slurm {
        cluster: Box<SlurmCluster>,
        allocation: JobId,
    },
    /// `ring.c` built.
    Mpi(coll::Program),
}

impl Prepared {
    fn new(launcher: Launcher, largest: u32) -> Result<Prepared, Error> {
        let build = |mpi| coll::Program::build_from(mpi, "ring", SOURCE, &["-O2"]);
        Ok(match launcher {
            Launcher::Run => Prepared::Ready,
            Launcher::Hydra => {
                process::require(&["mpiexec.hydra"], Mpi::Mpich.packages())?;
                Prepared::Ready
            }
            Launcher::Srun => {
                let plan = SlurmPlan {
                    cpus_per_host: largest.max(SlurmPlan::new(1).cpus_per_host),
                    ..SlurmPlan::new(1)
                };
                let cluster = Box::new(SlurmCluster::start(&plan)?);
                let allocation = cluster.allocate(&["-n", &largest.to_string()])?;
                Prepared::Slurm {
                    cluster,
                    allocation,
                }
            }
            Launcher::OpenMpi => Prepared::Mpi(build(Mpi::OpenMpi)?),
            Launcher::Mpich => Prepared::Mpi(build(Mpi::Mpich)?),
        })
    }

    /// The launcher's command for a job of `count`.
    fn command(&self, launcher: Launcher, options: &Options, node: Node, count: u32) -> Command {
        let n = count.to_string();
        let mut cmd = match (launcher, self) {
            (Launcher::Run, _) => {
                let mut cmd = Command::new(&options.run.0);
                cmd.args(&options.run.1).args(["-n", &n, "--"]);
                cmd.arg(node.program).args(node.args);
                cmd
            }
            (Launcher::Hydra, _) => {
                let mut cmd = Command::new("mpiexec.hydra");
                cmd.args(["-n", &n]).arg(node.program).args(node.args);
                cmd
            }
            (
                _,
                Prepared::Slurm {
                    cluster,
                    allocation,
                },
            ) => {
                let mut cmd = cluster.command("srun");
                cmd.arg(format!("--jobid={allocation}"))
                    .args(["--mpi=pmi2", "-n", &n])
                    .arg(node.program)
                    .args(node.args);
                cmd
            }
            (_, Prepared::Mpi(program)) => {
                let selection: &[&str] = match launcher {
                    Launcher::OpenMpi => &OPEN_MPI_SELECTION,
                    _ => &[],
                };
                program.command(count, selection, &[])
            }
            (_, Prepared::Ready) => unreachable!("{launcher:?} is prepared with what it runs"),
        };
        cmd.env(RING_VARIABLE, "1");
        cmd
    }
}

/// The steps of [`run`], one per N, for a progress bar.
pub fn steps(counts: &[u32]) -> usize {
    counts.len()
}

/// Runs every launcher's rows at each of `counts` (module docs);
/// `on_step` is called after each N.
pub fn run(
    options: &Options,
    node: Node,
    counts: &[u32],
    repetitions: u32,
    mut on_step: impl FnMut(u32),
) -> Report {
    let repetitions = repetitions.max(1);
    let largest = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut report = Report {
        repetitions,
        rows: Vec::new(),
        not_measured: Vec::new(),
        failed: Vec::new(),
    };
    let mut prepared = Vec::new();
    for launcher in Launcher::ALL {
        match Prepared::new(launcher, largest) {
            Ok(p) => prepared.push((launcher, p)),
            Err(e) => report.not_measured.push((launcher, Arc::new(e))),
        }
    }
    let scratch = ScratchDir::named("spawn-launchers").map_err(|source| {
        Error::Peer(crate::peers::Error::Io {
            what: "creating a scratch directory",
            source,
        })
    });
    let scratch = match scratch {
        Ok(dir) => dir,
        Err(e) => {
            let e = Arc::new(e);
            report.not_measured = Launcher::ALL.map(|l| (l, e.clone())).to_vec();
            return report;
        }
    };
    for &count in counts {
        let count = count.max(1);
        // Launchers still running, and their times at this N.
        let mut running: Vec<(Launcher, &Prepared, Vec<f64>)> = prepared
            .iter()
            .filter(|(l, _)| !report.failed.iter().any(|f| f.launcher == *l))
            .map(|(l, p)| (*l, p, Vec::new()))
            .collect();
        for round in 0..=repetitions {
            for (launcher, prepared, ms) in &mut running {
                if report.failed.iter().any(|f| f.launcher == *launcher) {
                    continue;
                }
                let cmd = prepared.command(*launcher, options, node, count);
                let name = format!("{launcher:?}-{count}-{round}");
                match launch(cmd, &scratch.0, &name, count) {
                    Ok(t) if round > 0 => ms.push(t),
                    Ok(_) => {}
                    Err(e) => report.failed.push(Failure {
                        launcher: *launcher,
                        count,
                        error: Arc::new(e),
                    }),
                }
            }
        }
        for (launcher, _, mut ms) in running {
            if ms.len() == repetitions as usize {
                report.rows.push(Row {
                    launcher,
                    count,
                    finished: Millis::of(&mut ms),
                });
            }
        }
        on_step(count);
    }
    let order = |l: Launcher| Launcher::ALL.iter().position(|&k| k == l);
    report.rows.sort_by_key(|r| (order(r.launcher), r.count));
    report
}

/// One launch, timed from its start to its exit (steps 2–3); its output
/// goes to `NAME.out` in `dir`.
fn launch(cmd: Command, dir: &Path, name: &str, count: u32) -> Result<f64, Error> {
    let output = dir.join(format!("{name}.out"));
    let start = Instant::now();
    let mut group = Group::spawn(cmd, &output, &output)?;
    let status = group.wait(start + deadline(count));
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let log = || process::last_lines(&std::fs::read_to_string(&output).unwrap_or_default());
    match status {
        Ok(status) if status.success() => Ok(ms),
        Ok(status) => Err(Error::Failed { status, log: log() }),
        Err(crate::peers::Error::TimedOut(after)) => Err(Error::TimedOut { after, log: log() }),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_have_distinct_names_and_the_mpis_are_the_yardsticks() {
        let names: std::collections::HashSet<_> = Launcher::ALL.map(Launcher::name).into();
        assert_eq!(names.len(), Launcher::ALL.len());
        let mpis: Vec<_> = Launcher::ALL.into_iter().filter(|l| l.is_mpi()).collect();
        assert_eq!(mpis, [Launcher::OpenMpi, Launcher::Mpich]);
        assert!(deadline(256) > deadline(1));
    }
}
