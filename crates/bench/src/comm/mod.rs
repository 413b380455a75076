//! Communication time, processes versus threads: the thesis' Table 5.2
//! (1998) of the time to send 1 B, 1 KB, 32 KB and 1 MB between two
//! threads of one process, between processes of one host and between
//! processes on two hosts over Ethernet and ATM, measured here for
//! today's paths; and, over the emulated links, its Tables 5.3 (bandwidth
//! at 1 to 5120 KB), 5.5 (start-up latency t0 at 4 B) and 5.6 (peak
//! throughput r_max). The report prints each of the thesis' tables beside
//! ours ([`seeds`]), each column under the path measured the same way
//! ([`seed_settings`]):
//!
//! | Row              | Between                                   | Channel       | The thesis' column |
//! |------------------|-------------------------------------------|---------------|--------------------|
//! | `thread`         | two fibers of node 0                      | the mailbox   | threads            |
//! | `shm`            | node 0 and node 1 of one host             | shared memory | local processes    |
//! | `tcp/LINK`       | two emulated hosts joined by LINK ([`net`](threadwire_testbed::net)) | TCP | Ethernet beside `ethernet10`, ATM AAL 3/4 and AAL 5 beside `atm155` |
//!
//! Every figure is the one-way time of [`pingpong::run`], half a round
//! trip, median (min–max) of the repetitions; a bandwidth is the size over
//! it, in Mbit/s (10^6 bit/s), and r_max the highest of the bandwidth
//! sizes' from [`PEAK_FROM`] up, as the thesis takes the peak of its
//! curve (the smaller ones ride the emulated link's token bucket). The thesis' figures
//! are ping-pong times of the same kind. Its KB and MB are read as 10^3
//! and 10^6 bytes ([`seeds::KB`]), in Table 5.2 and Table 5.3 alike, so
//! that 1 KB is one measurement of both.
//!
//! **Sizes.** Every path measures [`SIZES`]; a `tcp/LINK` path also
//! [`STARTUP_SIZE`] and, unless [`Options::bandwidth`] is off,
//! [`BANDWIDTH_SIZES`] ([`Options::sizes`]).
//!
//! **Jobs.** [`run`] starts one 2-node job for `thread` and `shm` and one
//! per link, on a net built for it and removed after ([`ScopedNet`]); the
//! job's nodes run [`node`], which learns what to measure from
//! `THREADWIRE_BENCH_COMM_PATH` and reports each size as it is measured
//! ([`NodeResult`]). A link whose
//! net cannot be built (not root) or whose job fails becomes a row that
//! says why ([`Measured::Missing`]); the command goes on.
//!
//! **Budget.** Each size is a [`pingpong::run`] of its own, so that slow
//! links can take fewer repetitions: a repetition lasts
//! [`Options::per_repetition`] but at least the two round trips
//! `pingpong::run` insists on, and a size gets as many repetitions, up to
//! [`Options::repetitions`] and at least one, as fit in
//! [`Options::per_size`] at the link's rate. Both nodes derive the same
//! budgets from the same options. 1 MB over `ethernet10` takes 0.84 s one
//! way, so its 4 calibration round trips and two repetitions of two round
//! trips take 13 s; 5120 KB takes 4.3 s one way, so its 4 calibration
//! round trips and one repetition take 51 s, and the bandwidth sizes
//! together about 75 s at `ethernet10`'s rate (11 s at `atm155`'s). A run
//! of `--links ethernet10,atm155` took 110 s.

pub mod node;
pub mod report;

pub use node::node;

use crate::node_result::NodeResult;
use crate::pingpong::{self, Budget, Sample};
use crate::seeds::{self, Setting};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use threadwire::{InitError, JoinError, ReportError};
use threadwire_launch::{Event, JobSpec, LaunchError};
use threadwire_testbed::net::{Link, NetError, ScopedNet};

/// The message sizes of Table 5.2, in bytes: 1 B, 1 KB, 32 KB, 1 MB.
pub const SIZES: [usize; 4] = [1, 1000, 32_000, 1_000_000];

/// The message of Table 5.5's start-up latency t0, in bytes.
pub const STARTUP_SIZE: usize = seeds::STARTUP_BYTES;

/// The message sizes of Table 5.3, in bytes: 1, 80, 320, 1280 and
/// 5120 KB of 1000 B.
pub const BANDWIDTH_SIZES: [usize; 5] = [1000, 80_000, 320_000, 1_280_000, 5_120_000];

