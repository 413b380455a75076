//! The host–node DIF FFT of NCS (1995, §5.3 and Table 3), verified against
//! rustfft and timed with one thread per node against several.
//!
//! A set of M = N·T·2^n points (n ≥ 1) is transformed by P = N·T worker
//! threads: T on each of the job's N nodes (N and T powers of two). The
//! host is thread 0 of node 0; worker w is thread `1 + w mod T` of node
//! `w div T`, so the workers of a node are neighbours. M/2 butterfly rows
//! are shared out, R = M/2P to a worker.
//!
//! 1. **Start.** For each configuration (one thread per node, then T), the
//!    host tells every worker its index and P; each computes the twiddle
//!    factors of its rows ([`dif::Twiddles`], untimed, as a library
//!    plans) and answers ready. The clock starts.
//! 2. **Distribute.** For every set, worker w receives its rows of the
//!    first computation step: A = x[wR..wR+R] and B = x[M/2+wR..M/2+wR+R].
//! 3. **Compute and exchange**, for steps s = 0 … log2 P − 1: every row
//!    becomes X = A + B, Y = (A − B)·W^k (W = e^(−2πi/M),
//!    k = (g mod M·2^−(s+1))·2^s for global row g). Then worker w trades
//!    with the worker at distance d = P·2^−(s+1) (the seed's
//!    2N·2^−(step+1)): if w mod 2d < d it sends Y and receives the
//!    partner's X as its new B, else it sends X and receives the partner's
//!    Y as its new A. Sends are started before the receive ([`Endpoint::isend`]),
//!    so neither side of a pair waits for the other to receive. With T = 2
//!    the last exchange (d = 1) is between the two threads of one node: a
//!    buffer moved, not sent. These are the seed's log2 2N exchange steps.
//! 4. **Local steps.** After the exchanges a worker holds the contiguous
//!    block x[2wR..2wR+2R] (A then B): the remaining log2 2R computation
//!    steps are a local DIF transform of it ([`dif::local_dif`]), for
//!    log2 M computation steps in all.
//! 5. **Collect.** Each worker sends its block to the host, which places
//!    it at 2wR; the whole set is then in bit-reversed order, and the host
//!    reorders it (the seed's "rearrange the index"). The clock stops at
//!    the last set's last block.
//! 6. **Verify and account.** The host compares every set with rustfft's
//!    forward transform; each worker sends its time in butterflies and the
//!    rest of its round (communication and the waits for it).
//!
//! The host runs one untimed round per configuration (first touch of the
//! buffers), then `rounds` timed rounds of each, alternating, and reports
//! medians. Messages are native-endian ([`Encoding::InPlace`]): the hosts
//! of a job must share a byte order, or the unpack fails with an error.
//!
//! Reading the figures: compute and communication are per worker thread,
//! so with twice the threads each computes half the rows — in less than
//! half the time once a worker's block fits in cache (2^20 points: 16 MiB
//! for one worker, 1 MiB each for sixteen). Communication includes the
//! waits for the host and for partners still computing, so the two do not
//! add up to the elapsed time when threads overlap. At the seed's 512
//! points the butterflies take microseconds and each message costs more
//! than the rows it carries: there, more threads mean more messages and
//! a longer run, the opposite of the seed's Table 3.

mod dif;
mod report;

pub use dif::{bit_reversed, butterflies, local_dif, Exchange, Layout, Split, Twiddles};
pub use report::{improvement, Measured, Report, Round, SeedRow, NCS_TABLE_3};

use rand::{Rng, SeedableRng};
use rustfft::num_complex::Complex64;
use std::time::{Duration, Instant};
use threadwire::{Address, Encoding, Endpoint, Packer, RecvError, SendError, UnpackError};

const TAG_START: u32 = 1;
const TAG_READY: u32 = 2;
const TAG_INPUT: u32 = 3;
const TAG_EXCHANGE: u32 = 4;
const TAG_RESULT: u32 = 5;
const TAG_TIMES: u32 = 6;

