//! The classic thread-package measurements, each run twice in the same
//! process: with threadwire's fibers and with OS threads and `std::sync`
//! (pthreads underneath), so the ratio is measured on this machine rather
//! than quoted.
//!
//! | Row                    | One operation                                            |
//! |------------------------|----------------------------------------------------------|
//! | mutex                  | lock + unlock, uncontended, one thread                   |
//! | semaphore              | post + wait, uncontended, one thread                     |
//! | context switch         | one handoff of two threads ping-ponging on semaphores     |
//! | thread switch          | one yield of two threads yielding in turn                 |
//! | thread synchronization | one hop round a ring of 10 threads, each waking the next  |
//! | create + join          | start a thread that returns at once, and join it          |
//! | message round trip     | 8 bytes there and back between two endpoints of a node    |
//!
//! Fibers run on a scheduler of one worker, so every switch is a switch on
//! one core; for the same reason the OS threads of the three switching rows
//! are pinned to one CPU (the row's note says which, or that pinning
//! failed). The semaphore of the OS column is a `std::sync::Mutex` and
//! `Condvar` that notifies only when someone waits, as a pthreads
//! semaphore built from a mutex and a condition variable would.
//!
//! Beside them, SCALE Suite's Table 1 (1998, [`seeds::SCALE_TABLE_1`]):
//! SCALE Threads, the user-level package the rows are named after,
//! beside the fibers, and Solaris threads beside the OS threads, both on
//! a 167-MHz UltraSPARC-1. Its Solaris thread switch is an estimate
//! (≈22 µs) and stays one.
//!
//! Apart from the rows, [`IdleCost`] is what 10,000 parked fibers cost a
//! process with nothing to do: CPU time over a window, as a share of a core.

mod fibers;
mod idle;
mod messages;
mod os_threads;

pub use idle::IdleCost;

pub mod report;

use crate::seeds;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use threadwire::fiber::Scheduler;
use threadwire::{Endpoint, JoinError, RecvError, SendError};

/// Threads in the synchronization ring, as in the 1998 measurements.
const RING: usize = 10;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Operations per repetition of the cheapest rows; costlier rows run a
    /// fixed fraction of it (see [`Measurement::share`]).
    pub iterations: u64,
    /// Timed repetitions per row and column (after one untimed warm-up).
    pub repetitions: u32,
    /// Parked fibers in the idle measurement.
    pub idle_fibers: usize,
    /// How long the idle measurement watches the process's CPU time.
    pub idle_window: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            iterations: 200_000,
            repetitions: 5,
            idle_fibers: 10_000,
            idle_window: Duration::from_secs(2),
        }
    }
}

/// The node configuration [`run`] expects: a standalone one-node job whose
/// fibers run on one worker. `init` may be called once per process, so the
/// caller initializes and passes the endpoint in.
pub fn node_config() -> threadwire::Config {
    threadwire::Config::new()
        .standalone(true)
        .workers(1)
        .progress_thread(false)
        .log(false)
}

/// The rows, in the order they are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measurement {
    /// Lock and unlock a mutex nobody else wants.
    Mutex,
    /// Post and wait on a semaphore nobody else uses.
    Semaphore,
    /// Two threads ping-ponging on a pair of semaphores; per handoff.
    ContextSwitch,
    /// Two threads yielding in turn; per yield.
    ThreadSwitch,
    /// A ring of ten threads, each woken by the one before; per hop.
    ThreadSynchronization,
    /// Start a thread that returns at once and join it.
    CreateJoin,
    /// Eight bytes there and back between two endpoints of one node.
    MessageRoundTrip,
}

impl Measurement {
    /// Every row, in report order.
    pub const ALL: [Measurement; 7] = [
        Measurement::Mutex,
        Measurement::Semaphore,
        Measurement::ContextSwitch,
        Measurement::ThreadSwitch,
        Measurement::ThreadSynchronization,
        Measurement::CreateJoin,
        Measurement::MessageRoundTrip,
    ];

