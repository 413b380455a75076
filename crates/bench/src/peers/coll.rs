//! The MPI peers of `threadwire bench coll` (issue 12): barrier, bcast,
//! allreduce, allgather and alltoall latency in Open MPI and MPICH, timed
//! as the OSU micro-benchmarks time them, beside threadwire's own.
//!
//! The program is `bench-peers/coll/coll.c`, embedded here ([`SOURCE`]);
//! its header says what it measures and how (sizes, the hybrid
//! MPI+OpenMP way of each collective, the timing, its output). A run:
//!
//! 1. **Build** ([`Program::build`]): the MPI's compiler wrapper and
//!    launcher must be on `PATH`, else [`Error::Missing`] names the Debian
//!    packages; `coll.c` is written to a scratch directory of this process
//!    (removed when the [`Program`] is dropped, or on a signal) and built
//!    there with `-O2 -fopenmp`. A wrapper without its MPI's headers is
//!    also [`Error::Missing`] (Debian ships `mpicc.openmpi` in
//!    `openmpi-bin`, `mpi.h` in `libopenmpi-dev`).
//! 2. **Run** ([`Program::run`]): one launch per configuration and
//!    operation, so that a failure or a hang costs one operation's rows.
//!    Sizes whose buffers, over all members, would pass
//!    [`Options::max_buffer_bytes`] are left out and listed in
//!    [`Outcome::skipped`] (alltoall and allgather of 16 MiB among 16
//!    members need 4–8 GiB).
//! 3. **Deadline** ([`Options::deadline`]): computed from the sizes, the
//!    repetitions and a pessimistic guess of each operation's time; the
//!    launcher runs in a process group of its own and is killed with it
//!    past the deadline ([`Error::TimedOut`], with the tail of its log).
//!    Open MPI's ranks and Hydra's proxies take groups of their own; both
//!    end when their launcher is killed (a test checks it), and on a
//!    signal the testbed kills every descendant.
//! 4. **Read** ([`rows::parse`]): rank 0's stdout, one JSON line per
//!    operation and size, each checked; every row the launch should give
//!    must be there ([`Error::Incomplete`]).
//!
//! # Launchers
//!
//! Open MPI 4.1: `mpirun.openmpi --allow-run-as-root --oversubscribe -np R`
//! with its default selection (Debian's `openmpi-mca-params.conf` keeps
//! UCX out, so ob1 with the `vader` shared-memory BTL) and its default
//! binding (a core per rank for 2 ranks, none beyond). `--bind-to none`
//! and `--mca btl self,vader` showed no difference that held across two
//! passes here (docs/PERFORMANCE-STUDIES.md). Oversubscribed, Open MPI
//! lets waiting ranks yield the core.
//!
//! MPICH 4.0 (ch4:ucx): `mpiexec.mpich -n R`. Its ranks busy-poll and
//! never yield, so beyond 2 ranks on 2 cores every collective waits for
//! the scheduler to run a spinning rank's peer: tens of milliseconds per
//! operation. [`Options::deadline`] allows for it.
//!
//! Hybrid configurations ([`Configuration::threads`] > 1) run `coll
//! --threads T` with `OMP_NUM_THREADS=T`, and `OMP_WAIT_POLICY` if
//! [`Options::openmp_wait_policy`] sets it (libgomp's default spins a
//! while before it sleeps; `passive` took 18–29% off Open MPI's small
//! rows here, and most of MPICH's starvation).
//!
//! The parts: `options.rs` ([`Options`], the buffers `coll.c` allocates
//! and the deadline), `program.rs` ([`Program`]: build, launch, and
//! [`run_beside`]), `rows.rs` ([`rows::parse`] of its output).

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod options;
mod program;
pub mod rows;

pub use options::{buffer_bytes, guess, Options, WaitPolicy};
pub(crate) use program::{build_and_launch_each, log_tail};
pub use program::{run_beside, Outcome, Program, Report};
pub use rows::ParseError;

