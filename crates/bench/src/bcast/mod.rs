//! Broadcast time against the number of receiving hosts (issue 17,
//! `threadwire bench bcast`), beside PVM's `pvm_mcast` and `pvm_bcast`
//! under real PVM 3.4.6 and `MPI_Bcast` under Open MPI and MPICH, and the
//! 1998 measurements of a broadcast over UDP ("nearly constant in
//! receivers").
//!
//! # Setting
//!
//! Per link of [`Options::links`], `K + 1` emulated hosts for the largest
//! `K` of [`Options::receivers`], every host's link shaped alike
//! ([`threadwire_testbed::net`]). For each `k`, the root runs on host 0
//! and one receiver on each of hosts 1 to `k`: one process per host.
//!
//! # What one broadcast is
//!
//! Every system is timed alike, by its root's monotonic clock: from
//! before the root's broadcast call until the root has received an empty
//! acknowledgement from each of the `k` receivers, which a receiver sends
//! once it has the whole message (its broadcast call has returned, or,
//! in PVM, it has received and unpacked the message). So a broadcast's
//! time is the time until every receiver has the message plus one small
//! message's latency back, and broadcasts never overlap. Each size is
//! broadcast once untimed first (connections, buffers); then timed
//! broadcasts follow while they have taken less than
//! [`Options::per_size`], at least one.
//!
//! # Systems ([`System`])
//!
//! | row | what broadcasts |
//! |---|---|
//! | threadwire tree | `Group::bcast` of the world group, nodes over TCP (`THREADWIRE_CHANNEL=tcp`), the runtime's own choice of algorithm |
//! | threadwire multicast | the same over the UDP channel with [`Options::multicast_algorithm`] forced (`bcast=multicast`); skipped, with the runtime's refusal, in a build that does not know the algorithm |
//! | PVM pvm_mcast | `bench-peers/pvm/bcastpvm.c -m mcast` under a private virtual machine of one pvmd per host |
//! | PVM pvm_bcast | the same program with `-m bcast`: a frozen group of all tasks |
//! | Open MPI, MPICH | `bench-peers/bcast/bcastmpi.c`, one rank per host |
//!
//! The peers' programs and how they are started are
//! [`crate::peers::bcast`]'s; a peer whose packages are missing is
//! skipped with the reason.
//!
//! # Order and figures
//!
//! 1. Per link: the hosts are built (a link whose hosts cannot be built,
//!    without root say, is skipped with the reason).
//! 2. Per `k`: each system's machinery is set up once (a virtual machine
//!    of `k + 1` pvmds; an MPI host list); then [`Options::repetitions`]
//!    rounds, each running every system once in turn (one job, one PVM
//!    program, one `mpirun`), so that the machine's mood falls on every
//!    system alike. A system whose run fails has its rows at that link
//!    and `k` skipped with the reason.
//! 3. Per system, link, `k` and size: the median, minimum and maximum of
//!    every timed broadcast of every round.
//!
//! The parts: `node.rs` (the threadwire nodes), `report.rs` ([`Report`],
//! the table per link with each row's ratio to threadwire's `k = 1` and
//! the 1998 figures, and the plots of time against receivers).

pub mod node;
pub mod report;

pub use node::{node, NodeError};
pub use report::{plot, Report, Row, Skipped};

use crate::node_result::NodeResult;
use crate::peers::bcast as peers;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use threadwire::group::Algorithms;
use threadwire_launch::{Event, JobSpec};
use threadwire_testbed::net::{Link, Net, ScopedNet};

/// Tells a node of [`run`] which algorithm to force, if any.
const ALGORITHM_VAR: &str = "THREADWIRE_BENCH_BCAST_ALGORITHM";

/// Issue 17's sizes.
pub const SIZES: [usize; 5] = [8, 100, 1000, 60_000, 1_000_000];

/// The most receivers: one emulated host each, and the root's.
pub const MAX_RECEIVERS: u32 = 64;

/// What broadcasts: a column of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum System {
    /// threadwire's `Group::bcast` over TCP, its own algorithm.
    Tree,
    /// threadwire's `Group::bcast` over UDP, the multicast algorithm forced.
    Multicast,
    /// PVM 3.4.6's `pvm_mcast`.
    PvmMcast,
    /// PVM 3.4.6's `pvm_bcast` to a group.
    PvmBcast,
    /// Open MPI's `MPI_Bcast`.
    OpenMpi,
    /// MPICH's `MPI_Bcast`.
    Mpich,
}

impl System {
    /// Every system, in the order run and shown.
    pub const ALL: [System; 6] = [
        System::Tree,
        System::Multicast,
        System::PvmMcast,
        System::PvmBcast,
        System::OpenMpi,
        System::Mpich,
    ];

