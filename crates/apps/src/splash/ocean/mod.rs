//! OCEAN-c: SPLASH-2's Ocean with contiguous partitions, simplified to
//! one layer — a wind-driven barotropic ocean in the unit square, its
//! streamfunction ψ and vorticity ζ = ∇²ψ on an `n × n` interior with a
//! wall all round (the seed's 258 × 258 grid: 256² interior and the
//! border), for a few time steps (3 at the seed's size, 2 at `--small`'s:
//! SPLASH-2 runs hundreds, but every step does the same work, so three
//! show the sharing pattern and keep a run near a second). Points are
//! the centres of n × n cells; the wall runs along the cells' outer
//! faces.
//!
//! # The computation
//!
//! Each time step:
//!
//! 1. **Tendency.** T = F(y) − J(ψ, ζ) − β ∂ψ/∂x − r ζ + ν ∇²ζ, by
//!    centred differences (the Jacobian J = ψₓζ_y − ψ_yζₓ and the
//!    Laplacian are SPLASH-2's `jacobcalc` and `laplacalc`); F is the
//!    wind's curl. A barrier.
//! 2. **Advance.** ζ += Δt·T, and each process's sum of ζ² into its slot
//!    of a shared array of partial sums; a barrier; every process adds the
//!    P slots in the order of their pids: ‖ζ‖², the same value everywhere.
//! 3. **Solve** ∇²ψ = ζ (ψ = 0 on the wall) by multigrid, from the last
//!    step's ψ, as SPLASH-2's `multig`: V-cycles until ‖ζ − ∇²ψ‖ ≤
//!    [`TOLERANCE`]·‖ζ‖ (the norm reduced like ‖ζ‖ in step 2) or
//!    [`MAX_CYCLES`] of them (each cuts the residual about fivefold: 6
//!    or 7 a step at `--small`). A V-cycle, level 0 the grid and each level
//!    half the one above it per side, down to the coarsest whose side is
//!    at least the process grid's (below):
//!    1. on each level but the coarsest, downwards: [`SMOOTHING`]
//!       red-black Gauss–Seidel sweeps (a half-sweep of each colour, a
//!       barrier after each); then the residual, averaged over each 2 × 2
//!       block of points into the next level's right-hand side, whose
//!       solution is set to zero; a barrier;
//!    2. on the coarsest level, as many sweeps as twice its side;
//!    3. on each level but the coarsest, upwards: the coarser solution
//!       interpolated (½ its own point, ¼ each of the two neighbours on
//!       the side of the fine point) and added; a barrier; [`SMOOTHING`]
//!       sweeps again.
//!
//! # Partition and layout
//!
//! The P processes form an R × C grid, R the largest divisor of P not
//! above √P; process p = (p div C, p mod C) owns a contiguous subgrid of
//! every level's grid, rows and columns shared out as evenly as can be on
//! the coarsest level and doubled per level above it (so a coarse point's
//! four fine points are always the same process's). As in SPLASH-2's
//! contiguous version, every grid is an array of per-process subgrids,
//! each stored with a ghost ring one point wide around it and followed
//! by a copy of its first and last columns, padded to whole 8 KiB
//! coherence units, the array homed in blocks
//! ([`Env::g_malloc_blocks`]): each process's subgrids live on its node,
//! and a node's processes are neighbours in the array.
//!
//! # Sharing
//!
//! Before it reads a grid's neighbours, a process copies into its ghost
//! ring the edge points of the subgrids beside it (SPLASH-2's
//! `copy_borders`, `copy_red`, `copy_black`), reading the other
//! processes' memory: the first or last row of the subgrid above or
//! below, and the copy of the last or first column of the one left or
//! right (a column read in place would fetch every unit of the subgrid:
//! at the seed's size on 2 nodes, 46 MB fetched a node instead of 8). The
//! walls' ghosts stay zero. That is the DSM's traffic: a neighbour's edges
//! on every level, for every half-sweep, and the slots of the reductions.
//! The phases obey:
//!
//! 1. A process writes only its own subgrids, ghost rings and column
//!    copies included, and after writing a grid's points it updates their
//!    column copies in the same phase.
//! 2. In a half-sweep of colour c it writes points of colour c
//!    ((i + j) mod 2 = c, global i and j) and their copies, and copies
//!    from its neighbours only points of the other colour, which nobody
//!    writes then.
//! 3. In every other phase it copies from neighbours only grids that no
//!    process writes in that phase.
//! 4. The partial sums alternate between two rows of slots, so a slot is
//!    rewritten only after a barrier that follows every process's reading
//!    of it.
//!
//! So the program is data-race free, and its result does not depend on
//! the order in which the processes run a phase: process 0 runs the same
//! phases for every process in turn on private memory laid out alike, and
//! checks ψ and ζ against that bit for bit. The number of levels depends
//! on the process grid (coarsest side ≥ max(R, C)), so the result may
//! differ between process counts, never between runs.

