//! PVM programs on threadwire's libpvm3 beside real PVM 3.4.6 (issue 16's
//! figures): one C program, `pvmbench.c`, built against PVM's own header
//! and library, run unchanged under both, and timed inside itself.
//!
//! | measure | what `pvmbench` times | unit |
//! |---|---|---|
//! | round trip | a message of the size each way: pack, send, receive, unpack on both sides | µs |
//! | bandwidth | N messages of the size one way back to back, unpacked by the partner, then a 4-byte answer | MB/s |
//! | pvm_spawn | one `pvm_spawn` of N tasks until a message from each has reached the parent | ms |
//!
//! | row | how the program runs |
//! |---|---|
//! | threadwire libpvm3 | `threadwire pvm -- pvmbench …`: no daemon; the tasks are nodes of one job, shared memory between them on one host, TCP between hosts |
//! | PVM 3.4.6 direct | a task of a private pvmd, both tasks asking for `PvmRouteDirect` (task-to-task TCP) |
//! | PVM 3.4.6 via pvmd | likewise with `PvmDontRoute`: every message through the daemons; the pvm_spawn rows run here, with PVM's default route |
//!
//! 1. **Build.** [`SOURCE`] is written to a scratch directory and compiled
//!    with the system `cc` against `/usr/include/pvm3.h` and `-lpvm3`
//!    (Debian's `pvm-dev`), as a PVM user builds a program
//!    ([`program`]). Without `cc` or `pvm-dev` nothing is measured, and
//!    the report says which package is missing.
//! 2. **Machines.** Per placement — this host, and with `--link` two
//!    emulated hosts whose link is shaped — one runner per runtime, kept
//!    for every repetition ([`machine`]): threadwire needs its libpvm3
//!    built beside the `threadwire` binary; PVM a private pvmd
//!    ([`threadwire_testbed::pvm`]), or on two hosts one in each namespace
//!    ([`crate::peers::pvm`]'s machinery for NetPIPE). A runtime that is
//!    missing has its rows skipped with the reason; so have the two-host
//!    rows if namespaces cannot be made (they need root).
//! 3. **Runs.** Each repetition runs the program once per row, the rows
//!    alternating (threadwire, PVM direct, PVM via pvmd, then pvm_spawn
//!    under threadwire and PVM), so that the machine's mood falls on
//!    every row alike. The parent task spawns its partner (on the second
//!    host with `PvmTaskHost`), warms up at each size, then measures for
//!    [`Options::per_measurement`]; a pvm_spawn is timed after an untimed
//!    one of the same count. The program writes one line per measurement
//!    to a results file (its header documents the three line formats);
//!    that file, not anything printed, is what is read. A run that fails
//!    takes its runtime's rows of that kind out, with the reason.
//! 4. **Figures.** Median, minimum and maximum over the repetitions.
//!
//! The parts: `program.rs` (the C program: build, arguments, results),
//! `machine.rs` (the runners), `report.rs` (the [`Report`]).

pub mod machine;
pub mod program;
pub mod report;

pub use program::SOURCE;
pub use report::Report;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use threadwire_testbed::net::{Link, Net};

use machine::Runner;
use program::{Line, Mode, Route};

/// A run of the program that takes longer than this past its own
/// measurements has hung; it is killed and its rows skipped.
const RUN_GRACE: Duration = Duration::from_secs(60);

/// What to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// Message sizes in bytes, multiples of 4 (the messages are ints).
    pub sizes: Vec<usize>,
    /// Tasks per `pvm_spawn`.
    pub counts: Vec<u32>,
    /// Runs of the program per row.
    pub repetitions: u32,
    /// How long each measurement lasts inside the program.
    pub per_measurement: Duration,
    /// `pvm_initsend`'s encoding.
    pub encoding: Encoding,
    /// The `threadwire` binary, whose `threadwire pvm` runs the threadwire
    /// rows.
    pub threadwire: PathBuf,
    /// Also on two emulated hosts joined by this link.
    pub link: Option<Link>,
}

impl Options {
    /// 8 B to 1 MB, pvm_spawn of 1 and 16, 5 repetitions of 50 ms,
    /// `PvmDataRaw` (as Debian's `timing` example), on this host.
    pub fn new(threadwire: impl Into<PathBuf>) -> Options {
        Options {
            sizes: vec![8, 100, 1000, 10_000, 100_000, 1_000_000],
            counts: vec![1, 16],
            repetitions: 5,
            per_measurement: Duration::from_millis(50),
            encoding: Encoding::Raw,
            threadwire: threadwire.into(),
            link: None,
        }
    }
}

/// `pvm_initsend`'s encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `PvmDataRaw`: the machine's own order.
    Raw,
    /// `PvmDataDefault`: XDR, big-endian.
    Default,
    /// `PvmDataInPlace`: the data read where it lies when sent.
    InPlace,
}

impl Encoding {
    /// Its name in `pvm3.h`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Raw => "PvmDataRaw",
            Encoding::Default => "PvmDataDefault",
            Encoding::InPlace => "PvmDataInPlace",
        }
    }
}

