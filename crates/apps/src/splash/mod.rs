//! SPLASH-2-style programs on threadwire's distributed shared memory, as
//! the Strings DSM ran them (its Table 2 of problem sizes), written
//! against [`parmacs`], a PARMACS-like API over `threadwire-dsm`.
//!
//! | program | seed's size | `--small` | module |
//! |---|---|---|---|
//! | SOR | 2002×1002 grid, 100 iterations | 130×66, 10 | [`sor`] |
//! | MATMULT | 1024², 16 blocks | 128² | [`matmult`] |
//! | LU-c | 2048², block 128 | 128², block 16 | [`lu`] |
//! | LU-n | 1024², block 32 | 128², block 16 | [`lu`] |
//! | RADIX | 1M keys, radix 1024 | 64K keys | [`radix`] |
//! | FFT | 2^20 complex points | 2^12 points | [`fft`] |
//! | OCEAN-c | 258×258 grid, 3 time steps | 66×66, 2 | [`ocean`] |
//! | MRI | 14 frequency points, 256² phantom | 6, 32² | [`mri`] |
//! | WATER-n2 | 4096 molecules, 3 steps | 64, 2 | [`water::n2`] |
//! | WATER-sp | 1000 molecules, 3 steps | 343, 2 | [`water::sp`] |
//!
//! Every program runs as SPLASH-2's do:
//!
//! 1. Thread 0 of every node sets up the environment and allocates the
//!    shared arrays ([`parmacs::Env::g_malloc`]), then creates the node's
//!    processes (P = nodes × threads in all) and waits for their end.
//! 2. Each process initializes its part of the data; a barrier.
//! 3. Process 0 reads the clock; all compute, with barriers between
//!    phases; a barrier, and process 0 reads the clock again: the time
//!    excludes initialization, as SPLASH's does.
//! 4. Process 0 checks the result — against the same computation run
//!    sequentially in its process where that is cheap, else against an
//!    invariant (a product with a random vector, sortedness and checksums)
//!    — while the others wait at a barrier, since it may fetch any of
//!    their data.
//! 5. Every node's first process publishes the node's DSM counters over
//!    step 3 (read at its two barriers) in a shared array; after a barrier
//!    node 0 reads them all for the report, with the seed's Table 3 of
//!    them ([`Report::utilization`]).

pub mod fft;
pub mod lu;
pub mod matmult;
pub mod mri;
pub mod ocean;
pub mod parmacs;
pub mod radix;
pub mod sor;
pub mod water;

use parmacs::{Env, ParmacsError};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use threadwire::Endpoint;
use threadwire_dsm::{DsmError, Kind, Region, Stats};

/// The programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// Red-black successive over-relaxation ([`sor`]).
    Sor,
    /// Blocked matrix multiply ([`matmult`]).
    Matmult,
    /// Blocked LU with contiguous blocks ([`lu`]).
    LuContiguous,
    /// Blocked LU of one row-major matrix ([`lu`]).
    LuNoncontiguous,
    /// Radix sort of integer keys ([`radix`]).
    Radix,
    /// Six-step 1-D FFT ([`fft`]).
    Fft,
    /// Ocean currents with contiguous partitions and a multigrid solver
    /// ([`ocean`]).
    OceanContiguous,
    /// Deblurring of an MR image by frequency-segmented conjugate phase
    /// ([`mri`]).
    Mri,
    /// Water molecules, every pair ([`water::n2`]).
    WaterNsquared,
    /// Water molecules in a grid of cells ([`water::sp`]).
    WaterSpatial,
}

impl Program {
    /// Every program, in the order of the module table.
    pub const ALL: [Program; 10] = [
        Program::Sor,
        Program::Matmult,
        Program::LuContiguous,
        Program::LuNoncontiguous,
        Program::Radix,
        Program::Fft,
        Program::OceanContiguous,
        Program::Mri,
        Program::WaterNsquared,
        Program::WaterSpatial,
    ];

