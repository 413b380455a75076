//! The water of SPLASH-2's WATER programs, shared by [`n2`] (every pair of
//! molecules, O(n²)) and [`sp`] (a grid of cells): the molecules, their
//! forces, the integrator, and the same simulation run sequentially that
//! both are checked against.
//!
//! # The model
//!
//! A flexible three-site water (SPLASH-2's is flexible too), in Å, ps, amu
//! and kcal/mol:
//!
//! - each molecule is an oxygen and two hydrogens (its [`Sites`]), the
//!   charges and oxygen Lennard-Jones parameters of SPC (q_O = −0.82 e,
//!   q_H = +0.41 e, σ = 3.166 Å, ε = 0.1553 kcal/mol);
//! - *intramolecular* forces: harmonic springs O–H (1 Å) and H–H
//!   (1.633 Å, SPC's 109.47° angle), ½k(r − r₀)²;
//! - *intermolecular* forces, between two molecules whose oxygens are
//!   closer than the cutoff (SPLASH-2 cuts off whole molecules by their
//!   distance too): Lennard-Jones O–O plus Coulomb between all nine pairs
//!   of charged sites, no smoothing;
//! - a periodic cubic box at water's density (0.0334 molecules/Å³),
//!   minimum image on the oxygens' distance; the cutoff is SPLASH-2's:
//!   half the box for WATER-n2 (WATER-nsquared's `max(BOXH, CUTOFF)`,
//!   its input giving none), 6.212752 Å for WATER-sp (WATER-spatial's
//!   input), never more than half the box; a molecule whose oxygen leaves
//!   the box is moved back by a box side, all three atoms together
//!   (SPLASH-2's `BNDRY`);
//! - the start: molecules on a cubic lattice, jittered, hydrogens near
//!   their rest places, velocities random at about 298 K;
//! - velocity Verlet with SPLASH-2's time step, 1.5e-16 s, split as its
//!   predictor-corrector is: [`predict`] (half a kick and the drift, then
//!   the boundary), the forces, [`correct`] (the other half kick). Before
//!   the first step the forces of the start give the accelerations.
//!
//! # The check
//!
//! Both programs end with every molecule's positions and velocities in
//! shared memory and, per step, the kinetic and potential energies the
//! processes added up under a lock. Process 0 runs [`simulate`] and
//! compares ([`agrees`]). Forces are sums whose order depends on P (which
//! process adds which pair first), so the results cannot be equal bit for
//! bit: they must agree to a relative 1e-9 (positions on the box side,
//! velocities on the largest speed, energies on their magnitude). In three
//! steps rounding differences of 1e-16 grow to no more than ~1e-14; an
//! error of the program (a pair lost or counted twice, a lost update) is
//! larger than 1e-9 by far.

pub mod n2;
pub mod sp;

use super::mix;

/// One molecule's oxygen, first hydrogen and second hydrogen, x y z each.
pub type Sites = [f64; 9];

/// A step's kinetic and potential energy, kcal/mol.
pub type Energy = [f64; 2];

/// The time step: SPLASH-2's 1.5e-16 s, in ps.
const DT: f64 = 1.5e-4;
/// Molecules per Å³ (1 g/cm³).
const DENSITY: f64 = 0.0334;
/// (kcal/mol)/Å per amu, in Å/ps².
const ACCELERATION: f64 = 418.4;
/// Of the oxygen and the hydrogens, amu.
const MASS: [f64; 3] = [15.9994, 1.008, 1.008];
/// Of the oxygen and the hydrogens, e (SPC).
const CHARGE: [f64; 3] = [-0.82, 0.41, 0.41];
/// Coulomb's constant, kcal·Å/(mol·e²).
const COULOMB: f64 = 332.0637;
/// SPC's oxygen Lennard-Jones σ (Å) and ε (kcal/mol).
const SIGMA: f64 = 3.166;
const EPSILON: f64 = 0.1553;
/// The springs: O–H1, O–H2, H1–H2, as (site, site, rest length Å,
/// constant kcal/mol/Å²).
const SPRINGS: [(usize, usize, f64, f64); 3] = [
    (0, 1, 1.0, 1059.0),
    (0, 2, 1.0, 1059.0),
    (1, 2, 1.633, 228.0),
];
/// k_B·T at 298 K, kcal/mol.
const KT: f64 = 0.5922;

