//! Step 3 of the module docs: the multigrid solver of ∇²ψ = ζ, its
//! red-black sweeps, restriction, prolongation and the residual's norm,
//! each run per process as a phase of the [`Team`].

use super::layout::{View, Walls};
use super::{Memory, Ocean, Team, SMOOTHING};
use threadwire_dsm::DsmError;

impl Ocean {
    /// A half-sweep of `colour` over p's subgrid on `level`.
    fn half_sweep(&self, m: &Memory, level: usize, p: usize, colour: usize) {
        // SAFETY: only `colour` is written now (rule 2).
        unsafe { self.fill_ghosts(m.x[level], level, p, Some(1 - colour)) };
        let patch = self.layout.patch(level, p);
        let (x, f) = (
            self.view(m.x[level], level, p),
            self.view(m.f[level], level, p),
        );
        let walls = self.layout.walls(level, p);
        let h2 = self.spacing(level).powi(2);
        for i in 1..=patch.rows {
            let first = 1 + (patch.row + i + patch.col + 1 + colour) % 2;
            for j in (first..=patch.cols).step_by(2) {
                // SAFETY: p's points of `colour` and the other colour's
                // around them, which nobody writes now (rule 2).
                unsafe {
                    let around =
                        x.get(i - 1, j) + x.get(i + 1, j) + x.get(i, j - 1) + x.get(i, j + 1);
                    x.set(i, j, (around - h2 * f.get(i, j)) / walls.diagonal(i, j));
                }
            }
        }
        // SAFETY: points of `colour` are p's to write now (rule 2).
        unsafe { self.publish_edges(m.x[level], level, p, Some(colour)) };
    }

    /// The residual f − ∇²x at p's (i, j) on `level`.
    ///
    /// # Safety
    ///
    /// (i, j) is interior; x's ring is filled and nobody writes x.
    #[inline(always)]
    unsafe fn residual(x: View, f: View, walls: Walls, inverse_h2: f64, i: usize, j: usize) -> f64 {
        // SAFETY: the caller's.
        unsafe {
            let around = x.get(i - 1, j) + x.get(i + 1, j) + x.get(i, j - 1) + x.get(i, j + 1);
            f.get(i, j) - (around - walls.diagonal(i, j) * x.get(i, j)) * inverse_h2
        }
    }

    /// Step 3.1's restriction: p's residual on `level` averaged into the
    /// right-hand side of `level + 1`, whose solution becomes zero.
    fn restrict(&self, m: &Memory, level: usize, p: usize) {
        // SAFETY: nobody writes this level's solution now (rule 3).
        unsafe { self.fill_ghosts(m.x[level], level, p, None) };
        let (x, f) = (
            self.view(m.x[level], level, p),
            self.view(m.f[level], level, p),
        );
        let coarse = level + 1;
        let (xc, fc) = (
            self.view(m.x[coarse], coarse, p),
            self.view(m.f[coarse], coarse, p),
        );
        let patch = self.layout.patch(coarse, p);
        let walls = self.layout.walls(level, p);
        let inverse_h2 = self.spacing(level).powi(-2);
        for i in 1..=patch.rows {
            for j in 1..=patch.cols {
                let (fi, fj) = (2 * i - 1, 2 * j - 1);
                // SAFETY: the fine points are p's (module docs: a coarse
                // point's four are one process's); the coarse ones p's
                // own, read by nobody now.
                unsafe {
                    let sum = Self::residual(x, f, walls, inverse_h2, fi, fj)
                        + Self::residual(x, f, walls, inverse_h2, fi, fj + 1)
                        + Self::residual(x, f, walls, inverse_h2, fi + 1, fj)
                        + Self::residual(x, f, walls, inverse_h2, fi + 1, fj + 1);
                    fc.set(i, j, 0.25 * sum);
                    xc.set(i, j, 0.0);
                }
            }
        }
        // SAFETY: nobody reads the coarser solution now (rule 3).
        unsafe { self.publish_edges(m.x[coarse], coarse, p, None) };
    }