/// Not `raw`, `default` or `inplace`.
#[derive(Debug, thiserror::Error)]
#[error("not an encoding (raw, default or inplace): {0:?}")]
pub struct ParseEncodingError(String);

impl FromStr for Encoding {
    type Err = ParseEncodingError;
    fn from_str(s: &str) -> Result<Encoding, ParseEncodingError> {
        match s {
            "raw" => Ok(Encoding::Raw),
            "default" => Ok(Encoding::Default),
            "inplace" => Ok(Encoding::InPlace),
            _ => Err(ParseEncodingError(s.to_string())),
        }
    }
}

/// What runs the program: a row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Runtime {
    /// `threadwire pvm`, threadwire's libpvm3.
    Threadwire,
    /// A private pvmd, tasks asking for `PvmRouteDirect`.
    PvmDirect,
    /// A private pvmd, every message through the daemons.
    PvmDaemon,
}

impl Runtime {
    /// The row's name.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Threadwire => "threadwire libpvm3",
            Runtime::PvmDirect => "PVM 3.4.6 direct",
            Runtime::PvmDaemon => "PVM 3.4.6 via pvmd",
        }
    }
}

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Measure {
    /// A round trip at a size, µs.
    RoundTrip,
    /// One-way bandwidth at a size, MB/s.
    Bandwidth,
    /// `pvm_spawn` of a count of tasks, ms.
    Spawn,
}

impl Measure {
    /// Every measure, in report order.
    pub const ALL: [Measure; 3] = [Measure::RoundTrip, Measure::Bandwidth, Measure::Spawn];

    /// Its name in JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Measure::RoundTrip => "round_trip",
            Measure::Bandwidth => "bandwidth",
            Measure::Spawn => "pvm_spawn",
        }
    }

    /// Its unit.
    pub fn unit(self) -> &'static str {
        match self {
            Measure::RoundTrip => "us",
            Measure::Bandwidth => "MB/s",
            Measure::Spawn => "ms",
        }
    }

    /// The runtimes that have rows of it.
    pub fn runtimes(self) -> &'static [Runtime] {
        match self {
            Measure::RoundTrip | Measure::Bandwidth => {
                &[Runtime::Threadwire, Runtime::PvmDirect, Runtime::PvmDaemon]
            }
            Measure::Spawn => &[Runtime::Threadwire, Runtime::PvmDaemon],
        }
    }
}

/// Where the two tasks (or the spawner and its tasks) run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Both on this host.
    OneHost,
    /// The parent on one emulated host, its partners on another, joined
    /// by the link.
    TwoHosts(Link),
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::OneHost => f.write_str("one host"),
            Placement::TwoHosts(link) => write!(f, "two hosts, {link}"),
        }
    }
}

/// Median, minimum and maximum over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median (the upper one for an even count).
    pub median: f64,
    /// The least.
    pub min: f64,
    /// The greatest.
    pub max: f64,
}

/// One row: a measure of a runtime at a size (or count) and placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Where.
    pub placement: Placement,
    /// What.
    pub measure: Measure,
    /// Under what.
    pub runtime: Runtime,
    /// The message size in bytes, or the number of tasks spawned.
    pub size: usize,
    /// In [`Measure::unit`].
    pub figure: Spread,
}

/// Rows not measured, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// Which rows.
    pub rows: String,
    /// Why: what is missing and its package, or how a run failed.
    pub reason: String,
}

