//! Start-up cost, processes versus threads: the thesis' Table 5.1 (1998,
//! [`seeds::THESIS_TABLE_5_1`]) of the time to spawn 1, 4, 8 and 16
//! processes (57.75 to 852.54 ms) and threads (1.75 to 20.94 ms),
//! measured here for N of each kind. The report prints Table 5.1 beside
//! the processes and pvm_spawn rows and the fibers and OS threads rows at
//! the N it has (the default N are its N), and each row's figure of it.
//!
//! | Row        | Started                                          | Timed until |
//! |------------|--------------------------------------------------|-------------|
//! | processes  | a job of N nodes, [`threadwire_launch::run`]                 | the last node's report, sent right after `init`, reaches the launcher (*all joined*); `run` returns (*job finished*) |
//! | fibers     | N × [`spawn`](threadwire::Node::spawn) of a body that returns | all N joined |
//! | OS threads | N × [`spawn_os`](threadwire::Node::spawn_os), likewise | all N joined |
//! | pvm_spawn  | N tasks with one `pvm_spawn` from a PVM parent, under a private pvmd ([`crate::peers::pvm`]) | a message from each has reached the parent |
//! | comm_spawn | N children with one `MPI_Comm_spawn` from a running one-rank Open MPI job (`mpirun -n 1`, [`crate::peers::comm_spawn`]): the peer of adding nodes to a running job | an `int` from each has reached the parent on the intercommunicator |
//! | added nodes | in a job of 2 nodes whose node 1 waits in a receive, N nodes of this program added by node 0's one [`add_nodes`](threadwire::Endpoint::add_nodes) | `add_nodes` has returned: every new node joined, connected to every node |
//! | remote fibers | in a job of 2 nodes, N × [`spawn_remote`](threadwire::Endpoint::spawn_remote) by node 0 on node 1 of an entry that returns | all N joined ([`RemoteHandle::join`](threadwire::RemoteHandle::join)) |
//!
//! Beside them, whole jobs under launchers ([`launchers`], issue 15): the
//! wall time of `threadwire run`, `mpiexec.hydra` and `srun` starting N
//! of this program's nodes that pass one message round a ring, against
//! Open MPI's `mpirun` and MPICH's `mpiexec` starting an MPI program that
//! does the same ([`Options::launchers`]).
//!
//! The remote rows' job also times active-message round trips (an empty
//! inline handler that answers empty) between the same two nodes, the
//! yardstick of a remote spawn: [`Report::am_round_trip_us`].
//!
//! Every row has one untimed warm-up (page cache, stack pool, the node's
//! fiber workers, which start at its first spawn) before its timed
//! repetitions. The pvm_spawn rows are measured where PVM is installed;
//! elsewhere [`Report::pvm`] names what is missing and its package. The
//! comm_spawn rows likewise where Open MPI and its `mpicc` are
//! ([`Report::comm_spawn`]); their warm-up is the first spawn of each
//! `mpirun`, and a launch that hangs (Open MPI 4.1 does, now and then) is
//! killed and its missing rounds run again after a warm-up of their own,
//! and likewise after a launch that failed, both counted
//! ([`CommSpawn::Measured`]). threadwire's own
//! row for adding nodes to a running job is still to come: it goes next
//! to comm_spawn, its peer.
//!
//! A node is the program the caller names ([`Options::program`]), which
//! must call [`crate::peers::pvm::task_main`] before anything else (it is also the
//! PVM parent and its tasks) and [`node`] under the launcher: `init`, then
//! one report ([`NodeResult::Joined`]) with two timestamps, on the node's
//! control connection to the launcher. Linux's
//! `CLOCK_MONOTONIC` is one clock for every process of a host, so the
//! launcher subtracts its own reading at the call of `run` from the nodes'
//! and splits a process start into a [`Timeline`]: until the last node's
//! code runs (fork, exec, loading, the program's own start), until the
//! last node is past `init` (rendezvous, a connection and shared-memory
//! setup per pair of nodes), until the launcher has its report (the
//! table's *line read* column: the report is the node's line to the
//! launcher, read the moment its event arrives).

