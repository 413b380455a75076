//! Collective latency (issue 12): barrier, bcast, allreduce, allgather and
//! alltoall among the members of a [`Group`](threadwire::Group), timed as
//! the OSU micro-benchmarks time them, for layouts of nodes × threads,
//! and with `--peers` the same collectives in Open MPI and MPICH
//! ([`peers::coll`](crate::peers::coll)) beside them.
//!
//! The benchmark `bench coll` is [`sweep`]: one job per [`Layout`] of
//! `N` nodes, whose every node runs [`node::node`]: its `T` members are
//! thread 0 if `T` is 1, else `T` spawned fibers. Per operation and size,
//! every member runs the same steps:
//!
//! 1. **Warm-up and calibration**: batches of 1, 2, 4, … operations, each
//!    between a barrier and an allreduce of the slowest member's time,
//!    until a batch has taken half of `--ms`; iterations per repetition =
//!    `--ms` ÷ that batch's time per operation.
//! 2. **Repetitions**: a barrier, the iterations, then the slowest
//!    member's time (an allreduce of maxima, outside the timing) ÷ the
//!    iterations. A size stops repeating once its repetitions have taken
//!    [`Options::max_ms_per_size`], after at least 3.
//! 3. **Row**: the median (the upper one for an even count), minimum and
//!    maximum over repetitions; rank 0 reports it ([`NodeResult::Coll`]).
//!
//! The sizes are counted as `coll.c` counts them (its header): bcast
//! `size` bytes from rank 0; allreduce `size` bytes of `f64` summed;
//! allgather `size` bytes from every member; alltoall `size` bytes from
//! every member to every member; a barrier one row of 0 bytes. Sizes
//! whose buffers over all members would pass [`Options::max_buffer_bytes`]
//! are not run ([`peers::coll::buffer_bytes`], the peers' rule), here
//! nor in the peers.
//!
//! [`explain`] says which algorithm each collective would use at each
//! size for a layout (`--explain`).

pub mod explain;
pub mod node;
pub mod report;

pub use explain::{explain, Explanation};
pub use node::{node, NodeError};
pub use report::{Report, Row};

use crate::node_result::NodeResult;
use crate::peers::coll::{self as peers, Configuration, Mpi};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;
use threadwire::group::Algorithms;
use threadwire_launch::{Event, JobSpec, LaunchError};
use threadwire_testbed::net::Net;

pub use crate::peers::coll::Operation;

/// Tells a node of [`sweep`] which layout its job runs.
const LAYOUT_VAR: &str = "THREADWIRE_BENCH_COLL_LAYOUT";

/// The most members a layout may have: 64 fibers on 2 cores already take
/// seconds per large collective.
pub const MAX_MEMBERS: u32 = 64;

/// Nodes × threads per node: the members of the collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Node processes.
    pub nodes: u32,
    /// Threads per node: the main thread and `threads − 1` fibers.
    pub threads: u32,
}

impl Layout {
    /// Issue 12's: 4 nodes × 1 thread, 2 nodes × 8 fibers, 1 node × 16 fibers.
    pub const ISSUE: [Layout; 3] = [
        Layout {
            nodes: 4,
            threads: 1,
        },
        Layout {
            nodes: 2,
            threads: 8,
        },
        Layout {
            nodes: 1,
            threads: 16,
        },
    ];

    /// Members of a collective.
    pub fn members(self) -> u32 {
        self.nodes * self.threads
    }

    /// The MPI configuration of as many members, whose buffers are
    /// counted alike (the peers' rule for sizes left out).
    fn as_configuration(self) -> Configuration {
        Configuration {
            ranks: self.nodes,
            threads: self.threads,
        }
    }

    /// The MPI configurations `--peers` runs beside this layout: as many
    /// plain ranks as members and, for threads, 2 ranks (or the nodes, if
    /// more) × OpenMP threads — `4x1` ↔ 4 ranks; `2x8`, `1x16` ↔ 16 ranks
    /// and 2 ranks × 8 threads.
    pub fn peer_configurations(self) -> Vec<Configuration> {
        let members = self.members();
        let mut configurations = vec![Configuration::ranks(members)];
        let ranks = self.nodes.max(2);
        if self.threads > 1 && members.is_multiple_of(ranks) && members / ranks > 1 {
            configurations.push(Configuration {
                ranks,
                threads: members / ranks,
            });
        }
        configurations
    }
}

impl fmt::Display for Layout {
    /// `2x8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.nodes, self.threads)
    }
}

/// A layout that is not `NODESxTHREADS` within bounds.
#[derive(Debug, thiserror::Error)]
#[error("layout {0:?}: NODESxTHREADS, both at least 1, at most {MAX_MEMBERS} members")]
pub struct BadLayout(String);

impl FromStr for Layout {
    type Err = BadLayout;

