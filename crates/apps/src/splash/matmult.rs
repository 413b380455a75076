//! MATMULT: C = A·B for `n × n` `f64` matrices, row-major, C cut into
//! [`BLOCKS`] blocks (4 × 4, the seed's 16) dealt to the processes round
//! robin (the seed's 1024²).
//!
//! The processes first fill A and B by bands of rows; after a barrier each
//! computes its blocks of C, row by row of the block, `c[i][j] += a[i][k] ·
//! b[k][j]` with k ascending (A and B are only read; each element of C has
//! one writer). The elements of A and B are small integers, so every sum
//! is exact whatever its order.
//!
//! Checked in process 0: at `--small`, against the product computed here
//! alone; at the seed's size, by Freivalds' invariant C·x = A·(B·x) for an
//! integer vector x, exact for the same reason.

use super::parmacs::{Env, ParmacsError};
use super::{mix, part, part_mut, share, Kernel};
use threadwire_dsm::{DsmError, Region};

/// Blocks of C: a 4 × 4 grid.
pub const BLOCKS: usize = 16;
const SIDE: usize = 4;

/// The order of the matrices: the seed's 1024, or `--small`'s 128.
pub fn order(small: bool) -> usize {
    match small {
        false => 1024,
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
    pub fn new(env: &Env, small: bool) -> Result<Matmult, ParmacsError> {
        let n = order(small);
        Ok(Matmult {
            n,
            a: env.g_malloc(n * n)?,
            b: env.g_malloc(n * n)?,
            c: env.g_malloc(n * n)?,
        })
    }

    /// Whether `c` is A·B: exactly, or by Freivalds' invariant.
    fn verify(&self, c: &[f64], a: &[f64], b: &[f64]) -> (bool, &'static str) {
        let n = self.n;
        if n <= order(true) {
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
        for i in share(n, env.processes(), pid) {
            for j in 0..n {
                self.a.set(i * n + j, element(0, n, i, j));
                self.b.set(i * n + j, element(1, n, i, j));
            }
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let n = self.n;
        // SAFETY: A and B are only read from here on.
        let (a, b) = unsafe { (part(&self.a, 0..n * n), part(&self.b, 0..n * n)) };
        let side = n / SIDE;
        for block in (pid..BLOCKS).step_by(env.processes()) {
            let (bi, bj) = (block / SIDE, block % SIDE);
            let cols = bj * side..(bj + 1) * side;
            for i in bi * side..(bi + 1) * side {
                // SAFETY: this process alone writes its blocks of C, and
                // nobody reads C until the barrier.
                let c = unsafe { part_mut(&self.c, i * n + cols.start..i * n + cols.end) };
                for k in 0..n {
                    let aik = a[i * n + k];
                    for (c, b) in c.iter_mut().zip(&b[k * n + cols.start..k * n + cols.end]) {
                        *c += aik * b;
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