    /// Its name on the command line: `sor`, `matmult`, `lu-c`, `lu-n`,
    /// `radix`, `fft`, `ocean-c`, `mri`, `water-n2`, `water-sp`.
    pub fn name(self) -> &'static str {
        match self {
            Program::Sor => "sor",
            Program::Matmult => "matmult",
            Program::LuContiguous => "lu-c",
            Program::LuNoncontiguous => "lu-n",
            Program::Radix => "radix",
            Program::Fft => "fft",
            Program::OceanContiguous => "ocean-c",
            Program::Mri => "mri",
            Program::WaterNsquared => "water-n2",
            Program::WaterSpatial => "water-sp",
        }
    }

    /// Its name in the seed: `SOR`, `MATMULT`, `LU-c`, `LU-n`, `RADIX`,
    /// `FFT`, `OCEAN-c`, `MRI`, `WATER-n2`, `WATER-sp`.
    pub fn title(self) -> &'static str {
        match self {
            Program::Sor => "SOR",
            Program::Matmult => "MATMULT",
            Program::LuContiguous => "LU-c",
            Program::LuNoncontiguous => "LU-n",
            Program::Radix => "RADIX",
            Program::Fft => "FFT",
            Program::OceanContiguous => "OCEAN-c",
            Program::Mri => "MRI",
            Program::WaterNsquared => "WATER-n2",
            Program::WaterSpatial => "WATER-sp",
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a program runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Which.
    pub program: Program,
    /// Processes per node.
    pub threads: usize,
    /// The `--small` size (module table) instead of the seed's.
    pub small: bool,
    /// The seed's size scaled up: [`SCALABLE`] programs' order or
    /// molecules times this (1: the seed's own); not with `small`.
    pub scale: usize,
}

/// The programs `scale` applies to, and what it multiplies: the order of
/// MATMULT's and the LUs' matrices (computation grows as its cube, the
/// data as its square), the molecules of the WATERs.
pub const SCALABLE: [Program; 5] = [
    Program::Matmult,
    Program::LuContiguous,
    Program::LuNoncontiguous,
    Program::WaterNsquared,
    Program::WaterSpatial,
];

/// The most processes per node.
pub const MAX_THREADS: usize = 64;

impl Config {
    /// Whether it can run on `nodes` nodes: 1 to [`MAX_THREADS`]
    /// processes per node, and no more processes than the program has
    /// rows, blocks or keys to share out.
    pub fn check(&self, nodes: u32) -> Result<(), Error> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(Error::Threads(self.threads));
        }
        if self.scale == 0 || (self.scale > 1 && (self.small || !SCALABLE.contains(&self.program)))
        {
            return Err(Error::Scale {
                program: self.program,
                scale: self.scale,
            });
        }
        let (small, scale) = (self.small, self.scale);
        let processes = nodes as usize * self.threads;
        let most = match self.program {
            Program::Sor => sor::Size::of(self.small).rows - 2,
            Program::Matmult => matmult::BLOCKS,
            Program::LuContiguous => lu::Size::of(lu::Layout::Contiguous, small, scale)
                .blocks()
                .pow(2),
            Program::LuNoncontiguous => lu::Size::of(lu::Layout::RowMajor, small, scale)
                .blocks()
                .pow(2),
            Program::Radix => radix::Size::of(self.small).keys,
            Program::Fft => fft::Size::of(self.small).side(),
            // Every process keeps a point per side on the coarsest level.
            Program::OceanContiguous => ocean::Size::of(self.small).n,
            Program::Mri => mri::Size::of(self.small).most_processes(),
            Program::WaterNsquared => water::n2::size(small, scale).molecules,
            Program::WaterSpatial => water::sp::Grid::of(&water::sp::size(small, scale)).cells(),
        };
        if processes > most {
            return Err(Error::TooManyProcesses {
                program: self.program,
                processes,
                most,
            });
        }
        Ok(())
    }

    /// The shared space the run maps: [`parmacs::SPACE`] up to four times
    /// the seed's size (its largest arrays grow as the square of the
    /// scale), and as many times more as the square of the scale beyond.
    pub fn space(&self) -> usize {
        parmacs::SPACE * self.scale.div_ceil(4).pow(2)
    }
}

