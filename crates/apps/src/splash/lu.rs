//! LU-c: SPLASH-2's LU kernel with contiguous blocks — A = L·U without
//! pivoting for an `n × n` `f64` matrix stored as `nb × nb` blocks of
//! `block × block`, each block contiguous and row-major (the seed's 2048²,
//! block 128).
//!
//! Block (I, J) belongs to process `(I mod R)·C + (J mod C)` on an R × C
//! grid of the P processes (SPLASH-2's 2D scatter). For each diagonal
//! block K, three phases, each ending in a barrier:
//!
//! 1. its owner factors block (K, K) in place ([`factor_diagonal`]);
//! 2. the owners of the perimeter blocks (K, J) and (I, K), I, J > K,
//!    solve them against it ([`solve_row_block`], [`solve_column_block`]);
//! 3. the owners of the interior blocks (I, J), I, J > K, subtract
//!    (I, K)·(K, J) ([`update_interior`]).
//!
//! In each phase a block is written by its owner alone and the blocks read
//! were finished in an earlier phase: data-race free. The matrix is
//! diagonally dominant (random entries in [0, 1), n added to the
//! diagonal), so no pivot is needed.
//!
//! Checked in process 0: at `--small`, against the same blocked
//! factorization run here alone (each element sees the same operations in
//! the same order: equal bit for bit); at the seed's size, by L·(U·x) =
//! A·x for a random x, to a relative 1e-9.

use super::parmacs::{Env, ParmacsError};
use super::{mix, part, part_mut, Kernel};
use threadwire_dsm::{DsmError, Region};

/// Order and block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// The matrix is n × n.
    pub n: usize,
    /// Blocks are block × block; it divides n.
    pub block: usize,
}

impl Size {
    /// The seed's size, or `--small`'s.
    pub fn of(small: bool) -> Size {
        match small {
            false => Size {
                n: 2048,
                block: 128,
            },
            true => Size { n: 128, block: 16 },
        }
    }

    /// Blocks per side.
    fn blocks(self) -> usize {
        self.n / self.block
    }

    /// Where element (i, j) of the matrix lies in the block layout.
    fn at(self, i: usize, j: usize) -> usize {
        let (b, nb) = (self.block, self.blocks());
        ((i / b) * nb + j / b) * b * b + (i % b) * b + j % b
    }

    /// The elements of block (bi, bj).
    fn block_range(self, bi: usize, bj: usize) -> std::ops::Range<usize> {
        let area = self.block * self.block;
        let start = (bi * self.blocks() + bj) * area;
        start..start + area
    }
}

/// Element (i, j) of A.
fn element(n: usize, i: usize, j: usize) -> f64 {
    let r = (mix(2048, (i * n + j) as u64) >> 11) as f64 / (1u64 << 53) as f64;
    if i == j {
        r + n as f64
    } else {
        r
    }
}

/// Factors the diagonal block `d` (b × b) in place: L below the diagonal
/// (unit diagonal implied), U on and above it.
pub fn factor_diagonal(d: &mut [f64], b: usize) {
    for k in 0..b {
        let pivot = d[k * b + k];
        for i in k + 1..b {
            let l = d[i * b + k] / pivot;
            d[i * b + k] = l;
            for j in k + 1..b {
                d[i * b + j] -= l * d[k * b + j];
            }
        }
    }
}

/// Block (K, J) of U: solves L_KK·X = A_KJ in place (forward
/// substitution, unit diagonal).
pub fn solve_row_block(d: &[f64], a: &mut [f64], b: usize) {
    for k in 0..b {
        for i in k + 1..b {
            let l = d[i * b + k];
            for j in 0..b {
                a[i * b + j] -= l * a[k * b + j];
            }
        }
    }
}

/// Block (I, K) of L: solves X·U_KK = A_IK in place.
pub fn solve_column_block(d: &[f64], a: &mut [f64], b: usize) {
    for r in 0..b {
        let row = &mut a[r * b..(r + 1) * b];
        for k in 0..b {
            let x = row[k] / d[k * b + k];
            row[k] = x;
            for j in k + 1..b {
                row[j] -= x * d[k * b + j];
            }
        }
    }
}

/// A_IJ −= A_IK · A_KJ.
pub fn update_interior(l: &[f64], u: &[f64], a: &mut [f64], b: usize) {
    for i in 0..b {
        for k in 0..b {
            let lik = l[i * b + k];
            for (a, u) in a[i * b..(i + 1) * b].iter_mut().zip(&u[k * b..(k + 1) * b]) {
                *a -= lik * u;
            }
        }
    }
}

/// Who owns which block: an R × C grid of the P processes, R the largest
/// divisor of P not above its square root (SPLASH-2's 2D scatter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Owner {
    rows: usize,
    cols: usize,
}

impl Owner {
    fn of(env: &Env) -> Owner {
        Owner::grid(env.processes())
    }

    fn grid(processes: usize) -> Owner {
        let rows = (1..=processes)
            .take_while(|r| r * r <= processes)
            .filter(|r| processes.is_multiple_of(*r))
            .last()
            .unwrap_or(1);
        Owner {
            rows,
            cols: processes / rows,
        }
    }

    /// The process that owns block (bi, bj).
    fn of_block(self, bi: usize, bj: usize) -> usize {
        (bi % self.rows) * self.cols + bj % self.cols
    }
}

/// The program's shared state.
pub struct Lu {
    size: Size,
    a: Region<f64>,
}