/// A box of water: how many molecules and how large.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct System {
    /// Molecules.
    pub molecules: usize,
    /// Time steps.
    pub steps: usize,
    /// The box's side, Å.
    pub side: f64,
    /// Molecules interact when their oxygens are closer than this, Å.
    pub cutoff: f64,
}

impl System {
    /// `molecules` at water's density, for `steps` steps, interacting
    /// within `cutoff` Å or half the box, whichever is less.
    pub fn new(molecules: usize, steps: usize, cutoff: f64) -> System {
        let side = (molecules as f64 / DENSITY).cbrt();
        System {
            molecules,
            steps,
            side,
            cutoff: cutoff.min(side / 2.0),
        }
    }

    /// Molecule `i` at the start: its positions and velocities.
    pub fn start(&self, i: usize) -> (Sites, Sites) {
        let per_side = (1..)
            .find(|m: &usize| m.pow(3) >= self.molecules)
            .unwrap_or(1);
        let spacing = self.side / per_side as f64;
        let lattice = [i % per_side, i / per_side % per_side, i / per_side.pow(2)];
        let random = |k: u64| uniform(mix(0x3a7e, i as u64 * 32 + k));
        // The rest shape, in the xy plane: O at the lattice point.
        let (half_sin, half_cos) = (0.8165, 0.5774);
        let rest = [
            0.0, 0.0, 0.0, half_sin, half_cos, 0.0, -half_sin, half_cos, 0.0,
        ];
        let mut x = [0.0; 9];
        let mut v = [0.0; 9];
        for site in 0..3 {
            let jitter = if site == 0 { 0.005 } else { 0.02 };
            let speed = (3.0 * KT * ACCELERATION / MASS[site]).sqrt();
            for d in 0..3 {
                let k = (site * 3 + d) as u64;
                x[site * 3 + d] =
                    lattice[d] as f64 * spacing + rest[site * 3 + d] + jitter * random(k);
                v[site * 3 + d] = speed * random(16 + k);
            }
        }
        self.bring_back(&mut x);
        (x, v)
    }

    /// SPLASH-2's `BNDRY`: a molecule whose oxygen left the box moves back
    /// by a side, all three atoms together.
    fn bring_back(&self, x: &mut Sites) {
        for d in 0..3 {
            let shift = if x[d] < 0.0 {
                self.side
            } else if x[d] >= self.side {
                -self.side
            } else {
                continue;
            };
            for site in 0..3 {
                x[site * 3 + d] += shift;
            }
        }
    }

    /// The forces two molecules exert on each other, if their oxygens are
    /// within the cutoff: on `xi`'s sites, on `xj`'s, and their energy.
    /// The force on j is exactly the negative of the force on i site by
    /// site, and `pair(xj, xi)` gives the same two forces swapped.
    #[inline]
    pub fn pair(&self, xi: &Sites, xj: &Sites) -> Option<(Sites, Sites, f64)> {
        let (shift, r2) = self.image(xi, xj);
        (r2 < self.cutoff * self.cutoff).then(|| self.interact(xi, xj, shift, r2))
    }

    /// The shift that brings j's oxygen nearest i's (the minimum image),
    /// and their squared distance then.
    #[inline(always)]
    fn image(&self, xi: &Sites, xj: &Sites) -> ([f64; 3], f64) {
        // Oxygens lie in the box (bring_back), so one side's shift gives
        // the minimum image.
        let half = self.side / 2.0;
        let mut shift = [0.0; 3];
        let mut r2 = 0.0;
        for d in 0..3 {
            let dx = xj[d] - xi[d];
            shift[d] = if dx > half {
                -self.side
            } else if dx < -half {
                self.side
            } else {
                0.0
            };
            r2 += (dx + shift[d]) * (dx + shift[d]);
        }
        (shift, r2)
    }