const HOST: Address = Address::new(0, 0);

/// The most points, all sets together: 2^26 (1 GiB of samples).
pub const MAX_TOTAL_POINTS: usize = 1 << 26;
/// The most worker threads per node.
pub const MAX_THREADS: u32 = 64;

/// Problem size and layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Points M of a set: a power of two, at least 2·nodes·threads.
    pub points: usize,
    /// Sets transformed one after another in a round.
    pub sets: usize,
    /// Worker threads per node of the threaded configuration: a power of
    /// two; 1 runs only the one-thread configuration.
    pub threads: u32,
    /// Timed rounds of each configuration.
    pub rounds: usize,
    /// Seed of the random samples.
    pub seed: u64,
}

impl Default for Config {
    /// The seed's size: 512 points × 8 sets, two threads per node.
    fn default() -> Self {
        Config {
            points: 512,
            sets: 8,
            threads: 2,
            rounds: 5,
            seed: 1995,
        }
    }
}

/// Why a configuration cannot run on a number of nodes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The points of a set are not a power of two (at least 2).
    #[error("{0} points: a set's points must be a power of two, at least 2")]
    Points(usize),
    /// The nodes are not a power of two.
    #[error("{0} nodes: the FFT runs on a power of two of nodes (1, 2, 4, 8, ...)")]
    Nodes(u32),
    /// The threads per node are not a power of two up to [`MAX_THREADS`].
    #[error("{0} threads per node: a power of two from 1 to {MAX_THREADS}")]
    Threads(u32),
    /// Fewer than two points for each worker thread.
    #[error("{points} points on {workers} worker threads: each takes at least one butterfly row (two points), so a set needs at least {} points", 2 * workers)]
    TooFewPoints {
        /// Points of a set.
        points: usize,
        /// Worker threads of the job.
        workers: usize,
    },
    /// No sets or no rounds.
    #[error("at least one set and one round")]
    Empty,
    /// More than [`MAX_TOTAL_POINTS`] points in all.
    #[error("{points} points x {sets} sets: at most {MAX_TOTAL_POINTS} points in all")]
    TooLarge {
        /// Points of a set.
        points: usize,
        /// Sets.
        sets: usize,
    },
}

impl Config {
    /// Whether this configuration runs on `nodes` nodes: M = N·T·2^n with
    /// n ≥ 1, N and T powers of two.
    pub fn check(&self, nodes: u32) -> Result<(), ConfigError> {
        if self.points < 2 || !self.points.is_power_of_two() {
            return Err(ConfigError::Points(self.points));
        }
        if !nodes.is_power_of_two() {
            return Err(ConfigError::Nodes(nodes));
        }
        if !self.threads.is_power_of_two() || self.threads > MAX_THREADS {
            return Err(ConfigError::Threads(self.threads));
        }
        if self.sets == 0 || self.rounds == 0 {
            return Err(ConfigError::Empty);
        }
        if self.points.saturating_mul(self.sets) > MAX_TOTAL_POINTS {
            return Err(ConfigError::TooLarge {
                points: self.points,
                sets: self.sets,
            });
        }
        let workers = nodes as usize * self.threads as usize;
        if self.points < 2 * workers {
            return Err(ConfigError::TooFewPoints {
                points: self.points,
                workers,
            });
        }
        Ok(())
    }
}