/// Why a program failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Threads per node out of range.
    #[error("{0} threads per node: from 1 to {MAX_THREADS}")]
    Threads(usize),
    /// A scale the program does not take.
    #[error("{program} does not scale by {scale}: --scale is 1 or more, for matmult, lu-c, lu-n, water-n2 and water-sp at the seed's size")]
    Scale {
        /// Which.
        program: Program,
        /// The scale asked for.
        scale: usize,
    },
    /// More processes than the program has work to share out.
    #[error("{program} shares its work among at most {most} processes, not {processes}")]
    TooManyProcesses {
        /// Which.
        program: Program,
        /// Nodes × threads asked for.
        processes: usize,
        /// Its most.
        most: usize,
    },
    /// The node did not start.
    #[error("starting the node")]
    Init(#[from] threadwire::InitError),
    /// The shared memory or a process failed.
    #[error(transparent)]
    Parmacs(#[from] ParmacsError),
    /// Process 0 reported nothing (it failed without an error).
    #[error("process 0 measured nothing")]
    Unmeasured,
}

impl From<DsmError> for Error {
    fn from(e: DsmError) -> Error {
        Error::Parmacs(e.into())
    }
}

/// What process 0 measured and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// From the barrier after initialization to the barrier after the
    /// computation.
    pub elapsed: Duration,
    /// Whether the result is right.
    pub verified: bool,
    /// What it was checked against.
    pub against: &'static str,
}

/// A program's run, as node 0 reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Which.
    pub program: Program,
    /// Its problem size, in words.
    pub size: String,
    /// Whether it ran with plain threads and no DSM ([`run_plain`]).
    pub plain: bool,
    /// Nodes of the job.
    pub nodes: usize,
    /// Processes per node.
    pub threads: usize,
    /// Time and verification.
    pub measured: Measured,
    /// Each node's DSM counters over the computation (from the barrier
    /// after initialization to the one after computing), by node.
    pub stats: Vec<Stats>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.measured;
        writeln!(
            f,
            "splash {}: {} on {} nodes x {} threads ({} processes){}",
            self.program.title(),
            self.size,
            self.nodes,
            self.threads,
            self.nodes * self.threads,
            if self.plain {
                ", plain threads sharing memory, no DSM"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "time: {:.6} s (initialization excluded)",
            m.elapsed.as_secs_f64()
        )?;
        writeln!(
            f,
            "verified: {} (against {})",
            if m.verified { "yes" } else { "NO" },
            m.against
        )?;
        if self.plain {
            return Ok(());
        }
        write!(f, "{:>4}", "node")?;
        for heading in COUNTERS {
            write!(f, " {heading:>13}")?;
        }
        writeln!(f)?;
        for (node, s) in self.stats.iter().enumerate() {
            write!(f, "{node:>4}")?;
            for c in counters(s) {
                write!(f, " {c:>13}")?;
            }
            writeln!(f)?;
        }
        let u = self.utilization();
        writeln!(
            f,
            "per node (the seed's Table 3): {:.0} B a message, {:.2} Mbit/s, {:.3} ms a request",
            u.mean_message, u.mbps, u.latency_ms
        )
    }
}

/// A program's side of steps 2–4, its arrays allocated in step 1.
trait Kernel: Send + Sync + 'static {
    /// The problem size, in words.
    fn size(&self) -> String;
    /// Step 2: process `pid` fills its part of the data.
    fn initialize(&self, env: &Env, pid: usize);
    /// Step 3: process `pid`'s computation, with barriers between its
    /// phases but none after the last (the runner's).
    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError>;
    /// Step 4, in process 0 while the others wait: whether the result is
    /// right, and what it was checked against.
    fn check(&self) -> (bool, &'static str);
}

