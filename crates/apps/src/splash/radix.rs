//! RADIX: SPLASH-2's integer radix sort — `keys` keys below 2^20 sorted
//! by digits of radix 1024, least significant first, two passes (the
//! seed's 1M keys, radix 1024).
//!
//! Process p owns a contiguous share of the keys, as even as can be.
//! First it adds its keys' count, sum and xor to shared totals under a
//! lock, as SPLASH-2's programs make their reductions (`LOCK`, update,
//! `UNLOCK`).
//! Then, each pass:
//!
//! 1. p counts the digits of its keys into its row of a shared P × radix
//!    histogram; a barrier.
//! 2. p reads every row and computes where each of its digits goes: the
//!    keys of smaller digits, then those of the same digit held by
//!    processes before it (SPLASH-2's prefix sums, here read whole).
//! 3. p writes its keys, in order, to those places in the other key array
//!    (the permutation: stable, and every place written once); a barrier.
//!    The arrays swap roles.
//!
//! Checked in process 0: by order, and by the count, sum and xor of the
//! sorted keys against the totals made under the lock (so a lock that
//! let two processes in at once, or lost a holder's writes, fails the
//! check); at `--small`, also against the keys sorted here alone.

use super::parmacs::{Env, ParmacsError};
use super::{mix, part, part_mut, share, Kernel};
use threadwire_dsm::{DsmError, Region};

/// Digits per pass.
pub const RADIX: usize = 1024;
/// Keys are below 2^KEY_BITS: two passes of ten bits.
const KEY_BITS: u32 = 20;
const PASSES: u32 = KEY_BITS / RADIX.trailing_zeros();

/// Keys to sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// How many.
    pub keys: usize,
}

impl Size {
    /// The seed's size (2^20 keys), or `--small`'s (2^16).
    pub fn of(small: bool) -> Size {
        Size {
            keys: if small { 1 << 16 } else { 1 << 20 },
        }
    }
}

/// Key `i`.
fn key(i: usize) -> u32 {
    (mix(1024, i as u64) >> (64 - KEY_BITS)) as u32
}

fn digit(key: u32, pass: u32) -> usize {
    (key as usize >> (pass * RADIX.trailing_zeros())) & (RADIX - 1)
}

/// The program's shared state.
pub struct Radix {
    size: Size,
    keys: [Region<u32>; 2],
    histograms: Region<u32>,
    /// Count, sum and xor of every key, added up under [`TOTALS_LOCK`].
    totals: Region<u64>,
}

/// The lock of the totals.
const TOTALS_LOCK: u32 = 0;

/// Count, sum and xor of `keys`.
fn summary(keys: impl Iterator<Item = u32>) -> [u64; 3] {
    keys.fold([0, 0, 0], |[n, sum, xor], k| {
        [n + 1, sum + u64::from(k), xor ^ u64::from(k)]
    })
}

impl Radix {
    /// Allocates the two key arrays and the histograms (PARMACS step 1).
    pub fn new(env: &Env, small: bool) -> Result<Radix, ParmacsError> {
        let size = Size::of(small);
        Ok(Radix {
            size,
            keys: [env.g_malloc(size.keys)?, env.g_malloc(size.keys)?],
            histograms: env.g_malloc(env.processes() * RADIX)?,
            totals: env.g_malloc(3)?,
        })
    }

    /// Whether `sorted` are the keys in order.
    fn verify(&self, sorted: &[u32]) -> (bool, &'static str) {
        let n = self.size.keys;
        let ordered = sorted.windows(2).all(|w| w[0] <= w[1]);
        let totals = [0, 1, 2].map(|k| self.totals.get(k));
        let same = summary(sorted.iter().copied()) == totals;
        if n <= Size::of(true).keys {
            let mut want: Vec<u32> = (0..n).map(key).collect();
            want.sort_unstable();
            let verified = ordered && same && sorted == want.as_slice();
            return (verified, "the keys sorted sequentially, and the totals");
        }
        (ordered && same, "order, and the totals made under a lock")
    }
}

impl Kernel for Radix {
    fn size(&self) -> String {
        format!("{} keys below 2^{KEY_BITS}, radix {RADIX}", self.size.keys)
    }

    fn initialize(&self, env: &Env, pid: usize) {
        for i in share(self.size.keys, env.processes(), pid) {
            self.keys[0].set(i, key(i));
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let processes = env.processes();
        let mine = share(self.size.keys, processes, pid);
        {
            // SAFETY: the keys were written before the barrier that ended
            // initialization, and are read only until the first pass.
            let keys = unsafe { part(&self.keys[0], mine.clone()) };
            let ours = summary(keys.iter().copied());
            let _held = env.lock(TOTALS_LOCK)?;
            let [n, sum, xor] = [0, 1, 2].map(|k| self.totals.get(k));
            self.totals.set(0, n + ours[0]);
            self.totals.set(1, sum + ours[1]);
            self.totals.set(2, xor ^ ours[2]);
        }
        for pass in 0..PASSES {
            if pass > 0 {
                env.barrier()?;
            }
            let (from, to) = (
                &self.keys[pass as usize % 2],
                &self.keys[1 - pass as usize % 2],
            );
            // SAFETY: a process's keys are written by the permutation of
            // the pass before, ended by a barrier, and read only.
            let keys = unsafe { part(from, mine.clone()) };
            let mut counts = vec![0u32; RADIX];
            for &k in keys {
                counts[digit(k, pass)] += 1;
            }
            // SAFETY: this process alone writes its row; others read it
            // after the barrier below.
            unsafe { part_mut(&self.histograms, pid * RADIX..(pid + 1) * RADIX) }
                .copy_from_slice(&counts);
            env.barrier()?;
            // SAFETY: the histograms are read only until the next pass's
            // writes, after the barrier that ends this one.
            let all = unsafe { part(&self.histograms, 0..processes * RADIX) };
            let mut places = vec![0usize; RADIX];
            let mut before = 0;
            for (d, place) in places.iter_mut().enumerate() {
                let column = (0..processes).map(|p| all[p * RADIX + d] as usize);
                let (earlier, total) = column.enumerate().fold((0, 0), |(e, t), (p, c)| {
                    (if p < pid { e + c } else { e }, t + c)
                });
                *place = before + earlier;
                before += total;
            }
            for &k in keys {
                let place = &mut places[digit(k, pass)];
                to.set(*place, k);
                *place += 1;
            }
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        // SAFETY: nobody writes the keys while process 0 checks them.
        let sorted = unsafe { part(&self.keys[PASSES as usize % 2], 0..self.size.keys) };
        self.verify(sorted)
    }
}