mod layout;
mod multigrid;

use super::parmacs::{Env, ParmacsError};
use super::{part, Kernel};
use layout::{Layout, View};
use threadwire_dsm::{DsmError, Region};

/// Red-black sweeps before and after the coarse-grid correction.
pub const SMOOTHING: usize = 1;
/// The solver stops when the residual's norm is below this fraction of
/// the right-hand side's.
pub const TOLERANCE: f64 = 1e-6;
/// The solver's most V-cycles per time step.
pub const MAX_CYCLES: usize = 30;
/// The time step.
const DT: f64 = 5e-4;
/// The planetary vorticity gradient.
const BETA: f64 = 10.0;
/// Bottom friction.
const FRICTION: f64 = 0.1;
/// Lateral viscosity.
const VISCOSITY: f64 = 1e-5;
/// The wind's curl at its strongest.
const WIND: f64 = 1.0;

/// Grid and time steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Interior points per side, a power of two; the grid is n + 2 per
    /// side with the wall.
    pub n: usize,
    /// Time steps.
    pub steps: usize,
}

impl Size {
    /// The seed's size, or `--small`'s.
    pub fn of(small: bool) -> Size {
        match small {
            false => Size { n: 256, steps: 3 },
            true => Size { n: 64, steps: 2 },
        }
    }
}

/// The grids, in shared memory or process 0's own: level 0's solution
/// is ψ and its right-hand side ζ.
struct Memory {
    /// The solution on every level.
    x: Vec<*mut f64>,
    /// The right-hand side on every level.
    f: Vec<*mut f64>,
    tendency: *mut f64,
    /// Two rows of P partial sums (rule 4).
    slots: *mut f64,
}

/// The processes running the phases: together, with a barrier after
/// each, or one after another in one thread.
trait Team {
    fn phase(&mut self, work: &dyn Fn(usize)) -> Result<(), DsmError>;
}

/// Process `pid` among the others.
struct Together<'a> {
    env: &'a Env,
    pid: usize,
}

impl Team for Together<'_> {
    fn phase(&mut self, work: &dyn Fn(usize)) -> Result<(), DsmError> {
        work(self.pid);
        self.env.barrier()
    }
}

/// Every process in turn, in process 0.
struct Alone {
    processes: usize,
}

impl Team for Alone {
    fn phase(&mut self, work: &dyn Fn(usize)) -> Result<(), DsmError> {
        (0..self.processes).for_each(work);
        Ok(())
    }
}

/// The computation over a [`Memory`]: the phases of the module docs.
struct Ocean {
    size: Size,
    layout: Layout,
}

impl Ocean {
    fn view(&self, grid: *mut f64, level: usize, p: usize) -> View {
        View {
            // In bounds of the level's array: p < P.
            at: grid.wrapping_add(p * self.layout.strides[level]),
            width: self.layout.patch(level, p).cols + 2,
        }
    }

    /// The distance between points on `level`: the basin's side is 1,
    /// each level's spacing twice the one above it.
    fn spacing(&self, level: usize) -> f64 {
        (1usize << level) as f64 / self.size.n as f64
    }

    /// ψ and ζ at the start: two modes of the basin, so that the Jacobian
    /// is not zero.
    fn initialize(&self, memory: &Memory, p: usize) {
        let patch = self.layout.patch(0, p);
        let (psi, zeta) = (self.view(memory.x[0], 0, p), self.view(memory.f[0], 0, p));
        let pi = std::f64::consts::PI;
        let n = self.size.n as f64;
        for i in 1..=patch.rows {
            let y = ((patch.row + i) as f64 - 0.5) / n;
            for j in 1..=patch.cols {
                let x = ((patch.col + j) as f64 - 0.5) / n;
                let one = (pi * x).sin() * (pi * y).sin();
                let two = 0.5 * (2.0 * pi * x).sin() * (3.0 * pi * y).sin();
                // SAFETY: p's own interior (rule 1), written before the
                // first barrier.
                unsafe {
                    psi.set(i, j, one + two);
                    zeta.set(i, j, -pi * pi * (2.0 * one + 13.0 * two));
                }
            }
        }
        // SAFETY: p's own, before the first barrier.
        unsafe {
            self.publish_edges(memory.x[0], 0, p, None);
            self.publish_edges(memory.f[0], 0, p, None);
        }
    }

