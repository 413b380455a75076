//! The distributed shared memory's first figures (issue 19): what a fault,
//! a lock hand-off and a barrier of `threadwire-dsm` cost, per path, and
//! what its messages weigh beside the Strings DSM's Table 1.
//!
//! | Operation                 | Job   | What one operation is                                  |
//! |---------------------------|-------|--------------------------------------------------------|
//! | `remote read fault`       | 2×1   | node 1 reads a unit homed on node 0: fault, fetch, install, retry |
//! | `write fault, valid unit` | 2×1   | node 1 writes a unit it just fetched: twin, lift protection (local) |
//! | `home read after diffs`   | 2×1   | node 0 reads a unit homed on itself that node 1 wrote: the diffs went into the master copy, which an allocation mapped (engine rule 9), so no fault |
//! | `lock, between nodes`   | 2×1   | the lock passes to the other node, which increments a counter under it: token (acquire, follow, grant) and, on node 1's turns, the counter's unit fetched from node 0 |
//! | `lock, between threads`   | 2×1   | the same between node 0's main thread and a fiber of it (no message) |
//! | `barrier`                 | 2×1, 4×1, 4×4 | one barrier of every thread of every node, nothing written |
//! | `barrier after writes`    | 2×1, 4×1, 4×4 | the same, each node having written one unit homed on the next node |
//!
//! The lock's two sides take strict turns: each asks for the lock only
//! once the other holds it (a message tells it), so that the lock changes
//! hands at every turn, and each checks that the count it finds is the
//! one the turns before made.
//!
//! Every figure is a time per operation: a repetition times
//! [`Options::faults`], [`Options::hand_offs`] or [`Options::barriers`]
//! operations and divides; the table gives the median (min–max) over
//! [`Options::repetitions`]. Fault repetitions walk fresh units of one big
//! region, so that every read faults.
//!
//! **Paths.** `shm`: the nodes on this host, over shared memory; `tcp/LINK`:
//! each node on an emulated host of its own, four hosts joined by LINK
//! ([`ScopedNet`]), built for the path's three jobs and removed after. A
//! link whose net cannot be built (not root) or whose job fails becomes a
//! row that says why ([`Measured::Missing`]); the command goes on.
//!
//! **Jobs.** Per path, one 2-node job ([`Job::Pair`]: faults, locks and
//! the 2×1 barrier) and two 4-node jobs of barriers ([`Job::Barriers`]: 1
//! and 4 threads per node). The nodes run [`node`](fn@node), which learns its job
//! from `THREADWIRE_BENCH_DSM_JOB` and its path's name from
//! `THREADWIRE_BENCH_DSM_PATH`, and reports each operation's times as
//! they are measured ([`NodeResult::Dsm`]).
//!
//! **Message sizes** ([`messages`]) are computed from `threadwire-dsm`'s
//! protocol (its `protocol` module documents each message's payload) and
//! threadwire's frames: every active message is one 32-byte frame header
//! and its payload, every reply a data frame of the answer and one status
//! byte. A page's reply is also measured: the bytes the engine counted per
//! fetch (`Stats::fetch_bytes`), in the remote fault's row.

mod messages;
pub mod node;
pub mod report;

pub use messages::{messages, Message, SEED_FIGURE_13};
pub use node::node;

use crate::am::Times;
use crate::node_result::NodeResult;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use threadwire::{CollError, InitError, RecvError, ReportError, SendError};
use threadwire_dsm::DsmError;
use threadwire_launch::{Event, Host, JobSpec, LaunchError};
use threadwire_testbed::net::{Link, NetError, ScopedNet};

/// Tells a node which job it is in ([`Job::name`]).
pub(crate) const JOB_VAR: &str = "THREADWIRE_BENCH_DSM_JOB";
/// Tells a node its path's name, which it reports with its results.
pub(crate) const PATH_VAR: &str = "THREADWIRE_BENCH_DSM_PATH";

