//! The agenda-parallel matrix multiply of SCALE (1998, §5 and Figures
//! 15–17): a master holds A and collects C, slaves ask it for work by
//! active message, and the pool of tasks is served at a chosen
//! granularity with a chosen concurrency.
//!
//! The job's node 0 is the master; every other node is a slave. The
//! master computes too, as the seed's did. `C = A × B` for square
//! matrices of each size asked, with every granularity G (rows of A to a
//! task) and concurrency K (computing threads per node, so outstanding
//! work requests per slave) of the sweep.
//!
//! 1. **Register.** Every node registers the fiber handlers
//!    `agenda.work` and `agenda.result` ([`Node::register_fiber`]) and
//!    starts the largest K of the sweep as computing OS threads; a
//!    barrier of thread 0s then ensures no request finds a node without
//!    them. Computing threads are OS threads, not fibers: a kernel call
//!    runs for milliseconds without yielding, and on the master the
//!    handler fibers must run meanwhile, on the node's fiber workers.
//! 2. **Distribute B**, once per size, before any clock starts: node 0
//!    broadcasts it to every node ([`Group::bcast`]), as the seed's B "is
//!    assumed to be already distributed". The master makes A.
//! 3. **Serial baseline.** The master computes the reference product
//!    (the blas kernel's), and before each round of the sweep multiplies
//!    A × B whole with the kernel on one thread: the time speedups are
//!    taken against (the seed's Figure 16, one node computing alone).
//!    Slaves wait at the next round's barrier meanwhile.
//! 4. **Start a round**, for each (G, K): the master puts a fresh
//!    [`TaskPool`] of A's rows, G to a task, where its handlers and
//!    threads find it; a barrier; each node's thread 0 starts the clock
//!    and sends *go* to its first K computing threads.
//! 5. **Compute.** A master thread takes tasks from the pool directly
//!    and stores its rows of C. A slave thread asks the master for a task
//!    (an active-message request to `agenda.work`, whose handler takes
//!    the next G rows and answers with them) and, as soon as it has one,
//!    asks for the next before multiplying: each slave thread computes a
//!    task while the next is on its way, so a slave has K requests
//!    outstanding. It sends each task's rows of C to `agenda.result` as a
//!    request, whose handler stores them in the pool and answers an empty
//!    acknowledgement (or why it refused them); a thread waits for one
//!    acknowledgement before sending the next result. An answer of no
//!    rows ends the thread's round: it tells thread 0 its time in the
//!    kernel and its time since *go*.
//! 6. **Collect.** Once its threads are done, each node's thread 0 enters
//!    a barrier: every slave's results are then acknowledged, so stored,
//!    and the master stops the clock. The time thus includes handing out
//!    A and collecting C, as the seed's did, and two barriers. The
//!    threads' times are gathered at the master, which checks that every
//!    row of C came back and compares C with the reference
//!    ([`matmul::tolerance`](crate::matmul::tolerance)).
//!
//! The baseline and each (G, K) run once untimed, then `rounds` timed
//! rounds, alternating (baseline, then every combination, and again):
//! drifts of the machine touch them all alike, and no phase keeps a node
//! from a barrier for long, so a lost node is noticed within one. The
//! report gives medians and marks the fastest combination for each size.
//!
//! The blas kernel's thread pool is per process
//! ([`matmul::kernel::blas`](crate::matmul::kernel::blas)):
//! `threadwire apps agenda-matmul` sets `MATMUL_NUM_THREADS=1`, so that
//! a computing thread is one core's work and the baseline is one thread.
//!
//! Reading the figures: computation and communication are means over a
//! role's computing threads, the slaves' and the master's apart (the
//! master's take tasks without a message). A slave thread's
//! communication is the rest of its round: waiting for tasks and
//! acknowledgements, packing, and waiting for a core (with more threads
//! than cores they take turns). Small tasks cost more computation too:
//! the blas kernel packs B afresh for every call, so a task of one row
//! does a whole B's packing for one row's product. On a host of two
//! cores no combination computes more than twice as fast as the
//! baseline, whatever the nodes; what the sweep shows beyond that is how
//! much of the communication the concurrency hides.
//!
//! Failures: a node lost during a round fails the barrier, broadcast or
//! gather that involves it, and requests to a lost master fail with
//! [`AmError::PeerLost`]; every thread that waits on them ends with the
//! error, and no node waits forever.

