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

pub mod node;
pub mod report;

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

/// One size's result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Message size in bytes.
    pub size: usize,
    /// Median one-way time.
    pub one_way: Duration,
    /// Fastest repetition.
    pub min: Duration,
    /// Slowest repetition.
    pub max: Duration,
}

impl Sample {
    /// Bandwidth at the median, in MB/s (10^6 bytes per second).
    pub fn mbps(&self) -> f64 {
        self.size as f64 / self.one_way.as_secs_f64() / 1e6
    }
}

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// A send failed.
    Send(SendError),
    /// A receive failed.
    Recv(RecvError),
    /// A received message could not be read as the [`Bounce`] expects.
    Unpack(UnpackError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Send(e) => e.fmt(f),
            Error::Recv(e) => e.fmt(f),
            Error::Unpack(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

/// How long and how often.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Repetitions per size.
    pub repetitions: u32,
    /// Time per repetition (the round count is calibrated to it).
    pub per_repetition: Duration,
}

impl Budget {
    /// `repetitions` of `ms` milliseconds each.
    pub fn from_millis(repetitions: u32, ms: u64) -> Budget {
        Budget {
            repetitions,
            per_repetition: Duration::from_millis(ms),
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            repetitions: 5,
            per_repetition: Duration::from_millis(100),
        }
    }
}

const TAG: u32 = 0x7070;

/// What the two sides of [`run_with`] do with the data they bounce: the
/// leader starts each size from [`initial`](Bounce::initial); then each
/// side makes the payload it sends from what it holds, and what it holds
/// from the message it receives. Both conversions are timed.
pub trait Bounce {
    /// What a side holds between a receive and its next send.
    type Held;
    /// What the leader sends first at `size` bytes.
    fn initial(&mut self, size: usize) -> Self::Held;
    /// The payload that carries `held`.
    fn make_payload(&mut self, held: Self::Held) -> Payload;
    /// What a received message leaves a side holding.
    fn read_message(&mut self, message: Message) -> Result<Self::Held, Error>;
}

/// [`run`]'s bounce: the bytes themselves, moved in and out of messages
/// without a copy.
struct OpaqueBytes;

impl Bounce for OpaqueBytes {
    type Held = Vec<u8>;

    fn initial(&mut self, size: usize) -> Vec<u8> {
        vec![0u8; size]
    }

    fn make_payload(&mut self, held: Vec<u8>) -> Payload {
        Payload::from_vec(held)
    }

    fn read_message(&mut self, message: Message) -> Result<Vec<u8>, Error> {
        Ok(message.into_vec())
    }
}

/// Runs the ping-pong with `partner`; the `leader` times and returns the
/// samples, the partner returns an empty list. Both sides must pass the
/// same sizes and budget.
pub fn run(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    sizes: &[usize],
    budget: Budget,
) -> Result<Vec<Sample>, Error> {
    run_with(ep, partner, leader, sizes, budget, &mut OpaqueBytes)
}

/// [`run`] with messages made and read by `bounce` on both sides.
pub fn run_with<B: Bounce>(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    sizes: &[usize],
    budget: Budget,
    bounce: &mut B,
) -> Result<Vec<Sample>, Error> {
    let mut samples = Vec::new();
    for &size in sizes {
        // The leader's data between round trips; the partner holds nothing
        // between an echo and the next.
        let held = leader.then(|| bounce.initial(size));
        let mut round = Bouncing { bounce, held };
        samples.extend(measure(ep, partner, leader, size, budget, &mut round)?);
    }
    Ok(samples)
}

/// [`run`] receiving as NetPIPE does ([`Receive::Into`]): each side keeps
/// one buffer of the size, sends from it by reference and receives into
/// it with [`Endpoint::recv_into`]. Both sides must pass the same sizes
/// and budget.
pub fn run_into(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    sizes: &[usize],
    budget: Budget,
) -> Result<Vec<Sample>, Error> {
    let mut samples = Vec::new();
    for &size in sizes {
        let mut round = IntoBuffer {
            buf: vec![0u8; size],
            leader,
        };
        samples.extend(measure(ep, partner, leader, size, budget, &mut round)?);
    }
    Ok(samples)
}

/// One round trip of a ping-pong, from either side.
trait Round {
    fn round(&mut self, ep: &Endpoint, partner: Address) -> Result<(), Error>;
}

/// The rounds of [`run_with`]: the leader holds data between rounds.
struct Bouncing<'a, B: Bounce> {
    bounce: &'a mut B,
    held: Option<B::Held>,
}

impl<B: Bounce> Round for Bouncing<'_, B> {
    fn round(&mut self, ep: &Endpoint, partner: Address) -> Result<(), Error> {
        self.held = step(ep, partner, self.bounce, self.held.take())?;
        Ok(())
    }
}

/// The rounds of [`run_into`]: one buffer per side, reused.
struct IntoBuffer {
    buf: Vec<u8>,
    leader: bool,
}

