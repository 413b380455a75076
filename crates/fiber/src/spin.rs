//! How long a waiter spins, and yields, before it parks.
//!
//! On the 2-core development VM a thread parked in the kernel takes 20–30 µs
//! to wake on another core, while a cache line crosses cores in under
//! 0.1 µs. A waiter therefore waits busily while a reply is likely to arrive
//! soon — a TCP round trip on loopback is ~20 µs here — and parks after
//! that, so an idle node costs nothing. The budget is one process-wide
//! setting, `THREADWIRE_SPIN_US` or [`set_spin_budget`]; with a single CPU
//! it is zero.
//!
//! A busy wait has two phases, and a third rule for crowded hosts:
//!
//! 1. **Spin** for the first [`PURE_SPIN`] (2 µs): a pause between checks.
//!    A peer that runs on another core answers within it.
//! 2. **Yield** for the rest of the budget: `sched_yield` between checks.
//!    When more threads want the cores than there are cores — four nodes
//!    on two cores, or a node's main thread beside its fiber workers — the
//!    thread a waiter waits for is often queued behind the waiter itself,
//!    and a spinning waiter holds it off for the whole budget, then sleeps
//!    and needs a kernel wake-up. Yielding hands it the core at once; with
//!    nobody else runnable a yield returns in well under a microsecond, so
//!    a waiter alone on its core loses little.
//!
//! Measured with `threadwire bench coll --sizes 8 --operations barrier`
//! (µs, median of 3; 2 cores; the budget 50 µs) and `threadwire bench
//! pingpong --sizes 8` (µs one-way):
//!
//! | busy wait | 4x1 barrier | 1x16 barrier | 2x8 barrier | shm ping-pong |
//! |---|---|---|---|---|
//! | spin only (before) | 130 | 117 | 384 | 0.42–0.70 |
//! | yield from the start | 10.4 | 12.3 | 15.2 | – |
//! | spin 2 µs, then yield | 8.87 | 8.34 | 21.3 | 0.30 |
//! | spin 10 µs, then yield | 27.3 | 15.1 | 44.5 | – |
//!
//! Spinning only, a longer budget made every oversubscribed collective
//! slower by about the budget (4x1 barrier: 588 µs at 500 µs, 6 ms at
//! 5 ms); with the yield phase it does not matter much (200 µs: 8.9 µs).
//!
//! 3. **Crowded hosts skip phase 1.** When the host runs more of the job's
//!    processes than it has cores ([`set_crowded`], which a node calls at
//!    start), half of the processes a waiter waits for are queued, not
//!    running, and its 2 µs of pauses only delay them: a waiter yields
//!    from its first round. Measured (`threadwire bench coll --layout
//!    4x1,2x1 --sizes 8 --operations barrier,allreduce`, medians of 5
//!    repetitions, two rounds each way, 2 cores, 2026-11-28): 4x1 barrier
//!    3.28–3.34 µs with phase 1, 1.38–1.63 µs without; 4x1 allreduce
//!    3.40–3.45 against 1.50–1.54. On a host that is not crowded, phase 1
//!    stays: 2x1 allreduce 0.31–0.33 µs with it, 0.34–0.43 without.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const DEFAULT_SPIN: Duration = Duration::from_micros(50);
/// How long a busy wait spins before it starts yielding (phase 1).
pub const PURE_SPIN: Duration = Duration::from_micros(2);
static BUDGET_NANOS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Phase 1's length in nanoseconds: [`PURE_SPIN`], or 0 on a crowded host.
static PURE_SPIN_NANOS: AtomicU64 = AtomicU64::new(PURE_SPIN.as_nanos() as u64);
static INIT: OnceLock<()> = OnceLock::new();

/// The spin budget in force.
pub fn spin_budget() -> Duration {
    INIT.get_or_init(|| {
        let from_env = std::env::var("THREADWIRE_SPIN_US")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Duration::from_micros);
        let single_cpu = std::thread::available_parallelism()
            .map(|n| n.get() == 1)
            .unwrap_or(false);
        let budget = from_env.unwrap_or(if single_cpu {
            Duration::ZERO
        } else {
            DEFAULT_SPIN
        });
        let _ = BUDGET_NANOS.compare_exchange(
            u64::MAX,
            budget.as_nanos() as u64,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    });
    Duration::from_nanos(BUDGET_NANOS.load(Ordering::Relaxed))
}

