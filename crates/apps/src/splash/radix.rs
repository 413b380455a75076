//! RADIX: SPLASH-2's integer radix sort — `keys` keys below 2^20 sorted
//! by digits of radix 1024, least significant first, two passes (the
//! seed's 1M keys, radix 1024).
//!
//! Process p owns a contiguous share of the keys ([`share`]). A pass:
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
//! Checked in process 0: at `--small`, against the keys sorted here
//! alone; at the seed's size, by order and by the count, sum and xor of
//! the keys against those of the keys generated again.

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
}

impl Radix {
    /// Allocates the two key arrays and the histograms (PARMACS step 1).
    pub fn new(env: &Env, small: bool) -> Result<Radix, ParmacsError> {
        let size = Size::of(small);
        Ok(Radix {
            size,
            keys: [env.g_malloc(size.keys)?, env.g_malloc(size.keys)?],
            histograms: env.g_malloc(env.processes() * RADIX)?,
        })
    }

    /// Whether `sorted` are the keys in order.
    fn verify(&self, sorted: &[u32]) -> (bool, &'static str) {
        let n = self.size.keys;
        if n <= Size::of(true).keys {
            let mut want: Vec<u32> = (0..n).map(key).collect();
            want.sort_unstable();
            return (sorted == want.as_slice(), "the keys sorted sequentially");
        }
        let summary = |keys: &mut dyn Iterator<Item = u32>| {
            keys.fold((0usize, 0u64, 0u32), |(n, sum, xor), k| {
                (n + 1, sum + u64::from(k), xor ^ k)
            })
        };
        let ordered = sorted.windows(2).all(|w| w[0] <= w[1]);
        let same = summary(&mut sorted.iter().copied()) == summary(&mut (0..n).map(key));
        (ordered && same, "order, and the keys' count, sum and xor")
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
