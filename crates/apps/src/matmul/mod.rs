//! The distributed multithreaded matrix multiply `C = A × B` of the
//! thesis (chapter 4): a layout that shares the work among nodes, and a
//! kernel that multiplies a node's blocks on its threads.
//!
//! Layouts ([`Layout`]):
//!
//! - **host–node** ([`host_node`]): node 0 sends B and blocks of rows of A
//!   to worker threads, which send their rows of C back.
//! - **SUMMA** ([`summa`]): the nodes form an R × C mesh (node i at row
//!   i / C, column i mod C: a mesh of endpoints, not of machines), each
//!   holding its blocks of A, B and C; panels of A are broadcast along
//!   mesh rows and panels of B along mesh columns
//!   ([`threadwire::Group::mesh`]), and every node adds their product to
//!   its block of C. With threads, the next panel's broadcasts overlap the
//!   current panel's multiply; `serial` is the distributed, unthreaded
//!   baseline.
//!
//! Kernels ([`Kernel`]): naive, the thesis' BMM and Strassen–Winograd,
//! and `matrixmultiply`'s GEMM ([`kernel`]).
//!
//! Both layouts verify twice, as the thesis' program checked its result:
//! B = I first (C must equal A exactly, at every node for SUMMA, and at the
//! master), then a random B whose product the master compares with the
//! blas kernel's, within a rounding tolerance ([`tolerance`]). A wrong
//! result is [`Error::Wrong`].
//!
//! The matrices' elements are a function of (seed, row, column)
//! ([`element`]), so each node makes its own blocks, as a SUMMA caller
//! holds its blocks already, and the master makes the whole to verify.
//!
//! A [`Sweep`] runs one job per configuration, serial against threaded,
//! over node counts and sizes, into the seeds' tables ([`Table`]): NCS'
//! Table 1, the thesis' Table 5.4 and its Figure 5.7.

pub mod host_node;
pub mod kernel;
pub mod matrix;
mod report;
pub mod summa;
mod sweep;
mod table;

pub use kernel::Kernel;
pub use matrix::{Matrix, View};
pub use report::Report;
pub use summa::Mesh;
pub use sweep::{Sweep, SweepError, RESULT_ONLY};
pub use table::{
    Cell, Seed, Table, ThesisRow, NCS_TABLE_1, NCS_TABLE_1_SIZE, THESIS_FIGURE_5_7,
    THESIS_TABLE_5_4,
};

use std::time::{Duration, Instant};
use threadwire::{Address, CollError, RecvError, SendError, UnpackError};

/// How the work is shared among the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layout {
    /// Node 0 distributes rows of A to worker threads and gathers C.
    HostNode,
    /// SUMMA on a mesh of nodes.
    #[default]
    Summa,
}

impl Layout {
    /// The layout's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Layout::HostNode => "host-node",
            Layout::Summa => "summa",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The most elements in one matrix: 2^28 (2 GiB of f64).
pub const MAX_ELEMENTS: usize = 1 << 28;
/// The most threads per node.
pub const MAX_THREADS: u32 = 64;

/// Problem size, layout and kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Matrices are `size × size`.
    pub size: usize,
    /// How the work is shared.
    pub layout: Layout,
    /// The mesh of [`Layout::Summa`]; `None`: the squarest one for the
    /// job's nodes ([`Mesh::squarest`]).
    pub mesh: Option<Mesh>,
    /// Who multiplies a node's blocks.
    pub kernel: Kernel,
    /// Threads per node: the kernel's (SUMMA) or the worker threads
    /// (host–node).
    pub threads: u32,
    /// One thread per node and no overlap: the distributed, unthreaded
    /// baseline (threads must then be 1).
    pub serial: bool,
    /// Width of a SUMMA panel (columns of A, rows of B), at most.
    pub panel: usize,
    /// Seed of the random matrices.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            size: 512,
            layout: Layout::Summa,
            mesh: None,
            kernel: Kernel::Blas,
            threads: 2,
            serial: false,
            panel: 256,
            seed: 1998,
        }
    }
}