/// The coherence unit measured: the seed's 8 KiB page, `threadwire-dsm`'s
/// default.
pub const UNIT: usize = 8192;

/// One measured operation (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Node 1 reads a unit homed on node 0.
    RemoteReadFault,
    /// Node 1 writes a unit it holds write-protected.
    WriteFault,
    /// Node 0 reads a unit homed on itself that node 1 wrote.
    HomeReadAfterDiffs,
    /// The lock passes between the two nodes.
    LockBetweenNodes,
    /// The lock passes between two threads of node 0.
    LockBetweenThreads,
    /// A barrier with nothing written.
    Barrier,
    /// A barrier after each node wrote one unit.
    BarrierAfterWrites,
}

impl Operation {
    /// The operations of a [`Job::Pair`], in the order measured.
    pub const PAIR: [Operation; 7] = [
        Operation::RemoteReadFault,
        Operation::WriteFault,
        Operation::HomeReadAfterDiffs,
        Operation::LockBetweenNodes,
        Operation::LockBetweenThreads,
        Operation::Barrier,
        Operation::BarrierAfterWrites,
    ];

    /// The row's name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Operation::RemoteReadFault => "remote read fault",
            Operation::WriteFault => "write fault, valid unit",
            Operation::HomeReadAfterDiffs => "home read after diffs",
            Operation::LockBetweenNodes => "lock, between nodes",
            Operation::LockBetweenThreads => "lock, between threads",
            Operation::Barrier => "barrier",
            Operation::BarrierAfterWrites => "barrier after writes",
        }
    }
}

/// The jobs of one path (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Two nodes, one thread each in the barrier: faults, locks, barriers.
    Pair,
    /// Four nodes of `threads` threads each: barriers only.
    Barriers {
        /// Threads per node taking part.
        threads: usize,
    },
}

impl Job {
    /// Every job of a path, in the order run.
    pub const ALL: [Job; 3] = [
        Job::Pair,
        Job::Barriers { threads: 1 },
        Job::Barriers { threads: 4 },
    ];

    /// Nodes in the job.
    pub fn nodes(self) -> u32 {
        match self {
            Job::Pair => 2,
            Job::Barriers { .. } => 4,
        }
    }

    /// Threads per node in its barriers.
    pub fn threads(self) -> usize {
        match self {
            Job::Pair => 1,
            Job::Barriers { threads } => threads,
        }
    }

    /// Its name in `THREADWIRE_BENCH_DSM_JOB`: `pair`, `barriers-T`.
    pub fn name(self) -> String {
        match self {
            Job::Pair => "pair".into(),
            Job::Barriers { threads } => format!("barriers-{threads}"),
        }
    }

    fn parse(name: &str) -> Option<Job> {
        match name {
            "pair" => Some(Job::Pair),
            _ => Some(Job::Barriers {
                threads: name.strip_prefix("barriers-")?.parse().ok()?,
            }),
        }
    }

    /// Results its nodes report.
    fn samples(self) -> usize {
        match self {
            Job::Pair => Operation::PAIR.len(),
            Job::Barriers { .. } => 2,
        }
    }
}

/// A path, one block of rows of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The nodes on this host, over shared memory.
    Shm,
    /// One emulated host per node, joined by a link, over TCP.
    Link(Link),
}