    /// Its column's name.
    pub fn name(self) -> &'static str {
        match self {
            System::Tree => "tw tree",
            System::Multicast => "tw multicast",
            System::PvmMcast => "pvm_mcast",
            System::PvmBcast => "pvm_bcast",
            System::OpenMpi => "Open MPI",
            System::Mpich => "MPICH",
        }
    }

    /// Its name on the command line (`--systems`).
    pub fn argument(self) -> &'static str {
        match self {
            System::Tree => "tree",
            System::Multicast => "multicast",
            System::PvmMcast => "pvm-mcast",
            System::PvmBcast => "pvm-bcast",
            System::OpenMpi => "openmpi",
            System::Mpich => "mpich",
        }
    }

    /// Its name in JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            System::Tree => "threadwire_tree",
            System::Multicast => "threadwire_multicast",
            System::PvmMcast => "pvm_mcast",
            System::PvmBcast => "pvm_bcast",
            System::OpenMpi => "openmpi",
            System::Mpich => "mpich",
        }
    }
}

/// Not one of [`System::argument`]'s names.
#[derive(Debug, thiserror::Error)]
#[error("not a system (tree, multicast, pvm-mcast, pvm-bcast, openmpi, mpich): {0:?}")]
pub struct ParseSystemError(String);

impl std::str::FromStr for System {
    type Err = ParseSystemError;

