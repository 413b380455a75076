//! Ping-pong: one endpoint sends `size` bytes, the other sends them back;
//! one-way time is half the round trip. Each size runs for a time budget,
//! in several repetitions; the median repetition is reported with min–max.
//!
//! [`run`] bounces opaque bytes; [`run_with`] times the same loop for any
//! [`Bounce`], which makes each message from what a side holds and turns
//! what it receives back into that, inside the timed round trip
//! ([`encodings`](crate::encodings) packs and unpacks typed values there).
//!
//! The benchmark `bench pingpong` is [`sweep`]: one 2-node job per
//! channel (the `thread` path in the first), whose nodes run
//! [`node::node`] and report each size as it is measured; then, if asked,
//! the NetPIPE [`peers`](crate::peers) on the same paths. Its result is a
//! [`report::Report`].
//!
//! On the `udp` path `--peers` runs, between the same two hosts, the UDP
//! peers instead ([`peers::udp`](crate::peers::udp)): `sockperf`'s UDP
//! ping-pong, whose median one-way time stands beside ours at each size
//! up to 65000 B (its smallest message is 14 B), and `iperf3 -u` at the
//! link's nominal rate, the raw floor that our bandwidth at 1 MB (or the
//! largest size) is set against, with that bandwidth as a share of the
//! link. The figures to reach (issue 17): latency at most sockperf's plus
//! 2 µs, and at 1 MB at least 90% of the link, 80% at 1% loss. The loss
//! is the emulated hosts' own ([`hosts`], `--loss`), so the benchmark
//! measures it in the same sitting as its peers; the table's header
//! names it.

mod measure;
pub mod node;
pub mod report;

pub use measure::{run, run_into, run_with, Bounce, Budget, Error, Sample};
pub use node::{node, NodeError};
pub use report::{Report, Row};

use crate::node_result::NodeResult;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use threadwire::{Address, Endpoint, Message, Payload, RecvError, SendError, UnpackError};
use threadwire_launch::{Event, JobSpec, LaunchError};
use threadwire_testbed::net::{Link, Loss, Net, NetConfig, NetError, ScopedNet};

/// Tells a node of [`sweep`] which paths its job measures, comma-separated.
const PATHS_VAR: &str = "THREADWIRE_BENCH_PINGPONG_PATHS";

/// What `bench pingpong` measures.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sizes in bytes, ascending.
    pub sizes: Vec<usize>,
    /// `thread`, `shm`, `tcp`, `udp`: the paths to measure.
    pub paths: Vec<String>,
    /// Repetitions and time per size.
    pub budget: Budget,
    /// Also run the NetPIPE peers on the same paths.
    pub peers: bool,
    /// Also measure each size receiving into a reused buffer
    /// ([`Receive::Into`]), beside the owned receives.
    pub into: bool,
    /// The node program; under the launcher it must call [`node`] with the
    /// same sizes and budget.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// Why the sweep failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// `shm` was asked for between two emulated hosts.
    #[error("--link puts the two nodes on two emulated hosts: measure --paths thread,tcp")]
    ShmBetweenHosts,
    /// A job could not be started.
    #[error("starting the benchmark job")]
    Launch(#[source] LaunchError),
    /// A job failed.
    #[error("the benchmark job failed with status {0}")]
    JobFailed(i32),
}

/// The number of results a sweep of `options` measures, for progress.
pub fn steps(options: &Options) -> usize {
    options.sizes.len() * options.paths.len() * options.receives().len()
}

/// How a side of the ping-pong receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Receive {
    /// `recv`: each message arrives as a buffer of its own, which is sent
    /// back as it is ([`run`]).
    #[default]
    Owned,
    /// `recv_into` one buffer per side, reused for every round trip and
    /// sent from by reference, as NetPIPE does ([`run_into`]).
    Into,
}

impl Receive {
    /// Its name in reports: `owned`, `into`.
    pub fn name(self) -> &'static str {
        match self {
            Receive::Owned => "owned",
            Receive::Into => "into",
        }
    }
}

impl Options {
    /// The receives measured at each size, in report order.
    pub fn receives(&self) -> &'static [Receive] {
        match self.into {
            true => &[Receive::Owned, Receive::Into],
            false => &[Receive::Owned],
        }
    }
}

/// The paths of this node's job, if it was started by [`sweep`].
fn job_paths() -> Option<Vec<String>> {
    let paths = std::env::var(PATHS_VAR).ok()?;
    Some(paths.split(',').map(str::to_string).collect())
}

