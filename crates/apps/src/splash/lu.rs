//! LU-c and LU-n: SPLASH-2's blocked LU kernel — A = L·U without
//! pivoting for an `n × n` `f64` matrix in blocks of `block × block` — in
//! its two layouts ([`Layout`]):
//!
//! - **LU-c**, contiguous blocks (the seed's 2048², block 128): an array
//!   of blocks, each contiguous and row-major, ordered by owner, then by
//!   block row and column — as SPLASH-2 allocates each processor's blocks
//!   in a region of its own. A process's blocks are one run of memory,
//!   homed on its node ([`Env::g_malloc_blocks`]): its writes stay local.
//! - **LU-n**, non-contiguous (the seed's 1024², block 32): one ordinary
//!   row-major n × n array, homed round robin as SPLASH-2's single
//!   `G_MALLOC`. A block is `block` runs of `block` elements, n apart, and
//!   a coherence unit (8 KiB: one row of the matrix at the seed's size)
//!   holds pieces of a whole block row's blocks, which belong to as many
//!   processes as the grid has columns: the fragmentation and false
//!   sharing LU-n is in the suite for.
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
//! were finished in an earlier phase: data-race free (in LU-n, owners
//! write disjoint pieces of shared units: the DSM's multiple writers). The
//! block kernels see a block as its rows, whatever the layout. The matrix
//! is diagonally dominant (random entries in [0, 1), n added to the
//! diagonal), so no pivot is needed.
//!
//! Sharing: after phase 1 every owner of a perimeter block of step K reads
//! the diagonal block; after phase 2 the owners of row I's and column J's
//! interior blocks read the perimeter blocks (I, K) and (K, J) — each
//! block one producer, many consumers.
//!
//! Checked in process 0: at `--small`, against the same blocked
//! factorization run here alone (each element sees the same operations in
//! the same order: equal bit for bit); at the seed's size, by L·(U·x) =
//! A·x for a random x, to a relative 1e-9.

use super::parmacs::{Env, ParmacsError};
use super::{mix, part, part_mut, Kernel};
use std::ops::Range;
use threadwire_dsm::{DsmError, Region};

/// How the matrix lies in memory (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// LU-c: an array of contiguous row-major blocks, each process's
    /// together.
    Contiguous,
    /// LU-n: one row-major array.
    RowMajor,
}

/// Order and block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// The matrix is n × n.
    pub n: usize,
    /// Blocks are block × block; it divides n.
    pub block: usize,
}

impl Size {
    /// The seed's size for `layout`, its order times `scale`, or
    /// `--small`'s.
    pub fn of(layout: Layout, small: bool, scale: usize) -> Size {
        match (layout, small) {
            (_, true) => Size { n: 128, block: 16 },
            (Layout::Contiguous, false) => Size {
                n: 2048 * scale,
                block: 128,
            },
            (Layout::RowMajor, false) => Size {
                n: 1024 * scale,
                block: 32,
            },
        }
    }