pub mod launchers;
pub mod node;
mod processes;
pub mod report;

pub use node::{node, NodeError};

use processes::{monotonic_ns, processes};

use crate::node_result::NodeResult;
use crate::seeds;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::{Endpoint, JoinError, ThreadHandle};
use threadwire_launch::{Event, JobSpec, LaunchError};

/// A job that takes longer than this has hung; it is killed and the run fails.
const JOB_TIMEOUT: Duration = Duration::from_secs(60);
/// The comm_spawn rows' time per N, hung launches and all.
const COMM_SPAWN_TIMEOUT: Duration = Duration::from_secs(180);

/// The kinds of threads of control measured, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Node processes started by the launcher.
    Processes,
    /// Fibers ([`Node::spawn`](threadwire::Node::spawn)).
    Fibers,
    /// OS threads ([`Node::spawn_os`](threadwire::Node::spawn_os)).
    OsThreads,
    /// PVM tasks started by `pvm_spawn` ([`crate::peers::pvm::spawn_times`]).
    PvmSpawn,
    /// Open MPI processes started into a running job by `MPI_Comm_spawn`
    /// ([`crate::peers::comm_spawn::spawn_times`]).
    CommSpawn,
    /// Nodes added to a running job of 2 ([`Endpoint::add_nodes`]), the
    /// row to read beside pvm_spawn and comm_spawn.
    AddedNodes,
    /// Fibers started on another node ([`Endpoint::spawn_remote`](threadwire::Endpoint::spawn_remote)).
    RemoteFibers,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 7] = [
        Kind::Processes,
        Kind::Fibers,
        Kind::OsThreads,
        Kind::PvmSpawn,
        Kind::CommSpawn,
        Kind::AddedNodes,
        Kind::RemoteFibers,
    ];

    /// The row's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Processes => "processes",
            Kind::Fibers => "fibers",
            Kind::OsThreads => "OS threads",
            Kind::PvmSpawn => "pvm_spawn",
            Kind::CommSpawn => "comm_spawn",
            Kind::AddedNodes => "added nodes",
            Kind::RemoteFibers => "remote fibers",
        }
    }

    /// Table 5.1's figure for starting `count` of this kind, in ms, if it
    /// has that N: its processes for the kinds that start processes, its
    /// threads for the others.
    pub fn seed_ms(self, count: u32) -> Option<f64> {
        let row = seeds::spawn_ms(count)?;
        Some(match self {
            Kind::Processes | Kind::PvmSpawn | Kind::CommSpawn | Kind::AddedNodes => {
                row.processes_ms.value
            }
            Kind::Fibers | Kind::OsThreads | Kind::RemoteFibers => row.threads_ms.value,
        })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Numbers N of processes, fibers and OS threads to start, one row each.
    pub counts: Vec<u32>,
    /// Timed repetitions per row (after one untimed warm-up).
    pub repetitions: u32,
    /// The node program of the process rows, also the PVM parent and
    /// tasks of the pvm_spawn rows: it must call [`crate::peers::pvm::task_main`]
    /// first, then [`node`].
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Hosts of the process rows, node `i` on host `i` modulo their number
    /// (`JobSpec::hosts`); empty for this host. Fibers, OS threads and
    /// pvm_spawn stay on this host.
    pub hosts: Vec<threadwire_launch::Host>,
    /// The kinds measured, in [`Kind::ALL`] order.
    pub kinds: Vec<Kind>,
    /// The launcher rows ([`launchers`]), if any, on this host.
    pub launchers: Option<launchers::Options>,
}