/// Sets the spin budget for every later wait in this process.
pub fn set_spin_budget(budget: Duration) {
    spin_budget();
    BUDGET_NANOS.store(budget.as_nanos() as u64, Ordering::Relaxed);
}

/// Tells every later wait in this process whether the host is crowded:
/// more of the job's processes on it than cores (rule 3 of the module
/// docs). A crowded host's waiters yield from their first round.
///
/// ```
/// threadwire_fiber::set_crowded(true);
/// let mut wait = threadwire_fiber::SpinWait::new();
/// assert!(wait.spin()); // yields the core, then returns
/// threadwire_fiber::set_crowded(false);
/// ```
pub fn set_crowded(crowded: bool) {
    let pure = match crowded {
        true => 0,
        false => PURE_SPIN.as_nanos() as u64,
    };
    PURE_SPIN_NANOS.store(pure, Ordering::Relaxed);
}

/// A bounded busy wait (spin, then yield: the module docs): call
/// [`spin`](SpinWait::spin) between checks of the condition; once it
/// returns `false`, park.
pub struct SpinWait {
    start: Option<Instant>,
    budget: Duration,
    rounds: u32,
    /// Phase 2: the first [`PURE_SPIN`] is over.
    yielding: bool,
}

impl Default for SpinWait {
    fn default() -> Self {
        Self::new()
    }
}

impl SpinWait {
    /// A fresh spin with the process-wide budget.
    pub fn new() -> SpinWait {
        SpinWait {
            start: None,
            budget: spin_budget(),
            rounds: 0,
            yielding: false,
        }
    }

    /// Spins a little, or yields the core once the first [`PURE_SPIN`] is
    /// over; `false` once the budget is spent.
    pub fn spin(&mut self) -> bool {
        // Under loom a spin is a wasted branch of the model: park at once.
        if cfg!(loom) {
            return false;
        }
        self.rounds = self.rounds.wrapping_add(1);
        // Reading the clock costs more than a round of most waits (a
        // vDSO call, 20–50 ns on this VM), and a waiter notices its event
        // only between rounds: look at it every 8th round.
        if self.rounds % 8 == 1 {
            let start = *self.start.get_or_insert_with(Instant::now);
            let elapsed = start.elapsed();
            if elapsed >= self.budget {
                return false;
            }
            self.yielding = elapsed.as_nanos() as u64 >= PURE_SPIN_NANOS.load(Ordering::Relaxed);
        }
        if self.yielding {
            std::thread::yield_now();
            return true;
        }
        // At most 4 PAUSEs (~140 cycles each on recent x86) between checks:
        // the check is often a syscall (epoll_wait), and measured with 16
        // the pauses alone held a TCP ping-pong back by ~1 µs per message.
        // One pause: on recent x86 it lasts ~140 cycles, and the waiter
        // sees its event only between rounds (measured: four pauses per
        // round cost ~0.1 µs of shared-memory ping-pong latency).
        std::hint::spin_loop();
        true
    }

    /// Starts the budget again (after progress was made).
    pub fn reset(&mut self) {
        self.start = None;
        self.rounds = 0;
        self.yielding = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_runs_out() {
        let mut s = SpinWait {
            start: None,
            budget: Duration::from_micros(100),
            rounds: 0,
            yielding: false,
        };
        let t = Instant::now();
        while s.spin() {}
        assert!(t.elapsed() >= Duration::from_micros(100));
    }

    #[test]
    fn a_crowded_host_yields_from_the_first_round() {
        set_crowded(true);
        let mut crowded = SpinWait::new();
        assert!(crowded.spin());
        assert!(crowded.yielding, "phase 1 skipped");
        set_crowded(false);
        let mut spare = SpinWait::new();
        assert!(spare.spin());
        assert!(!spare.yielding, "phase 1 kept");
    }
}