/// `bench-peers/coll/coll.c`, built by [`Program::build`].
pub const SOURCE: &str = include_str!("../../../../bench-peers/coll/coll.c");

/// An MPI implementation, from Debian's packages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mpi {
    /// Open MPI 4.1: `mpicc.openmpi`, `mpirun.openmpi`.
    OpenMpi,
    /// MPICH 4.0: `mpicc.mpich`, `mpiexec.mpich`.
    Mpich,
}

impl Mpi {
    /// Both, in the order they are run and shown.
    pub const ALL: [Mpi; 2] = [Mpi::OpenMpi, Mpi::Mpich];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "Open MPI",
            Mpi::Mpich => "MPICH",
        }
    }

    /// Its compiler wrapper.
    pub fn compiler(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpicc.openmpi",
            Mpi::Mpich => "mpicc.mpich",
        }
    }

    /// Its launcher.
    pub fn launcher(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpirun.openmpi",
            Mpi::Mpich => "mpiexec.mpich",
        }
    }

    /// The Debian packages of its wrapper, headers and launcher.
    pub fn packages(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi-bin libopenmpi-dev",
            Mpi::Mpich => "mpich libmpich-dev",
        }
    }

    /// The launcher's command line for `configuration`, up to the program.
    fn launch(self, configuration: Configuration) -> Vec<String> {
        let ranks = configuration.ranks.to_string();
        let args: &[&str] = match self {
            Mpi::OpenMpi => &[
                "mpirun.openmpi",
                "--allow-run-as-root",
                "--oversubscribe",
                "-np",
                &ranks,
            ],
            Mpi::Mpich => &["mpiexec.mpich", "-n", &ranks],
        };
        args.iter().map(|a| a.to_string()).collect()
    }
}

/// A collective `coll.c` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// `MPI_Barrier`: no data, one row of 0 bytes.
    Barrier,
    /// `MPI_Bcast` of the size from member 0.
    Bcast,
    /// `MPI_Allreduce`, `MPI_SUM` over the size in doubles.
    Allreduce,
    /// `MPI_Allgather` of the size from every member.
    Allgather,
    /// `MPI_Alltoall` of the size from every member to every member.
    Alltoall,
}

impl Operation {
    /// All five, in the order they are run and shown.
    pub const ALL: [Operation; 5] = [
        Operation::Barrier,
        Operation::Bcast,
        Operation::Allreduce,
        Operation::Allgather,
        Operation::Alltoall,
    ];

    /// Its name, as `coll --operations` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Barrier => "barrier",
            Operation::Bcast => "bcast",
            Operation::Allreduce => "allreduce",
            Operation::Allgather => "allgather",
            Operation::Alltoall => "alltoall",
        }
    }

    /// The sizes it runs at, of `sizes`: a barrier has one, 0 bytes.
    pub fn sizes(self, sizes: &[usize]) -> Vec<usize> {
        match self {
            Operation::Barrier => vec![0],
            _ => sizes.to_vec(),
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Not one of [`Operation::ALL`]'s names.
#[derive(Debug, thiserror::Error)]
#[error("unknown collective {0:?} (barrier, bcast, allreduce, allgather, alltoall)")]
pub struct UnknownOperation(String);

impl FromStr for Operation {
    type Err = UnknownOperation;

    fn from_str(s: &str) -> Result<Operation, UnknownOperation> {
        Operation::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| UnknownOperation(s.to_string()))
    }
}

/// How many MPI ranks, each with how many OpenMP threads: the members of
/// a collective are ranks × threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Configuration {
    /// MPI ranks, all on this host.
    pub ranks: u32,
    /// OpenMP threads per rank; 1 is plain MPI.
    pub threads: u32,
}

