//! A reusable barrier, built on a [`Word`] holding the generation.
//!
//! 1. A waiter reads the generation `g`, then counts itself in `arrived`.
//! 2. The last of the `n` to arrive (the leader) resets `arrived` to zero
//!    and bumps the generation to `g + 1`; the `Word` wakes everyone.
//! 3. The others wait until the generation differs from `g`.
//!
//! Reading `g` before counting oneself is what makes generations safe: the
//! leader's bump comes after every arrival of its generation, so no
//! waiter can read `g + 1` as its own `g`. The reset comes before the bump,
//! so the next generation starts counting from zero.

use super::word::Word;
use crate::loom::{AtomicUsize, Ordering};
use std::fmt;

/// Lets `n` threads wait until all of them have arrived, then releases
/// them together; reusable for any number of rounds. Usable from fibers
/// and OS threads alike.
///
/// ```
/// use std::sync::Arc;
/// use threadwire_fiber::sync::Barrier;
///
/// let barrier = Arc::new(Barrier::new(3));
/// let threads: Vec<_> = (0..3)
///     .map(|_| {
///         let barrier = barrier.clone();
///         std::thread::spawn(move || barrier.wait().is_leader())
///     })
///     .collect();
/// let leaders = threads
///     .into_iter()
///     .map(|t| t.join().unwrap())
///     .filter(|&is_leader| is_leader)
///     .count();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: Word,
}

/// What [`Barrier::wait`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierWaitResult {
    is_leader: bool,
}

impl BarrierWaitResult {
    /// `true` for exactly one waiter of each round: the last to arrive.
    pub fn is_leader(&self) -> bool {
        self.is_leader
    }
}

impl Barrier {
    /// A barrier for `n` waiters per round (`0` acts like `1`).
    pub fn new(n: usize) -> Barrier {
        Barrier {
            parties: n.max(1),
            arrived: AtomicUsize::new(0),
            generation: Word::new(0),
        }
    }

    /// Waits until `n` waiters (counting this one) have called `wait` in
    /// this round. Exactly `n` threads must take part in each round.
    pub fn wait(&self) -> BarrierWaitResult {
        let generation = self.generation.load();
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1);
            return BarrierWaitResult { is_leader: true };
        }
        self.generation.wait_until(|g| g != generation);
        BarrierWaitResult { is_leader: false }
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("parties", &self.parties)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_leader_per_round() {
        let barrier = Arc::new(Barrier::new(3));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let barrier = barrier.clone();
                std::thread::spawn(move || (0..50).filter(|_| barrier.wait().is_leader()).count())
            })
            .collect();
        let leaders: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(leaders, 50);
    }

    #[test]
    fn a_barrier_of_one_never_waits() {
        let barrier = Barrier::new(0);
        assert!(barrier.wait().is_leader());
        assert!(barrier.wait().is_leader());
    }
}