/// Steps 2–4 in process `pid`: what process 0 measured, and in a node's
/// first process the node's counters over the computation (step 5's).
fn process(
    kernel: &dyn Kernel,
    env: &Env,
    pid: usize,
) -> Result<(Option<Measured>, [u64; STATS_FIELDS]), DsmError> {
    let first = pid.is_multiple_of(env.threads());
    kernel.initialize(env, pid);
    env.barrier()?;
    let before = first.then(|| publish(&env.stats()));
    let started = env.clock();
    kernel.compute(env, pid)?;
    env.barrier()?;
    let elapsed = Duration::from_micros(env.clock() - started);
    let counted = match before {
        Some(before) => {
            let after = publish(&env.stats());
            std::array::from_fn(|k| after[k].saturating_sub(before[k]))
        }
        None => [0; STATS_FIELDS],
    };
    let measured = (pid == 0).then(|| {
        let (verified, against) = kernel.check();
        Measured {
            elapsed,
            verified,
            against,
        }
    });
    // Process 0 may fetch anyone's data until here.
    env.barrier()?;
    Ok((measured, counted))
}

/// A node of a program's job launched by `threadwire apps splash`: joins
/// the job, runs [`run`] and returns the report on node 0.
pub fn node(cfg: Config) -> Result<Option<Report>, Error> {
    let ep = threadwire::init()?;
    run(&ep, cfg)
}

/// The counters of [`Stats`] in the per-node table, with their columns'
/// headings.
const COUNTERS: [&str; 7] = [
    "read faults",
    "write faults",
    "fetches",
    "fetch bytes",
    "diffs",
    "diff bytes",
    "invalidations",
];

fn counters(s: &Stats) -> [u64; 7] {
    [
        s.read_faults,
        s.write_faults,
        s.fetches,
        s.fetch_bytes,
        s.diffs,
        s.diff_bytes,
        s.invalidations,
    ]
}

/// Words a node publishes in step 5: [`COUNTERS`], then five per kind of
/// message ([`Kind::ALL`]).
const STATS_FIELDS: usize = COUNTERS.len() + 5 * Kind::ALL.len();

/// `s` as the words published in step 5.
fn publish(s: &Stats) -> [u64; STATS_FIELDS] {
    let mut words = [0; STATS_FIELDS];
    words[..COUNTERS.len()].copy_from_slice(&counters(s));
    for (k, t) in s.traffic.iter().enumerate() {
        let at = COUNTERS.len() + 5 * k;
        words[at..at + 5].copy_from_slice(&[
            t.requests,
            t.request_bytes,
            t.replies,
            t.reply_bytes,
            t.round_trip.as_nanos() as u64,
        ]);
    }
    words
}

/// The [`Stats`] of words published in step 5.
fn stats(c: [u64; STATS_FIELDS]) -> Stats {
    let mut s = Stats {
        read_faults: c[0],
        write_faults: c[1],
        fetches: c[2],
        fetch_bytes: c[3],
        diffs: c[4],
        diff_bytes: c[5],
        invalidations: c[6],
        ..Stats::default()
    };
    for (k, t) in s.traffic.iter_mut().enumerate() {
        let w = &c[COUNTERS.len() + 5 * k..];
        (t.requests, t.request_bytes, t.replies, t.reply_bytes) = (w[0], w[1], w[2], w[3]);
        t.round_trip = Duration::from_nanos(w[4]);
    }
    s
}

/// The seed's Table 3 of a run: communication per node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Utilization {
    /// Bytes per message, requests and replies of every kind.
    pub mean_message: f64,
    /// A node's bytes sent and received over the computation, in Mbit/s.
    pub mbps: f64,
    /// The mean round trip of a request, waiting and remote processing
    /// included, in ms.
    pub latency_ms: f64,
}