    fn from_str(s: &str) -> Result<Layout, BadLayout> {
        let bad = || BadLayout(s.to_string());
        let (nodes, threads) = s.split_once('x').ok_or_else(bad)?;
        let layout = Layout {
            nodes: nodes.trim().parse().map_err(|_| bad())?,
            threads: threads.trim().parse().map_err(|_| bad())?,
        };
        match layout.nodes >= 1 && layout.threads >= 1 && layout.members() <= MAX_MEMBERS {
            true => Ok(layout),
            false => Err(bad()),
        }
    }
}

/// One size's result, the slowest member's time per operation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The collective.
    pub operation: Operation,
    /// Bytes, as `coll.c` counts them (0 for a barrier).
    pub size: usize,
    /// Median over repetitions.
    pub median: Duration,
    /// Fastest repetition.
    pub min: Duration,
    /// Slowest repetition.
    pub max: Duration,
    /// Repetitions run.
    pub repetitions: u32,
    /// Operations per repetition.
    pub iterations: u64,
}

/// What `bench coll` measures.
#[derive(Clone, Debug)]
pub struct Options {
    /// Layouts, one job each.
    pub layouts: Vec<Layout>,
    /// Collectives, in the order run.
    pub operations: Vec<Operation>,
    /// Sizes in bytes, ascending.
    pub sizes: Vec<usize>,
    /// Repetitions per operation and size.
    pub repetitions: u32,
    /// Time per repetition; iterations are calibrated to it.
    pub per_repetition: Duration,
    /// A size's repetitions stop once they have taken this long, after 3.
    pub max_ms_per_size: Option<u64>,
    /// Sizes whose buffers over all members would take more are not run.
    pub max_buffer_bytes: u64,
    /// Algorithms forced on every group (`--algorithm`).
    pub algorithms: Algorithms,
    /// Also run the MPI peers.
    pub peers: bool,
    /// The channel between nodes (`THREADWIRE_CHANNEL`: auto, tcp, shm,
    /// udp), if not the runtime's default.
    pub channel: Option<String>,
    /// The node program; under the launcher it must call [`node`] with the
    /// same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// Issue 12's layouts and operations at `sizes`, 5 repetitions of
    /// 100 ms, at most 2 s a size and 2 GiB of buffers, as the peers.
    pub fn new(sizes: Vec<usize>, program: PathBuf, args: Vec<OsString>) -> Options {
        let peers = peers::Options::default();
        Options {
            layouts: Layout::ISSUE.to_vec(),
            operations: Operation::ALL.to_vec(),
            sizes,
            repetitions: peers.repetitions,
            per_repetition: Duration::from_millis(peers.ms),
            max_ms_per_size: peers.max_ms_per_size,
            max_buffer_bytes: peers.max_buffer_bytes,
            algorithms: Algorithms::new(),
            peers: false,
            channel: None,
            program,
            args,
        }
    }

    /// The sizes of `operation` run in `layout`, and those left out for
    /// their buffers.
    pub fn split_sizes(&self, layout: Layout, operation: Operation) -> (Vec<usize>, Vec<usize>) {
        operation.sizes(&self.sizes).into_iter().partition(|&size| {
            peers::buffer_bytes(layout.as_configuration(), operation, size) <= self.max_buffer_bytes
        })
    }

    /// The peers' options for the same sizes and budget.
    fn peer_options(&self) -> peers::Options {
        peers::Options {
            sizes: self.sizes.clone(),
            repetitions: self.repetitions,
            ms: self.per_repetition.as_millis() as u64,
            max_ms_per_size: self.max_ms_per_size,
            max_buffer_bytes: self.max_buffer_bytes,
            ..peers::Options::default()
        }
    }

    /// The MPI configurations of `--peers`, each once, in layout order.
    pub fn peer_configurations(&self) -> Vec<Configuration> {
        let mut all: Vec<Configuration> = Vec::new();
        for c in self.layouts.iter().flat_map(|l| l.peer_configurations()) {
            if !all.contains(&c) {
                all.push(c);
            }
        }
        all
    }
}

/// The sizes of the sweep up to 2^`max_power` bytes: every power of two
/// from 8 B (a double, the smallest allreduce).
pub fn sizes(max_power: u32) -> Vec<usize> {
    (3..=max_power.min(usize::BITS - 2))
        .map(|p| 1usize << p)
        .collect()
}

/// The steps of a sweep of `options`, for progress: a row per layout,
/// operation and size run, and a launch per MPI, configuration and
/// operation with `--peers`.
pub fn steps(options: &Options) -> usize {
    let rows: usize = options
        .layouts
        .iter()
        .flat_map(|&l| options.operations.iter().map(move |&o| (l, o)))
        .map(|(l, o)| options.split_sizes(l, o).0.len())
        .sum();
    let launches = match options.peers {
        true => Mpi::ALL.len() * options.peer_configurations().len() * options.operations.len(),
        false => 0,
    };
    rows + launches
}

