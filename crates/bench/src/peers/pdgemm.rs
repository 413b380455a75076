//! The ScaLAPACK peer of `threadwire apps matmul --peers` (issue 18):
//! PBLAS' `pdgemm` multiplying the same n × n doubles on a grid of as
//! many Open MPI ranks as the threadwire job has nodes,
//! `bench-peers/matmul/pdgemm.c` ([`SOURCE`]; its header says what it
//! does and prints).
//!
//! 1. Build with `mpicc.openmpi -O2`, linking `libscalapack-openmpi`
//!    (its BLAS is Debian's `libblas.so.3` alternative: OpenBLAS when
//!    installed). Either missing: the error names the Debian packages.
//! 2. `mpirun.openmpi -np R·C` with the program's grid `RxC` and block
//!    size, each rank with `OPENBLAS_NUM_THREADS` set to threadwire's
//!    threads per node; killed past a deadline that grows with n³.
//! 3. The program checks A × I = A itself (exit 2 otherwise), then
//!    prints one JSON line: every timed call's seconds.

use super::coll::{self, Mpi, Program};
use serde::Deserialize;
use std::time::{Duration, Instant};

/// `bench-peers/matmul/pdgemm.c`.
pub const SOURCE: &str = include_str!("../../../../bench-peers/matmul/pdgemm.c");

/// The peer's name in reports.
pub const NAME: &str = "ScaLAPACK pdgemm (Open MPI)";

/// The Debian packages of ScaLAPACK for Open MPI and a fast BLAS.
pub const PACKAGES: &str = "libscalapack-openmpi-dev libopenblas0-pthread";

/// One run's shape.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Matrices are `size` × `size`.
    pub size: usize,
    /// Grid rows.
    pub rows: u32,
    /// Grid columns.
    pub cols: u32,
    /// BLAS threads per rank.
    pub threads: u32,
    /// ScaLAPACK's block size.
    pub block: usize,
    /// Timed calls, after one untimed.
    pub rounds: u32,
}

/// The timed calls of one run.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Each call's time.
    pub times: Vec<Duration>,
}

impl Measured {
    /// The median call (the upper of the two middle ones for an even
    /// count), the fastest and the slowest.
    pub fn median_min_max(&self) -> (Duration, Duration, Duration) {
        let mut sorted = self.times.clone();
        sorted.sort();
        (
            sorted[sorted.len() / 2],
            sorted[0],
            sorted[sorted.len() - 1],
        )
    }
}

/// Step 1 and 2: builds the program and runs it once.
pub fn run(options: &Options) -> Result<Measured, coll::Error> {
    let program = Program::build_linked(
        Mpi::OpenMpi,
        "pdgemm",
        SOURCE,
        &["-O2"],
        &["-lscalapack-openmpi", "-lm"],
    )
    .map_err(|e| match e {
        coll::Error::Build { ref log, .. } if log.contains("-lscalapack") => coll::Error::Missing {
            program: "libscalapack-openmpi",
            packages: PACKAGES,
        },
        e => e,
    })?;
    let args = [
        "--size".to_string(),
        options.size.to_string(),
        "--grid".into(),
        format!("{}x{}", options.rows, options.cols),
        "--nb".into(),
        options.block.to_string(),
        "--rounds".into(),
        options.rounds.to_string(),
    ];
    let output = program.launch_with(
        options.rows * options.cols,
        &[],
        &args,
        "pdgemm",
        Instant::now() + deadline(options),
        |cmd| {
            cmd.env("OPENBLAS_NUM_THREADS", options.threads.to_string());
        },
    )?;
    parse(&output, options.rounds)
}

/// A generous bound: 30 s to start, and each call at 1 GFLOP/s.
fn deadline(options: &Options) -> Duration {
    let flops = 2.0 * (options.size as f64).powi(3);
    Duration::from_secs(30) + Duration::from_secs_f64(flops / 1e9 * f64::from(options.rounds + 1))
}

/// Rank 0's line.
#[derive(Deserialize)]
struct Line {
    seconds: Vec<f64>,
}

/// Step 3: the timed calls of `output`, which must hold `rounds` of them.
fn parse(output: &str, rounds: u32) -> Result<Measured, coll::Error> {
    let line = output.lines().find(|l| l.starts_with('{'));
    let seconds = line
        .and_then(|l| serde_json::from_str::<Line>(l).ok())
        .map(|l| l.seconds)
        .unwrap_or_default();
    if seconds.is_empty() || seconds.len() != rounds as usize {
        return Err(coll::Error::Incomplete {
            expected: rounds as usize,
            found: seconds.len(),
        });
    }
    let times = seconds
        .iter()
        .map(|&s| Duration::try_from_secs_f64(s).unwrap_or_default())
        .collect();
    Ok(Measured { times })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_zero_line_is_read() {
        let out = "{\"size\":64,\"rows\":2,\"cols\":1,\"nb\":128,\"seconds\":[0.5,0.25]}\n";
        let m = parse(out, 2).unwrap();
        assert_eq!(
            m.times,
            [Duration::from_millis(500), Duration::from_millis(250)]
        );
    }

    #[test]
    fn a_short_or_missing_line_is_incomplete() {
        let out = "{\"size\":64,\"rows\":2,\"cols\":1,\"nb\":128,\"seconds\":[0.5]}\n";
        assert!(matches!(
            parse(out, 2),
            Err(coll::Error::Incomplete {
                expected: 2,
                found: 1
            })
        ));
        assert!(matches!(
            parse("garbage\n", 1),
            Err(coll::Error::Incomplete { .. })
        ));
    }
}
