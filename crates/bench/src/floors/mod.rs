//! The physical floors of this machine: what moving a cache line, waking a
//! thread, copying memory and loopback TCP cost with no runtime in the
//! way. No threadwire path can beat the floor it is built on, so every
//! other benchmark is judged against these rows (docs/PERFORMANCE.md).
//!
//! | Row                  | What is timed                                            | Floor of                      |
//! |----------------------|----------------------------------------------------------|-------------------------------|
//! | cache line, 2 cores  | two threads on two cores spin on one `AtomicU64`, each writing the next value once it sees the other's; one-way = round trip / 2 | a spinning receive, thread to thread or over shared memory |
//! | cache line, 1 core   | the same with both threads on one core, yielding until the other has written: a scheduler hand-off | any hand-off between two OS threads that share a core |
//! | wake-up, 2 cores     | the same ping-pong, each thread asleep in `thread::park` (a futex on Linux) until the other unparks it; one-way = round trip / 2 | a receive that sleeps: why the runtime spins before it sleeps |
//! | memcpy SIZE          | `copy_from_slice` of SIZE bytes; MB/s of bytes copied     | a message of SIZE copied once |
//! | tcp loopback 1 B     | one byte there and back over 127.0.0.1 with `TCP_NODELAY`, blocking reads; one-way = round trip / 2 | the TCP channel on one host |
//! | tcp loopback stream  | one connection over 127.0.0.1, writes of 1 MiB, timed until the receiver has read them all | TCP bandwidth on one host |
//!
//! Each row calibrates its iteration count by doubling it until a run
//! lasts a quarter of [`Options::per_repetition`], then runs one warm-up
//! at the count that should last a repetition and the
//! [`Options::repetitions`] timed runs at the count the warm-up says does;
//! the report gives their median, minimum and maximum.
//!
//! The two-core rows pin their threads to the first two CPUs the process
//! may use, preferring two that are not SMT siblings (the note names them),
//! on new threads, so the caller's affinity is untouched. With one CPU the
//! cache-line row is missing and says so, and the wake-up row runs both
//! threads on that CPU. memcpy buffers are written before timing, so no
//! page fault is timed; sizes whose source and destination fit in half the
//! last-level cache copy one pair over and over (in cache), larger ones go
//! round enough pairs to fill four times the last-level cache, so each
//! copy reads data evicted since its last use (out of cache).

mod cache_line;
mod cpus;
mod loopback;
mod memcpy;
mod wake_up;

pub mod report;

use std::fmt;
use std::io;
use std::sync::mpsc;
use std::thread::{self, Thread};
use std::time::Duration;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Timed repetitions per row (after one untimed warm-up).
    pub repetitions: u32,
    /// About how long one repetition lasts; iteration counts are
    /// calibrated to it.
    pub per_repetition: Duration,
    /// Sizes of the memcpy rows, in bytes.
    pub copy_sizes: Vec<usize>,
}

impl Default for Options {
    /// 5 repetitions of 100 ms; memcpy of 64 KiB (in L2), 1 MiB (in the
    /// last-level cache) and 16 MiB (out of cache).
    fn default() -> Self {
        Options {
            repetitions: 5,
            per_repetition: Duration::from_millis(100),
            copy_sizes: vec![64 * KIB, MIB, 16 * MIB],
        }
    }
}

/// The rows, in the order they are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floor {
    /// One-way time of a cache line between two spinning threads on two cores.
    CacheLineTwoCores,
    /// One-way time of a hand-off between two yielding threads on one core.
    CacheLineOneCore,
    /// One-way time of a wake-up of a sleeping thread on another core.
    WakeUp,
    /// Bandwidth of `copy_from_slice` of this many bytes.
    Memcpy(usize),
    /// One-way time of one byte over loopback TCP.
    TcpRoundTrip,
    /// Bandwidth of one loopback TCP connection.
    TcpStream,
}

impl Floor {
    /// The rows `options` asks for, in report order.
    pub fn all(options: &Options) -> Vec<Floor> {
        let mut floors = vec![
            Floor::CacheLineTwoCores,
            Floor::CacheLineOneCore,
            Floor::WakeUp,
        ];
        floors.extend(options.copy_sizes.iter().map(|&size| Floor::Memcpy(size)));
        floors.extend([Floor::TcpRoundTrip, Floor::TcpStream]);
        floors
    }