    fn from_str(s: &str) -> Result<System, ParseSystemError> {
        System::ALL
            .into_iter()
            .find(|system| system.argument() == s)
            .ok_or_else(|| ParseSystemError(s.to_string()))
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// What `bench bcast` measures.
#[derive(Clone, Debug)]
pub struct Options {
    /// Links, one net of emulated hosts and one table each.
    pub links: Vec<Link>,
    /// Receivers `k`, each on a host of its own.
    pub receivers: Vec<u32>,
    /// Sizes in bytes.
    pub sizes: Vec<usize>,
    /// Rounds, each running every system once.
    pub repetitions: u32,
    /// Timed broadcasts of a size go on while they have taken less.
    pub per_size: Duration,
    /// The systems run.
    pub systems: Vec<System>,
    /// What the multicast row forces, as `--algorithm` takes it; passed
    /// through to the runtime as it is.
    pub multicast_algorithm: String,
    /// The node program; under the launcher it must call [`node`] with
    /// the same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// Issue 17's sizes on ethernet10 and fast100 to 1, 2, 4 and 8
    /// receivers, every system, 3 rounds of 200 ms a size.
    pub fn new(program: PathBuf, args: Vec<OsString>) -> Options {
        Options {
            links: vec![Link::Ethernet10, Link::Fast100],
            receivers: vec![1, 2, 4, 8],
            sizes: SIZES.to_vec(),
            repetitions: 3,
            per_size: Duration::from_millis(200),
            systems: System::ALL.to_vec(),
            multicast_algorithm: "bcast=multicast".to_string(),
            program,
            args,
        }
    }

    /// The most receivers of any `k`.
    fn most_receivers(&self) -> u32 {
        self.receivers.iter().copied().max().unwrap_or(1)
    }
}

/// The steps of [`run`], for progress: one per link, `k` and round.
pub fn steps(options: &Options) -> usize {
    options.links.len() * options.receivers.len() * options.repetitions.max(1) as usize
}

/// Why a system has no figures at a link and `k`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The job could not be started.
    #[error("starting the job")]
    Launch(#[source] threadwire_launch::LaunchError),
    /// The job failed.
    #[error("the job failed with status {0}")]
    JobFailed(i32),
    /// A size had no results.
    #[error("no result for {0} B")]
    Missing(usize),
    /// A peer.
    #[error(transparent)]
    Peer(#[from] peers::Error),
}

/// Runs `bench bcast` (module docs); `on_step` after each of the
/// [`steps`], `on_event` sees the jobs' events that are not results.
pub fn run(
    options: &Options,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Report {
    let mut report = Report {
        repetitions: options.repetitions.max(1),
        per_size: options.per_size,
        multicast_algorithm: options.multicast_algorithm.clone(),
        rows: Vec::new(),
        skipped: Vec::new(),
    };
    let systems = usable_systems(options, &mut report);
    let programs = peers::Programs::build(&systems);
    for (system, e) in programs.failures() {
        report.skip(None, None, Some(system), e);
    }
    for &link in &options.links {
        let net = match ScopedNet::up_with_free_prefix("twbc", options.most_receivers() + 1, link) {
            Ok(net) => net,
            Err(e) => {
                report.skip(Some(link), None, None, format!("emulated hosts: {e}"));
                (0..options.receivers.len() * options.repetitions.max(1) as usize)
                    .for_each(|_| on_step());
                continue;
            }
        };
        for &k in &options.receivers {
            let runnable: Vec<System> = systems
                .iter()
                .copied()
                .filter(|&s| s == System::Tree || s == System::Multicast || programs.has(s))
                .collect();
            measure(
                options,
                &net,
                k,
                &runnable,
                &programs,
                &mut report,
                &mut on_step,
                &mut on_event,
            );
        }
    }
    report
}

/// The systems asked for that this build can run: the multicast row only
/// if the runtime takes its algorithm's name.
fn usable_systems(options: &Options, report: &mut Report) -> Vec<System> {
    let mut systems = options.systems.clone();
    if systems.contains(&System::Multicast) {
        if let Err(e) = Algorithms::new().force(&options.multicast_algorithm) {
            systems.retain(|&s| s != System::Multicast);
            report.skip(
                None,
                None,
                Some(System::Multicast),
                format!(
                    "the runtime refuses --algorithm {}: {e}",
                    options.multicast_algorithm
                ),
            );
        }
    }
    systems
}

/// One link's rounds at `k` receivers (module docs, steps 2 and 3).
#[allow(clippy::too_many_arguments)]
fn measure(
    options: &Options,
    net: &Net,
    k: u32,
    systems: &[System],
    programs: &peers::Programs,
    report: &mut Report,
    on_step: &mut impl FnMut(),
    on_event: &mut impl FnMut(&Event),
) {
    let hosts = &net.hosts[..=k as usize];
    let machines = peers::Machines::new(programs, systems, hosts, net.bridge_addr);
    let mut samples: BTreeMap<(System, usize), Vec<u64>> = BTreeMap::new();
    let mut failed: BTreeMap<System, String> = BTreeMap::new();
    for (system, e) in machines.failures() {
        failed.insert(system, e.to_string());
    }
    let peer_options = peers::RunOptions {
        sizes: options.sizes.clone(),
        per_size: options.per_size,
        link: net.link,
    };
    for _ in 0..options.repetitions.max(1) {
        for &system in systems {
            if failed.contains_key(&system) {
                continue;
            }
            let result = match system {
                System::Tree | System::Multicast => {
                    threadwire_run(options, net, k, system, on_event).map_err(|e| error_chain(&e))
                }
                _ => machines
                    .run(system, &peer_options)
                    .map_err(|e| e.to_string()),
            };
            match result.and_then(|got| complete(&options.sizes, got)) {
                Ok(got) => {
                    for (size, ns) in got {
                        samples.entry((system, size)).or_default().extend(ns);
                    }
                }
                Err(e) => {
                    failed.insert(system, e);
                }
            }
        }
        on_step();
    }
    for (system, reason) in failed {
        samples.retain(|(s, _), _| *s != system);
        report.skip(Some(net.link), Some(k), Some(system), reason);
    }
    for ((system, size), mut ns) in samples {
        let broadcasts = ns.len();
        let (median, min, max) = crate::spread(&mut ns);
        report.rows.push(Row {
            link: net.link,
            receivers: k,
            system,
            size,
            median: Duration::from_nanos(median),
            min: Duration::from_nanos(min),
            max: Duration::from_nanos(max),
            broadcasts,
        });
    }
}

/// `got` if it has times for every size.
fn complete(
    sizes: &[usize],
    got: Vec<(usize, Vec<u64>)>,
) -> Result<Vec<(usize, Vec<u64>)>, String> {
    match sizes
        .iter()
        .find(|&&size| !got.iter().any(|(s, ns)| *s == size && !ns.is_empty()))
    {
        Some(&size) => Err(RunError::Missing(size).to_string()),
        None => Ok(got),
    }
}

/// An error and its sources, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// One threadwire job of `k + 1` nodes, node `i` on host `i`: its times
/// per size.
fn threadwire_run(
    options: &Options,
    net: &Net,
    k: u32,
    system: System,
    on_event: &mut impl FnMut(&Event),
) -> Result<Vec<(usize, Vec<u64>)>, RunError> {
    let hosts: Vec<_> = net
        .launch_hosts()
        .into_iter()
        .take(k as usize + 1)
        .collect();
    let mut spec = JobSpec::new(k + 1, &options.program)
        .args(options.args.iter().cloned())
        .hosts(hosts);
    spec = match system {
        System::Multicast => spec
            .env(threadwire::env::CHANNEL, "udp")
            .env(ALGORITHM_VAR, &options.multicast_algorithm),
        _ => spec.env(threadwire::env::CHANNEL, "tcp"),
    };
    let started = Instant::now();
    let mut got = Vec::new();
    let job = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
        Some((_, NodeResult::Bcast { size, ns })) => got.push((size, ns)),
        _ => on_event(ev),
    })
    .map_err(RunError::Launch)?;
    tracing::debug!(?system, k, took = ?started.elapsed(), "bcast job");
    match job.status {
        0 => Ok(got),
        status => Err(RunError::JobFailed(status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_every_size_is_refused() {
        let sizes = [8, 100];
        assert!(complete(&sizes, vec![(8, vec![1]), (100, vec![2])]).is_ok());
        let e = complete(&sizes, vec![(8, vec![1]), (100, vec![])]).unwrap_err();
        assert_eq!(e, "no result for 100 B");
    }

    #[test]
    fn systems_have_distinct_names() {
        let mut keys: Vec<_> = System::ALL.iter().map(|s| s.key()).collect();
        keys.dedup();
        assert_eq!(keys.len(), System::ALL.len());
    }
}