/// Why the sweep failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A job could not be started.
    #[error("starting the benchmark job of layout {0}")]
    Launch(Layout, #[source] LaunchError),
    /// A job failed.
    #[error("the benchmark job of layout {0} failed with status {1}")]
    JobFailed(Layout, i32),
}

/// Runs `bench coll`: one job per layout, its nodes on the hosts of `net`
/// if given (node `i` on host `i` mod hosts), then the peers if asked.
/// `on_step` is called for each result as it comes, `on_event` sees every
/// other event of the jobs.
pub fn sweep(
    options: &Options,
    net: Option<&Net>,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, SweepError> {
    let mut rows = Vec::new();
    for &layout in &options.layouts {
        let mut spec = JobSpec::new(layout.nodes, &options.program)
            .args(options.args.iter().cloned())
            .env(LAYOUT_VAR, layout.to_string());
        if let Some(channel) = &options.channel {
            spec = spec.env(threadwire::env::CHANNEL, channel);
        }
        if let Some(net) = net {
            spec = spec.hosts(net.launch_hosts());
        }
        let report = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
            Some((_, NodeResult::Coll(sample))) => {
                rows.push(Row { layout, sample });
                on_step();
            }
            _ => on_event(ev),
        })
        .map_err(|e| SweepError::Launch(layout, e))?;
        if report.status != 0 {
            return Err(SweepError::JobFailed(layout, report.status));
        }
    }
    let skipped = options
        .layouts
        .iter()
        .flat_map(|&l| options.operations.iter().map(move |&o| (l, o)))
        .flat_map(|(l, o)| {
            let (_, left_out) = options.split_sizes(l, o);
            left_out.into_iter().map(move |size| (l, o, size))
        })
        .collect();
    let peers = match options.peers {
        true => peers::run_beside(
            &Mpi::ALL,
            &options.peer_configurations(),
            &options.operations,
            &options.peer_options(),
            |_| on_step(),
        ),
        false => Vec::new(),
    };
    Ok(Report {
        rows,
        skipped,
        link: net.map(|n| n.link.to_string()),
        channel: options.channel.clone(),
        algorithms: options.algorithms,
        peers,
    })
}

/// Plots `report`: each collective's time against size, a line per layout
/// and per peer configuration (`Open MPI, 4 ranks`), into `dir`
/// ([`crate::plot::coll`]); returns the files written.
pub fn plot(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, crate::plot::PlotError> {
    let layouts: Vec<String> = report.rows.iter().map(|r| r.layout.to_string()).collect();
    let points: Vec<_> = report
        .rows
        .iter()
        .zip(&layouts)
        .map(|(r, layout)| crate::plot::CollPoint {
            operation: r.sample.operation.name(),
            series: layout,
            size: r.sample.size,
            seconds: r.sample.median.as_secs_f64(),
        })
        .collect();
    let measured = report::measured(&report.peers);
    let labels: Vec<String> = measured
        .iter()
        .map(|m| format!("{}, {}", m.mpi.name(), m.configuration))
        .collect();
    let peer_points: Vec<_> = measured
        .iter()
        .zip(&labels)
        .map(|(m, label)| crate::plot::CollPoint {
            operation: m.operation.name(),
            series: label,
            size: m.size,
            seconds: m.median.as_secs_f64(),
        })
        .collect();
    crate::plot::coll(dir, &points, &peer_points)
}

/// The layout of this node's job, if [`sweep`] started it.
fn job_layout() -> Option<Layout> {
    std::env::var(LAYOUT_VAR).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_parse_and_map_to_the_issue_configurations() {
        let l: Layout = "2x8".parse().unwrap();
        assert_eq!((l.nodes, l.threads, l.to_string()), (2, 8, "2x8".into()));
        assert!("0x4".parse::<Layout>().is_err());
        assert!("65x1".parse::<Layout>().is_err());
        assert!("4".parse::<Layout>().is_err());
        let [four, two_by_eight, one_by_sixteen] = Layout::ISSUE;
        assert_eq!(four.peer_configurations(), [Configuration::ranks(4)]);
        let hybrid = Configuration {
            ranks: 2,
            threads: 8,
        };
        assert_eq!(
            two_by_eight.peer_configurations(),
            [Configuration::ranks(16), hybrid]
        );
        assert_eq!(
            one_by_sixteen.peer_configurations(),
            [Configuration::ranks(16), hybrid]
        );
    }

    #[test]
    fn the_sweep_runs_from_a_double_up() {
        assert_eq!(sizes(5), [8, 16, 32]);
        assert_eq!(sizes(24).len(), 22);
        assert!(sizes(2).is_empty());
    }
}