    /// The row's name in tables and machine-readable output.
    pub fn name(self) -> String {
        match self {
            Floor::CacheLineTwoCores => "cache line, 2 cores".into(),
            Floor::CacheLineOneCore => "cache line, 1 core".into(),
            Floor::WakeUp => "wake-up, 2 cores".into(),
            Floor::Memcpy(size) => format!("memcpy {}", size_name(size)),
            Floor::TcpRoundTrip => "tcp loopback 1 B".into(),
            Floor::TcpStream => "tcp loopback stream".into(),
        }
    }

    /// What the row's figures count.
    pub fn unit(self) -> Unit {
        match self {
            Floor::Memcpy(_) | Floor::TcpStream => Unit::MegabytesPerSecond,
            _ => Unit::Nanoseconds,
        }
    }
}

impl fmt::Display for Floor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// What a row's figures count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// One-way time in nanoseconds: lower is better.
    Nanoseconds,
    /// 10^6 bytes per second: higher is better.
    MegabytesPerSecond,
}

impl Unit {
    /// The unit's symbol: `ns` or `MB/s`.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::MegabytesPerSecond => "MB/s",
        }
    }
}

/// A row's figures over the timed repetitions, in its [`Unit`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    /// The median repetition (the upper one for an even count).
    pub median: f64,
    /// The lowest figure of a repetition.
    pub min: f64,
    /// The highest figure of a repetition.
    pub max: f64,
    /// Iterations (round trips, copies, writes) per timed repetition.
    pub iterations: u64,
}

/// A row's figures, or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub enum Measured {
    /// It was measured.
    Figures(Figures),
    /// It could not be measured on this machine, or failed; why.
    Missing(String),
}

/// One row of the report.
#[derive(Clone, Debug)]
pub struct Row {
    /// Which floor.
    pub floor: Floor,
    /// Its figures, or why there are none.
    pub measured: Measured,
    /// How it ran: CPUs, buffer placement, protocol.
    pub note: String,
}

/// Everything [`run`] measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Timed repetitions per row.
    pub repetitions: u32,
    /// The time a repetition was calibrated to.
    pub per_repetition: Duration,
    /// One per [`Floor::all`], in that order.
    pub rows: Vec<Row>,
}

/// The number of times [`run`] calls its `on_step`: once per row.
pub fn steps(options: &Options) -> usize {
    Floor::all(options).len()
}

/// Measures every row of [`Floor::all`], calling `on_step` after each (for
/// progress; never during a measurement). A row that cannot be measured
/// or fails is [`Measured::Missing`], so the others are still reported.
pub fn run(options: &Options, mut on_step: impl FnMut()) -> Report {
    let placement = cpus::Placement::choose();
    let caches = cpus::caches();
    let rows = Floor::all(options)
        .into_iter()
        .map(|floor| {
            let (measured, note) = match floor {
                Floor::CacheLineTwoCores => cache_line::two_cores(options, &placement),
                Floor::CacheLineOneCore => cache_line::one_core(options, &placement),
                Floor::WakeUp => wake_up::measure(options, &placement),
                Floor::Memcpy(size) => memcpy::measure(options, size, &caches),
                Floor::TcpRoundTrip => loopback::round_trip(options),
                Floor::TcpStream => loopback::stream(options),
            };
            on_step();
            Row {
                floor,
                measured,
                note,
            }
        })
        .collect();
    Report {
        repetitions: options.repetitions.max(1),
        per_repetition: options.per_repetition,
        rows,
    }
}

/// The elapsed times of the timed repetitions of one row, each of
/// `iterations` iterations.
struct Timed {
    iterations: u64,
    elapsed: Vec<Duration>,
}

impl Timed {
    /// Nanoseconds per iteration divided by `divisor` (2 for one-way
    /// times of round trips).
    fn nanoseconds(&self, divisor: f64) -> Measured {
        self.figures(|t| t.as_nanos() as f64 / self.iterations as f64 / divisor)
    }

    /// 10^6 bytes per second, `bytes` per iteration.
    fn megabytes_per_second(&self, bytes: usize) -> Measured {
        let total = self.iterations as f64 * bytes as f64;
        self.figures(|t| total / t.as_secs_f64().max(1e-9) / 1e6)
    }

    fn figures(&self, figure: impl Fn(Duration) -> f64) -> Measured {
        let mut values: Vec<f64> = self.elapsed.iter().map(|&t| figure(t)).collect();
        let (median, min, max) = crate::spread(&mut values);
        Measured::Figures(Figures {
            median,
            min,
            max,
            iterations: self.iterations,
        })
    }
}

/// Iteration counts stop doubling here, whatever the clock says.
const MAX_ITERATIONS: u64 = 1 << 40;