    /// Copies into p's ghost ring of `grid` its neighbours' edge points,
    /// of `colour` only or all.
    ///
    /// # Safety
    ///
    /// `grid` is a level's array; nobody writes the points copied (rules
    /// 2 and 3).
    unsafe fn fill_ghosts(&self, grid: *mut f64, level: usize, p: usize, colour: Option<usize>) {
        let me = self.layout.patch(level, p);
        let view = self.view(grid, level, p);
        let wanted = |i: usize, j: usize| colour.is_none_or(|c| (i + j) % 2 == c);
        let [above, below, left, right] = self.layout.neighbours(p);
        // Global coordinates of ring point (i, j): row + i − 1, col + j − 1.
        let global = |i: usize, j: usize| (me.row + i, me.col + j);
        for (q, ring, edge) in [(above, 0, None), (below, me.rows + 1, Some(1))] {
            let Some(q) = q else { continue };
            let theirs = self.view(grid, level, q);
            let edge = edge.unwrap_or(self.layout.patch(level, q).rows);
            for j in 1..=me.cols {
                let (gi, gj) = global(ring, j);
                if wanted(gi, gj) {
                    // SAFETY: q's subgrid is beside p's with the same
                    // columns; the caller keeps its writers away.
                    unsafe { view.set(ring, j, theirs.get(edge, j)) };
                }
            }
        }
        // Columns from the copies their owners keep (`publish_edges`).
        for (q, ring, first) in [(left, 0, me.rows), (right, me.cols + 1, 0)] {
            let Some(q) = q else { continue };
            let column = self.edges(grid, level, q).wrapping_add(first);
            for i in 1..=me.rows {
                let (gi, gj) = global(i, ring);
                if wanted(gi, gj) {
                    // SAFETY: q's edge copies hold as many rows as p's
                    // subgrid; the caller keeps their writers away.
                    unsafe { view.set(i, ring, *column.add(i - 1)) };
                }
            }
        }
    }

    /// p's edge columns of `grid` on `level`, the left then the right.
    fn edges(&self, grid: *mut f64, level: usize, p: usize) -> *mut f64 {
        // In bounds of the level's array: p < P.
        grid.wrapping_add(p * self.layout.strides[level] + self.layout.edges[level])
    }

    /// Copies p's first and last interior columns of `grid`, points of
    /// `colour` only or all, where its left and right neighbours read
    /// them: two short runs, where a column of the subgrid itself would
    /// make a neighbour fetch every unit of it.
    ///
    /// # Safety
    ///
    /// The points copied are p's to write now (rules 1 and 2).
    unsafe fn publish_edges(&self, grid: *mut f64, level: usize, p: usize, colour: Option<usize>) {
        let [_, _, left, right] = self.layout.neighbours(p);
        let me = self.layout.patch(level, p);
        let view = self.view(grid, level, p);
        let edges = self.edges(grid, level, p);
        for (neighbour, j, first) in [(left, 1, 0), (right, me.cols, me.rows)] {
            if neighbour.is_none() {
                continue;
            }
            for i in 1..=me.rows {
                if colour.is_none_or(|c| (me.row + i + me.col + j) % 2 == c) {
                    // SAFETY: p's own copy of its own point.
                    unsafe { *edges.add(first + i - 1) = view.get(i, j) };
                }
            }
        }
    }