impl Configuration {
    /// Issue 12's: 2 and 4 ranks, 16 ranks oversubscribed on the 2 cores,
    /// and 2 ranks × 8 OpenMP threads.
    pub const ISSUE: [Configuration; 4] = [
        Configuration::ranks(2),
        Configuration::ranks(4),
        Configuration::ranks(16),
        Configuration {
            ranks: 2,
            threads: 8,
        },
    ];

    /// `ranks` ranks of one thread.
    pub const fn ranks(ranks: u32) -> Configuration {
        Configuration { ranks, threads: 1 }
    }

    /// The members of a collective.
    pub fn members(self) -> u64 {
        u64::from(self.ranks) * u64::from(self.threads)
    }
}

impl fmt::Display for Configuration {
    /// `4 ranks`, `2 ranks × 8 threads`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ranks", self.ranks)?;
        if self.threads > 1 {
            write!(f, " × {} threads", self.threads)?;
        }
        Ok(())
    }
}

/// One row: an operation at a size, in one MPI and configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The MPI.
    pub mpi: Mpi,
    /// Ranks and threads.
    pub configuration: Configuration,
    /// The collective.
    pub operation: Operation,
    /// Bytes, as coll.c counts them (0 for a barrier).
    pub size: usize,
    /// Median over repetitions of the time per operation (the slowest
    /// rank's).
    pub median: Duration,
    /// The fastest repetition.
    pub min: Duration,
    /// The slowest repetition.
    pub max: Duration,
    /// Repetitions run (fewer than asked where `max_ms_per_size` cut them).
    pub repetitions: u32,
    /// Operations per repetition, calibrated to `ms`.
    pub iterations: u64,
}

/// Why an MPI has no figures, or a launch none.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A program or header it needs is missing.
    #[error("not installed ({program} missing): apt-get install {packages}")]
    Missing {
        /// The first missing program, or `mpi.h`.
        program: &'static str,
        /// The Debian packages that provide the MPI.
        packages: &'static str,
    },
    /// A file could not be written or read, or a process started.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The failure.
        source: io::Error,
    },
    /// The compiler failed.
    #[error("{compiler} could not build {program}.c ({status}):\n{log}")]
    Build {
        /// The compiler wrapper.
        compiler: &'static str,
        /// The program's name (`coll`, `flood`).
        program: &'static str,
        /// Its exit status.
        status: ExitStatus,
        /// The end of its output.
        log: String,
    },
    /// The launch ended with a failure status.
    #[error("{launcher} failed ({status}):\n{log}")]
    Failed {
        /// The launcher.
        launcher: &'static str,
        /// Its exit status.
        status: ExitStatus,
        /// The end of its log (stderr of the launcher and every rank).
        log: String,
    },
    /// The build or the launch ran past its deadline and was killed.
    #[error("killed after {after:?}, its deadline:\n{log}")]
    TimedOut {
        /// How long it had run.
        after: Duration,
        /// The end of its log.
        log: String,
    },
    /// Its output was not coll.c's rows.
    #[error(transparent)]
    Output(#[from] ParseError),
    /// It succeeded without every row it should have given.
    #[error("{found} rows of the {expected} expected")]
    Incomplete {
        /// Rows expected: one per size (one for a barrier).
        expected: usize,
        /// Rows found.
        found: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: Configuration = Configuration {
        ranks: 2,
        threads: 8,
    };

    #[test]
    fn operations_and_configurations_have_names() {
        for o in Operation::ALL {
            assert_eq!(o.name().parse::<Operation>().unwrap(), o);
        }
        assert!("scan".parse::<Operation>().is_err());
        assert_eq!(HYBRID.to_string(), "2 ranks × 8 threads");
        assert_eq!(Configuration::ranks(16).to_string(), "16 ranks");
        let e = Error::Missing {
            program: "mpicc.mpich",
            packages: Mpi::Mpich.packages(),
        };
        assert!(
            e.to_string().contains("apt-get install mpich libmpich-dev"),
            "{e}"
        );
    }
}