impl Options {
    /// N = 1, 4, 8, 16 (Table 5.1's) and 5 repetitions of `program` with
    /// `args`.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Options {
        Options {
            counts: seeds::THESIS_TABLE_5_1.map(|r| r.spawned).to_vec(),
            repetitions: 5,
            program: program.into(),
            args,
            hosts: Vec::new(),
            kinds: Kind::ALL.to_vec(),
            launchers: None,
        }
    }
}

/// Milliseconds over the repetitions: median, fastest, slowest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Millis {
    /// The median repetition (the upper one for an even count).
    pub median: f64,
    /// The fastest repetition.
    pub min: f64,
    /// The slowest repetition.
    pub max: f64,
}

impl Millis {
    fn of(ms: &mut [f64]) -> Millis {
        let (median, min, max) = crate::spread(ms);
        Millis { median, min, max }
    }
}

/// Where a job's start goes: milliseconds from the call of
/// [`threadwire_launch::run`], by the nodes' clocks (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timeline {
    /// Until the last node's code runs: fork, exec, loading, the program's
    /// own start.
    pub running: Millis,
    /// Until the last node is past `init`.
    pub initialized: Millis,
}

/// One row: N of one kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// What was started.
    pub kind: Kind,
    /// How many.
    pub count: u32,
    /// Until all have joined: every node past `init` as the launcher sees
    /// it, or every thread run and joined.
    pub joined: Millis,
    /// Processes only: until the job has ended and `run` returned.
    pub finished: Option<Millis>,
    /// Processes only: the stages of `joined`.
    pub timeline: Option<Timeline>,
}

/// Whether PVM, the 1998 peer, was measured.
#[derive(Clone, Debug)]
pub enum Pvm {
    /// Its rows are among [`Report::rows`].
    Measured,
    /// Not measured: PVM is missing (the error names the piece and the
    /// Debian package) or failed.
    NotMeasured(Arc<crate::peers::Error>),
}

impl fmt::Display for Pvm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pvm::Measured => f.write_str(
                "measured: N tasks (this program) started by one pvm_spawn of a PVM parent, \
                 until a message from each has reached it, under a private pvmd",
            ),
            Pvm::NotMeasured(e) => write!(f, "not measured: {e}"),
        }
    }
}

/// Whether Open MPI's `MPI_Comm_spawn`, the peer of adding nodes to a
/// running job, was measured.
#[derive(Clone, Debug)]
pub enum CommSpawn {
    /// Its rows are among [`Report::rows`].
    Measured {
        /// The N whose launches had to be run again.
        retried: Vec<Retried>,
    },
    /// Not measured: Open MPI or `mpicc` is missing (the error names the
    /// piece and the Debian packages), or it failed or kept hanging.
    NotMeasured(Arc<crate::peers::comm_spawn::Error>),
}

/// An N of the comm_spawn rows whose launches hung or failed and were
/// run again ([`crate::peers::comm_spawn`], step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retried {
    /// N.
    pub count: u32,
    /// Launches killed after hanging.
    pub hung: u32,
    /// Launches that failed.
    pub failed: u32,
}

impl fmt::Display for CommSpawn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommSpawn::Measured { retried } => {
                f.write_str(
                    "measured: N children started by one MPI_Comm_spawn of a running Open MPI \
                     parent (mpirun -n 1), until an int from each has reached it on the \
                     intercommunicator",
                )?;
                if !retried.is_empty() {
                    let per_n: Vec<String> = retried
                        .iter()
                        .map(|r| format!("N={}: {} hung, {} failed", r.count, r.hung, r.failed))
                        .collect();
                    write!(
                        f,
                        "; launches run again after hanging in MPI_Comm_spawn \
                         (open-mpi/ompi#9713) or failing, their finished rounds kept: {}",
                        per_n.join("; ")
                    )?;
                }
                Ok(())
            }
            CommSpawn::NotMeasured(e) => write!(f, "not measured: {e}"),
        }
    }
}

