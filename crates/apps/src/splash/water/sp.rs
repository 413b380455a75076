//! WATER-sp: SPLASH-2's spatial water simulation — the box cut into a
//! grid of cells at least the cutoff wide, so that a molecule meets only
//! the molecules of its own and the 26 neighbouring cells (the seed's
//! 1000 molecules, 3 steps; the physics in the [module above](super)).
//!
//! The cells, numbered x fastest, then y, then z, are shared out among
//! the processes in contiguous blocks (slabs of the box, a node's
//! processes neighbours). Each cell holds up to [`CAPACITY`] molecules in
//! shared memory — their positions in one array, which neighbours read,
//! their ids, velocities and accelerations in another, which they do
//! not — and its count; its owner alone writes them. Forces need no
//! shared array and no lock: each process computes the forces on its own
//! molecules only, every pair across two processes' cells thus computed
//! twice, once by each molecule's owner (owner-computes: no molecule is
//! written by two processes).
//!
//! Before the first step, the forces of the start give each process its
//! molecules' accelerations; a barrier. Then each time step:
//!
//! 1. p predicts its cells' molecules ([`predict`]); a barrier.
//! 2. For each of its molecules, p sums the intramolecular forces and the
//!    forces of every molecule of the neighbouring cells within the
//!    cutoff (reading the positions other processes wrote in step 1);
//!    a barrier.
//! 3. p corrects its molecules ([`correct`]) and adds their kinetic
//!    energy and half of their pairs' potential energy (each pair is seen
//!    from both sides) to the step's sums under a global lock.
//! 4. p takes out of its cells every molecule whose oxygen has left its
//!    cell, into its outbox in shared memory; a barrier.
//! 5. p reads every process's outbox and puts the molecules bound for its
//!    cells into them (the last step's barrier is the runner's).
//!
//! What the DSM carries: in step 2 each process reads the cells next to
//! its slab (their positions only), and in step 5 the molecules that
//! changed cells: few and small, the seed's WATER-sp. An oxygen moves
//! about a thousandth of an ångström a step, so the cells are made
//! [`MARGIN`] wider than the cutoff: a molecule is at most a step's
//! drift out of its cell when step 2 looks for it. Conflicting accesses
//! are ordered: a cell is written by its owner in steps 1, 3, 4, 5 and
//! read by others in step 2, barriers apart; an outbox is written in step
//! 4 and read in step 5, a barrier apart, and written again after the
//! next step's first barrier.
//!
//! Checked in process 0 against the same simulation run sequentially,
//! molecule by molecule (found by id: their order in the cells differs),
//! to a relative 1e-9 ([`super::agrees`]: not bit for bit, since the
//! order of the sums depends on the cells' order), energies included.

use super::{accelerations, add, correct, intramolecular, predict, Sites, System, Trajectory};
use crate::splash::parmacs::{Env, ParmacsError};
use crate::splash::{part, part_mut, share, Kernel};
use threadwire_dsm::{DsmError, Region};

/// Molecules a cell can hold: the start puts up to 27 in one (three
/// lattice planes a side), about 16 on average at the seed's size. Each
/// slot is 72 bytes of positions that neighbours fetch by the unit: 32
/// rather than 48 slots took the units a node fetches from 68 to 47 on 2
/// nodes over fast100.
pub const CAPACITY: usize = 32;

/// Molecules a process can send to other cells in one step; they move
/// far less than a cell in a few steps.
const OUTBOX: usize = 256;

/// How much wider than the cutoff a cell must be, Å.
const MARGIN: f64 = 0.1;

/// The lock of the energies.
const ENERGY_LOCK: u32 = 0;

/// The cutoff of WATER-spatial's input, Å.
const CUTOFF: f64 = 6.212752;

/// The seed's system (1000 molecules times `scale`, 3 steps: four cells
/// a side at scale 1) or `--small`'s (343, 2: three cells a side).
pub fn size(small: bool, scale: usize) -> System {
    match small {
        false => System::new(1000 * scale, 3, CUTOFF),
        true => System::new(343, 2, CUTOFF),
    }
}

/// What only a molecule's owner reads of it: its id and motion.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Motion {
    id: u64,
    velocity: Sites,
    acceleration: Sites,
}