    /// Step 1: T over p's subgrid.
    fn tendency(&self, m: &Memory, p: usize) {
        // SAFETY: nobody writes ψ or ζ in this phase (rule 3).
        unsafe {
            self.fill_ghosts(m.x[0], 0, p, None);
            self.fill_ghosts(m.f[0], 0, p, None);
        }
        let patch = self.layout.patch(0, p);
        let (psi, zeta, t) = (
            self.view(m.x[0], 0, p),
            self.view(m.f[0], 0, p),
            self.view(m.tendency, 0, p),
        );
        let n = self.size.n as f64;
        let (half_inverse_h, inverse_h2) = (0.5 * n, n * n);
        for i in 1..=patch.rows {
            let y = ((patch.row + i) as f64 - 0.5) / n;
            let wind = -WIND * (std::f64::consts::PI * y).sin();
            for j in 1..=patch.cols {
                // SAFETY: p's subgrid and ring; T is p's own (rule 1).
                unsafe {
                    let psi_x = (psi.get(i, j + 1) - psi.get(i, j - 1)) * half_inverse_h;
                    let psi_y = (psi.get(i + 1, j) - psi.get(i - 1, j)) * half_inverse_h;
                    let zeta_x = (zeta.get(i, j + 1) - zeta.get(i, j - 1)) * half_inverse_h;
                    let zeta_y = (zeta.get(i + 1, j) - zeta.get(i - 1, j)) * half_inverse_h;
                    let z = zeta.get(i, j);
                    let laplacian = (zeta.get(i - 1, j)
                        + zeta.get(i + 1, j)
                        + zeta.get(i, j - 1)
                        + zeta.get(i, j + 1)
                        - 4.0 * z)
                        * inverse_h2;
                    let jacobian = psi_x * zeta_y - psi_y * zeta_x;
                    t.set(
                        i,
                        j,
                        wind - jacobian - BETA * psi_x - FRICTION * z + VISCOSITY * laplacian,
                    );
                }
            }
        }
    }

    /// Step 2: ζ += Δt·T, and p's sum of ζ² into its slot of `row`.
    fn advance(&self, m: &Memory, p: usize, row: usize) {
        let patch = self.layout.patch(0, p);
        let (zeta, t) = (self.view(m.f[0], 0, p), self.view(m.tendency, 0, p));
        let mut sum = 0.0;
        for i in 1..=patch.rows {
            for j in 1..=patch.cols {
                // SAFETY: p's own ζ and T, read by nobody else now.
                unsafe {
                    let z = zeta.get(i, j) + DT * t.get(i, j);
                    zeta.set(i, j, z);
                    sum += z * z;
                }
            }
        }
        // SAFETY: p's slot (rule 4); ζ is p's to write now.
        unsafe {
            *m.slots.add(row * self.layout.processes + p) = sum;
            self.publish_edges(m.f[0], 0, p, None);
        }
    }

    /// The sum of row `row`'s slots in the order of the pids.
    fn total(&self, m: &Memory, row: usize) -> f64 {
        (0..self.layout.processes)
            // SAFETY: written before the last barrier, rewritten only
            // after the next (rule 4).
            .map(|p| unsafe { *m.slots.add(row * self.layout.processes + p) })
            .sum()
    }

    /// Every time step (module docs), the phases run by `team`; returns
    /// the V-cycles run.
    fn simulate(&self, m: &Memory, team: &mut dyn Team) -> Result<usize, DsmError> {
        let (mut reductions, mut cycles) = (0, 0);
        let mut next_row = || {
            reductions += 1;
            reductions % 2
        };
        for _ in 0..self.size.steps {
            team.phase(&|p| self.tendency(m, p))?;
            let row = next_row();
            team.phase(&|p| self.advance(m, p, row))?;
            let goal = TOLERANCE * TOLERANCE * self.total(m, row);
            for _ in 0..MAX_CYCLES {
                self.v_cycle(m, team)?;
                cycles += 1;
                let row = next_row();
                team.phase(&|p| self.residual_norm(m, p, row))?;
                if self.total(m, row) <= goal {
                    break;
                }
            }
        }
        Ok(cycles)
    }

    /// The grids in process 0's own memory, run alone: ψ, ζ and the
    /// V-cycles run.
    fn sequential(&self) -> (Vec<f64>, Vec<f64>, usize) {
        let layout = &self.layout;
        let mut x: Vec<Vec<f64>> = (0..layout.levels)
            .map(|l| vec![0.0; layout.len(l)])
            .collect();
        let mut f: Vec<Vec<f64>> = (0..layout.levels)
            .map(|l| vec![0.0; layout.len(l)])
            .collect();
        let mut tendency = vec![0.0; layout.len(0)];
        let mut slots = vec![0.0; 2 * layout.processes];
        let memory = Memory {
            x: x.iter_mut().map(|g| g.as_mut_ptr()).collect(),
            f: f.iter_mut().map(|g| g.as_mut_ptr()).collect(),
            tendency: tendency.as_mut_ptr(),
            slots: slots.as_mut_ptr(),
        };
        for p in 0..layout.processes {
            self.initialize(&memory, p);
        }
        let cycles = self
            .simulate(
                &memory,
                &mut Alone {
                    processes: layout.processes,
                },
            )
            .unwrap_or_else(|_| unreachable!("one thread has no barriers to fail"));
        drop(memory);
        (x.swap_remove(0), f.swap_remove(0), cycles)
    }
}

