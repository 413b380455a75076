//! WATER-n2: SPLASH-2's O(n²) water simulation — every pair of molecules
//! within half the box, found by looking at every pair (the seed's 4096
//! molecules, 3 steps; the physics in the [module above](super)).
//!
//! Process p owns a contiguous share of the molecules (so a node's
//! processes own neighbouring molecules). Shared: each molecule's
//! positions, velocities and accelerations, written by its owner alone,
//! and its forces, added to by any process under the lock of its group
//! of [`GROUP`] molecules; and each step's energies, added to under one
//! lock. (SPLASH-2 locks each molecule; a group whose forces fill about
//! one 8 KiB unit costs one lock hand-off per unit the DSM moves anyway,
//! rather than one per molecule.)
//!
//! Before the first step, steps 2–3 below give every molecule's forces at
//! the start, and each owner turns its molecules' into accelerations. Then
//! each time step:
//!
//! 1. p predicts its molecules' positions ([`predict`]); a barrier.
//! 2. p adds its molecules' intramolecular forces to a private array of
//!    every molecule's forces.
//! 3. For each of its molecules i and each j among the n/2 molecules
//!    after i (modulo n, SPLASH-2's half shell, so every pair is seen
//!    once), p adds the pair's forces (if within the cutoff) to i's and
//!    j's in the private array. Then, group by group from its own first
//!    one, p takes the lock of each group it touched and adds its private
//!    forces into the shared ones. A barrier.
//! 4. p corrects its molecules ([`correct`]) and zeroes their shared
//!    forces for the next step; a barrier.
//! 5. p adds its molecules' kinetic energy and the potential energy of
//!    its pairs and molecules to the step's sums under a global lock; a
//!    barrier (the last step's is the runner's).
//!
//! What the DSM carries: every node reads every molecule's positions each
//! step (the units its owners rewrote), and each process's flush of step
//! 3 takes about (n/2 + n/P)/[`GROUP`] locks, each bringing the group's
//! forces from the last holder's node: many small messages, which is what
//! the seed measured of WATER-n2. Conflicting accesses are ordered: the
//! positions are written in step 1 and read in step 3, a barrier between;
//! the shared forces are written under their group's lock in step 3 and
//! by their owner in step 4, a barrier between.
//!
//! Checked in process 0 against the simulation run sequentially, to a
//! relative 1e-9 ([`super::agrees`]: the order in which forces are added
//! depends on P, so not bit for bit), energies included.

use super::{accelerations, add, correct, intramolecular, predict, Sites, System, Trajectory};
use crate::splash::parmacs::{Env, ParmacsError};
use crate::splash::{part, part_mut, share, Kernel};
use threadwire_dsm::{DsmError, Region};

/// Molecules whose shared forces one lock guards.
pub const GROUP: usize = 128;

/// The lock of the energies; group g's is `1 + g`.
const ENERGY_LOCK: u32 = 0;

/// The seed's system (4096 molecules times `scale`, 3 steps) or
/// `--small`'s (64, 2); the cutoff is half the box, as WATER-nsquared's.
pub fn size(small: bool, scale: usize) -> System {
    match small {
        false => System::new(4096 * scale, 3, f64::INFINITY),
        true => System::new(64, 2, f64::INFINITY),
    }
}

/// The program's shared state.
pub struct WaterN2 {
    system: System,
    positions: Region<Sites>,
    velocities: Region<Sites>,
    accelerations: Region<Sites>,
    forces: Region<Sites>,
    /// Kinetic and potential energy of each step.
    energies: Region<f64>,
}

impl WaterN2 {
    /// Allocates the molecules and the energies (PARMACS step 1).
    pub fn new(env: &Env, small: bool, scale: usize) -> Result<WaterN2, ParmacsError> {
        let system = size(small, scale);
        let n = system.molecules;
        // Each node's molecules homed on it: owners' writes stay local.
        Ok(WaterN2 {
            system,
            positions: env.g_malloc_blocks(n)?,
            velocities: env.g_malloc_blocks(n)?,
            accelerations: env.g_malloc_blocks(n)?,
            forces: env.g_malloc_blocks(n)?,
            energies: env.g_malloc(2 * system.steps)?,
        })
    }