// SAFETY: `repr(C)`, a u64 and f64 arrays: no padding, and every bit
// pattern is a value.
unsafe impl bytemuck::Zeroable for Motion {}
// SAFETY: as above; Copy and 'static.
unsafe impl bytemuck::Pod for Motion {}

/// A whole molecule, as it moves between cells.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Resident {
    position: Sites,
    motion: Motion,
}

// SAFETY: `repr(C)` of Pod fields with no padding between them (both are
// of f64 alignment and whole f64s long).
unsafe impl bytemuck::Zeroable for Resident {}
// SAFETY: as above; Copy and 'static.
unsafe impl bytemuck::Pod for Resident {}

/// The grid of cells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// Cells along each side.
    pub per_side: usize,
    /// A cell's side, Å.
    width: f64,
}

impl Grid {
    /// As many cells a side as are [`MARGIN`] wider than the cutoff.
    pub fn of(system: &System) -> Grid {
        let per_side = ((system.side / (system.cutoff + MARGIN)) as usize).max(1);
        Grid {
            per_side,
            width: system.side / per_side as f64,
        }
    }

    /// Cells in all.
    pub fn cells(self) -> usize {
        self.per_side.pow(3)
    }

    /// The cell of a molecule, by its oxygen (in the box).
    fn cell_of(self, x: &Sites) -> usize {
        let c = |d: usize| ((x[d] / self.width) as usize).min(self.per_side - 1);
        (c(2) * self.per_side + c(1)) * self.per_side + c(0)
    }