/// The smallest of [`BANDWIDTH_SIZES`] our r_max is taken over. A message
/// that fits an emulated link's token bucket (`tc tbf burst`, 32 KiB on
/// the slow links, 125 kB on `gige`) crosses at veth speed, and a larger
/// one gets its first bucketful free: over `ethernet10` (9.6 Mbit/s of
/// payload) 1, 80 and 320 KB measured 18, 13 and 10.5 Mbit/s. From
/// 1280 KB the bucket is under 3% of the message. (The thesis' peak,
/// 9.12 Mbit/s over Ethernet, is at 320 and 1280 KB.)
pub const PEAK_FROM: usize = 1_280_000;

/// Tells a node which paths its job measures: `local` (thread and shm) or
/// a link's name.
pub(crate) const PATH_VAR: &str = "THREADWIRE_BENCH_COMM_PATH";

/// The share of a shaped link's rate that is TCP payload: tbf counts whole
/// 1514-byte frames, of which 1448 bytes are payload ([`net`](threadwire_testbed::net)
/// measured 95.7–96.2%).
const PAYLOAD_SHARE: f64 = 1448.0 / 1514.0;

/// A path between two threads of control, one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Two fibers of one node.
    Thread,
    /// Two nodes of one host, over shared memory.
    Shm,
    /// Two emulated hosts joined by a link, over TCP.
    Link(Link),
}