/// Why the FFT failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot run on this job.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A send failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A receive failed.
    #[error(transparent)]
    Recv(#[from] RecvError),
    /// A message did not have the expected layout.
    #[error("malformed message: {0}")]
    Unpack(#[from] UnpackError),
    /// A message had the layout but not the expected contents.
    #[error("unexpected message: {0}")]
    Protocol(String),
    /// The result is wrong.
    #[error("verification failed: {0}")]
    Wrong(String),
    /// A worker thread panicked.
    #[error("worker thread {0} panicked")]
    Panicked(Address),
    /// The node did not start.
    #[error("starting the node")]
    Init(#[from] threadwire::InitError),
}

/// A node of an FFT job launched by `threadwire apps fft`: joins the job,
/// runs [`run`] on `cfg` and returns the host's report on node 0 (for the
/// caller to show) and `None` elsewhere.
pub fn node(cfg: Config) -> Result<Option<Report>, Error> {
    let ep = threadwire::init()?;
    run(&ep, cfg)
}

/// Runs the FFT on this node; thread 0's endpoint must be passed. Returns
/// the host's report on node 0 and `None` elsewhere.
pub fn run(ep: &Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    let node = ep.node().clone();
    cfg.check(node.nodes())?;
    // Spawned first, so they are t1..=threads on every node.
    let handles: Vec<_> = (0..cfg.threads)
        .map(|_| node.spawn(move |ep| worker(&ep, cfg)))
        .collect();
    let report = match node.id() {
        0 => {
            let report = host(ep, cfg);
            // Every worker waits for a start: stop them even after a failure.
            let stop = (0..node.nodes()).flat_map(|n| (1..=cfg.threads).map(move |t| (n, t)));
            for (n, t) in stop {
                let _ = ep.send(Address::new(n, t), TAG_START, start_message(0, 0));
            }
            Some(report?)
        }
        _ => None,
    };
    for h in handles {
        let address = h.address();
        h.join().map_err(|_| Error::Panicked(address))??;
    }
    Ok(report)
}

fn start_message(workers: usize, worker: usize) -> Packer {
    let mut p = Packer::new(Encoding::InPlace);
    p.pack(workers as u32).pack(worker as u32);
    p
}

/// Worker `w` of a configuration with `threads` per node.
fn worker_address(w: usize, threads: usize) -> Address {
    Address::new((w / threads) as u32, 1 + (w % threads) as u32)
}

fn unpack_split(m: &mut threadwire::Unpacker, len: usize) -> Result<Split, Error> {
    let split = Split {
        re: m.unpack_vec()?,
        im: m.unpack_vec()?,
    };
    if split.re.len() != len || split.im.len() != len {
        return Err(Error::Protocol(format!(
            "{} + {} values where {len} + {len} were expected",
            split.re.len(),
            split.im.len()
        )));
    }
    Ok(split)
}

fn pack_split(p: &mut Packer, s: Split) {
    p.pack_vec(s.re).pack_vec(s.im);
}

/// A worker thread: one configuration after another until told to stop.
fn worker(ep: &Endpoint, cfg: Config) -> Result<(), Error> {
    loop {
        let mut start = ep.recv(HOST, TAG_START)?.unpack()?;
        let workers = start.unpack::<u32>()? as usize;
        let worker = start.unpack::<u32>()? as usize;
        if workers == 0 {
            return Ok(());
        }
        let nodes = ep.node().nodes() as usize;
        // Nodes are a power of two (checked in `run`): so is a fitting P.
        let fits = workers.is_power_of_two() && workers >= nodes;
        if !fits || worker >= workers || cfg.points < 2 * workers {
            return Err(Error::Protocol(format!("worker {worker} of {workers}")));
        }
        let layout = Layout {
            points: cfg.points,
            workers,
            worker,
        };
        let twiddles = Twiddles::new(&layout);
        let threads = workers / nodes;
        ep.send(HOST, TAG_READY, Packer::new(Encoding::InPlace))?;
        let began = Instant::now();
        let mut compute = Duration::ZERO;
        let mut results = Vec::with_capacity(cfg.sets);
        for set in 0..cfg.sets {
            let mut input = ep.recv(HOST, TAG_INPUT)?.unpack()?;
            if input.unpack::<u32>()? as usize != set {
                return Err(Error::Protocol(format!("input out of order at set {set}")));
            }
            let mut a = unpack_split(&mut input, layout.rows())?;
            let mut b = unpack_split(&mut input, layout.rows())?;
            for step in 0..layout.exchanges() {
                let t = Instant::now();
                butterflies(&mut a, &mut b, &twiddles.exchanged[step as usize]);
                compute += t.elapsed();
                let exchange = layout.exchange(step);
                let partner = worker_address(exchange.partner, threads);
                let (give, keep) = match exchange.keeps_sums {
                    true => (b, a),
                    false => (a, b),
                };
                let mut p = Packer::new(Encoding::InPlace);
                pack_split(&mut p, give);
                let sent = ep.isend(partner, TAG_EXCHANGE, p);
                let got = unpack_split(
                    &mut ep.recv(partner, TAG_EXCHANGE)?.unpack()?,
                    layout.rows(),
                )?;
                sent.wait()?;
                (a, b) = match exchange.keeps_sums {
                    true => (keep, got),
                    false => (got, keep),
                };
            }
            let t = Instant::now();
            a.append(&b);
            local_dif(&mut a, &twiddles.local);
            compute += t.elapsed();
            let mut p = Packer::new(Encoding::InPlace);
            p.pack(set as u32);
            pack_split(&mut p, a);
            results.push(ep.isend(HOST, TAG_RESULT, p));
        }
        for sent in results {
            sent.wait()?;
        }
        let mut p = Packer::new(Encoding::InPlace);
        p.pack(compute.as_secs_f64())
            .pack(began.elapsed().as_secs_f64());
        ep.send(HOST, TAG_TIMES, p)?;
    }
}

/// One configuration's round: every set through the workers; their
/// outputs in natural order, and the times.
fn round(
    ep: &Endpoint,
    cfg: Config,
    inputs: &[Split],
    threads: usize,
) -> Result<(Round, Vec<Vec<Complex64>>), Error> {
    let workers = ep.node().nodes() as usize * threads;
    let addresses: Vec<Address> = (0..workers).map(|w| worker_address(w, threads)).collect();
    for (w, &to) in addresses.iter().enumerate() {
        ep.send(to, TAG_START, start_message(workers, w))?;
    }
    for &from in &addresses {
        ep.recv(from, TAG_READY)?;
    }
    let began = Instant::now();
    let m = cfg.points;
    let mut sends = Vec::with_capacity(cfg.sets * workers);
    for (set, x) in inputs.iter().enumerate() {
        for (w, &to) in addresses.iter().enumerate() {
            let layout = Layout {
                points: m,
                workers,
                worker: w,
            };
            let (first, rows) = (layout.first_row(), layout.rows());
            let mut p = Packer::new(Encoding::InPlace);
            p.pack(set as u32);
            pack_split(&mut p, x.range(first, rows));
            pack_split(&mut p, x.range(m / 2 + first, rows));
            sends.push(ep.isend(to, TAG_INPUT, p));
        }
    }
    let block = m / workers;
    let mut outputs = Vec::with_capacity(cfg.sets);
    for set in 0..cfg.sets {
        let mut y = Split::default();
        for &from in &addresses {
            let mut result = ep.recv(from, TAG_RESULT)?.unpack()?;
            if result.unpack::<u32>()? as usize != set {
                return Err(Error::Protocol(format!("{from}'s result out of order")));
            }
            y.append(&unpack_split(&mut result, block)?);
        }
        outputs.push(y);
    }
    let elapsed = began.elapsed();
    for sent in sends {
        sent.wait()?;
    }
    let (mut compute, mut whole) = (0.0, 0.0);
    for &from in &addresses {
        let mut times = ep.recv(from, TAG_TIMES)?.unpack()?;
        compute += times.unpack::<f64>()?;
        whole += times.unpack::<f64>()?;
    }
    // Times from the workers: a nonsensical one counts as zero, not a panic.
    let mean = |secs: f64| Duration::try_from_secs_f64(secs / workers as f64).unwrap_or_default();
    let outputs = outputs
        .iter()
        .map(|y| bit_reversed(&y.to_complex()))
        .collect();
    let round = Round {
        elapsed,
        compute: mean(compute),
        communication: mean(whole - compute),
    };
    Ok((round, outputs))
}

/// The largest difference between `outputs` and `expected`, or an error
/// past rounding (1e-12·M: far below any misplaced butterfly's).
fn verify(outputs: &[Vec<Complex64>], expected: &[Vec<Complex64>]) -> Result<f64, Error> {
    let mut worst = 0.0f64;
    for (set, (y, x)) in outputs.iter().zip(expected).enumerate() {
        let error = y
            .iter()
            .zip(x)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        if error.is_nan() || error > 1e-12 * x.len() as f64 {
            return Err(Error::Wrong(format!(
                "set {set} differs from rustfft by {error:e}"
            )));
        }
        worst = worst.max(error);
    }
    Ok(worst)
}

fn host(ep: &Endpoint, cfg: Config) -> Result<Report, Error> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let sets: Vec<Vec<Complex64>> = (0..cfg.sets)
        .map(|_| {
            (0..cfg.points)
                .map(|_| Complex64::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
                .collect()
        })
        .collect();
    let fft = rustfft::FftPlanner::new().plan_fft_forward(cfg.points);
    let expected: Vec<Vec<Complex64>> = sets
        .iter()
        .map(|x| {
            let mut y = x.clone();
            fft.process(&mut y);
            y
        })
        .collect();
    let inputs: Vec<Split> = sets.iter().map(|x| Split::from_complex(x)).collect();
    let mut configurations: Vec<Measured> = std::iter::once(1)
        .chain((cfg.threads > 1).then_some(cfg.threads))
        .map(|threads| Measured {
            threads,
            rounds: Vec::with_capacity(cfg.rounds),
        })
        .collect();
    let mut max_error = 0.0f64;
    // Round 0 is untimed.
    for timed in (0..=cfg.rounds).map(|round| round > 0) {
        for c in configurations.iter_mut() {
            let (round, outputs) = round(ep, cfg, &inputs, c.threads as usize)?;
            max_error = max_error.max(verify(&outputs, &expected)?);
            if timed {
                c.rounds.push(round);
            }
        }
    }
    Ok(Report {
        points: cfg.points,
        sets: cfg.sets,
        nodes: ep.node().nodes(),
        configurations,
        max_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_size_runs_on_its_node_counts() {
        let cfg = Config::default();
        for nodes in [1, 2, 4, 8] {
            assert_eq!(cfg.check(nodes), Ok(()));
        }
    }

    #[test]
    fn bad_sizes_are_refused_with_their_reason() {
        let cfg = Config::default();
        let with = |points, threads| Config {
            points,
            threads,
            ..cfg
        };
        assert_eq!(with(500, 2).check(4), Err(ConfigError::Points(500)));
        assert_eq!(with(1, 1).check(1), Err(ConfigError::Points(1)));
        assert_eq!(cfg.check(3), Err(ConfigError::Nodes(3)));
        assert_eq!(cfg.check(0), Err(ConfigError::Nodes(0)));
        assert_eq!(with(512, 3).check(4), Err(ConfigError::Threads(3)));
        assert_eq!(with(512, 0).check(4), Err(ConfigError::Threads(0)));
        assert_eq!(
            with(8, 2).check(4),
            Err(ConfigError::TooFewPoints {
                points: 8,
                workers: 8
            })
        );
        assert_eq!(with(16, 2).check(4), Ok(()));
        let huge = Config {
            points: 1 << 26,
            sets: 2,
            ..cfg
        };
        assert!(matches!(huge.check(1), Err(ConfigError::TooLarge { .. })));
        let none = Config { sets: 0, ..cfg };
        assert_eq!(none.check(1), Err(ConfigError::Empty));
        let message = with(8, 2).check(4).unwrap_err().to_string();
        assert!(message.contains("at least 16 points"), "{message}");
    }

    #[test]
    fn workers_of_a_node_are_neighbours() {
        assert_eq!(worker_address(0, 2), Address::new(0, 1));
        assert_eq!(worker_address(1, 2), Address::new(0, 2));
        assert_eq!(worker_address(5, 2), Address::new(2, 2));
        assert_eq!(worker_address(3, 1), Address::new(3, 1));
    }
}