/// Why a configuration cannot run on a number of nodes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The mesh does not have one node per place.
    #[error("a {mesh} mesh has {} places but the job has {nodes} nodes: -n must be R x C", mesh.rows * mesh.cols)]
    MeshNodes {
        /// The mesh asked for.
        mesh: Mesh,
        /// Nodes of the job.
        nodes: u32,
    },
    /// A mesh given to the host–node layout.
    #[error("--mesh is for the summa layout; host-node has no mesh")]
    MeshWithoutSumma,
    /// Threads out of 1..=[`MAX_THREADS`].
    #[error("{0} threads per node: from 1 to {MAX_THREADS}")]
    Threads(u32),
    /// Serial with more than one thread.
    #[error("--serial runs one thread per node; {0} threads asked")]
    SerialThreads(u32),
    /// No elements, or more than [`MAX_ELEMENTS`].
    #[error("size {0}: from 1 to {} (at most {MAX_ELEMENTS} elements)", 1 << 14)]
    Size(usize),
    /// A panel of no columns.
    #[error("a panel is at least one column wide")]
    Panel,
}

impl Config {
    /// Whether this configuration runs on `nodes` nodes.
    pub fn check(&self, nodes: u32) -> Result<(), ConfigError> {
        if self.size == 0 || self.size.saturating_mul(self.size) > MAX_ELEMENTS {
            return Err(ConfigError::Size(self.size));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(ConfigError::Threads(self.threads));
        }
        if self.serial && self.threads != 1 {
            return Err(ConfigError::SerialThreads(self.threads));
        }
        if self.panel == 0 {
            return Err(ConfigError::Panel);
        }
        match (self.layout, self.mesh) {
            (Layout::HostNode, Some(_)) => Err(ConfigError::MeshWithoutSumma),
            (Layout::Summa, Some(mesh)) if mesh.rows * mesh.cols != nodes as usize => {
                Err(ConfigError::MeshNodes { mesh, nodes })
            }
            _ => Ok(()),
        }
    }
}

impl Config {
    /// The arguments of `threadwire apps matmul` that run this
    /// configuration on a job's nodes (all but the seed, the default).
    pub fn node_args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["apps", "matmul", "--layout", self.layout.name()]
            .map(String::from)
            .to_vec();
        args.extend(["--kernel".into(), self.kernel.name().into()]);
        args.extend(["--threads".into(), self.threads.to_string()]);
        args.extend(["--size".into(), self.size.to_string()]);
        args.extend(["--panel".into(), self.panel.to_string()]);
        if let Some(mesh) = self.mesh {
            args.extend(["--mesh".into(), mesh.to_string()]);
        }
        if self.serial {
            args.push("--serial".into());
        }
        args
    }
}