impl Path {
    /// The row's name: `thread`, `shm`, `tcp/LINK`.
    pub fn name(self) -> String {
        match self {
            Path::Thread => "thread".to_string(),
            Path::Shm => "shm".to_string(),
            Path::Link(link) => format!("tcp/{link}"),
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Path> {
        match name {
            "thread" => Some(Path::Thread),
            "shm" => Some(Path::Shm),
            _ => name.strip_prefix("tcp/")?.parse().ok().map(Path::Link),
        }
    }

    /// The link the path's messages cross, if shaped.
    fn link(self) -> Option<Link> {
        match self {
            Path::Link(link) => Some(link),
            Path::Thread | Path::Shm => None,
        }
    }
}

/// The columns of the thesis' tables measured the way `path` is
/// (module docs); none for the links it did not have.
pub fn seed_settings(path: Path) -> &'static [Setting] {
    match path {
        Path::Thread => &[Setting::Threads],
        Path::Shm => &[Setting::LocalProcesses],
        Path::Link(Link::Ethernet10) => &[Setting::Ethernet],
        Path::Link(Link::Atm155) => &[Setting::AtmAal34, Setting::AtmAal5],
        Path::Link(_) => &[],
    }
}

/// Table 5.2's figure of `path` at `size` bytes in ms, where the path has
/// one column of it (`tcp/atm155` has two: [`seed_settings`]).
pub fn reference_1998_ms(path: Path, size: usize) -> Option<f64> {
    match seed_settings(path) {
        [setting] => seeds::communication_ms(*setting, size).map(|q| q.value),
        _ => None,
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The links of the `tcp/LINK` rows, one job and one net each.
    pub links: Vec<Link>,
    /// Repetitions per size, where they fit in [`per_size`](Self::per_size).
    pub repetitions: u32,
    /// How long a repetition lasts at least.
    pub per_repetition: Duration,
    /// How long a size's repetitions may take on a link, by its rate.
    pub per_size: Duration,
    /// Whether the `tcp/LINK` paths measure [`BANDWIDTH_SIZES`] (Tables
    /// 5.3 and 5.6; about 75 s of `ethernet10`).
    pub bandwidth: bool,
    /// The node program; it must call [`node`] with the same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// Every shaped link, 5 repetitions of at least 50 ms, 7 s per size
    /// (two repetitions of 1 MB over `ethernet10`), the bandwidth sizes.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Options {
        Options {
            links: vec![Link::Ethernet10, Link::Fast100, Link::Atm155, Link::Gige],
            repetitions: 5,
            per_repetition: Duration::from_millis(50),
            per_size: Duration::from_secs(7),
            bandwidth: true,
            program: program.into(),
            args,
        }
    }

    /// The sizes `path` measures, ascending (module docs).
    pub fn sizes(&self, path: Path) -> Vec<usize> {
        let mut sizes = SIZES.to_vec();
        if path.link().is_some() {
            sizes.push(STARTUP_SIZE);
            if self.bandwidth {
                sizes.extend(BANDWIDTH_SIZES);
            }
        }
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// The budget of `size` bytes on `path` (module docs).
    pub fn budget(&self, path: Path, size: usize) -> Budget {
        let round_trip = 2.0 * estimated_one_way_seconds(path, size);
        let repetition = self.per_repetition.as_secs_f64().max(2.0 * round_trip);
        let fit = (self.per_size.as_secs_f64() / repetition).floor() as u32;
        Budget {
            repetitions: fit.clamp(1, self.repetitions.max(1)),
            per_repetition: self.per_repetition,
        }
    }

    /// The longest a job of `paths` should take: its budgets and
    /// calibration at the links' rates, twice, and a minute to spare.
    fn job_timeout(&self, paths: &[Path]) -> Duration {
        let mut seconds = 60.0;
        for &path in paths {
            for size in self.sizes(path) {
                let round_trip = 2.0 * estimated_one_way_seconds(path, size);
                let budget = self.budget(path, size);
                let repetition = budget.per_repetition.as_secs_f64().max(2.0 * round_trip);
                seconds += 2.0 * (4.0 * round_trip + f64::from(budget.repetitions) * repetition);
            }
        }
        Duration::from_secs_f64(seconds)
    }
}

/// The time the link's rate alone takes for `size` bytes; nothing for the
/// unshaped paths.
fn estimated_one_way_seconds(path: Path, size: usize) -> f64 {
    match path.link().and_then(|l| l.rate_mbit()) {
        Some(mbit) => size as f64 * 8.0 / (mbit * 1e6 * PAYLOAD_SHARE),
        None => 0.0,
    }
}

/// One size of one row.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The one-way times.
    pub sample: Sample,
    /// How many repetitions they are of.
    pub repetitions: u32,
}

/// A row's figures, or why it has none.
#[derive(Clone, Debug)]
pub enum Measured {
    /// One cell per size of [`Options::sizes`] that was measured, in order.
    Cells(Vec<Cell>),
    /// Why the row is missing: no emulated hosts, a failed job.
    Missing(String),
}

/// One row of the table.
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
    /// `thread`, `shm`, then one row per link.
    pub rows: Vec<Row>,
    /// The repetitions asked for (cells may have fewer, module docs).
    pub repetitions: u32,
    /// [`Options::per_size`].
    pub per_size: Duration,
    /// [`Options::bandwidth`].
    pub bandwidth: bool,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `init` failed on a node.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// A ping-pong failed.
    #[error("ping-pong")]
    Pingpong(#[source] pingpong::Error),
    /// The fiber partner of the `thread` path failed.
    #[error("the partner fiber")]
    Join(#[source] JoinError),
    /// A node was started without a job's `THREADWIRE_BENCH_COMM_PATH`.
    #[error("{PATH_VAR} is {0:?}: expected `local` or a link's name")]
    NoPath(Option<String>),
    /// The job of `thread` and `shm` could not be started.
    #[error("starting the job of thread and shm")]
    Launch(#[source] LaunchError),
    /// The job of `thread` and `shm` failed.
    #[error("the job of thread and shm failed with status {0}")]
    JobFailed(i32),
    /// A node could not report a result to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// Runs the jobs (module docs) and returns the table; `on_step` is called
/// for each cell as it comes, `on_event` sees every other event of every
/// job.
pub fn run(
    options: &Options,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, Error> {
    let mut on_event = |seen: Seen<'_>| match seen {
        Seen::Result => on_step(),
        Seen::Other(ev) => on_event(ev),
    };
    let local = [Path::Thread, Path::Shm];
    let job = JobSpec::new(2, &options.program)
        .args(options.args.clone())
        .env(threadwire::env::CHANNEL, "shm")
        .env(PATH_VAR, "local")
        .timeout(options.job_timeout(&local));
    let mut cells = Vec::new();
    let report = threadwire_launch::run(&job, |ev| collect(ev, &mut cells, &mut on_event))
        .map_err(Error::Launch)?;
    if report.status != 0 {
        return Err(Error::JobFailed(report.status));
    }
    let mut rows: Vec<Row> = local
        .into_iter()
        .map(|path| Row {
            path,
            measured: Measured::Cells(cells_of(&cells, path)),
        })
        .collect();
    for &link in &options.links {
        let path = Path::Link(link);
        let measured = match on_link(options, link, &mut cells, &mut on_event) {
            Ok(()) => Measured::Cells(cells_of(&cells, path)),
            Err(why) => Measured::Missing(why.to_string()),
        };
        rows.push(Row { path, measured });
    }
    Ok(Report {
        rows,
        repetitions: options.repetitions.max(1),
        per_size: options.per_size,
        bandwidth: options.bandwidth,
    })
}

/// Why a link's row has no figures (the row says it).
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("no emulated hosts: {0}")]
    NoHosts(#[source] NetError),
    #[error("the job did not start: {0}")]
    NotStarted(#[source] LaunchError),
    #[error("the job failed with status {0}")]
    Failed(i32),
}

/// The job of one link, on a net built for it.
fn on_link(
    options: &Options,
    link: Link,
    cells: &mut Vec<(Path, Cell)>,
    on_event: &mut impl FnMut(Seen<'_>),
) -> Result<(), LinkError> {
    let net = scoped_net(link).map_err(LinkError::NoHosts)?;
    let job = JobSpec::new(2, &options.program)
        .args(options.args.clone())
        .env(threadwire::env::CHANNEL, "tcp")
        .env(PATH_VAR, link.name())
        .hosts(net.launch_hosts())
        .timeout(options.job_timeout(&[Path::Link(link)]));
    let report = threadwire_launch::run(&job, |ev| collect(ev, cells, on_event))
        .map_err(LinkError::NotStarted)?;
    match report.status {
        0 => Ok(()),
        status => Err(LinkError::Failed(status)),
    }
}

/// Two hosts on `link`, named `twc…`.
fn scoped_net(link: Link) -> Result<ScopedNet, NetError> {
    ScopedNet::up_with_free_prefix("twc", 2, link)
}

/// What [`collect`] saw: a cell of the table, or an event to show.
enum Seen<'a> {
    Result,
    Other(&'a Event),
}

/// Keeps the nodes' results as cells; every other event goes on to
/// `on_event`, and so does a result of no known path.
fn collect(ev: &Event, cells: &mut Vec<(Path, Cell)>, on_event: &mut impl FnMut(Seen<'_>)) {
    if let Some((_, NodeResult::Comm { path, cell })) = NodeResult::decode(ev) {
        if let Some(path) = Path::parse(&path) {
            cells.push((path, cell));
            return on_event(Seen::Result);
        }
    }
    on_event(Seen::Other(ev));
}

/// The number of cells a run of `options` measures, for progress.
pub fn cells(options: &Options) -> usize {
    let links = options.links.iter().map(|&l| Path::Link(l));
    [Path::Thread, Path::Shm]
        .into_iter()
        .chain(links)
        .map(|path| options.sizes(path).len())
        .sum()
}

fn cells_of(cells: &[(Path, Cell)], path: Path) -> Vec<Cell> {
    cells
        .iter()
        .filter(|(p, _)| *p == path)
        .map(|&(_, c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_links_get_fewer_repetitions_but_one_at_least() {
        let options = Options::new("threadwire", Vec::new());
        let reps = |path, size| options.budget(path, size).repetitions;
        assert_eq!(reps(Path::Thread, 1_000_000), 5);
        assert_eq!(reps(Path::Link(Link::Gige), 1_000_000), 5);
        // 0.84 s one way: repetitions of 3.3 s, two fit in 7 s.
        assert_eq!(reps(Path::Link(Link::Ethernet10), 1_000_000), 2);
        let tight = Options {
            per_size: Duration::from_millis(1),
            ..options.clone()
        };
        assert_eq!(
            tight
                .budget(Path::Link(Link::Ethernet10), 1_000_000)
                .repetitions,
            1
        );
    }

    #[test]
    fn the_1998_figures_sit_where_the_measurement_is_the_same() {
        assert_eq!(reference_1998_ms(Path::Thread, 1), Some(1.01));
        assert_eq!(
            reference_1998_ms(Path::Link(Link::Ethernet10), 1_000_000),
            Some(3267.32)
        );
        assert_eq!(reference_1998_ms(Path::Shm, 32_000), Some(39.27));
        assert_eq!(reference_1998_ms(Path::Link(Link::Gige), 1), None);
        // Two columns: neither alone.
        assert_eq!(reference_1998_ms(Path::Link(Link::Atm155), 1), None);
        assert_eq!(
            seed_settings(Path::Link(Link::Atm155)),
            [Setting::AtmAal34, Setting::AtmAal5]
        );
    }

    #[test]
    fn links_add_the_start_up_and_bandwidth_sizes_of_tables_5_3_and_5_5() {
        let table_5_3 = seeds::THESIS_TABLE_5_3.map(|r| r.kb * seeds::KB);
        assert_eq!(BANDWIDTH_SIZES, table_5_3);
        let mut options = Options::new("threadwire", Vec::new());
        assert_eq!(options.sizes(Path::Shm), SIZES);
        let link = Path::Link(Link::Ethernet10);
        assert_eq!(
            options.sizes(link),
            [1, 4, 1000, 32_000, 80_000, 320_000, 1_000_000, 1_280_000, 5_120_000]
        );
        options.bandwidth = false;
        assert_eq!(options.sizes(link), [1, 4, 1000, 32_000, 1_000_000]);
        options.links = vec![Link::Ethernet10, Link::Atm155];
        assert_eq!(cells(&options), 4 + 4 + 5 + 5);
    }
}