/// Runs `bench pingpong`: one job per channel, its nodes on the two first
/// hosts of `net` if given (path `tcp/LINK`), then the peers if asked.
/// `on_step` is called for each result as it comes, `on_event` sees every
/// other event of the jobs.
pub fn sweep(
    options: &Options,
    net: Option<&Net>,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, SweepError> {
    let paths = &options.paths;
    if net.is_some() && paths.iter().any(|p| p == "shm") {
        return Err(SweepError::ShmBetweenHosts);
    }
    let channels = paths.iter().filter(|p| *p != "thread");
    let jobs: Vec<(String, Vec<&str>)> = match paths.iter().any(|p| p == "thread") {
        true if paths.len() == 1 => vec![("shm".into(), vec!["thread"])],
        with_thread => channels
            .enumerate()
            .map(|(i, c)| {
                let mut measured = vec![c.as_str()];
                if with_thread && i == 0 {
                    measured.insert(0, "thread");
                }
                (c.clone(), measured)
            })
            .collect(),
    };
    let mut rows: Vec<Row> = Vec::new();
    for (channel, measured) in jobs {
        let mut spec = JobSpec::new(2, &options.program)
            .args(options.args.iter().cloned())
            .env(threadwire::env::CHANNEL, channel)
            .env(PATHS_VAR, measured.join(","));
        if let Some(net) = net {
            spec = spec.hosts(net.launch_hosts());
        }
        let report = threadwire_launch::run(&spec, |ev| match NodeResult::decode(ev) {
            Some((
                _,
                NodeResult::Pingpong {
                    path,
                    receive,
                    sample,
                },
            )) => {
                rows.push(Row {
                    path,
                    receive,
                    sample,
                });
                on_step();
            }
            _ => on_event(ev),
        })
        .map_err(SweepError::Launch)?;
        if report.status != 0 {
            return Err(SweepError::JobFailed(report.status));
        }
    }
    let link = net.map(|n| n.link);
    if let Some(link) = link {
        for row in rows
            .iter_mut()
            .filter(|r| r.path == "tcp" || r.path == "udp")
        {
            row.path = format!("{}/{link}", row.path);
        }
    }
    let (peers, udp_peers) = match options.peers {
        true => (
            run_peers(options, &rows, net, link),
            run_udp_peers(options, net),
        ),
        false => (Vec::new(), None),
    };
    Ok(Report {
        rows,
        peers,
        udp_peers,
        link,
        loss: net.and_then(|n| n.loss),
    })
}

/// The two emulated hosts of `--link`, each dropping `loss` of what it
/// receives (`--loss`, as `net up --loss`); removed when dropped.
pub fn hosts(link: Option<Link>, loss: Option<Loss>) -> Result<Option<ScopedNet>, NetError> {
    let Some(link) = link else {
        return Ok(None);
    };
    if loss.is_none() {
        return crate::two_hosts(Some(link));
    }
    // As ScopedNet::up_with_free_prefix, which takes no impairment: the
    // prefix picks the subnet, which another net may hold.
    let mut last = None;
    for k in 0..5 {
        let config = NetConfig {
            prefix: format!("twbl{}", (std::process::id() + k) % 100_000),
            loss,
            ..NetConfig::new(2, link)
        };
        match ScopedNet::up(&config) {
            Ok(net) => return Ok(Some(net)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("tried at least once"))
}

/// `--peers` on the `udp` path: sockperf and iperf3 between the job's two
/// hosts, each run for about the budget of a size.
fn run_udp_peers(options: &Options, net: Option<&Net>) -> Option<crate::peers::udp::Report> {
    use crate::peers::{udp, Placement};
    if !options.paths.iter().any(|p| p == "udp") {
        return None;
    }
    let budget = options.budget;
    let link = net.map(|n| n.link);
    let udp_options = udp::Options {
        sizes: options.sizes.clone(),
        seconds: udp::Options::seconds_for(budget.per_repetition * budget.repetitions.max(1)),
        placement: net.map_or(Placement::Local, Placement::on),
        rate_mbit: link.and_then(|l| l.rate_mbit()),
        lossy: net.is_some_and(|n| n.loss.is_some()),
    };
    let path = match link {
        Some(link) => format!("udp/{link}"),
        None => "udp".to_string(),
    };
    tracing::debug!(?udp_options, "running the UDP peers");
    Some(udp::run_beside(path, &udp_options))
}

/// `--peers`: NetPIPE on the measured paths, after our sweep, with its
/// budget per size and our time at the largest size.
fn run_peers(
    options: &Options,
    rows: &[Row],
    net: Option<&Net>,
    link: Option<Link>,
) -> Vec<crate::peers::Report> {
    use crate::peers::{self, Placement};
    let largest = options.sizes.iter().copied().max().unwrap_or(0);
    let compared = report::compared_receive(rows);
    let ours = |transport: peers::Transport| {
        let path = transport.name();
        rows.iter()
            .filter(|r| r.receive == compared)
            .find(|r| r.sample.size == largest && r.path.split('/').next() == Some(path))
            .map(|r| r.sample.one_way)
            .filter(|t| !t.is_zero())
    };
    let placement = net.map_or(Placement::Local, Placement::on);
    let link = link.map(|l| l.to_string());
    let budget = options.budget;
    peers::run_beside(
        &options.paths,
        &options.sizes,
        budget.per_repetition * budget.repetitions.max(1),
        ours,
        &placement,
        link.as_deref(),
    )
}

/// Plots `report`'s latency and bandwidth against size, with the 1998
/// figures and the peers' up to half again our largest size (sockperf's
/// at each message size it ran), into `dir`
/// ([`crate::plot::pingpong`]); returns the files written.
pub fn plot(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, crate::plot::PlotError> {
    let labels_of_rows: Vec<String> = report
        .rows
        .iter()
        .map(|r| match r.receive {
            Receive::Owned => r.path.clone(),
            Receive::Into => format!("{} (into)", r.path),
        })
        .collect();
    let points: Vec<_> = report
        .rows
        .iter()
        .zip(&labels_of_rows)
        .map(|(r, label)| crate::plot::Point {
            path: label,
            size: r.sample.size,
            one_way_seconds: r.sample.one_way.as_secs_f64(),
        })
        .collect();
    let labels: Vec<(String, &crate::peers::Measured)> = report
        .peers
        .iter()
        .filter_map(|p| {
            let measured = p.result.as_ref().ok()?;
            Some((format!("{} ({})", p.peer.name(), p.path), measured))
        })
        .collect();
    let largest = report.rows.iter().map(|r| r.sample.size).max().unwrap_or(0);
    let sockperf = report
        .udp_peers
        .as_ref()
        .map(|udp| (format!("sockperf ({})", udp.path), udp.sockperf_runs()));
    let mut peer_points: Vec<_> = labels
        .iter()
        .flat_map(|(label, measured)| {
            measured
                .points
                .iter()
                .filter(|p| p.size <= largest + largest / 2)
                .map(|p| crate::plot::Point {
                    path: label,
                    size: p.size,
                    one_way_seconds: p.one_way.as_secs_f64(),
                })
        })
        .collect();
    if let Some((label, runs)) = &sockperf {
        peer_points.extend(runs.iter().map(|l| crate::plot::Point {
            path: label,
            size: l.message,
            one_way_seconds: l.one_way.as_secs_f64(),
        }));
    }
    crate::plot::pingpong(dir, &points, &peer_points)
}

/// The message sizes in the tables of the 1990s papers, in bytes.
pub const CLASSIC_SIZES: [usize; 8] = [8, 20, 100, 1000, 60_000, 250_000, 1_000_000, 10_000_000];

/// The sweep up to 2^`max_power` bytes: every power of two from 1 B, and
/// the [`CLASSIC_SIZES`] not above the largest power, in ascending order
/// without duplicates. `sizes(24)` is 1 B … 16 MiB, 32 sizes.
pub fn sizes(max_power: u32) -> Vec<usize> {
    let largest = 1usize << max_power.min(usize::BITS - 1);
    let mut sizes: Vec<usize> = (0..usize::BITS)
        .map(|p| 1usize << p)
        .take_while(|&n| n <= largest)
        .chain(CLASSIC_SIZES.into_iter().filter(|&n| n <= largest))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// `listed` sizes, ascending without duplicates, or if none the sweep up
/// to 2^`max_power` ([`sizes`]).
pub fn listed_or_swept(listed: Option<Vec<usize>>, max_power: u32) -> Vec<usize> {
    match listed {
        Some(mut list) => {
            list.sort_unstable();
            list.dedup();
            list
        }
        None => sizes(max_power),
    }
}

/// The line t(n) = α + β·n through the median one-way times of `samples`
/// ([`fit`](crate::fit) says which sizes enter and how).
pub fn fit(samples: &[Sample]) -> Option<crate::fit::Fit> {
    crate::fit::least_squares(
        samples
            .iter()
            .map(|s| (s.size as f64, s.one_way.as_secs_f64())),
    )
}