/// Times `run(n)`, which runs n iterations and returns how long they took,
/// as the module docs say: calibration, one warm-up, the repetitions.
fn repeat(
    options: &Options,
    mut run: impl FnMut(u64) -> io::Result<Duration>,
) -> io::Result<Timed> {
    let target = options.per_repetition.max(Duration::from_micros(100));
    let mut iterations = 1;
    let mut took = run(iterations)?;
    while took < target / 4 && iterations < MAX_ITERATIONS {
        iterations *= 2;
        took = run(iterations)?;
    }
    let lasting_target = |iterations: u64, took: Duration| {
        let scale = target.as_secs_f64() / took.as_secs_f64().max(1e-9);
        ((iterations as f64 * scale).round() as u64).clamp(1, MAX_ITERATIONS)
    };
    iterations = lasting_target(iterations, took);
    let warm_up = run(iterations)?;
    iterations = lasting_target(iterations, warm_up);
    let elapsed = (0..options.repetitions.max(1))
        .map(|_| run(iterations))
        .collect::<io::Result<_>>()?;
    Ok(Timed {
        iterations,
        elapsed,
    })
}

/// A row's figures from a measurement, or the error as why it is missing.
fn measured(result: io::Result<Measured>, what: &str) -> Measured {
    result.unwrap_or_else(|e| Measured::Missing(format!("{what}: {e}")))
}

/// Runs `driver` and `partner` on two new threads, pinned to `cpus`
/// (driver's, partner's) if given, and returns the driver's result.
///
/// 1. Both threads pin themselves; the partner reports how that went.
/// 2. If either failed, the partner is told to return without running,
///    and the pinning error is returned.
/// 3. Otherwise the partner gets the driver's [`Thread`] (to unpark it)
///    and the driver the partner's; both run.
/// 4. The driver must make the partner return before it does itself (a
///    stop value, a closed connection), or the scope never ends.
fn on_two_threads<T: Send>(
    cpus: Option<(usize, usize)>,
    driver: impl FnOnce(&Thread) -> io::Result<T> + Send,
    partner: impl FnOnce(&Thread) -> io::Result<()> + Send,
) -> io::Result<T> {
    thread::scope(|s| {
        let (pinned_tx, pinned_rx) = mpsc::channel::<io::Result<()>>();
        let (go_tx, go_rx) = mpsc::channel::<Option<Thread>>();
        let partner = s.spawn(move || {
            let pinned = cpus.map_or(Ok(()), |(_, cpu)| cpus::pin_current_thread(cpu));
            let ok = pinned.is_ok();
            let _ = pinned_tx.send(pinned);
            match go_rx.recv() {
                Ok(Some(driver)) if ok => partner(&driver),
                _ => Ok(()),
            }
        });
        let partner_thread = partner.thread().clone();
        let driver = s.spawn(move || {
            let pinned = cpus.map_or(Ok(()), |(cpu, _)| cpus::pin_current_thread(cpu));
            let partner_pinned = pinned_rx
                .recv()
                .unwrap_or_else(|_| Err(io::Error::other("the partner thread ended early")));
            if let Err(e) = pinned.and(partner_pinned) {
                let _ = go_tx.send(None);
                return Err(e);
            }
            let _ = go_tx.send(Some(thread::current()));
            driver(&partner_thread)
        });
        let result = driver.join().expect("the driver thread panicked");
        let partner_result = partner.join().expect("the partner thread panicked");
        let value = result?;
        partner_result?;
        Ok(value)
    })
}

/// `64 KiB`, `16 MiB`, or bytes when neither divides.
fn size_name(size: usize) -> String {
    match size {
        s if s >= MIB && s % MIB == 0 => format!("{} MiB", s / MIB),
        s if s >= KIB && s % KIB == 0 => format!("{} KiB", s / KIB),
        s => format!("{s} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_named_in_binary_units() {
        assert_eq!(size_name(64 * KIB), "64 KiB");
        assert_eq!(size_name(16 * MIB), "16 MiB");
        assert_eq!(size_name(1000), "1000 B");
    }

    #[test]
    fn repeat_calibrates_to_the_repetition_time() {
        let options = Options {
            repetitions: 3,
            per_repetition: Duration::from_millis(10),
            copy_sizes: Vec::new(),
        };
        // A fake clock: every iteration takes 1 µs.
        let timed = repeat(&options, |n| Ok(Duration::from_micros(n))).unwrap();
        assert_eq!(timed.iterations, 10_000);
        assert_eq!(timed.elapsed.len(), 3);
        match timed.nanoseconds(2.0) {
            Measured::Figures(f) => assert_eq!((f.median, f.min, f.max), (500.0, 500.0, 500.0)),
            Measured::Missing(why) => panic!("{why}"),
        }
    }
}