mod node;
mod pool;
mod report;

pub use pool::{Batch, Misplaced, TaskPool};
pub use report::{improvement, Measured, Report, Round, SizeReport, Split};

use crate::matmul::Kernel;
use threadwire::{Address, AmError, CollError, RecvError, SendError, UnpackError};

#[cfg(doc)]
use threadwire::{Group, Node};

/// The largest matrix side.
pub const MAX_SIZE: usize = 8192;
/// The most computing threads per node.
pub const MAX_CONCURRENCY: u32 = 64;
/// The most values in each list of the sweep.
pub const MAX_CHOICES: usize = 16;

/// The sizes, the sweep and the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Matrices are `size × size`, for each size in turn.
    pub sizes: Vec<usize>,
    /// Rows of A in a task.
    pub granularities: Vec<usize>,
    /// Computing threads per node (outstanding requests per slave).
    pub concurrencies: Vec<u32>,
    /// Who multiplies a task's rows.
    pub kernel: Kernel,
    /// Timed rounds of each combination (after one untimed round).
    pub rounds: usize,
    /// Seed of the random matrices.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sizes: vec![256, 512],
            granularities: vec![1, 4, 16, 64, 256],
            concurrencies: vec![1, 2, 4],
            kernel: Kernel::Blas,
            rounds: 3,
            seed: 1998,
        }
    }
}

/// Why a configuration cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A size out of 1..=[`MAX_SIZE`].
    #[error("size {0}: from 1 to {MAX_SIZE}")]
    Size(usize),
    /// A granularity out of 1..=[`MAX_SIZE`].
    #[error("granularity {0}: from 1 to {MAX_SIZE} rows of A to a task")]
    Granularity(usize),
    /// A concurrency out of 1..=[`MAX_CONCURRENCY`].
    #[error("concurrency {0}: from 1 to {MAX_CONCURRENCY} computing threads per node")]
    Concurrency(u32),
    /// A list with nothing in it.
    #[error("no {0} given: at least one")]
    Empty(&'static str),
    /// A list longer than [`MAX_CHOICES`].
    #[error("{count} {what}: at most {MAX_CHOICES}")]
    TooMany {
        /// Which list.
        what: &'static str,
        /// Its length.
        count: usize,
    },
    /// No timed round.
    #[error("at least one round")]
    Rounds,
}

impl Config {
    /// Whether this configuration runs (on any number of nodes: one is
    /// the master alone).
    pub fn check(&self) -> Result<(), ConfigError> {
        fn list<T>(what: &'static str, values: &[T]) -> Result<(), ConfigError> {
            match values.len() {
                0 => Err(ConfigError::Empty(what)),
                count if count > MAX_CHOICES => Err(ConfigError::TooMany { what, count }),
                _ => Ok(()),
            }
        }
        list("sizes", &self.sizes)?;
        list("granularities", &self.granularities)?;
        list("concurrencies", &self.concurrencies)?;
        if let Some(&size) = self.sizes.iter().find(|&&s| s == 0 || s > MAX_SIZE) {
            return Err(ConfigError::Size(size));
        }
        if let Some(&g) = self.granularities.iter().find(|&&g| g == 0 || g > MAX_SIZE) {
            return Err(ConfigError::Granularity(g));
        }
        if let Some(&k) = self
            .concurrencies
            .iter()
            .find(|&&k| k == 0 || k > MAX_CONCURRENCY)
        {
            return Err(ConfigError::Concurrency(k));
        }
        if self.rounds == 0 {
            return Err(ConfigError::Rounds);
        }
        Ok(())
    }
}