impl Report {
    /// The seed's Table 3 of this run: every node's requests (counted
    /// where they were made) and their replies, averaged per node.
    pub fn utilization(&self) -> Utilization {
        let kinds = self.stats.iter().flat_map(|s| s.traffic.iter());
        let (mut messages, mut bytes, mut replies, mut waited) = (0, 0, 0, Duration::ZERO);
        for t in kinds {
            messages += t.requests + t.replies;
            bytes += t.request_bytes + t.reply_bytes;
            replies += t.replies;
            waited += t.round_trip;
        }
        let seconds = self.measured.elapsed.as_secs_f64().max(1e-9);
        Utilization {
            mean_message: bytes as f64 / messages.max(1) as f64,
            mbps: bytes as f64 * 8.0 / 1e6 / self.nodes.max(1) as f64 / seconds,
            latency_ms: waited.as_secs_f64() * 1e3 / replies.max(1) as f64,
        }
    }
}

/// Runs `cfg` on this node; thread 0's endpoint must be passed. Returns
/// the report on node 0 and `None` elsewhere.
pub fn run(ep: &Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    cfg.check(ep.node().nodes())?;
    execute(&Env::with_space(ep, cfg.threads, cfg.space())?, cfg)
}

/// Runs `cfg` in this process with plain threads sharing ordinary memory
/// and no DSM ([`Env::plain`]): the baseline of the DSM's runs on one
/// node.
pub fn run_plain(cfg: Config) -> Result<Report, Error> {
    cfg.check(1)?;
    execute(&Env::plain(cfg.threads), cfg)?.ok_or(Error::Unmeasured)
}