    /// Step 3.3's correction: the solution on `level + 1` interpolated
    /// and added to p's on `level`.
    fn prolong(&self, m: &Memory, level: usize, p: usize) {
        let coarse = level + 1;
        // SAFETY: nobody writes the coarser solution now (rule 3).
        unsafe { self.fill_ghosts(m.x[coarse], coarse, p, None) };
        let (x, xc) = (
            self.view(m.x[level], level, p),
            self.view(m.x[coarse], coarse, p),
        );
        let patch = self.layout.patch(level, p);
        // The coarse solution beyond the wall: the mirror of its edge
        // (`Walls`), in p's own ring for this phase only.
        let walls = self.layout.walls(coarse, p);
        let (rows, cols) = (walls.rows, walls.cols);
        let mirror = |value: f64| {
            // SAFETY: p's own ring, read by nobody else (rule 1); the
            // interior points read were written before the last barrier.
            unsafe {
                for i in 1..=rows {
                    if walls.left {
                        xc.set(i, 0, value * xc.get(i, 1));
                    }
                    if walls.right {
                        xc.set(i, cols + 1, value * xc.get(i, cols));
                    }
                }
                for j in 1..=cols {
                    if walls.top {
                        xc.set(0, j, value * xc.get(1, j));
                    }
                    if walls.bottom {
                        xc.set(rows + 1, j, value * xc.get(rows, j));
                    }
                }
            }
        };
        mirror(-1.0);
        for i in 1..=patch.rows {
            let ci = i.div_ceil(2);
            // The coarse neighbour on the fine point's side.
            let ni = if i % 2 == 1 { ci - 1 } else { ci + 1 };
            for j in 1..=patch.cols {
                let cj = j.div_ceil(2);
                let nj = if j % 2 == 1 { cj - 1 } else { cj + 1 };
                // SAFETY: p's own fine points; the coarse ones p's or its
                // ring's.
                unsafe {
                    let correction =
                        0.5 * xc.get(ci, cj) + 0.25 * xc.get(ni, cj) + 0.25 * xc.get(ci, nj);
                    x.set(i, j, x.get(i, j) + correction);
                }
            }
        }
        mirror(0.0);
        // SAFETY: nobody reads this level's solution now (rule 3).
        unsafe { self.publish_edges(m.x[level], level, p, None) };
    }

    /// p's sum of squared residuals on level 0 into its slot of `row`.
    pub(super) fn residual_norm(&self, m: &Memory, p: usize, row: usize) {
        // SAFETY: nobody writes ψ now (rule 3).
        unsafe { self.fill_ghosts(m.x[0], 0, p, None) };
        let (x, f) = (self.view(m.x[0], 0, p), self.view(m.f[0], 0, p));
        let patch = self.layout.patch(0, p);
        let walls = self.layout.walls(0, p);
        let inverse_h2 = self.spacing(0).powi(-2);
        let mut sum = 0.0;
        for i in 1..=patch.rows {
            for j in 1..=patch.cols {
                // SAFETY: interior, ring filled, nobody writes ψ.
                let r = unsafe { Self::residual(x, f, walls, inverse_h2, i, j) };
                sum += r * r;
            }
        }
        // SAFETY: p's slot (rule 4).
        unsafe { *m.slots.add(row * self.layout.processes + p) = sum };
    }

    /// Red-black sweeps on `level`.
    fn sweeps(
        &self,
        m: &Memory,
        team: &mut dyn Team,
        level: usize,
        count: usize,
    ) -> Result<(), DsmError> {
        for _ in 0..count {
            for colour in 0..2 {
                team.phase(&|p| self.half_sweep(m, level, p, colour))?;
            }
        }
        Ok(())
    }

    /// One V-cycle (module docs, step 3), its phases run by `team`.
    pub(super) fn v_cycle(&self, m: &Memory, team: &mut dyn Team) -> Result<(), DsmError> {
        let coarsest = self.layout.levels - 1;
        for level in 0..coarsest {
            self.sweeps(m, team, level, SMOOTHING)?;
            team.phase(&|p| self.restrict(m, level, p))?;
        }
        self.sweeps(m, team, coarsest, 2 * self.layout.side(coarsest))?;
        for level in (0..coarsest).rev() {
            team.phase(&|p| self.prolong(m, level, p))?;
            self.sweeps(m, team, level, SMOOTHING)?;
        }
        Ok(())
    }
}