    /// Steps 2 and 3, ending in the barrier: every molecule's forces at
    /// the current positions, added into the shared forces; this process's
    /// part of the potential energy. `private` is all zeroes before and
    /// after.
    fn forces(
        &self,
        env: &Env,
        own: std::ops::Range<usize>,
        private: &mut [Sites],
    ) -> Result<f64, DsmError> {
        let n = self.system.molecules;
        // SAFETY: positions are written in step 1 only, before a barrier.
        let x = unsafe { part(&self.positions, 0..n) };
        let mut potential = 0.0;
        for i in own.clone() {
            potential += intramolecular(&x[i], &mut private[i]);
        }
        let reach = self.system.cutoff * self.system.cutoff;
        for i in own.clone() {
            let xi = x[i];
            // With n even, the pair n/2 apart is seen from the first half
            // only.
            let ahead = if n.is_multiple_of(2) && i >= n / 2 {
                n / 2 - 1
            } else {
                n / 2
            };
            let wrapped = (i + 1 + ahead).saturating_sub(n);
            for js in [i + 1..i + 1 + ahead - wrapped, 0..wrapped] {
                for j in js {
                    let (shift, r2) = self.system.image(&xi, &x[j]);
                    if r2 < reach {
                        let (fi, fj, e) = self.system.interact(&xi, &x[j], shift, r2);
                        add(&mut private[i], &fi);
                        add(&mut private[j], &fj);
                        potential += e;
                    }
                }
            }
        }
        let groups = n.div_ceil(GROUP);
        let mut touched = vec![false; groups];
        for m in own.start..own.start + n.min(own.len() + n / 2) {
            touched[m % n / GROUP] = true;
        }
        for g in (0..groups).map(|g| (own.start / GROUP + g) % groups) {
            if !touched[g] {
                continue;
            }
            let range = g * GROUP..n.min((g + 1) * GROUP);
            let _held = env.lock(1 + g as u32)?;
            // SAFETY: the group's forces are written under its lock in
            // this step, and by their owners after the barrier below.
            let shared = unsafe { part_mut(&self.forces, range.clone()) };
            for (to, from) in shared.iter_mut().zip(&mut private[range]) {
                add(to, from);
                *from = [0.0; 9];
            }
        }
        env.barrier()?;
        Ok(potential)
    }
}

impl Kernel for WaterN2 {
    fn size(&self) -> String {
        let s = self.system;
        format!(
            "{} molecules, {} steps, box {:.2} Å, cutoff {:.2} Å",
            s.molecules, s.steps, s.side, s.cutoff
        )
    }

    fn initialize(&self, env: &Env, pid: usize) {
        let own = share(self.system.molecules, env.processes(), pid);
        // SAFETY: each process writes its own molecules; a barrier follows.
        let (x, v) = unsafe {
            (
                part_mut(&self.positions, own.clone()),
                part_mut(&self.velocities, own.clone()),
            )
        };
        for (k, i) in own.enumerate() {
            (x[k], v[k]) = self.system.start(i);
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let (n, steps) = (self.system.molecules, self.system.steps);
        let own = share(n, env.processes(), pid);
        let mut private = vec![[0.0; 9]; n];
        // The own molecules' positions, velocities, accelerations and
        // forces, to write.
        // SAFETY: outside steps 2–3 the owner alone touches its molecules
        // (step 3 reads positions and adds to forces, barriers apart);
        // the slices are dropped before steps 2–3 make their own.
        let mine = || unsafe {
            (
                part_mut(&self.positions, own.clone()),
                part_mut(&self.velocities, own.clone()),
                part_mut(&self.accelerations, own.clone()),
                part_mut(&self.forces, own.clone()),
            )
        };
        self.forces(env, own.clone(), &mut private)?;
        {
            let (_, _, a, f) = mine();
            for (a, f) in a.iter_mut().zip(f) {
                *a = accelerations(f);
                *f = [0.0; 9];
            }
        }
        for step in 0..steps {
            {
                let (x, v, a, _) = mine();
                for k in 0..own.len() {
                    predict(&self.system, &mut x[k], &mut v[k], &a[k]);
                }
            }
            env.barrier()?;
            let potential = self.forces(env, own.clone(), &mut private)?;
            let (_, v, a, f) = mine();
            let mut kinetic = 0.0;
            for k in 0..own.len() {
                kinetic += correct(&mut v[k], &mut a[k], &f[k]);
                f[k] = [0.0; 9];
            }
            env.barrier()?;
            {
                let _held = env.lock(ENERGY_LOCK)?;
                let (k, p) = (self.energies.get(2 * step), self.energies.get(2 * step + 1));
                self.energies.set(2 * step, k + kinetic);
                self.energies.set(2 * step + 1, p + potential);
            }
            if step + 1 < steps {
                env.barrier()?;
            }
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        let n = self.system.molecules;
        // SAFETY: nobody writes while process 0 checks.
        let got = unsafe {
            Trajectory {
                positions: part(&self.positions, 0..n).to_vec(),
                velocities: part(&self.velocities, 0..n).to_vec(),
                energies: part(&self.energies, 0..self.energies.len())
                    .chunks(2)
                    .map(|e| [e[0], e[1]])
                    .collect(),
            }
        };
        (
            super::agrees(&self.system, &got),
            "the simulation run sequentially, to a relative 1e-9",
        )
    }
}