/// Everything [`run`] measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Kind-major, in [`Kind::ALL`] order, then by count; no pvm_spawn
    /// rows unless [`pvm`](Self::pvm) is [`Pvm::Measured`], and comm_spawn
    /// rows only for the N before one failed
    /// ([`comm_spawn`](Self::comm_spawn)).
    pub rows: Vec<Row>,
    /// The 1998 peer.
    pub pvm: Pvm,
    /// Open MPI's peer of a running job's new processes.
    pub comm_spawn: CommSpawn,
    /// Timed repetitions per row.
    pub repetitions: u32,
    /// Where the process rows ran, if on two emulated hosts (the caller's
    /// to fill in: it built them).
    pub emulated_hosts: Option<EmulatedHosts>,
    /// An active-message round trip between the remote rows' two nodes,
    /// in µs over the batches of every remote job (`None` without remote
    /// rows).
    pub am_round_trip_us: Option<Millis>,
    /// The launcher rows, if asked for.
    pub launchers: Option<launchers::Report>,
}

/// The two emulated hosts of the process rows: node i on host i mod 2.
#[derive(Clone, Debug)]
pub struct EmulatedHosts {
    /// The hosts' names.
    pub names: [String; 2],
    /// Their link.
    pub link: threadwire_testbed::net::Link,
}

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// A job could not be started.
    Launch(LaunchError),
    /// A job ended with a failure.
    Job {
        /// The job's exit status.
        status: i32,
        /// The first failing node and its cause, if a node failed.
        failure: Option<String>,
    },
    /// A node of a job that succeeded never reported that it joined:
    /// the program does not call [`node`].
    NoReport {
        /// The node.
        node: u32,
    },
    /// A fiber or OS thread panicked.
    Join(JoinError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Launch(_) => f.write_str("starting a job"),
            Error::Job {
                status,
                failure: Some(cause),
            } => write!(f, "a job failed with status {status}: {cause}"),
            Error::Job {
                status,
                failure: None,
            } => write!(f, "a job failed with status {status}"),
            Error::NoReport { node } => write!(
                f,
                "node n{node} ended without reporting that it joined: the node program does \
                 not call threadwire_bench::spawn::node"
            ),
            Error::Join(e) => write!(f, "a started thread failed: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Launch(e) => Some(e),
            Error::Join(e) => Some(e),
            Error::Job { .. } | Error::NoReport { .. } => None,
        }
    }
}

/// The node configuration [`run`] expects for its fibers and OS threads: a
/// standalone one-node job with the default workers (one per core). `init`
/// may be called once per process, so the caller initializes and passes
/// the endpoint in.
pub fn node_config() -> threadwire::Config {
    threadwire::Config::new()
        .standalone(true)
        .progress_thread(false)
        .log(false)
}

/// The steps of [`run`], one per kind and count, for a progress bar.
pub fn steps(options: &Options) -> usize {
    let launcher_steps = options
        .launchers
        .as_ref()
        .map_or(0, |_| launchers::steps(&options.counts));
    options.kinds.len() * options.counts.len() + launcher_steps
}