impl Path {
    /// Its name: `shm`, `tcp/LINK`.
    pub fn name(self) -> String {
        match self {
            Path::Shm => "shm".into(),
            Path::Link(link) => format!("tcp/{link}"),
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The links of the `tcp/LINK` paths, one net of four hosts each.
    pub links: Vec<Link>,
    /// Repetitions of every measurement.
    pub repetitions: u32,
    /// Faults per repetition.
    pub faults: u32,
    /// Lock hand-offs per repetition.
    pub hand_offs: u32,
    /// Barriers per repetition.
    pub barriers: u32,
    /// The node program; it must call [`node`](fn@node) with the same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// `shm` only; 5 repetitions of 256 faults, 200 hand-offs and 200
    /// barriers.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Options {
        Options {
            links: Vec::new(),
            repetitions: 5,
            faults: 256,
            hand_offs: 200,
            barriers: 200,
            program: program.into(),
            args,
        }
    }

    /// Bytes of shared space a node maps: the fault walk's fresh units
    /// (every repetition's faults, on both nodes' homes) and a few more.
    fn space(&self) -> usize {
        (2 * self.faults.max(1) as usize * self.repetitions.max(1) as usize + 64) * UNIT
    }

    /// The longest a job on `path` should take: every operation at ten
    /// times a unit's transfer at the link's rate (a millisecond at
    /// least), and a minute to spare.
    fn job_timeout(&self, path: Path) -> Duration {
        let unit_seconds = match path {
            Path::Link(link) => link
                .rate_mbit()
                .map_or(0.0, |m| UNIT as f64 * 8.0 / (m * 1e6)),
            Path::Shm => 0.0,
        };
        let per_operation = (10.0 * unit_seconds).max(1e-3);
        let operations = f64::from(self.repetitions.max(1))
            * f64::from(3 * self.faults + self.hand_offs * 2 + self.barriers * 2);
        Duration::from_secs_f64(60.0 + operations * per_operation)
    }
}

/// One operation's times, as a node reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The path's name ([`Path::name`]).
    pub path: String,
    /// What was timed.
    pub operation: Operation,
    /// Nodes in the job.
    pub nodes: u32,
    /// Threads per node taking part.
    pub threads: u32,
    /// Time per operation over the repetitions.
    pub times: Times,
    /// Operations per repetition.
    pub operations: u32,
    /// Repetitions.
    pub repetitions: u32,
    /// Bytes per message measured by the engine's counters, where they
    /// say something: a fetch's reply payload (version and unit) for the
    /// remote fault, a diff's bytes for the barrier after writes.
    pub bytes: Option<f64>,
}

/// A path's figures, or why it has none.
#[derive(Clone, Debug)]
pub enum Measured {
    /// Every sample its jobs reported, in order.
    Samples(Vec<Sample>),
    /// Why the path is missing: no emulated hosts, a failed job.
    Missing(String),
}

/// One path of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The path.
    pub path: Path,
    /// Its figures.
    pub measured: Measured,
}