impl Lu {
    /// Allocates the matrix (PARMACS step 1).
    pub fn new(env: &Env, small: bool) -> Result<Lu, ParmacsError> {
        let size = Size::of(small);
        Ok(Lu {
            size,
            a: env.g_malloc(size.n * size.n)?,
        })
    }

    /// Whether `lu` is the factorization of A (module docs).
    fn verify(&self, lu: &[f64]) -> (bool, &'static str) {
        let s = self.size;
        let n = s.n;
        if n <= Size::of(true).n {
            let mut want: Vec<f64> = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    want[s.at(i, j)] = element(n, i, j);
                }
            }
            factor(&mut want, s);
            return (lu == want.as_slice(), "the factorization run sequentially");
        }
        let x: Vec<f64> = (0..n)
            .map(|j| (mix(11, j as u64) % 1000) as f64 / 1000.0)
            .collect();
        let ux: Vec<f64> = (0..n)
            .map(|i| (i..n).map(|j| lu[s.at(i, j)] * x[j]).sum())
            .collect();
        let lux: Vec<f64> = (0..n)
            .map(|i| ux[i] + (0..i).map(|j| lu[s.at(i, j)] * ux[j]).sum::<f64>())
            .collect();
        let ax: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|j| element(n, i, j) * x[j]).sum())
            .collect();
        let (mut error, mut norm) = (0.0f64, 0.0f64);
        for (got, want) in lux.iter().zip(&ax) {
            error = error.max((got - want).abs());
            norm = norm.max(want.abs());
        }
        (error <= 1e-9 * norm, "L·(U·x) = A·x to 1e-9")
    }
}

/// The blocked factorization of `a` (block layout) by one thread: the
/// phases of the module docs in the same order.
fn factor(a: &mut [f64], s: Size) {
    let (b, nb) = (s.block, s.blocks());
    for k in 0..nb {
        let d = s.block_range(k, k);
        factor_diagonal(&mut a[d.clone()], b);
        let diagonal = a[d].to_vec();
        for j in k + 1..nb {
            solve_row_block(&diagonal, &mut a[s.block_range(k, j)], b);
            solve_column_block(&diagonal, &mut a[s.block_range(j, k)], b);
        }
        for i in k + 1..nb {
            let l = a[s.block_range(i, k)].to_vec();
            for j in k + 1..nb {
                let u = a[s.block_range(k, j)].to_vec();
                update_interior(&l, &u, &mut a[s.block_range(i, j)], b);
            }
        }
    }
}

impl Kernel for Lu {
    fn size(&self) -> String {
        let s = self.size;
        format!("{0}x{0} matrix, blocks of {1}x{1}", s.n, s.block)
    }

    fn initialize(&self, env: &Env, pid: usize) {
        let s = self.size;
        let b = s.block;
        let owner = Owner::of(env);
        for (bi, bj) in (0..s.blocks()).flat_map(|bi| (0..s.blocks()).map(move |bj| (bi, bj))) {
            if owner.of_block(bi, bj) == pid {
                for (i, j) in (0..b).flat_map(|r| (0..b).map(move |c| (bi * b + r, bj * b + c))) {
                    self.a.set(s.at(i, j), element(s.n, i, j));
                }
            }
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let s = self.size;
        let (b, nb) = (s.block, s.blocks());
        let owner = Owner::of(env);
        let mine = |bi, bj| owner.of_block(bi, bj) == pid;
        // SAFETY: in each phase a block is written by its owner alone,
        // and the blocks read were written in an earlier phase, ended by
        // a barrier (module docs).
        let block = |bi, bj| unsafe { part(&self.a, s.block_range(bi, bj)) };
        // SAFETY: as above.
        let block_mut = |bi, bj| unsafe { part_mut(&self.a, s.block_range(bi, bj)) };
        for k in 0..nb {
            if k > 0 {
                env.barrier()?;
            }
            if mine(k, k) {
                factor_diagonal(block_mut(k, k), b);
            }
            env.barrier()?;
            for j in k + 1..nb {
                if mine(k, j) {
                    solve_row_block(block(k, k), block_mut(k, j), b);
                }
                if mine(j, k) {
                    solve_column_block(block(k, k), block_mut(j, k), b);
                }
            }
            env.barrier()?;
            for i in k + 1..nb {
                for j in (k + 1..nb).filter(|&j| mine(i, j)) {
                    update_interior(block(i, k), block(k, j), block_mut(i, j), b);
                }
            }
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        // SAFETY: nobody writes the matrix while process 0 checks it.
        let lu = unsafe { part(&self.a, 0..self.a.len()) };
        self.verify(lu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocked_factorization_multiplies_back_to_the_matrix() {
        let s = Size { n: 24, block: 8 };
        let mut a = vec![0.0; s.n * s.n];
        for i in 0..s.n {
            for j in 0..s.n {
                a[s.at(i, j)] = element(s.n, i, j);
            }
        }
        factor(&mut a, s);
        for i in 0..s.n {
            for j in 0..s.n {
                let sum: f64 = (0..=i.min(j))
                    .map(|k| {
                        let l = if k == i { 1.0 } else { a[s.at(i, k)] };
                        l * a[s.at(k, j)]
                    })
                    .sum();
                assert!((sum - element(s.n, i, j)).abs() < 1e-9, "({i}, {j})");
            }
        }
    }

    #[test]
    fn the_grid_is_the_squarest() {
        for (p, rows, cols) in [(1, 1, 1), (2, 1, 2), (4, 2, 2), (8, 2, 4), (6, 2, 3)] {
            assert_eq!(Owner::grid(p), Owner { rows, cols }, "{p} processes");
        }
    }
}