/// Why a runtime, a placement or a run could not be measured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program, a package or PVM's machine.
    #[error(transparent)]
    Peer(#[from] crate::peers::Error),
    /// threadwire's libpvm3 is not built.
    #[error(transparent)]
    Libraries(#[from] threadwire_launch::pvm::PvmSetupError),
    /// The emulated hosts.
    #[error("emulated hosts: {0}")]
    Net(#[from] threadwire_testbed::net::NetError),
    /// The program's results file holds something else than its lines.
    #[error("pvmbench's results file is not as documented: {0:?}")]
    Results(String),
}

/// The steps of [`run`], for a progress bar: one per repetition and
/// placement.
pub fn steps(options: &Options) -> usize {
    options.repetitions.max(1) as usize * (1 + usize::from(options.link.is_some()))
}

/// Runs every row (module docs); `on_step` after each of the [`steps`].
pub fn run(options: &Options, mut on_step: impl FnMut()) -> Report {
    let mut report = Report {
        encoding: options.encoding,
        repetitions: options.repetitions.max(1),
        per_measurement: options.per_measurement,
        rows: Vec::new(),
        skipped: Vec::new(),
    };
    let program = match program::Program::build() {
        Ok(program) => program,
        Err(e) => {
            report.skip("every row: pvmbench.c cannot be built", e);
            return report;
        }
    };
    measure(&program, options, None, &mut report, &mut on_step);
    if let Some(link) = options.link {
        let placement = Placement::TwoHosts(link);
        match crate::two_hosts(Some(link)) {
            Ok(Some(net)) => measure(&program, options, Some(&net), &mut report, &mut on_step),
            Ok(None) => {}
            Err(e) => report.skip(&format!("{placement}"), Error::from(e)),
        }
    }
    report
}

impl Report {
    fn skip(&mut self, rows: &str, why: impl Into<Error>) {
        self.skipped.push(Skipped {
            rows: rows.to_string(),
            reason: why.into().to_string(),
        });
    }
}

/// One placement's repetitions (module docs, steps 2 to 4).
fn measure(
    program: &program::Program,
    options: &Options,
    net: Option<&Net>,
    report: &mut Report,
    on_step: &mut impl FnMut(),
) {
    let placement = match (net, options.link) {
        (Some(_), Some(link)) => Placement::TwoHosts(link),
        _ => Placement::OneHost,
    };
    let scratch = program.path().parent().unwrap_or(program.path());
    let start_deadline = Instant::now() + RUN_GRACE;
    let threadwire = Runner::threadwire(&options.threadwire, net, scratch);
    let pvm = Runner::pvm(net, start_deadline);
    let mut runners: HashMap<Runtime, &Runner> = HashMap::new();
    for (runtimes, runner) in [
        (&[Runtime::Threadwire][..], &threadwire),
        (&[Runtime::PvmDirect, Runtime::PvmDaemon][..], &pvm),
    ] {
        match runner {
            Ok(runner) => runtimes.iter().for_each(|&r| {
                runners.insert(r, runner);
            }),
            Err(e) => report.skipped.push(Skipped {
                rows: format!("{}, {placement}", runtime_names(runtimes)),
                reason: e.to_string(),
            }),
        }
    }
    // Per (measure, runtime, size): a figure per repetition.
    let mut samples: HashMap<(Measure, Runtime, usize), Vec<f64>> = HashMap::new();
    let mut failed: HashMap<(Runtime, bool), Error> = HashMap::new();
    let runs = [
        (Runtime::Threadwire, Mode::PingPong(Route::Direct)),
        (Runtime::PvmDirect, Mode::PingPong(Route::Direct)),
        (Runtime::PvmDaemon, Mode::PingPong(Route::Daemon)),
        (Runtime::Threadwire, Mode::Spawn),
        (Runtime::PvmDaemon, Mode::Spawn),
    ];
    for _ in 0..report.repetitions {
        for (runtime, mode) in runs {
            let spawn = mode == Mode::Spawn;
            let Some(runner) = runners.get(&runtime) else {
                continue;
            };
            if failed.contains_key(&(runtime, spawn)) {
                continue;
            }
            let deadline = Instant::now() + run_time(options, mode) + RUN_GRACE;
            match runner.run(program, options, mode, deadline) {
                Ok(lines) => {
                    for line in lines {
                        let (key, figure) = match line {
                            Line::PingPong {
                                size,
                                round_trip_us,
                            } => ((Measure::RoundTrip, runtime, size), round_trip_us),
                            Line::Stream { size, mbps } => {
                                ((Measure::Bandwidth, runtime, size), mbps)
                            }
                            Line::Spawn { count, ms } => {
                                ((Measure::Spawn, runtime, count as usize), ms)
                            }
                        };
                        samples.entry(key).or_default().push(figure);
                    }
                }
                Err(e) => {
                    failed.insert((runtime, spawn), e);
                }
            }
        }
        on_step();
    }
    for ((runtime, spawn), e) in failed {
        let measures: &[Measure] = match spawn {
            true => &[Measure::Spawn],
            false => &[Measure::RoundTrip, Measure::Bandwidth],
        };
        samples.retain(|(measure, r, _), _| *r != runtime || !measures.contains(measure));
        let what = match spawn {
            true => "pvm_spawn",
            false => "round trip and bandwidth",
        };
        report.skipped.push(Skipped {
            rows: format!("{}, {what}, {placement}", runtime.name()),
            reason: format!("a run failed: {e}"),
        });
    }
    let mut rows: Vec<Row> = samples
        .into_iter()
        .map(|((measure, runtime, size), mut figures)| {
            let (median, min, max) = crate::spread(&mut figures);
            Row {
                placement,
                measure,
                runtime,
                size,
                figure: Spread { median, min, max },
            }
        })
        .collect();
    rows.sort_by_key(|r| (r.measure, r.size, r.runtime));
    report.rows.extend(rows);
}

fn runtime_names(runtimes: &[Runtime]) -> String {
    let names: Vec<&str> = runtimes.iter().map(|r| r.name()).collect();
    names.join(" and ")
}

/// About how long one run of `mode` measures: a warm-up and two
/// measurements per size, and for pvm_spawn nothing worth counting.
fn run_time(options: &Options, mode: Mode) -> Duration {
    match mode {
        Mode::PingPong(_) => options.per_measurement * 3 * options.sizes.len() as u32,
        Mode::Spawn => Duration::ZERO,
    }
}
