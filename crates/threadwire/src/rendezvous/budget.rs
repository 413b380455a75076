//! The eager budget (module docs of [`super`], "The budget"): what each
//! peer holds of this node's eager messages, and what this node's
//! receives have taken of each peer's.

use std::sync::atomic::{AtomicUsize, Ordering};

/// What an eager message costs beyond its bytes: its place in a queue and
/// its header, so that a flood of empty messages is bounded too.
pub(crate) const OVERHEAD: usize = 64;

/// Per peer node: bytes this node may still send eagerly, and bytes its
/// receives took from that peer not yet returned.
pub(crate) struct Budget {
    limit: usize,
    /// Eager bytes (with [`OVERHEAD`]) sent to each peer and not returned.
    outstanding: Box<[AtomicUsize]>,
    /// Bytes taken by this node's receives from each peer, to return.
    taken: Box<[AtomicUsize]>,
}

impl Budget {
    pub(crate) fn new(nodes: u32, limit: usize) -> Budget {
        let counters = || (0..nodes).map(|_| AtomicUsize::new(0)).collect();
        Budget {
            limit,
            outstanding: counters(),
            taken: counters(),
        }
    }

    /// Takes `cost` bytes of the budget towards `node` if they fit.
    #[inline]
    pub(crate) fn try_take(&self, node: u32, cost: usize) -> bool {
        let counter = &self.outstanding[node as usize];
        let mut now = counter.load(Ordering::Relaxed);
        loop {
            if now + cost > self.limit {
                return false;
            }
            match counter.compare_exchange_weak(
                now,
                now + cost,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
    }

    /// Takes `cost` bytes towards `node` whether they fit or not (messages
    /// the runtime itself must send eagerly).
    /// [`try_take`](Self::try_take), or, for a cost beyond the whole
    /// budget, the budget alone: it takes it only while nothing else is
    /// outstanding, so that any message can go, one at a time.
    pub(crate) fn try_take_alone(&self, node: u32, cost: usize) -> bool {
        if cost <= self.limit {
            return self.try_take(node, cost);
        }
        self.outstanding[node as usize]
            .compare_exchange(0, cost, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    pub(crate) fn force_take(&self, node: u32, cost: usize) {
        self.outstanding[node as usize].fetch_add(cost, Ordering::Relaxed);
    }

    /// `node` returned `bytes` (a `Credit`, or the count in a `Cts` or
    /// `Fin`); a peer that returns more than it was sent is not believed
    /// beyond zero.
    pub(crate) fn returned(&self, node: u32, bytes: u64) {
        let counter = &self.outstanding[node as usize];
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
            Some(now.saturating_sub(bytes))
        });
    }

    /// A receive here took `cost` bytes of an eager message from `node`:
    /// the bytes to return now in a `Credit` frame, if an eighth of the
    /// budget has gathered.
    #[inline]
    pub(crate) fn took(&self, node: u32, cost: usize) -> Option<u64> {
        let counter = &self.taken[node as usize];
        let now = counter.fetch_add(cost, Ordering::Relaxed) + cost;
        if now >= (self.limit / 8).max(1) {
            let all = counter.swap(0, Ordering::Relaxed);
            return (all > 0).then_some(all as u64);
        }
        None
    }

    /// Everything taken from `node` and not yet returned, to ride in a
    /// `Cts` or `Fin`.
    pub(crate) fn take_returns(&self, node: u32) -> u64 {
        self.taken[node as usize].swap(0, Ordering::Relaxed) as u64
    }

    /// Eager bytes towards `node` not yet returned.
    #[cfg(test)]
    pub(crate) fn outstanding(&self, node: u32) -> usize {
        self.outstanding[node as usize].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_and_refills() {
        let b = Budget::new(2, 1000);
        assert!(b.try_take(1, 600));
        assert!(!b.try_take(1, 600));
        assert!(b.try_take(0, 600), "budgets are per peer");
        b.returned(1, 600);
        assert!(b.try_take(1, 1000));
        b.returned(1, u64::MAX);
        assert_eq!(b.outstanding(1), 0, "an overstated return stops at zero");
    }

    #[test]
    fn a_cost_beyond_the_budget_goes_alone() {
        let b = Budget::new(2, 1000);
        assert!(b.try_take_alone(1, 10));
        assert!(!b.try_take_alone(1, 5000), "not while anything is outstanding");
        b.returned(1, 10);
        assert!(b.try_take_alone(1, 5000));
        assert!(!b.try_take_alone(1, 10), "the budget is spent");
    }

    #[test]
    fn returns_gather_to_an_eighth() {
        let b = Budget::new(2, 800);
        assert_eq!(b.took(1, 60), None);
        assert_eq!(b.took(1, 60), Some(120));
        assert_eq!(b.took(1, 10), None);
        assert_eq!(b.take_returns(1), 10);
        assert_eq!(b.take_returns(1), 0);
    }
}
