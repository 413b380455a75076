//! MATMULT: C = A·B for `n × n` `f64` matrices, row-major (the seed's
//! 1024²), C cut into [`BLOCKS`] bands of whole rows (the seed's
//! "row-wise block distribution", each block a multiple of the page),
//! shared out among the processes in contiguous runs.
//!
//! 1. Each process fills the rows of A of its own bands, and a share of
//!    the rows of B; a barrier.
//! 2. Each computes its bands of C, 64 rows of B at a time (asking for the
//!    next 64 first, `Region::prefetch`, so that their fetch overlaps the
//!    multiply) and a quarter of the columns at a time (so that the part
//!    of B it uses stays in cache), `c[i][j] += a[i][k] · b[k][j]` with k
//!    ascending.
//!
//! Sharing: A and C are homed in one contiguous share per node
//! (`g_malloc_blocks`), so a node reads its rows of A and writes its
//! bands of C at home — no false sharing, no diff, as the seed says of
//! its version; every node reads all of B (fetched once per node).
//!
//! The elements of A and B are small integers, so every sum is exact
//! whatever its order. Checked in process 0: at `--small`, against the
//! product computed here alone; at the seed's size, by Freivalds'
//! invariant C·x = A·(B·x) for an integer vector x, exact for the same
//! reason.

use super::parmacs::{Env, ParmacsError};
use super::{mix, part, part_mut, share, Kernel};
use threadwire_dsm::{DsmError, Region};

/// Blocks of C: bands of `n / 16` rows.
pub const BLOCKS: usize = 16;
/// Column tiles of a band.
const TILES: usize = 4;
/// Rows of B multiplied in one pass over the band (the next block's
/// fetch overlaps it).
const K_BLOCK: usize = 64;

/// The order of the matrices: the seed's 1024 times `scale`, or
/// `--small`'s 128.
pub fn order(small: bool, scale: usize) -> usize {
    match small {
        false => 1024 * scale,
        true => 128,
    }
}

/// Element (i, j) of A (`which` 0) or B (1): an integer in -8..=8.
fn element(which: u64, n: usize, i: usize, j: usize) -> f64 {
    (mix(which, (i * n + j) as u64) % 17) as f64 - 8.0
}

/// The program's shared state.
pub struct Matmult {
    n: usize,
    a: Region<f64>,
    b: Region<f64>,
    c: Region<f64>,
}

impl Matmult {
    /// Allocates A, B and C (PARMACS step 1).
    pub fn new(env: &Env, small: bool, scale: usize) -> Result<Matmult, ParmacsError> {
        let n = order(small, scale);
        Ok(Matmult {
            n,
            a: env.g_malloc_blocks(n * n)?,
            b: env.g_malloc_blocks(n * n)?,
            c: env.g_malloc_blocks(n * n)?,
        })
    }

    /// The rows of process `pid`'s bands.
    fn rows(&self, env: &Env, pid: usize) -> std::ops::Range<usize> {
        let band = self.n / BLOCKS;
        let bands = share(BLOCKS, env.processes(), pid);
        bands.start * band..bands.end * band
    }

    /// Whether `c` is A·B: exactly, or by Freivalds' invariant.
    fn verify(&self, c: &[f64], a: &[f64], b: &[f64]) -> (bool, &'static str) {
        let n = self.n;
        if n <= order(true, 1) {
            let mut want = vec![0.0; n * n];
            for i in 0..n {
                for k in 0..n {
                    let aik = a[i * n + k];
                    for j in 0..n {
                        want[i * n + j] += aik * b[k * n + j];
                    }
                }
            }
            return (c == want.as_slice(), "the product computed sequentially");
        }
        let x: Vec<f64> = (0..n)
            .map(|j| (mix(7, j as u64) % 5) as f64 - 2.0)
            .collect();
        let times = |m: &[f64], v: &[f64]| -> Vec<f64> {
            (0..n)
                .map(|i| {
                    m[i * n..(i + 1) * n]
                        .iter()
                        .zip(v)
                        .map(|(m, v)| m * v)
                        .sum()
                })
                .collect()
        };
        let verified = times(c, &x) == times(a, &times(b, &x));
        (verified, "Freivalds' C·x = A·(B·x), exact")
    }
}

impl Kernel for Matmult {
    fn size(&self) -> String {
        format!("{0}x{0} matrices, {BLOCKS} blocks", self.n)
    }

    fn initialize(&self, env: &Env, pid: usize) {
        let n = self.n;
        let fill = |m: &Region<f64>, which: u64, rows: std::ops::Range<usize>| {
            // SAFETY: these rows are written by this process alone, and
            // the barrier after step 1 orders the writes before every read.
            let m = unsafe { part_mut(m, rows.start * n..rows.end * n) };
            for (row, i) in m.chunks_exact_mut(n).zip(rows) {
                for (j, x) in row.iter_mut().enumerate() {
                    *x = element(which, n, i, j);
                }
            }
        };
        fill(&self.a, 0, self.rows(env, pid));
        fill(&self.b, 1, share(n, env.processes(), pid));
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let n = self.n;
        let rows = self.rows(env, pid);
        // SAFETY: A and B are only read from here to the runner's barrier;
        // C's rows `rows` are this process's alone.
        let (a, b, c) = unsafe {
            (
                part(&self.a, rows.start * n..rows.end * n),
                part(&self.b, 0..n * n),
                part_mut(&self.c, rows.start * n..rows.end * n),
            )
        };
        let width = n / TILES;
        let depth = K_BLOCK.min(n);
        // B a block of rows at a time, k ascending: the next block is asked
        // for before this one is used, so that its fetch overlaps the
        // multiply (the DSM's rule 11).
        self.b.prefetch(0..depth * n);
        for ks in (0..n).step_by(depth) {
            let next = (ks + depth).min(n)..(ks + 2 * depth).min(n);
            self.b.prefetch(next.start * n..next.end * n);
            for tile in 0..TILES {
                let cols = tile * width..(tile + 1) * width;
                for (a, c) in a.chunks_exact(n).zip(c.chunks_exact_mut(n)) {
                    let c = &mut c[cols.clone()];
                    for (k, aik) in a.iter().enumerate().skip(ks).take(depth) {
                        let b = &b[k * n + cols.start..k * n + cols.end];
                        for (c, b) in c.iter_mut().zip(b) {
                            *c += aik * b;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        let n = self.n;
        // SAFETY: nobody writes the matrices while process 0 checks them.
        let (a, b, c) = unsafe {
            (
                part(&self.a, 0..n * n),
                part(&self.b, 0..n * n),
                part(&self.c, 0..n * n),
            )
        };
        self.verify(c, a, b)
    }
}