/// Runs every row: processes (`on_event` sees every event of the jobs but
/// the nodes' timing reports), then fibers and OS threads of `ep`'s node,
/// which should come from [`node_config`], then pvm_spawn where PVM is
/// installed and comm_spawn where Open MPI is, then the remote rows, then
/// the launcher rows; of these, the [`Options::kinds`] and
/// [`Options::launchers`] asked for. `on_step` is called after each of the
/// [`steps`], measured or not (with `None` for the launcher rows).
pub fn run(
    ep: &Endpoint,
    options: &Options,
    mut on_event: impl FnMut(&Event),
    mut on_step: impl FnMut(Option<Kind>, u32),
) -> Result<Report, Error> {
    let repetitions = options.repetitions.max(1);
    let mut rows = Vec::new();
    let mut pvm = Pvm::Measured;
    let mut comm = CommSpawn::Measured {
        retried: Vec::new(),
    };
    let mut comm_program = None;
    let mut round_trips = Vec::new();
    for &kind in &options.kinds {
        for &count in &options.counts {
            let count = count.max(1);
            let row = match kind {
                Kind::Processes => Some(processes(options, count, repetitions, &mut on_event)?),
                Kind::Fibers | Kind::OsThreads => {
                    Some(threads(ep, kind, count, repetitions).map_err(Error::Join)?)
                }
                Kind::PvmSpawn if matches!(pvm, Pvm::Measured) => {
                    match pvm_spawn(options, count, repetitions) {
                        Ok(row) => Some(row),
                        Err(e) => {
                            pvm = Pvm::NotMeasured(Arc::new(e));
                            None
                        }
                    }
                }
                Kind::PvmSpawn => None,
                Kind::CommSpawn => match &mut comm {
                    CommSpawn::Measured { retried } => {
                        match comm_spawn(&mut comm_program, count, repetitions) {
                            Ok((row, again)) => {
                                retried.extend(again);
                                Some(row)
                            }
                            Err(e) => {
                                comm = CommSpawn::NotMeasured(Arc::new(e));
                                None
                            }
                        }
                    }
                    CommSpawn::NotMeasured(_) => None,
                },
                Kind::AddedNodes => Some(added(options, count, repetitions, &mut on_event)?),
                Kind::RemoteFibers => {
                    let (row, us) = remote(options, count, repetitions, &mut on_event)?;
                    round_trips.extend(us);
                    Some(row)
                }
            };
            rows.extend(row);
            on_step(Some(kind), count);
        }
    }
    let node = launchers::Node {
        program: &options.program,
        args: &options.args,
    };
    let launchers = options.launchers.as_ref().map(|launchers| {
        launchers::run(launchers, node, &options.counts, repetitions, |count| {
            on_step(None, count)
        })
    });
    Ok(Report {
        rows,
        pvm,
        comm_spawn: comm,
        repetitions,
        emulated_hosts: None,
        am_round_trip_us: (!round_trips.is_empty()).then(|| Millis::of(&mut round_trips)),
        launchers,
    })
}

/// Where [`node`] learns it runs a remote row's job: `N:repetitions`.
pub const REMOTE_VARIABLE: &str = "THREADWIRE_BENCH_SPAWN_REMOTE";

/// Where [`node`] learns it runs an added-nodes row's job:
/// `N:repetitions`.
pub const ADD_VARIABLE: &str = "THREADWIRE_BENCH_SPAWN_ADD";

/// An added-nodes row: one job of two nodes, node 0 adding N nodes of this
/// program per repetition ([`node::added`]).
fn added(
    options: &Options,
    count: u32,
    repetitions: u32,
    on_event: &mut impl FnMut(&Event),
) -> Result<Row, Error> {
    let mut measured = None;
    two_node_row(options, ADD_VARIABLE, count, repetitions, on_event, |r| {
        if let NodeResult::NodesAdded { ms } = r {
            measured = Some(ms);
        }
    })?;
    let mut ms = measured.ok_or(Error::NoReport { node: 0 })?;
    Ok(Row::measured(Kind::AddedNodes, count, &mut ms))
}

/// A remote row: one job of two nodes, node 0 timing every repetition.
fn remote(
    options: &Options,
    count: u32,
    repetitions: u32,
    on_event: &mut impl FnMut(&Event),
) -> Result<(Row, Vec<f64>), Error> {
    let mut measured = None;
    two_node_row(
        options,
        REMOTE_VARIABLE,
        count,
        repetitions,
        on_event,
        |r| {
            if let NodeResult::RemoteSpawned {
                ms,
                am_round_trip_us,
            } = r
            {
                measured = Some((ms, am_round_trip_us));
            }
        },
    )?;
    let (mut ms, us) = measured.ok_or(Error::NoReport { node: 0 })?;
    Ok((Row::measured(Kind::RemoteFibers, count, &mut ms), us))
}