/// Why the multiply failed.
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
    /// A collective failed.
    #[error(transparent)]
    Coll(#[from] CollError),
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

/// A node of a multiply job launched by `threadwire apps matmul`: joins
/// the job, runs [`run`] on `cfg` and returns the master's report on node
/// 0 (for the caller to show) and `None` elsewhere.
pub fn node(cfg: Config) -> Result<Option<Report>, Error> {
    let ep = threadwire::init()?;
    run(&ep, cfg)
}

/// Runs the multiply on this node; thread 0's endpoint must be passed.
/// Returns the master's report on node 0 and `None` elsewhere.
pub fn run(ep: &threadwire::Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    cfg.check(ep.node().nodes())?;
    match cfg.layout {
        Layout::HostNode => host_node::run(ep, cfg),
        Layout::Summa => summa::run(ep, cfg),
    }
}

/// The GEMM crate alone, the reference of the app's blas figures: `rounds`
/// products of the app's random `size × size` operands (A and the random
/// B of `seed`, as [`run`] makes them) by the blas kernel in this process,
/// after one untimed; each product's time. The crate's threads are this
/// process' `MATMUL_NUM_THREADS` ([`Kernel::Blas`]).
pub fn reference(size: usize, seed: u64, rounds: usize) -> Vec<Duration> {
    let (a_seed, b_seed) = seeds(seed);
    let a = Matrix::from_fn(size, size, |i, j| element(a_seed, i, j));
    let b = Matrix::from_fn(size, size, |i, j| element(b_seed, i, j));
    let mut c = Matrix::zeros(size, size);
    (0..=rounds)
        .map(|_| {
            c.data.fill(0.0);
            let start = Instant::now();
            Kernel::Blas.multiply_add(a.view(), b.view(), &mut c.data, 0);
            start.elapsed()
        })
        .skip(1)
        .collect()
}

/// Element (`row`, `col`) of the random matrix of `seed`: uniform in
/// [−1, 1), the same at every node (SplitMix64 of the three).
///
/// Elements are multiples of 2^−19 (20 random bits): then Strassen–
/// Winograd's sums of a few of them, and their products with the 0s, ±1s
/// and small integers that its additions make of an identity B, round
/// nothing (they need well under 53 bits for any size this app takes),
/// so A × I = A holds exactly for every kernel and the identity check can
/// ask for equality.
pub fn element(seed: u64, row: usize, col: usize) -> f64 {
    let mut z = seed
        .wrapping_add((row as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add((col as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 44) as f64 / (1u64 << 20) as f64 * 2.0 - 1.0
}

/// The seeds of A and of the random B, from the configuration's.
fn seeds(seed: u64) -> (u64, u64) {
    (seed, seed ^ 0x5EED_0FB0_0000_0000)
}

/// The largest difference from the reference a correct product of inner
/// dimension `k` may show: rounding grows with k, and more under
/// Strassen–Winograd's additions; a misplaced block is off by O(1).
pub fn tolerance(k: usize) -> f64 {
    1e-11 * k.max(1) as f64
}

/// The master's check of a random product `c` of `a × b`: the largest
/// difference from the blas kernel's product, or [`Error::Wrong`].
fn verify_random(a: &Matrix, b: &Matrix, c: &Matrix, threads: usize) -> Result<f64, Error> {
    let mut reference = Matrix::zeros(a.rows, b.cols);
    Kernel::Blas.multiply_add(a.view(), b.view(), &mut reference.data, threads);
    let error = c.max_difference(&reference);
    if error.is_nan() || error > tolerance(a.cols) {
        return Err(Error::Wrong(format!(
            "the random product differs from the blas kernel's by {error:e} (tolerance {:e})",
            tolerance(a.cols)
        )));
    }
    Ok(error)
}

/// The master's check of `c = a × I`: equal to `a`, element for element.
fn verify_identity(a: &Matrix, c: &Matrix, at: &str) -> Result<(), Error> {
    if c.max_difference(a) != 0.0 {
        let (row, col) = first_difference(a, c);
        return Err(Error::Wrong(format!(
            "A x I differs from A at {at}, first at element ({row}, {col})"
        )));
    }
    Ok(())
}

fn first_difference(a: &Matrix, c: &Matrix) -> (usize, usize) {
    let i = a
        .data
        .iter()
        .zip(&c.data)
        .position(|(x, y)| x != y)
        .unwrap_or(0);
    (i / a.cols.max(1), i % a.cols.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_uniform_in_minus_one_to_one() {
        let values: Vec<f64> = (0..10_000).map(|i| element(7, i / 100, i % 100)).collect();
        assert!(values.iter().all(|v| (-1.0..1.0).contains(v)));
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert_ne!(element(7, 1, 2), element(7, 2, 1));
    }

    #[test]
    fn a_wrong_product_fails_with_where_it_is_wrong() {
        let a = Matrix::from_fn(5, 5, |i, j| element(1, i, j));
        let b = Matrix::from_fn(5, 5, |i, j| element(2, i, j));
        let mut c = a.clone();
        c.data[7] += 1.0;
        let wrong = verify_identity(&a, &c, "node 3").unwrap_err().to_string();
        assert!(
            wrong.contains("at node 3, first at element (1, 2)"),
            "{wrong}"
        );
        let mut product = Matrix::zeros(5, 5);
        Kernel::Naive.multiply_add(a.view(), b.view(), &mut product.data, 1);
        assert!(verify_random(&a, &b, &product, 1).is_ok());
        product.data[24] = f64::NAN;
        let wrong = verify_random(&a, &b, &product, 1).unwrap_err();
        assert!(matches!(wrong, Error::Wrong(_)), "{wrong}");
    }

    #[test]
    fn bad_configurations_are_refused_with_their_reason() {
        let cfg = Config {
            mesh: Some(Mesh { rows: 2, cols: 3 }),
            ..Config::default()
        };
        assert_eq!(cfg.check(6), Ok(()));
        assert_eq!(
            cfg.check(4),
            Err(ConfigError::MeshNodes {
                mesh: Mesh { rows: 2, cols: 3 },
                nodes: 4
            })
        );
        let serial = Config {
            serial: true,
            ..Config::default()
        };
        assert_eq!(serial.check(4), Err(ConfigError::SerialThreads(2)));
        let host_node = Config {
            layout: Layout::HostNode,
            ..cfg
        };
        assert_eq!(host_node.check(6), Err(ConfigError::MeshWithoutSumma));
        let empty = Config {
            size: 0,
            ..Config::default()
        };
        assert_eq!(empty.check(1), Err(ConfigError::Size(0)));
        let message = cfg.check(4).unwrap_err().to_string();
        assert!(message.contains("2x3 mesh has 6 places"), "{message}");
    }
}