    /// The row's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Measurement::Mutex => "mutex",
            Measurement::Semaphore => "semaphore",
            Measurement::ContextSwitch => "context switch",
            Measurement::ThreadSwitch => "thread switch",
            Measurement::ThreadSynchronization => "thread synchronization",
            Measurement::CreateJoin => "create + join",
            Measurement::MessageRoundTrip => "message round trip",
        }
    }

    /// The row of SCALE's Table 1 of the same benchmark, if it has one.
    pub fn seed(self) -> Option<&'static seeds::ThreadsRow> {
        let row = match self {
            Measurement::Mutex => 0,
            Measurement::Semaphore => 1,
            Measurement::ContextSwitch => 2,
            Measurement::ThreadSwitch => 3,
            Measurement::ThreadSynchronization => 4,
            Measurement::CreateJoin | Measurement::MessageRoundTrip => return None,
        };
        Some(&seeds::SCALE_TABLE_1[row])
    }

    /// SCALE Threads' figure (Table 1), in nanoseconds, where it has one
    /// (whole: the paper prints thousandths of a µs at most).
    pub fn reference_1998_ns(self) -> Option<f64> {
        self.seed().map(|r| (r.scale_us.value * 1e3).round())
    }

    /// The divisors of `iterations` for the fiber and the OS column: a
    /// repetition should take tens of milliseconds whatever the cost.
    pub fn share(self) -> (u64, u64) {
        match self {
            Measurement::Mutex | Measurement::Semaphore => (1, 1),
            Measurement::ContextSwitch | Measurement::ThreadSynchronization => (1, 20),
            Measurement::ThreadSwitch => (1, 10),
            Measurement::CreateJoin => (2, 50),
            Measurement::MessageRoundTrip => (2, 20),
        }
    }

    /// Operations come in rounds of this many (two threads, or ten).
    fn granularity(self) -> u64 {
        match self {
            Measurement::ContextSwitch | Measurement::ThreadSwitch => 2,
            Measurement::ThreadSynchronization => RING as u64,
            _ => 1,
        }
    }

    fn ops(self, iterations: u64, divisor: u64) -> u64 {
        let g = self.granularity();
        (iterations / divisor).max(g) / g * g
    }
}

/// Nanoseconds per operation over the repetitions of one column.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Operations per repetition.
    pub ops: u64,
    /// The median repetition (the upper one for an even count).
    pub median_ns: f64,
    /// The fastest repetition.
    pub min_ns: f64,
    /// The slowest repetition.
    pub max_ns: f64,
}

/// One row: the operation with fibers and with OS threads.
#[derive(Clone, Debug)]
pub struct Row {
    /// Which operation.
    pub measurement: Measurement,
    /// With fibers.
    pub fibers: Timing,
    /// With OS threads and `std::sync`.
    pub os: Timing,
    /// How the OS column ran, where that matters (pinning).
    pub note: Option<String>,
}

impl Row {
    /// OS time over fiber time, at the medians: how many times faster
    /// fibers are.
    pub fn ratio(&self) -> f64 {
        self.os.median_ns / self.fibers.median_ns
    }
}

/// Everything [`run`] measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// One per [`Measurement`], in [`Measurement::ALL`] order.
    pub rows: Vec<Row>,
    /// What parked fibers cost when nothing happens.
    pub idle: IdleCost,
    /// Timed repetitions per row and column.
    pub repetitions: u32,
}

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// A fiber scheduler did not start.
    Scheduler(std::io::Error),
    /// A send of the message row failed.
    Send(SendError),
    /// A receive of the message row failed.
    Recv(RecvError),
    /// A measured thread or fiber panicked; its message.
    Panicked(Arc<str>),
    /// The process's CPU time could not be read.
    CpuTime(std::io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Scheduler(e) => write!(f, "starting a fiber scheduler: {e}"),
            Error::Send(e) => write!(f, "send: {e}"),
            Error::Recv(e) => write!(f, "receive: {e}"),
            Error::Panicked(m) => write!(f, "a measured thread panicked: {m}"),
            Error::CpuTime(e) => write!(f, "reading the process's CPU time: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Scheduler(e) | Error::CpuTime(e) => Some(e),
            Error::Send(e) => Some(e),
            Error::Recv(e) => Some(e),
            Error::Panicked(_) => None,
        }
    }
}

impl From<JoinError> for Error {
    fn from(e: JoinError) -> Self {
        match e {
            JoinError::Panicked(m) => Error::Panicked(m),
            JoinError::Taken => Error::Panicked("a result was taken twice".into()),
        }
    }
}

/// The number of times [`run`] calls its `on_step`: after each column of
/// each row, and after the idle measurement.
pub const STEPS: usize = 2 * Measurement::ALL.len() + 1;