/// Runs a row's job of two nodes, `variable` telling them the row
/// (`N:repetitions`), and hands node 0's reports to `take`; every other
/// event goes to `on_event`, but the launcher's log of the machine's
/// growth, which is the row's business only.
fn two_node_row(
    options: &Options,
    variable: &str,
    count: u32,
    repetitions: u32,
    on_event: &mut impl FnMut(&Event),
    mut take: impl FnMut(NodeResult),
) -> Result<(), Error> {
    let mut spec = JobSpec::new(2, &options.program)
        .args(options.args.iter().cloned())
        .env(variable, format!("{count}:{repetitions}"))
        .timeout(JOB_TIMEOUT);
    if !options.hosts.is_empty() {
        spec = spec.hosts(options.hosts.clone());
    }
    let report = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
        Some((0, result)) => take(result),
        _ if matches!(ev, Event::Machine(_)) => {}
        _ => on_event(ev),
    })
    .map_err(Error::Launch)?;
    match report.status {
        0 => Ok(()),
        status => Err(Error::Job {
            status,
            failure: report.failure.map(|(_, cause)| cause),
        }),
    }
}

impl Row {
    /// A row measured by its milliseconds per repetition.
    fn measured(kind: Kind, count: u32, ms: &mut [f64]) -> Row {
        Row {
            kind,
            count,
            joined: Millis::of(ms),
            finished: None,
            timeline: None,
        }
    }
}

fn pvm_spawn(options: &Options, count: u32, repetitions: u32) -> Result<Row, crate::peers::Error> {
    let task = crate::peers::pvm::Task {
        program: options.program.clone(),
        args: options.args.clone(),
    };
    let deadline = Instant::now() + JOB_TIMEOUT;
    let times =
        crate::peers::pvm::spawn_times(&task, count as usize, repetitions as usize, deadline)?;
    let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
    Ok(Row::measured(Kind::PvmSpawn, count, &mut ms))
}

/// A comm_spawn row, and its launches run again if any; `program` is
/// built at the first N and kept for the others.
fn comm_spawn(
    program: &mut Option<crate::peers::coll::Program>,
    count: u32,
    repetitions: u32,
) -> Result<(Row, Option<Retried>), crate::peers::comm_spawn::Error> {
    use crate::peers::comm_spawn as peer;
    let program = match program {
        Some(p) => p,
        None => program.insert(peer::build()?),
    };
    let deadline = Instant::now() + COMM_SPAWN_TIMEOUT;
    let times = peer::spawn_times(program, count, repetitions, deadline)?;
    let mut ms: Vec<f64> = times.us.iter().map(|us| us / 1e3).collect();
    let row = Row::measured(Kind::CommSpawn, count, &mut ms);
    let retried = (times.hung + times.failed > 0).then_some(Retried {
        count,
        hung: times.hung,
        failed: times.failed,
    });
    Ok((row, retried))
}

fn threads(ep: &Endpoint, kind: Kind, count: u32, repetitions: u32) -> Result<Row, JoinError> {
    let node = ep.node();
    let once = || -> Result<f64, JoinError> {
        let start = Instant::now();
        let handles: Vec<ThreadHandle<()>> = (0..count)
            .map(|_| match kind {
                Kind::OsThreads => node.spawn_os(|_| ()),
                _ => node.spawn(|_| ()),
            })
            .collect();
        for h in handles {
            h.join()?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    once()?;
    let mut ms = Vec::with_capacity(repetitions as usize);
    for _ in 0..repetitions {
        ms.push(once()?);
    }
    Ok(Row {
        kind,
        count,
        joined: Millis::of(&mut ms),
        finished: None,
        timeline: None,
    })
}

#[cfg(test)]
mod tests;
