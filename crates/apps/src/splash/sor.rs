//! SOR: red-black successive over-relaxation on a grid of `rows × cols`
//! `f64`s, row-major, its border held fixed (the seed's 2002×1002, 100
//! iterations).
//!
//! Process p owns a band of interior rows, as even as can be. An
//! iteration is two half-sweeps, red points ((i + j) even) then black,
//! each followed by a barrier: a red point reads only black neighbours and the reverse, so
//! within a half-sweep no point read is written (data-race free) and the
//! result does not depend on P. Neighbouring bands read each other's
//! edge rows: the DSM's traffic.
//!
//! Checked against the same sweeps run sequentially in process 0: every
//! point is computed by the same operations in the same order, so the two
//! grids are equal bit for bit.

use super::parmacs::{Env, ParmacsError};
use super::{part, share, Kernel};
use threadwire_dsm::{DsmError, Region};

/// The over-relaxation factor.
const OMEGA: f64 = 1.5;

/// Grid and iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Rows, the border's two included.
    pub rows: usize,
    /// Columns, the border's two included.
    pub cols: usize,
    /// Iterations (a red and a black half-sweep each).
    pub iterations: usize,
}

impl Size {
    /// The seed's size, or `--small`'s.
    pub fn of(small: bool) -> Size {
        match small {
            false => Size {
                rows: 2002,
                cols: 1002,
                iterations: 100,
            },
            true => Size {
                rows: 130,
                cols: 66,
                iterations: 10,
            },
        }
    }
}

/// The border's value at (i, j); the interior starts at zero.
fn border(size: Size, i: usize, j: usize) -> f64 {
    if i == 0 {
        1.0
    } else if j == 0 {
        i as f64 / size.rows as f64
    } else {
        0.0
    }
}

/// One half-sweep over rows `rows` of the grid at `g` (`colour` 0: red).
///
/// # Safety
///
/// `g` holds the whole grid; during the half-sweep no other thread writes
/// the points of this colour in these rows, nor reads them, and nobody
/// writes the other colour's.
unsafe fn half_sweep(g: *mut f64, size: Size, rows: std::ops::Range<usize>, colour: usize) {
    let c = size.cols;
    for i in rows {
        let first = 1 + (i + 1 + colour) % 2;
        for j in (first..c - 1).step_by(2) {
            let at = i * c + j;
            // SAFETY: 1 <= i < rows - 1 and 1 <= j < cols - 1: every
            // neighbour is in the grid; the caller keeps the colours apart.
            unsafe {
                let around = *g.add(at - c) + *g.add(at + c) + *g.add(at - 1) + *g.add(at + 1);
                let old = *g.add(at);
                *g.add(at) = old + OMEGA * (0.25 * around - old);
            }
        }
    }
}

/// The program's shared state.
pub struct Sor {
    size: Size,
    grid: Region<f64>,
}

impl Sor {
    /// Allocates the grid (PARMACS step 1).
    pub fn new(env: &Env, small: bool) -> Result<Sor, ParmacsError> {
        let size = Size::of(small);
        Ok(Sor {
            size,
            // Each node's bands homed on it: its writes stay local, only the
            // edge rows travel.
            grid: env.g_malloc_blocks(size.rows * size.cols)?,
        })
    }

    /// Process `pid`'s band of interior rows.
    fn band(&self, env: &Env, pid: usize) -> std::ops::Range<usize> {
        let band = share(self.size.rows - 2, env.processes(), pid);
        band.start + 1..band.end + 1
    }

    /// The grid after every iteration, computed here alone.
    fn sequential(&self) -> Vec<f64> {
        let s = self.size;
        let mut g: Vec<f64> = (0..s.rows * s.cols)
            .map(|k| border(s, k / s.cols, k % s.cols))
            .collect();
        for _ in 0..s.iterations {
            for colour in 0..2 {
                // SAFETY: the grid is this thread's own.
                unsafe { half_sweep(g.as_mut_ptr(), s, 1..s.rows - 1, colour) };
            }
        }
        g
    }
}

impl Kernel for Sor {
    fn size(&self) -> String {
        let s = self.size;
        format!("{}x{} grid, {} iterations", s.rows, s.cols, s.iterations)
    }

    fn initialize(&self, env: &Env, pid: usize) {
        let s = self.size;
        let band = self.band(env, pid);
        // The border rows go with the first and last bands.
        let rows = match (band.start == 1, band.end == s.rows - 1) {
            (true, true) => 0..s.rows,
            (true, false) => 0..band.end,
            (false, true) => band.start..s.rows,
            (false, false) => band,
        };
        for i in rows {
            for j in [0, s.cols - 1] {
                self.grid.set(i * s.cols + j, border(s, i, j));
            }
            if i == 0 || i == s.rows - 1 {
                for j in 1..s.cols - 1 {
                    self.grid.set(i * s.cols + j, border(s, i, j));
                }
            }
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let band = self.band(env, pid);
        for half in 0..2 * self.size.iterations {
            if half > 0 {
                env.barrier()?;
            }
            // SAFETY: this process alone writes this colour in its band;
            // the other colour is written by no one until the barrier.
            unsafe { half_sweep(self.grid.as_ptr(), self.size, band.clone(), half % 2) };
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        // SAFETY: nobody writes the grid while process 0 checks it.
        let ours = unsafe { part(&self.grid, 0..self.grid.len()) };
        (
            ours == self.sequential().as_slice(),
            "the sweeps run sequentially",
        )
    }
}
