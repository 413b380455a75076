//! What parked fibers cost when nothing happens: a one-worker scheduler
//! holding many fibers parked on one [`Event`], and the process's CPU time
//! over a window. A worker that polls its fibers or wakes on a timer shows
//! here; one that sleeps until woken costs nothing.

use super::Error;
use crate::system;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use threadwire::fiber::sync::Event;
use threadwire::fiber::Scheduler;

/// The idle measurement.
#[derive(Clone, Copy, Debug)]
pub struct IdleCost {
    /// Fibers parked during the window.
    pub fibers: usize,
    /// How long the process was watched.
    pub window: Duration,
    /// CPU time (user + system) the whole process used meanwhile.
    pub cpu: Duration,
}

impl IdleCost {
    /// CPU time as a percentage of one core over the window.
    pub fn percent_of_core(&self) -> f64 {
        100.0 * self.cpu.as_secs_f64() / self.window.as_secs_f64()
    }
}

/// Settling time after the last fiber parks: the worker finishes its spin
/// budget (~50 µs) and goes to sleep well within it.
const SETTLE: Duration = Duration::from_millis(100);

pub(super) fn measure(fibers: usize, window: Duration) -> Result<IdleCost, Error> {
    let scheduler = Scheduler::builder()
        .workers(1)
        .name("tw-bench-idle")
        .build()
        .map_err(Error::Scheduler)?;
    let release = Arc::new(Event::new());
    let waiting = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..fibers)
        .map(|_| {
            let (release, waiting) = (release.clone(), waiting.clone());
            scheduler.spawn(move || {
                waiting.fetch_add(1, Ordering::Relaxed);
                release.wait();
            })
        })
        .collect();
    while waiting.load(Ordering::Relaxed) < fibers {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(SETTLE);
    let before = system::process_cpu_time().map_err(Error::CpuTime)?;
    std::thread::sleep(window);
    let after = system::process_cpu_time().map_err(Error::CpuTime)?;
    // Parked fibers left at shutdown are leaked, so release them first.
    release.set();
    for handle in handles {
        handle.join()?;
    }
    Ok(IdleCost {
        fibers,
        window,
        cpu: after.saturating_sub(before),
    })
}