/// Steps 1–5 in `env`.
fn execute(env: &Env, cfg: Config) -> Result<Option<Report>, Error> {
    let nodes = env.nodes();
    let published: Region<u64> = env.g_malloc(nodes * STATS_FIELDS)?;
    let kernel: Arc<dyn Kernel> = match cfg.program {
        Program::Sor => Arc::new(sor::Sor::new(env, cfg.small)?),
        Program::Matmult => Arc::new(matmult::Matmult::new(env, cfg.small, cfg.scale)?),
        Program::LuContiguous => Arc::new(lu::Lu::new(
            env,
            lu::Layout::Contiguous,
            cfg.small,
            cfg.scale,
        )?),
        Program::LuNoncontiguous => Arc::new(lu::Lu::new(
            env,
            lu::Layout::RowMajor,
            cfg.small,
            cfg.scale,
        )?),
        Program::Radix => Arc::new(radix::Radix::new(env, cfg.small)?),
        Program::Fft => Arc::new(fft::Fft::new(env, cfg.small)?),
        Program::OceanContiguous => Arc::new(ocean::OceanContiguous::new(env, cfg.small)?),
        Program::Mri => Arc::new(mri::Mri::new(env, cfg.small)?),
        Program::WaterNsquared => Arc::new(water::n2::WaterN2::new(env, cfg.small, cfg.scale)?),
        Program::WaterSpatial => Arc::new(water::sp::WaterSp::new(env, cfg.small, cfg.scale)?),
    };
    let outcome: Arc<Mutex<(Option<Measured>, Vec<Stats>)>> = Arc::default();
    {
        let (env_p, kernel, outcome) = (env.clone(), kernel.clone(), outcome.clone());
        env.create(cfg.threads, move |pid| {
            let env = &env_p;
            let (measured, counted) = process(kernel.as_ref(), env, pid)?;
            if pid.is_multiple_of(env.threads()) {
                for (k, c) in counted.into_iter().enumerate() {
                    published.set(env.node() * STATS_FIELDS + k, c);
                }
            }
            env.barrier()?;
            if pid == 0 {
                let stats = (0..env.nodes())
                    .map(|n| stats(std::array::from_fn(|k| published.get(n * STATS_FIELDS + k))))
                    .collect();
                *outcome.lock().unwrap_or_else(|p| p.into_inner()) = (measured, stats);
            }
            // Node 0 has read every node's counters before any node ends.
            env.barrier()
        })?;
    }
    env.wait_for_end()?;
    if env.node() != 0 {
        return Ok(None);
    }
    let (measured, stats) = std::mem::take(&mut *outcome.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(Some(Report {
        program: cfg.program,
        size: kernel.size(),
        plain: env.is_plain(),
        nodes,
        threads: cfg.threads,
        measured: measured.ok_or(Error::Unmeasured)?,
        stats,
    }))
}

/// `part` of `len` items shared out among `parts` as evenly as possible:
/// its range.
fn share(len: usize, parts: usize, part: usize) -> std::ops::Range<usize> {
    let (each, extra) = (len / parts, len % parts);
    let start = part * each + part.min(extra);
    start..start + each + usize::from(part < extra)
}

/// A reproducible pseudo-random 64-bit value of `i` (splitmix64), so that
/// every process generates its part of the data, and process 0 the whole
/// of it again, alike.
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed
        .wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Elements `range` of `region`, to read.
///
/// # Safety
///
/// No thread of any node writes them until the slice is dropped, unless
/// a barrier orders the two.
unsafe fn part<T: bytemuck::Pod>(region: &Region<T>, range: std::ops::Range<usize>) -> &[T] {
    assert!(range.start <= range.end && range.end <= region.len());
    // SAFETY: in bounds; the caller keeps writers away.
    unsafe { std::slice::from_raw_parts(region.as_ptr().add(range.start), range.len()) }
}

/// Elements `range` of `region`, to write.
///
/// # Safety
///
/// No other thread of any node reads or writes them until the slice is
/// dropped, unless a barrier orders them.
#[allow(clippy::mut_from_ref)]
unsafe fn part_mut<T: bytemuck::Pod>(
    region: &Region<T>,
    range: std::ops::Range<usize>,
) -> &mut [T] {
    assert!(range.start <= range.end && range.end <= region.len());
    // SAFETY: in bounds; the caller keeps other readers and writers away.
    unsafe { std::slice::from_raw_parts_mut(region.as_ptr().add(range.start), range.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_space_holds_matmults_matrices_at_every_scale() {
        for scale in [1, 2, 4, 5, 8, 12] {
            let cfg = Config {
                program: Program::Matmult,
                threads: 1,
                small: false,
                scale,
            };
            let n = matmult::order(false, scale);
            assert!(cfg.space() >= 3 * n * n * 8, "scale {scale}");
            assert_eq!(cfg.space() % 8192, 0);
        }
    }

    #[test]
    fn scale_is_taken_by_the_scalable_programs_at_the_seeds_size_only() {
        let cfg = |program, small, scale| Config {
            program,
            threads: 1,
            small,
            scale,
        };
        for program in SCALABLE {
            assert!(cfg(program, false, 2).check(4).is_ok(), "{program}");
            assert!(cfg(program, true, 2).check(1).is_err(), "{program}");
        }
        for program in Program::ALL {
            assert!(cfg(program, false, 0).check(1).is_err(), "{program}");
            assert!(cfg(program, false, 1).check(1).is_ok(), "{program}");
        }
        assert!(matches!(
            cfg(Program::Sor, false, 2).check(1),
            Err(Error::Scale { scale: 2, .. })
        ));
        // Scaled, LU-c has four times the blocks to share out.
        let lu = cfg(Program::LuContiguous, false, 2);
        assert_eq!(lu::Size::of(lu::Layout::Contiguous, false, 2).blocks(), 32);
        assert!(lu.check(1).is_ok());
    }

    #[test]
    fn shares_cover_the_range_in_order() {
        for (len, parts) in [(10, 3), (3, 3), (2000, 8), (5, 1)] {
            let mut next = 0;
            for p in 0..parts {
                let r = share(len, parts, p);
                assert_eq!(r.start, next);
                assert!(r.len() >= len / parts && r.len() <= len / parts + 1);
                next = r.end;
            }
            assert_eq!(next, len);
        }
    }
}