/// Runs every row, then the idle measurement, calling `on_step` after
/// each of the [`STEPS`] (for progress; it runs between measurements, not
/// during one). `ep` must come from [`node_config`] (one worker); the
/// message row spawns endpoints on its node.
pub fn run(ep: &Endpoint, options: &Options, mut on_step: impl FnMut()) -> Result<Report, Error> {
    let scheduler = Scheduler::builder()
        .workers(1)
        .name("tw-bench")
        .build()
        .map_err(Error::Scheduler)?;
    let mut rows = Vec::with_capacity(Measurement::ALL.len());
    for measurement in Measurement::ALL {
        let (fiber_share, os_share) = measurement.share();
        let fiber_ops = measurement.ops(options.iterations, fiber_share);
        let os_ops = measurement.ops(options.iterations, os_share);
        let warm_up = |ops: u64| measurement.ops(ops / 10, 1);
        let fibers = measure(options.repetitions, fiber_ops, warm_up(fiber_ops), |ops| {
            fiber_column(measurement, &scheduler, ep, ops)
        })?;
        on_step();
        let affinity = os_threads::Affinity::first_allowed_cpu();
        let os = measure(options.repetitions, os_ops, warm_up(os_ops), |ops| {
            os_column(measurement, &affinity, ep, ops)
        })?;
        on_step();
        let note = match measurement {
            Measurement::ContextSwitch
            | Measurement::ThreadSwitch
            | Measurement::ThreadSynchronization => Some(affinity.note()),
            _ => None,
        };
        rows.push(Row {
            measurement,
            fibers,
            os,
            note,
        });
    }
    drop(scheduler);
    let idle = idle::measure(options.idle_fibers, options.idle_window)?;
    on_step();
    Ok(Report {
        rows,
        idle,
        repetitions: options.repetitions.max(1),
    })
}

fn fiber_column(
    measurement: Measurement,
    scheduler: &Scheduler,
    ep: &Endpoint,
    ops: u64,
) -> Result<Duration, Error> {
    match measurement {
        Measurement::Mutex => fibers::mutex(scheduler, ops),
        Measurement::Semaphore => fibers::semaphore(scheduler, ops),
        Measurement::ContextSwitch => fibers::context_switch(scheduler, ops),
        Measurement::ThreadSwitch => fibers::thread_switch(scheduler, ops),
        Measurement::ThreadSynchronization => fibers::ring(scheduler, ops),
        Measurement::CreateJoin => fibers::create_join(scheduler, ops),
        Measurement::MessageRoundTrip => messages::round_trips(ep, messages::Threads::Fibers, ops),
    }
}

fn os_column(
    measurement: Measurement,
    affinity: &os_threads::Affinity,
    ep: &Endpoint,
    ops: u64,
) -> Result<Duration, Error> {
    match measurement {
        Measurement::Mutex => Ok(os_threads::mutex(ops)),
        Measurement::Semaphore => Ok(os_threads::semaphore(ops)),
        Measurement::ContextSwitch => os_threads::context_switch(affinity, ops),
        Measurement::ThreadSwitch => os_threads::thread_switch(affinity, ops),
        Measurement::ThreadSynchronization => os_threads::ring(affinity, ops),
        Measurement::CreateJoin => os_threads::create_join(ops),
        Measurement::MessageRoundTrip => messages::round_trips(ep, messages::Threads::Os, ops),
    }
}

/// One untimed warm-up (stacks pooled, pages and caches warm), then
/// `repetitions` timed runs of `ops` operations.
fn measure(
    repetitions: u32,
    ops: u64,
    warm_up_ops: u64,
    mut once: impl FnMut(u64) -> Result<Duration, Error>,
) -> Result<Timing, Error> {
    once(warm_up_ops)?;
    let mut per_op = Vec::with_capacity(repetitions as usize);
    for _ in 0..repetitions.max(1) {
        per_op.push(once(ops)?.as_nanos() as f64 / ops as f64);
    }
    let (median_ns, min_ns, max_ns) = crate::spread(&mut per_op);
    Ok(Timing {
        ops,
        median_ns,
        min_ns,
        max_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_scale_table_1_sits_beside_the_row_of_its_name() {
        for measurement in Measurement::ALL {
            if let Some(seed) = measurement.seed() {
                assert_eq!(
                    seed.benchmark.to_lowercase(),
                    measurement.name(),
                    "{measurement:?}"
                );
            }
        }
        let seeded = Measurement::ALL.iter().filter(|m| m.seed().is_some());
        assert_eq!(seeded.count(), seeds::SCALE_TABLE_1.len());
        assert_eq!(Measurement::Mutex.reference_1998_ns(), Some(126.0));
    }
}