/// The program's shared state.
pub struct OceanContiguous {
    ocean: Ocean,
    x: Vec<Region<f64>>,
    f: Vec<Region<f64>>,
    tendency: Region<f64>,
    slots: Region<f64>,
}

impl OceanContiguous {
    /// Allocates every level's grids (PARMACS step 1), each process's
    /// subgrids homed on its node.
    pub fn new(env: &Env, small: bool) -> Result<OceanContiguous, ParmacsError> {
        let size = Size::of(small);
        let layout = Layout::new(size.n, env.processes());
        let blocks = |level| env.g_malloc_blocks(layout.len(level));
        let x = (0..layout.levels).map(blocks).collect::<Result<_, _>>()?;
        let f = (0..layout.levels).map(blocks).collect::<Result<_, _>>()?;
        let tendency = blocks(0)?;
        let slots = env.g_malloc(2 * env.processes())?;
        Ok(OceanContiguous {
            ocean: Ocean { size, layout },
            x,
            f,
            tendency,
            slots,
        })
    }

    fn memory(&self) -> Memory {
        Memory {
            x: self.x.iter().map(Region::as_ptr).collect(),
            f: self.f.iter().map(Region::as_ptr).collect(),
            tendency: self.tendency.as_ptr(),
            slots: self.slots.as_ptr(),
        }
    }
}

impl Kernel for OceanContiguous {
    fn size(&self) -> String {
        let s = self.ocean.size;
        format!(
            "{0}x{0} grid, {1} time steps, {2} multigrid levels",
            s.n + 2,
            s.steps,
            self.ocean.layout.levels
        )
    }

    fn initialize(&self, _env: &Env, pid: usize) {
        self.ocean.initialize(&self.memory(), pid);
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        self.ocean
            .simulate(&self.memory(), &mut Together { env, pid })
            .map(drop)
    }

    fn check(&self) -> (bool, &'static str) {
        let (psi, zeta, _) = self.ocean.sequential();
        // SAFETY: nobody writes the grids while process 0 checks them.
        let (ours_psi, ours_zeta) = unsafe {
            (
                part(&self.x[0], 0..self.x[0].len()),
                part(&self.f[0], 0..self.f[0].len()),
            )
        };
        (
            ours_psi == psi.as_slice() && ours_zeta == zeta.as_slice(),
            "the phases run sequentially",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multigrid_solver_converges_within_its_cycles() {
        for processes in [1, 4] {
            let ocean = Ocean {
                size: Size::of(true),
                layout: Layout::new(64, processes),
            };
            let (_, _, cycles) = ocean.sequential();
            // Each V-cycle cuts the residual about fivefold: 1e-6 in 6 or 7.
            assert!(cycles <= 8 * ocean.size.steps, "{cycles} V-cycles");
        }
    }

    #[test]
    fn the_result_does_not_depend_on_how_the_grid_is_cut_at_one_depth() {
        // 1 and 2 processes both coarsen to a side of 2: the same levels,
        // so the same grid, bit for bit, whoever owns which points.
        let interior = |processes| {
            let ocean = Ocean {
                size: Size::of(true),
                layout: Layout::new(64, processes),
            };
            let (psi, _, _) = ocean.sequential();
            let mut grid = vec![0.0; 64 * 64];
            for p in 0..processes {
                let patch = ocean.layout.patch(0, p);
                let view = ocean.view(psi.as_ptr().cast_mut(), 0, p);
                for i in 1..=patch.rows {
                    for j in 1..=patch.cols {
                        // SAFETY: inside p's subgrid of a live vector.
                        grid[(patch.row + i - 1) * 64 + patch.col + j - 1] =
                            unsafe { view.get(i, j) };
                    }
                }
            }
            grid
        };
        assert_eq!(interior(1), interior(2));
    }
}