impl Round for IntoBuffer {
    fn round(&mut self, ep: &Endpoint, partner: Address) -> Result<(), Error> {
        let receive = |buf: &mut [u8]| {
            ep.recv_into(partner, TAG, buf)
                .map(drop)
                .map_err(Error::Recv)
        };
        let send = |buf: &[u8]| ep.send(partner, TAG, buf).map_err(Error::Send);
        if self.leader {
            send(&self.buf)?;
            receive(&mut self.buf)
        } else {
            receive(&mut self.buf)?;
            send(&self.buf)
        }
    }
}

/// Times `round` at `size`: warm-up, calibration, the repetitions; the
/// leader returns the sample.
fn measure(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    size: usize,
    budget: Budget,
    round: &mut impl Round,
) -> Result<Option<Sample>, Error> {
    // Warm up, then calibrate: the leader times a few round trips and
    // tells the partner how many rounds fill a repetition. Small sizes
    // (microseconds each) first run untimed and are calibrated over
    // more rounds: the first round trips after a job starts or a path
    // changes are far slower (cold caches, a partner still waking), and
    // calibrating on them made repetitions much shorter than the budget.
    // Large sizes keep 4 rounds: on a 10 Mbit/s link one takes seconds.
    let (warm_up, calibrate) = if size < 64 * 1024 { (32, 32) } else { (0, 4) };
    for _ in 0..warm_up {
        round.round(ep, partner)?;
    }
    let rounds = if leader {
        let t = Instant::now();
        for _ in 0..calibrate {
            round.round(ep, partner)?;
        }
        let per = t.elapsed() / calibrate;
        let rounds = (budget.per_repetition.as_secs_f64() / per.as_secs_f64().max(1e-9))
            .clamp(2.0, 1e6) as u64;
        ep.send(partner, TAG + 1, rounds.to_le_bytes().to_vec())
            .map_err(Error::Send)?;
        rounds
    } else {
        for _ in 0..calibrate {
            round.round(ep, partner)?;
        }
        let m = ep.recv(partner, TAG + 1).map_err(Error::Recv)?.into_vec();
        u64::from_le_bytes(m.try_into().unwrap_or([0; 8]))
    };
    let mut reps = Vec::new();
    for _ in 0..budget.repetitions {
        let t = Instant::now();
        for _ in 0..rounds {
            round.round(ep, partner)?;
        }
        reps.push(t.elapsed() / (2 * rounds as u32));
    }
    if !leader {
        return Ok(None);
    }
    let (one_way, min, max) = crate::spread(&mut reps);
    Ok(Some(Sample {
        size,
        one_way,
        min,
        max,
    }))
}

/// One round: the leader (holding data) sends and receives, the partner
/// receives and sends back.
fn step<B: Bounce>(
    ep: &Endpoint,
    partner: Address,
    bounce: &mut B,
    held: Option<B::Held>,
) -> Result<Option<B::Held>, Error> {
    match held {
        Some(held) => {
            ep.send(partner, TAG, bounce.make_payload(held))
                .map_err(Error::Send)?;
            let m = ep.recv(partner, TAG).map_err(Error::Recv)?;
            bounce.read_message(m).map(Some)
        }
        None => {
            let m = ep.recv(partner, TAG).map_err(Error::Recv)?;
            let held = bounce.read_message(m)?;
            ep.send(partner, TAG, bounce.make_payload(held))
                .map_err(Error::Send)?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_merges_classic_sizes_into_the_powers_of_two() {
        assert_eq!(
            sizes(10),
            [1, 2, 4, 8, 16, 20, 32, 64, 100, 128, 256, 512, 1000, 1024]
        );
        let full = sizes(24);
        assert_eq!(
            full.len(),
            25 + 7,
            "powers 2^0..=2^24 and 7 classic sizes not powers"
        );
        assert_eq!((full[0], full[full.len() - 1]), (1, 1 << 24));
        assert!(full.windows(2).all(|w| w[0] < w[1]), "{full:?}");
        assert!(CLASSIC_SIZES.iter().all(|n| full.contains(n)));
    }

    #[test]
    fn classic_sizes_above_the_largest_power_are_dropped() {
        assert_eq!(sizes(0), [1]);
        assert_eq!(sizes(3), [1, 2, 4, 8]);
        let up_to_8_mib = sizes(23);
        assert!(up_to_8_mib.contains(&1_000_000));
        assert!(!up_to_8_mib.contains(&10_000_000));
        assert_eq!(up_to_8_mib.last(), Some(&(1 << 23)));
    }

    #[test]
    fn the_fit_reads_the_medians() {
        // 1 µs + 1 ns/B at the median; min and max say otherwise.
        let samples: Vec<Sample> = [8usize, 1000, 60_000]
            .into_iter()
            .map(|size| Sample {
                size,
                one_way: Duration::from_nanos(1000 + size as u64),
                min: Duration::from_nanos(1),
                max: Duration::from_secs(1),
            })
            .collect();
        let fit = fit(&samples).unwrap();
        assert!((fit.startup_seconds - 1e-6).abs() < 1e-15, "{fit:?}");
        assert!((fit.seconds_per_byte - 1e-9).abs() < 1e-18, "{fit:?}");
    }
}
