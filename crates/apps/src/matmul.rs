//! The host–node matrix multiply `C = A × B`.
//!
//! Node 0 (the host) sends B and blocks of rows of A to worker threads on
//! the other nodes (on node 0 itself in a one-node job); each worker thread
//! computes its block of C and sends it back; the host gathers C and
//! verifies it. Two rounds: B = identity (C must equal A exactly), then a
//! random B checked against a sequential product on the host.

use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};
use threadwire::{
    Address, Encoding, Endpoint, Packer, RecvError, SendError, UnpackError, ANY_SOURCE,
};

const TAG_B: u32 = 1;
const TAG_A: u32 = 2;
const TAG_C: u32 = 3;

/// Problem size and layout.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Matrices are `size × size`.
    pub size: usize,
    /// Worker threads per worker node.
    pub threads: u32,
    /// Seed of the random matrices.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            size: 512,
            threads: 2,
            seed: 1998,
        }
    }
}

/// What the host measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Matrix size.
    pub size: usize,
    /// Worker threads in all.
    pub workers: usize,
    /// Time of the random round: distribute, compute, gather.
    pub elapsed: Duration,
    /// Largest difference from the sequential product.
    pub max_error: f64,
    /// Nodes of the job.
    pub nodes: u32,
}

impl Report {
    /// Floating-point operations per second of the random round.
    pub fn gflops(&self) -> f64 {
        2.0 * (self.size as f64).powi(3) / self.elapsed.as_secs_f64() / 1e9
    }
}

/// The host's line: `matmul 512x512: 6 worker threads on 4 nodes;
/// verified (A x I = A, max error …); … ms, … GFLOP/s`.
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "matmul {n}x{n}: {w} worker threads on {k} nodes; verified (A x I = A, max error {e:.1e}); {ms:.1} ms, {g:.2} GFLOP/s",
            n = self.size,
            w = self.workers,
            k = self.nodes,
            e = self.max_error,
            ms = self.elapsed.as_secs_f64() * 1e3,
            g = self.gflops()
        )
    }
}

/// Why the multiply failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A send failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A receive failed.
    #[error(transparent)]
    Recv(#[from] RecvError),
    /// A message did not have the expected layout.
    #[error("malformed message: {0}")]
    Unpack(#[from] UnpackError),
    /// The result is wrong.
    #[error("verification failed: {0}")]
    Wrong(String),
    /// The node did not start.
    #[error("starting the node")]
    Init(#[from] threadwire::InitError),
}

/// A node of a multiply job launched by `threadwire apps matmul`: joins
/// the job, runs [`run`] on `cfg` and returns the host's report on node 0
/// (for the caller to show) and `None` elsewhere.
pub fn node(cfg: Config) -> Result<Option<Report>, Error> {
    let ep = threadwire::init()?;
    run(&ep, cfg)
}

/// Runs the multiply on this node; thread 0's endpoint must be passed.
/// Returns the host's report on node 0 and `None` elsewhere.
pub fn run(ep: &Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    let node = ep.node().clone();
    let worker_nodes: Vec<u32> = if node.nodes() == 1 {
        vec![0]
    } else {
        (1..node.nodes()).collect()
    };
    let is_worker_node = worker_nodes.contains(&node.id());
    let handles: Vec<_> = if is_worker_node {
        (0..cfg.threads)
            .map(|_| node.spawn(|ep| worker(&ep)))
            .collect()
    } else {
        Vec::new()
    };
    let report = if node.id() == 0 {
        // Worker threads are t1..=threads on every worker node: spawned first.
        let workers: Vec<Address> = worker_nodes
            .iter()
            .flat_map(|&n| (1..=cfg.threads).map(move |t| Address::new(n, t)))
            .collect();
        Some(host(ep, &workers, cfg)?)
    } else {
        None
    };
    for h in handles {
        h.join().expect("worker thread panicked")?;
    }
    Ok(report)
}

fn worker(ep: &Endpoint) -> Result<(), Error> {
    let host = Address::new(0, 0);
    loop {
        let mut b_msg = ep.recv(host, TAG_B)?.unpack()?;
        let n = b_msg.unpack::<u32>()? as usize;
        if n == 0 {
            return Ok(()); // no more rounds
        }
        let b = b_msg.unpack_vec::<f64>()?;
        let mut a_msg = ep.recv(host, TAG_A)?.unpack()?;
        let first = a_msg.unpack::<u32>()?;
        let a = a_msg.unpack_vec::<f64>()?;
        let c = multiply(&a, &b, n);
        let mut p = Packer::new(Encoding::ReceiverMakesRight);
        p.pack(first).pack_vec(c);
        ep.send(host, TAG_C, p)?;
    }
}

/// Row-major `rows × n` times `n × n`, i-k-j order for unit-stride inner loops.
fn multiply(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let rows = a.len() / n.max(1);
    let mut c = vec![0.0; rows * n];
    for i in 0..rows {
        let ci = &mut c[i * n..(i + 1) * n];
        for k in 0..n {
            let aik = a[i * n + k];
            let bk = &b[k * n..(k + 1) * n];
            for (cij, bkj) in ci.iter_mut().zip(bk) {
                *cij += aik * bkj;
            }
        }
    }
    c
}

fn round(
    ep: &Endpoint,
    workers: &[Address],
    a: &[f64],
    b: &[f64],
    n: usize,
) -> Result<Vec<f64>, Error> {
    let per = n.div_ceil(workers.len());
    let mut expected = 0;
    for (w, &to) in workers.iter().enumerate() {
        let first = (w * per).min(n);
        let last = ((w + 1) * per).min(n);
        let mut p = Packer::new(Encoding::ReceiverMakesRight);
        p.pack(n as u32).pack_slice(b);
        ep.send(to, TAG_B, p)?;
        let mut p = Packer::new(Encoding::ReceiverMakesRight);
        p.pack(first as u32).pack_slice(&a[first * n..last * n]);
        ep.send(to, TAG_A, p)?;
        expected += 1;
    }
    let mut c = vec![0.0; n * n];
    for _ in 0..expected {
        let mut m = ep.recv(ANY_SOURCE, TAG_C)?.unpack()?;
        let first = m.unpack::<u32>()? as usize;
        let block = m.unpack_vec::<f64>()?;
        if first * n + block.len() > c.len() {
            return Err(Error::Wrong(format!("block at row {first} overruns C")));
        }
        c[first * n..first * n + block.len()].copy_from_slice(&block);
    }
    Ok(c)
}

fn host(ep: &Endpoint, workers: &[Address], cfg: Config) -> Result<Report, Error> {
    let n = cfg.size;
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let a: Vec<f64> = (0..n * n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let identity: Vec<f64> = (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect();
    let c = round(ep, workers, &a, &identity, n)?;
    if c != a {
        return Err(Error::Wrong("A × I differs from A".into()));
    }
    let b: Vec<f64> = (0..n * n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let start = Instant::now();
    let c = round(ep, workers, &a, &b, n)?;
    let elapsed = start.elapsed();
    let reference = multiply(&a, &b, n);
    let max_error = c
        .iter()
        .zip(&reference)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    if max_error > 1e-9 * n as f64 {
        return Err(Error::Wrong(format!("largest error {max_error:e}")));
    }
    for &w in workers {
        let mut p = Packer::new(Encoding::ReceiverMakesRight);
        p.pack(0u32);
        ep.send(w, TAG_B, p)?;
    }
    Ok(Report {
        size: n,
        workers: workers.len(),
        elapsed,
        max_error,
        nodes: ep.node().nodes(),
    })
}