/// The table.
#[derive(Clone, Debug)]
pub struct Report {
    /// `shm`, then one per link.
    pub rows: Vec<Row>,
    /// [`Options::repetitions`].
    pub repetitions: u32,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `init` failed on a node.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// The shared memory failed on a node.
    #[error("the shared memory")]
    Dsm(#[source] DsmError),
    /// A node was started without a job's variables.
    #[error("{JOB_VAR} is {0:?}: expected `pair` or `barriers-T`")]
    NoJob(Option<String>),
    /// The nodes' last meeting failed.
    #[error("the nodes' last barrier")]
    Coll(#[source] CollError),
    /// A thread of a node panicked.
    #[error("a measuring thread panicked")]
    Thread,
    /// A lock's ping-pong could not tell the other side its turn.
    #[error("telling the other side of the lock its turn")]
    Send(#[source] SendError),
    /// A lock's ping-pong did not hear of its turn.
    #[error("waiting for the turn at the lock")]
    Recv(#[source] RecvError),
    /// The counter under the lock was not what the turns before wrote:
    /// the lock did not carry the other side's write.
    #[error("the counter under the lock is {found}, expected {expected}")]
    Counter {
        /// What the turns so far make it.
        expected: u64,
        /// What the lock's holder read.
        found: u64,
    },
    /// A node could not report a result to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
    /// A job of the `shm` path failed.
    #[error("the shm path: {0}")]
    Shm(#[source] JobError),
}

/// Why one job of a path gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// It could not be started.
    #[error("the job {0} did not start: {1}")]
    NotStarted(String, #[source] LaunchError),
    /// It failed.
    #[error("the job {0} failed with status {1}")]
    Failed(String, i32),
}

/// Why a link's path has no figures (the row says it).
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("no emulated hosts: {0}")]
    NoHosts(#[source] NetError),
    #[error(transparent)]
    Job(#[from] JobError),
}

/// Runs every path's jobs (module docs) and returns the table; `on_step`
/// is called for each sample as it comes, `on_event` sees every other
/// event of every job.
pub fn run(
    options: &Options,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, Error> {
    let mut samples = Vec::new();
    let mut collect = |ev: &Event, samples: &mut Vec<Sample>| match NodeResult::decode(ev) {
        Some((_, NodeResult::Dsm(sample))) => {
            samples.push(sample);
            on_step();
        }
        _ => on_event(ev),
    };
    run_jobs(options, Path::Shm, Vec::new(), |ev| {
        collect(ev, &mut samples)
    })
    .map_err(Error::Shm)?;
    let mut rows = vec![Row {
        path: Path::Shm,
        measured: Measured::Samples(ordered(samples)),
    }];
    for &link in &options.links {
        let mut samples = Vec::new();
        let measured = match on_link(options, link, |ev| collect(ev, &mut samples)) {
            Ok(()) => Measured::Samples(ordered(samples)),
            Err(why) => Measured::Missing(why.to_string()),
        };
        rows.push(Row {
            path: Path::Link(link),
            measured,
        });
    }
    Ok(Report {
        rows,
        repetitions: options.repetitions.max(1),
    })
}

/// The jobs of one link, on a net of four hosts built for them.
fn on_link(options: &Options, link: Link, collect: impl FnMut(&Event)) -> Result<(), LinkError> {
    let net = ScopedNet::up_with_free_prefix("twd", 4, link).map_err(LinkError::NoHosts)?;
    Ok(run_jobs(
        options,
        Path::Link(link),
        net.launch_hosts(),
        collect,
    )?)
}

/// Every job of `path` on `hosts` (this host if none), in turn, each
/// event to `collect`.
fn run_jobs(
    options: &Options,
    path: Path,
    hosts: Vec<Host>,
    mut collect: impl FnMut(&Event),
) -> Result<(), JobError> {
    let channel = match path {
        Path::Shm => "shm",
        Path::Link(_) => "tcp",
    };
    for job in Job::ALL {
        let spec = JobSpec::new(job.nodes(), &options.program)
            .args(options.args.clone())
            .env(threadwire::env::CHANNEL, channel)
            .env(JOB_VAR, job.name())
            .env(PATH_VAR, path.name())
            .timeout(options.job_timeout(path))
            .hosts(hosts.clone());
        let report = threadwire_launch::run(&spec, &mut collect)
            .map_err(|e| JobError::NotStarted(job.name(), e))?;
        if report.status != 0 {
            return Err(JobError::Failed(job.name(), report.status));
        }
    }
    Ok(())
}

/// `samples` by layout, then in the order of [`Operation::PAIR`]: the
/// nodes of a job report as they finish, in no order between them.
fn ordered(mut samples: Vec<Sample>) -> Vec<Sample> {
    samples.sort_by_key(|s| (s.nodes, s.threads, s.operation as u8));
    samples
}

/// The number of samples a run of `options` reports, for progress.
pub fn steps(options: &Options) -> usize {
    let per_path: usize = Job::ALL.iter().map(|j| j.samples()).sum();
    (1 + options.links.len()) * per_path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_round_trip_through_their_names() {
        for job in Job::ALL {
            assert_eq!(Job::parse(&job.name()), Some(job));
        }
        assert_eq!(Job::parse("barriers-x"), None);
        assert_eq!(Job::parse("pairs"), None);
    }

    #[test]
    fn the_space_holds_every_repetitions_fresh_units() {
        let options = Options::new("threadwire", Vec::new());
        assert!(options.space() >= 2 * 256 * 5 * UNIT);
        assert!(options.space().is_multiple_of(UNIT));
    }
}