    /// [`pair`](Self::pair)'s forces and energy, j shifted by `shift`,
    /// the oxygens `r2` apart squared.
    fn interact(&self, xi: &Sites, xj: &Sites, shift: [f64; 3], r2: f64) -> (Sites, Sites, f64) {
        let (mut fi, mut fj) = ([0.0; 9], [0.0; 9]);
        let s6 = (SIGMA * SIGMA / r2).powi(3);
        let mut energy = 4.0 * EPSILON * (s6 * s6 - s6);
        // F_i = (dE/dr)/r · (x_j − x_i).
        let lennard_jones = 24.0 * EPSILON * (s6 - 2.0 * s6 * s6) / r2;
        for a in 0..3 {
            for b in 0..3 {
                let mut d = [0.0; 3];
                let mut r2 = 0.0;
                for k in 0..3 {
                    d[k] = (xj[b * 3 + k] - xi[a * 3 + k]) + shift[k];
                    r2 += d[k] * d[k];
                }
                let inverse = 1.0 / r2.sqrt();
                // q_a·q_b first: the same product from either side.
                let qq = COULOMB * (CHARGE[a] * CHARGE[b]);
                energy += qq * inverse;
                let mut scale = -qq * inverse * inverse * inverse;
                if a == 0 && b == 0 {
                    scale += lennard_jones;
                }
                for k in 0..3 {
                    fi[a * 3 + k] += scale * d[k];
                    fj[b * 3 + k] -= scale * d[k];
                }
            }
        }
        (fi, fj, energy)
    }
}

/// A uniform value in [−1, 1) from 64 random bits.
fn uniform(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// The springs' forces within a molecule, added to `f`; their energy.
pub fn intramolecular(x: &Sites, f: &mut Sites) -> f64 {
    let mut energy = 0.0;
    for (a, b, rest, k) in SPRINGS {
        let mut d = [0.0; 3];
        for c in 0..3 {
            d[c] = x[b * 3 + c] - x[a * 3 + c];
        }
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let stretch = r - rest;
        energy += 0.5 * k * stretch * stretch;
        for c in 0..3 {
            let pull = k * stretch * d[c] / r;
            f[a * 3 + c] += pull;
            f[b * 3 + c] -= pull;
        }
    }
    energy
}

/// Step (1): half a kick with the last accelerations, the drift, and the
/// boundary.
pub fn predict(system: &System, x: &mut Sites, v: &mut Sites, a: &Sites) {
    for k in 0..9 {
        v[k] += 0.5 * DT * a[k];
        x[k] += DT * v[k];
    }
    system.bring_back(x);
}

/// The accelerations of forces `f`.
pub fn accelerations(f: &Sites) -> Sites {
    std::array::from_fn(|k| f[k] * ACCELERATION / MASS[k / 3])
}

/// Step (4): the accelerations of the new forces `f` and the second half
/// kick; the molecule's kinetic energy.
pub fn correct(v: &mut Sites, a: &mut Sites, f: &Sites) -> f64 {
    *a = accelerations(f);
    let mut twice_kinetic = 0.0;
    for k in 0..9 {
        v[k] += 0.5 * DT * a[k];
        twice_kinetic += MASS[k / 3] * v[k] * v[k];
    }
    0.5 * twice_kinetic / ACCELERATION
}

/// The simulation run by one thread: every molecule's positions and
/// velocities at the end, and each step's energies.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    /// By molecule.
    pub positions: Vec<Sites>,
    /// By molecule.
    pub velocities: Vec<Sites>,
    /// By step.
    pub energies: Vec<Energy>,
}

/// Every molecule's forces at positions `x`, each pair once; the
/// potential energy.
fn forces(system: &System, x: &[Sites]) -> (Vec<Sites>, f64) {
    let mut f = vec![[0.0; 9]; x.len()];
    let mut potential = 0.0;
    for i in 0..x.len() {
        potential += intramolecular(&x[i], &mut f[i]);
    }
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            if let Some((fi, fj, e)) = system.pair(&x[i], &x[j]) {
                add(&mut f[i], &fi);
                add(&mut f[j], &fj);
                potential += e;
            }
        }
    }
    (f, potential)
}