    /// Blocks per side.
    pub fn blocks(self) -> usize {
        self.n / self.block
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

/// Factors the diagonal block `d`, given as its rows, in place: L below
/// the diagonal (unit diagonal implied), U on and above it.
pub fn factor_diagonal(d: &mut [&mut [f64]]) {
    for k in 0..d.len() {
        let (above, below) = d.split_at_mut(k + 1);
        let pivot_row = &above[k];
        let pivot = pivot_row[k];
        for row in below {
            let l = row[k] / pivot;
            row[k] = l;
            for (a, u) in row[k + 1..].iter_mut().zip(&pivot_row[k + 1..]) {
                *a -= l * u;
            }
        }
    }
}

/// Block (K, J) of U: solves L_KK·X = A_KJ in place (forward
/// substitution, unit diagonal); blocks given as their rows.
pub fn solve_row_block(d: &[&[f64]], a: &mut [&mut [f64]]) {
    for k in 0..a.len() {
        let (above, below) = a.split_at_mut(k + 1);
        let solved = &above[k];
        for (row, d) in below.iter_mut().zip(&d[k + 1..]) {
            let l = d[k];
            for (a, s) in row.iter_mut().zip(solved.iter()) {
                *a -= l * s;
            }
        }
    }
}

/// Block (I, K) of L: solves X·U_KK = A_IK in place; blocks given as
/// their rows.
pub fn solve_column_block(d: &[&[f64]], a: &mut [&mut [f64]]) {
    for row in a {
        for (k, d) in d.iter().enumerate() {
            let x = row[k] / d[k];
            row[k] = x;
            for (a, u) in row[k + 1..].iter_mut().zip(&d[k + 1..]) {
                *a -= x * u;
            }
        }
    }
}

/// A_IJ −= A_IK · A_KJ; blocks given as their rows.
pub fn update_interior(l: &[&[f64]], u: &[&[f64]], a: &mut [&mut [f64]]) {
    for (row, l) in a.iter_mut().zip(l) {
        for (lik, u_row) in l.iter().zip(u) {
            for (a, u) in row.iter_mut().zip(u_row.iter()) {
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

/// How many of 0..len are `c` mod `m`.
fn congruent(len: usize, m: usize, c: usize) -> usize {
    len / m + usize::from(c < len % m)
}

/// How many of 0..len are below `c` mod `m`.
fn congruent_below(len: usize, m: usize, c: usize) -> usize {
    len / m * c + (len % m).min(c)
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

    /// Where block (bi, bj) of `nb × nb` lies when they are ordered by
    /// owner, then by block row and column.
    fn position(self, nb: usize, bi: usize, bj: usize) -> usize {
        let (r, c) = (bi % self.rows, bj % self.cols);
        let before = congruent_below(nb, self.rows, r) * nb
            + congruent(nb, self.rows, r) * congruent_below(nb, self.cols, c);
        before + (bi / self.rows) * congruent(nb, self.cols, c) + bj / self.cols
    }
}

/// Where each element of the matrix lies: its size, layout and owners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    size: Size,
    layout: Layout,
    owner: Owner,
}

impl Shape {
    /// Row `r` of block (bi, bj): `block` consecutive elements.
    fn block_row(self, bi: usize, bj: usize, r: usize) -> Range<usize> {
        let Size { n, block: b } = self.size;
        let start = match self.layout {
            Layout::Contiguous => self.owner.position(n / b, bi, bj) * b * b + r * b,
            Layout::RowMajor => (bi * b + r) * n + bj * b,
        };
        start..start + b
    }

    /// Element (i, j).
    fn at(self, i: usize, j: usize) -> usize {
        let b = self.size.block;
        self.block_row(i / b, j / b, i % b).start + j % b
    }

    /// The blocks, by row and column.
    fn blocks(self) -> impl Iterator<Item = (usize, usize)> {
        let nb = self.size.blocks();
        (0..nb).flat_map(move |bi| (0..nb).map(move |bj| (bi, bj)))
    }
}

/// The rows of block (bi, bj) of `a`, to write.
fn rows_mut(a: &mut [f64], shape: Shape, bi: usize, bj: usize) -> Vec<&mut [f64]> {
    let mut rows = Vec::with_capacity(shape.size.block);
    let (mut rest, mut consumed) = (a, 0);
    for r in 0..shape.size.block {
        let range = shape.block_row(bi, bj, r);
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(range.start - consumed);
        let (row, tail) = tail.split_at_mut(range.len());
        rows.push(row);
        (rest, consumed) = (tail, range.end);
    }
    rows
}

/// Block (bi, bj) of `a`, copied out contiguous and row-major.
fn copy(a: &[f64], shape: Shape, bi: usize, bj: usize) -> Vec<f64> {
    (0..shape.size.block)
        .flat_map(|r| &a[shape.block_row(bi, bj, r)])
        .copied()
        .collect()
}

/// The rows of a block copied out by [`copy`].
fn rows(block: &[f64], b: usize) -> Vec<&[f64]> {
    block.chunks_exact(b).collect()
}

/// The blocked factorization of `a` by one thread: the phases of the
/// module docs in the same order.
fn factor(a: &mut [f64], shape: Shape) {
    let (b, nb) = (shape.size.block, shape.size.blocks());
    for k in 0..nb {
        factor_diagonal(&mut rows_mut(a, shape, k, k));
        let diagonal = copy(a, shape, k, k);
        let diagonal = rows(&diagonal, b);
        for j in k + 1..nb {
            solve_row_block(&diagonal, &mut rows_mut(a, shape, k, j));
            solve_column_block(&diagonal, &mut rows_mut(a, shape, j, k));
        }
        for i in k + 1..nb {
            let l = copy(a, shape, i, k);
            for j in k + 1..nb {
                let u = copy(a, shape, k, j);
                update_interior(&rows(&l, b), &rows(&u, b), &mut rows_mut(a, shape, i, j));
            }
        }
    }
}

/// The program's shared state.
pub struct Lu {
    shape: Shape,
    a: Region<f64>,
}

impl Lu {
    /// Allocates the matrix in `layout` (PARMACS step 1).
    pub fn new(env: &Env, layout: Layout, small: bool, scale: usize) -> Result<Lu, ParmacsError> {
        let size = Size::of(layout, small, scale);
        let shape = Shape {
            size,
            layout,
            owner: Owner::of(env),
        };
        let elements = size.n * size.n;
        let a = match layout {
            Layout::Contiguous => env.g_malloc_blocks(elements)?,
            Layout::RowMajor => env.g_malloc(elements)?,
        };
        Ok(Lu { shape, a })
    }

    /// Whether `lu` is the factorization of A (module docs).
    fn verify(&self, lu: &[f64]) -> (bool, &'static str) {
        let shape = self.shape;
        let n = shape.size.n;
        if n <= Size::of(shape.layout, true, 1).n {
            let mut want: Vec<f64> = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    want[shape.at(i, j)] = element(n, i, j);
                }
            }
            factor(&mut want, shape);
            return (lu == want.as_slice(), "the factorization run sequentially");
        }
        let x: Vec<f64> = (0..n)
            .map(|j| (mix(11, j as u64) % 1000) as f64 / 1000.0)
            .collect();
        let ux: Vec<f64> = (0..n)
            .map(|i| (i..n).map(|j| lu[shape.at(i, j)] * x[j]).sum())
            .collect();
        let lux: Vec<f64> = (0..n)
            .map(|i| ux[i] + (0..i).map(|j| lu[shape.at(i, j)] * ux[j]).sum::<f64>())
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

impl Kernel for Lu {
    fn size(&self) -> String {
        let s = self.shape.size;
        format!("{0}x{0} matrix, blocks of {1}x{1}", s.n, s.block)
    }

    fn initialize(&self, _env: &Env, pid: usize) {
        let shape = self.shape;
        let Size { n, block: b } = shape.size;
        for (bi, bj) in shape.blocks() {
            if shape.owner.of_block(bi, bj) != pid {
                continue;
            }
            for r in 0..b {
                // SAFETY: a block's rows are written by its owner alone;
                // nobody reads them before the barrier that ends
                // initialization.
                let row = unsafe { part_mut(&self.a, shape.block_row(bi, bj, r)) };
                for (c, x) in row.iter_mut().enumerate() {
                    *x = element(n, bi * b + r, bj * b + c);
                }
            }
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let shape = self.shape;
        let (b, nb) = (shape.size.block, shape.size.blocks());
        let mine = |bi, bj| shape.owner.of_block(bi, bj) == pid;
        // In each phase a block is written by its owner alone, and the
        // blocks read were written in an earlier phase, ended by a barrier
        // (module docs): the rows below are borrowed within a phase.
        let block = |bi, bj| -> Vec<&[f64]> {
            (0..b)
                // SAFETY: as above.
                .map(|r| unsafe { part(&self.a, shape.block_row(bi, bj, r)) })
                .collect()
        };
        let block_mut = |bi, bj| -> Vec<&mut [f64]> {
            (0..b)
                // SAFETY: as above.
                .map(|r| unsafe { part_mut(&self.a, shape.block_row(bi, bj, r)) })
                .collect()
        };
        for k in 0..nb {
            if k > 0 {
                env.barrier()?;
            }
            if mine(k, k) {
                factor_diagonal(&mut block_mut(k, k));
            }
            env.barrier()?;
            let diagonal = block(k, k);
            for j in k + 1..nb {
                if mine(k, j) {
                    solve_row_block(&diagonal, &mut block_mut(k, j));
                }
                if mine(j, k) {
                    solve_column_block(&diagonal, &mut block_mut(j, k));
                }
            }
            env.barrier()?;
            for i in k + 1..nb {
                for j in (k + 1..nb).filter(|&j| mine(i, j)) {
                    update_interior(&block(i, k), &block(k, j), &mut block_mut(i, j));
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
        let size = Size { n: 24, block: 8 };
        for layout in [Layout::Contiguous, Layout::RowMajor] {
            let shape = Shape {
                size,
                layout,
                owner: Owner::grid(2),
            };
            let n = size.n;
            let mut a = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    a[shape.at(i, j)] = element(n, i, j);
                }
            }
            factor(&mut a, shape);
            for i in 0..n {
                for j in 0..n {
                    let sum: f64 = (0..=i.min(j))
                        .map(|k| {
                            let l = if k == i { 1.0 } else { a[shape.at(i, k)] };
                            l * a[shape.at(k, j)]
                        })
                        .sum();
                    let want = element(n, i, j);
                    assert!((sum - want).abs() < 1e-9, "{layout:?} ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn the_grid_is_the_squarest() {
        for (p, rows, cols) in [(1, 1, 1), (2, 1, 2), (4, 2, 2), (8, 2, 4), (6, 2, 3)] {
            assert_eq!(Owner::grid(p), Owner { rows, cols }, "{p} processes");
        }
    }

    #[test]
    fn blocks_ordered_by_owner_fill_the_array_each_owner_in_one_run() {
        for (nb, processes) in [(16, 1), (16, 4), (8, 8), (7, 6), (5, 3), (3, 4)] {
            let owner = Owner::grid(processes);
            let mut by_position = vec![None; nb * nb];
            for (bi, bj) in (0..nb).flat_map(|bi| (0..nb).map(move |bj| (bi, bj))) {
                let at = owner.position(nb, bi, bj);
                assert_eq!(by_position[at], None, "{nb} blocks, {processes} processes");
                by_position[at] = Some(owner.of_block(bi, bj));
            }
            let owners: Vec<usize> = by_position.into_iter().map(Option::unwrap).collect();
            assert!(
                owners.windows(2).all(|w| w[0] <= w[1]),
                "{nb} blocks, {processes} processes: {owners:?}"
            );
        }
    }
}