/// Why the multiply failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot run.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An active message failed.
    #[error(transparent)]
    Am(#[from] AmError),
    /// A collective failed.
    #[error(transparent)]
    Coll(#[from] CollError),
    /// A send failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A receive failed.
    #[error(transparent)]
    Recv(#[from] RecvError),
    /// A message did not have the expected layout.
    #[error("malformed message: {0}")]
    Unpack(#[from] UnpackError),
    /// Rows of C that do not fit where they claim to go.
    #[error("misplaced result: {0}")]
    Misplaced(#[from] Misplaced),
    /// A message had the layout but not the expected contents.
    #[error("unexpected message: {0}")]
    Protocol(String),
    /// The result is wrong.
    #[error("verification failed: {0}")]
    Wrong(String),
    /// A computing thread ended its round with an error, which its join
    /// gives.
    #[error("computing thread {0} failed")]
    ThreadFailed(Address),
    /// A computing thread panicked.
    #[error("computing thread {0} panicked")]
    Panicked(Address),
    /// The node did not start.
    #[error("starting the node")]
    Init(#[from] threadwire::InitError),
}

/// A node of a job launched by `threadwire apps agenda-matmul`: joins the
/// job, runs [`run`] on `cfg` and returns the master's report on node 0
/// (for the caller to show) and `None` elsewhere.
pub fn node(cfg: &Config) -> Result<Option<Report>, Error> {
    let ep = threadwire::init()?;
    run(&ep, cfg)
}

/// Runs the sweep on this node; thread 0's endpoint must be passed, and
/// every node of the job must call it with the same `cfg`. Returns the
/// master's report on node 0 and `None` elsewhere.
pub fn run(ep: &threadwire::Endpoint, cfg: &Config) -> Result<Option<Report>, Error> {
    cfg.check()?;
    node::run(ep, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configurations_are_refused_with_their_reason() {
        let cfg = Config::default();
        assert_eq!(cfg.check(), Ok(()));
        let with = |f: fn(&mut Config)| {
            let mut c = Config::default();
            f(&mut c);
            c.check()
        };
        assert_eq!(with(|c| c.sizes = vec![8, 0]), Err(ConfigError::Size(0)));
        assert_eq!(
            with(|c| c.sizes = vec![MAX_SIZE + 1]),
            Err(ConfigError::Size(MAX_SIZE + 1))
        );
        assert_eq!(
            with(|c| c.granularities = vec![0]),
            Err(ConfigError::Granularity(0))
        );
        assert_eq!(
            with(|c| c.concurrencies = vec![65]),
            Err(ConfigError::Concurrency(65))
        );
        assert_eq!(
            with(|c| c.concurrencies.clear()),
            Err(ConfigError::Empty("concurrencies"))
        );
        assert_eq!(
            with(|c| c.sizes = vec![4; 17]),
            Err(ConfigError::TooMany {
                what: "sizes",
                count: 17
            })
        );
        assert_eq!(with(|c| c.rounds = 0), Err(ConfigError::Rounds));
        let message = with(|c| c.granularities = vec![0]).unwrap_err().to_string();
        assert!(
            message.contains("granularity 0: from 1 to 8192"),
            "{message}"
        );
    }

    #[test]
    fn one_standalone_node_verifies_odd_sizes_and_granularities() {
        let ep = threadwire::Config::new()
            .standalone(true)
            .init()
            .expect("a standalone node");
        let cfg = Config {
            sizes: vec![13, 40],
            granularities: vec![1, 3, 64],
            concurrencies: vec![1, 3],
            kernel: Kernel::Naive,
            rounds: 1,
            seed: 7,
        };
        let report = run(&ep, &cfg).expect("the sweep").expect("node 0's report");
        assert_eq!(report.sizes.len(), 2);
        for size in &report.sizes {
            assert_eq!(size.measured.len(), 6);
            assert!(size.best().is_some());
        }
        let text = report.to_string();
        assert!(text.contains("size 13:"), "{text}");
    }
}