    /// The cell and its neighbours, periodic, each once (with fewer than
    /// three cells a side, the left and right neighbours are one).
    fn neighbours(self, cell: usize) -> Vec<usize> {
        let m = self.per_side;
        let at = [cell % m, cell / m % m, cell / (m * m)];
        let mut all = Vec::with_capacity(27);
        for dz in [m - 1, 0, 1] {
            for dy in [m - 1, 0, 1] {
                for dx in [m - 1, 0, 1] {
                    let [x, y, z] = [(at[0] + dx) % m, (at[1] + dy) % m, (at[2] + dz) % m];
                    all.push((z * m + y) * m + x);
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// The program's shared state.
pub struct WaterSp {
    system: System,
    grid: Grid,
    /// Cell c's molecules are `CAPACITY * c ..`, `counts[c]` of them:
    /// their positions, which neighbours read, apart from the rest, so
    /// that a fetched unit holds only what they need.
    positions: Region<Sites>,
    motions: Region<Motion>,
    counts: Region<u64>,
    /// Process p's movers are `OUTBOX * p ..`, `moving[p]` of them.
    outboxes: Region<Resident>,
    moving: Region<u64>,
    /// Kinetic and potential energy of each step.
    energies: Region<f64>,
}

impl WaterSp {
    /// Allocates the cells, outboxes and energies (PARMACS step 1).
    pub fn new(env: &Env, small: bool, scale: usize) -> Result<WaterSp, ParmacsError> {
        let system = size(small, scale);
        let grid = Grid::of(&system);
        let cells = grid.cells();
        // Each node's cells and outboxes homed on it: owners' writes stay
        // local.
        Ok(WaterSp {
            system,
            grid,
            positions: env.g_malloc_blocks(cells * CAPACITY)?,
            motions: env.g_malloc_blocks(cells * CAPACITY)?,
            counts: env.g_malloc_blocks(cells)?,
            outboxes: env.g_malloc_blocks(env.processes() * OUTBOX)?,
            moving: env.g_malloc(env.processes())?,
            energies: env.g_malloc(2 * system.steps)?,
        })
    }

    /// The slots of cell `c` in use.
    ///
    /// # Safety
    ///
    /// As [`part`]'s: nobody writes the cell's count meanwhile.
    unsafe fn slots(&self, c: usize) -> std::ops::Range<usize> {
        // SAFETY: the caller's.
        let count = unsafe { part(&self.counts, c..c + 1) }[0] as usize;
        c * CAPACITY..c * CAPACITY + count
    }

    /// The positions of cell `c`'s molecules.
    ///
    /// # Safety
    ///
    /// As [`part`]'s: nobody writes the cell meanwhile.
    unsafe fn positions_of(&self, c: usize) -> &[Sites] {
        // SAFETY: the caller's.
        unsafe { part(&self.positions, self.slots(c)) }
    }

    /// The molecules of cell `c`, to write: positions and motions.
    ///
    /// # Safety
    ///
    /// As [`part_mut`]'s: nobody else reads or writes the cell meanwhile.
    #[allow(clippy::mut_from_ref)]
    unsafe fn cell_mut(&self, c: usize) -> (&mut [Sites], &mut [Motion]) {
        // SAFETY: the caller's.
        unsafe {
            let slots = self.slots(c);
            (
                part_mut(&self.positions, slots.clone()),
                part_mut(&self.motions, slots),
            )
        }
    }

    /// Appends `r` to cell `c`.
    ///
    /// # Safety
    ///
    /// As [`part_mut`]'s: nobody else reads or writes the cell meanwhile.
    unsafe fn push(&self, c: usize, r: Resident) {
        let count = self.counts.get(c) as usize;
        assert!(
            count < CAPACITY,
            "cell {c} holds {CAPACITY} molecules already"
        );
        self.counts.set(c, count as u64 + 1);
        // SAFETY: the caller's.
        let (x, m) = unsafe { self.cell_mut(c) };
        (x[count], m[count]) = (r.position, r.motion);
    }

    /// Step 2 for the cells `own`: the forces on each of their molecules,
    /// by cell and slot ([`CAPACITY`] per cell), and their potential
    /// energy (half of each pair's).
    fn forces(&self, own: std::ops::Range<usize>, near: &[Vec<usize>]) -> (Vec<Sites>, f64) {
        let mut forces = vec![[0.0; 9]; own.len() * CAPACITY];
        let mut twice_potential = 0.0;
        for (k, c) in own.enumerate() {
            // SAFETY: cells are written only outside step 2, barriers
            // apart.
            let mine = unsafe { self.positions_of(c) };
            for (slot, xi) in mine.iter().enumerate() {
                let f = &mut forces[k * CAPACITY + slot];
                twice_potential += 2.0 * intramolecular(xi, f);
                for &d in &near[k] {
                    // SAFETY: as above.
                    for (other, xj) in unsafe { self.positions_of(d) }.iter().enumerate() {
                        if d == c && other == slot {
                            continue;
                        }
                        if let Some((fi, _, e)) = self.system.pair(xi, xj) {
                            add(f, &fi);
                            twice_potential += e;
                        }
                    }
                }
            }
        }
        (forces, 0.5 * twice_potential)
    }
}

impl Kernel for WaterSp {
    fn size(&self) -> String {
        let s = self.system;
        let m = self.grid.per_side;
        format!(
            "{} molecules, {} steps, box {:.2} Å, cutoff {:.2} Å, {m}x{m}x{m} cells",
            s.molecules, s.steps, s.side, s.cutoff
        )
    }

    fn initialize(&self, env: &Env, pid: usize) {
        let own = share(self.grid.cells(), env.processes(), pid);
        for id in 0..self.system.molecules {
            let (position, velocity) = self.system.start(id);
            let c = self.grid.cell_of(&position);
            if own.contains(&c) {
                let r = Resident {
                    position,
                    motion: Motion {
                        id: id as u64,
                        velocity,
                        acceleration: [0.0; 9],
                    },
                };
                // SAFETY: the cell is this process's; a barrier follows.
                unsafe { self.push(c, r) };
            }
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let processes = env.processes();
        let own = share(self.grid.cells(), processes, pid);
        let near: Vec<Vec<usize>> = own.clone().map(|c| self.grid.neighbours(c)).collect();
        // SAFETY: only the owner writes its cells, outside step 2 (barriers
        // apart); each cell's slices are dropped before step 2 reads.
        let mine = |c: usize| unsafe { self.cell_mut(c) };
        let (forces, _) = self.forces(own.clone(), &near);
        for (k, c) in own.clone().enumerate() {
            for (slot, m) in mine(c).1.iter_mut().enumerate() {
                m.acceleration = accelerations(&forces[k * CAPACITY + slot]);
            }
        }
        env.barrier()?;
        for step in 0..self.system.steps {
            for c in own.clone() {
                let (x, m) = mine(c);
                for (x, m) in x.iter_mut().zip(m) {
                    predict(&self.system, x, &mut m.velocity, &m.acceleration);
                }
            }
            env.barrier()?;
            let (forces, potential) = self.forces(own.clone(), &near);
            env.barrier()?;
            let mut kinetic = 0.0;
            for (k, c) in own.clone().enumerate() {
                for (slot, m) in mine(c).1.iter_mut().enumerate() {
                    let f = &forces[k * CAPACITY + slot];
                    kinetic += correct(&mut m.velocity, &mut m.acceleration, f);
                }
            }
            {
                let _held = env.lock(ENERGY_LOCK)?;
                let (k, p) = (self.energies.get(2 * step), self.energies.get(2 * step + 1));
                self.energies.set(2 * step, k + kinetic);
                self.energies.set(2 * step + 1, p + potential);
            }
            // SAFETY: the outbox is this process's; others read it in step
            // 5 only, barriers apart.
            let outbox = unsafe { part_mut(&self.outboxes, pid * OUTBOX..(pid + 1) * OUTBOX) };
            let mut leaving = 0;
            for c in own.clone() {
                let (x, m) = mine(c);
                let mut count = x.len();
                let mut slot = 0;
                while slot < count {
                    if self.grid.cell_of(&x[slot]) == c {
                        slot += 1;
                        continue;
                    }
                    assert!(
                        leaving < OUTBOX,
                        "more than {OUTBOX} molecules leave process {pid}'s cells"
                    );
                    outbox[leaving] = Resident {
                        position: x[slot],
                        motion: m[slot],
                    };
                    leaving += 1;
                    count -= 1;
                    (x[slot], m[slot]) = (x[count], m[count]);
                }
                self.counts.set(c, count as u64);
            }
            self.moving.set(pid, leaving as u64);
            env.barrier()?;
            for p in 0..processes {
                let movers = self.moving.get(p) as usize;
                // SAFETY: outboxes are written in step 4 only, a barrier
                // before.
                for r in unsafe { part(&self.outboxes, p * OUTBOX..p * OUTBOX + movers) } {
                    let c = self.grid.cell_of(&r.position);
                    if own.contains(&c) {
                        // SAFETY: the cell is this process's.
                        unsafe { self.push(c, *r) };
                    }
                }
            }
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        let n = self.system.molecules;
        let mut all: Vec<Resident> = Vec::with_capacity(n);
        for c in 0..self.grid.cells() {
            // SAFETY: nobody writes while process 0 checks.
            let (x, m) = unsafe { (self.positions_of(c), part(&self.motions, self.slots(c))) };
            all.extend(
                x.iter()
                    .zip(m)
                    .map(|(&position, &motion)| Resident { position, motion }),
            );
        }
        all.sort_unstable_by_key(|r| r.motion.id);
        let every_one_once =
            all.len() == n && all.iter().enumerate().all(|(i, r)| r.motion.id == i as u64);
        // SAFETY: as above.
        let energies = unsafe { part(&self.energies, 0..self.energies.len()) };
        let got = Trajectory {
            positions: all.iter().map(|r| r.position).collect(),
            velocities: all.iter().map(|r| r.motion.velocity).collect(),
            energies: energies.chunks(2).map(|e| [e[0], e[1]]).collect(),
        };
        (
            every_one_once && super::agrees(&self.system, &got),
            "the simulation run sequentially, to a relative 1e-9",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cells_are_wide_enough_and_molecules_change_cells() {
        for small in [true, false] {
            let system = size(small, 1);
            let grid = Grid::of(&system);
            assert!(grid.width >= system.cutoff + MARGIN);
            assert!(grid.per_side >= 3, "{grid:?}");
            let start: Vec<usize> = (0..system.molecules)
                .map(|i| grid.cell_of(&system.start(i).0))
                .collect();
            let end = super::super::simulate(&system).positions;
            let moved = start
                .iter()
                .zip(&end)
                .filter(|(c, x)| **c != grid.cell_of(x))
                .count();
            assert!(moved > 0, "no molecule changes cells at {system:?}");
        }
    }

    #[test]
    fn neighbours_are_distinct_and_include_the_cell() {
        for per_side in [1, 2, 3, 5] {
            let grid = Grid {
                per_side,
                width: 1.0,
            };
            for c in 0..grid.cells() {
                let near = grid.neighbours(c);
                assert!(near.contains(&c));
                assert_eq!(near.len(), per_side.min(3).pow(3));
            }
        }
    }
}