/// `to += from`, site by site.
pub fn add(to: &mut Sites, from: &Sites) {
    for (t, f) in to.iter_mut().zip(from) {
        *t += f;
    }
}

/// The whole simulation, sequentially.
pub fn simulate(system: &System) -> Trajectory {
    let n = system.molecules;
    let (mut x, mut v): (Vec<Sites>, Vec<Sites>) = (0..n).map(|i| system.start(i)).unzip();
    let (f, _) = forces(system, &x);
    let mut a: Vec<Sites> = f.iter().map(accelerations).collect();
    let mut energies = Vec::with_capacity(system.steps);
    for _ in 0..system.steps {
        for i in 0..n {
            predict(system, &mut x[i], &mut v[i], &a[i]);
        }
        let (f, potential) = forces(system, &x);
        let kinetic = (0..n).map(|i| correct(&mut v[i], &mut a[i], &f[i])).sum();
        energies.push([kinetic, potential]);
    }
    Trajectory {
        positions: x,
        velocities: v,
        energies,
    }
}

/// The relative agreement [`agrees`] asks for (module docs).
pub const TOLERANCE: f64 = 1e-9;

/// Whether `got` agrees with the sequential simulation of `system` to
/// [`TOLERANCE`] (module docs).
pub fn agrees(system: &System, got: &Trajectory) -> bool {
    let want = simulate(system);
    let largest = |t: &[Sites]| t.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    let close = |a: &[Sites], b: &[Sites], scale: f64| {
        a.len() == b.len()
            && a.iter()
                .flatten()
                .zip(b.iter().flatten())
                .all(|(p, q)| (p - q).abs() <= TOLERANCE * scale)
    };
    let energies = got.energies.len() == want.energies.len()
        && got.energies.iter().zip(&want.energies).all(|(g, w)| {
            let scale = w[0].abs() + w[1].abs();
            (g[0] - w[0]).abs() <= TOLERANCE * scale && (g[1] - w[1]).abs() <= TOLERANCE * scale
        });
    close(&got.positions, &want.positions, system.side)
        && close(&got.velocities, &want.velocities, largest(&want.velocities))
        && energies
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_forces_are_the_energy_s_negative_gradient() {
        let system = System::new(216, 1, 6.0);
        let (xi, _) = system.start(0);
        let (xj, _) = system.start(1);
        let (fi, fj, e) = system.pair(&xi, &xj).expect("neighbours interact");
        let h = 1e-6;
        for k in 0..9 {
            let mut moved = xi;
            moved[k] += h;
            let (_, _, e2) = system.pair(&moved, &xj).expect("still");
            let numeric = -(e2 - e) / h;
            assert!(
                (numeric - fi[k]).abs() < 1e-3 * (1.0 + fi[k].abs()),
                "site {k}: {numeric} {}",
                fi[k]
            );
            assert_eq!(fj[k], system.pair(&xj, &xi).expect("symmetric").0[k]);
        }
        let mut f = [0.0; 9];
        let e = intramolecular(&xi, &mut f);
        for k in 0..9 {
            let mut moved = xi;
            moved[k] += h;
            let e2 = intramolecular(&moved, &mut [0.0; 9]);
            assert!(
                (-(e2 - e) / h - f[k]).abs() < 1e-3 * (1.0 + f[k].abs()),
                "site {k}"
            );
        }
    }

    #[test]
    fn the_check_tells_a_small_error() {
        let system = System::new(64, 2, f64::INFINITY);
        let mut t = simulate(&system);
        assert!(agrees(&system, &t));
        t.velocities[5][0] *= 1.0 + 1e-6;
        assert!(!agrees(&system, &t));
        let mut t = simulate(&system);
        t.energies[1][1] += 1e-6 * t.energies[1][1].abs();
        assert!(!agrees(&system, &t));
    }

    #[test]
    fn the_total_energy_is_conserved() {
        let t = simulate(&System::new(64, 40, f64::INFINITY));
        let total = |e: &Energy| e[0] + e[1];
        let (first, last) = (total(&t.energies[0]), total(&t.energies[39]));
        let kinetic = t.energies[0][0];
        assert!((last - first).abs() < 1e-3 * kinetic, "{first} -> {last}");
    }
}
