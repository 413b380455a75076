//! The fiber column: every measurement runs inside a controller fiber on
//! the one-worker scheduler, which spawns its partners onto the same
//! worker and times from inside, so no cross-thread wake-up is timed.

use super::{Error, RING};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::fiber::sync::{Mutex, Semaphore};
use threadwire::fiber::{spawn, yield_now, Scheduler};

fn on_fiber(
    scheduler: &Scheduler,
    body: impl FnOnce() -> Result<Duration, Error> + Send + 'static,
) -> Result<Duration, Error> {
    scheduler.spawn(body).join()?
}

pub(super) fn mutex(scheduler: &Scheduler, ops: u64) -> Result<Duration, Error> {
    on_fiber(scheduler, move || {
        let mutex = Mutex::new(0u64);
        let start = Instant::now();
        for _ in 0..ops {
            *black_box(&mutex).lock() += 1;
        }
        Ok(start.elapsed())
    })
}

pub(super) fn semaphore(scheduler: &Scheduler, ops: u64) -> Result<Duration, Error> {
    on_fiber(scheduler, move || {
        let semaphore = Semaphore::new(0);
        let start = Instant::now();
        for _ in 0..ops {
            black_box(&semaphore).post();
            black_box(&semaphore).wait();
        }
        Ok(start.elapsed())
    })
}

/// The controller and a partner hand a token back and forth: two switches
/// per round.
pub(super) fn context_switch(scheduler: &Scheduler, ops: u64) -> Result<Duration, Error> {
    on_fiber(scheduler, move || {
        let rounds = ops / 2;
        let ping = Arc::new(Semaphore::new(0));
        let pong = Arc::new(Semaphore::new(0));
        let partner = {
            let (ping, pong) = (ping.clone(), pong.clone());
            spawn(move || {
                for _ in 0..rounds {
                    ping.wait();
                    pong.post();
                }
            })
        };
        // Let the partner run up to its first wait.
        yield_now();
        let start = Instant::now();
        for _ in 0..rounds {
            ping.post();
            pong.wait();
        }
        let elapsed = start.elapsed();
        partner.join()?;
        Ok(elapsed)
    })
}

/// The controller and a partner yield in turn, `ops / 2` times each.
pub(super) fn thread_switch(scheduler: &Scheduler, ops: u64) -> Result<Duration, Error> {
    on_fiber(scheduler, move || {
        let each = ops / 2;
        let partner = spawn(move || {
            for _ in 0..each {
                yield_now();
            }
        });
        let start = Instant::now();
        for _ in 0..each {
            yield_now();
        }
        partner.join()?;
        Ok(start.elapsed())
    })
}

/// A token goes round a ring of fibers, each waiting on its own semaphore
/// and posting the next one's.
pub(super) fn ring(scheduler: &Scheduler, ops: u64) -> Result<Duration, Error> {
    on_fiber(scheduler, move || {
        let laps = ops / RING as u64;
        let semaphores: Arc<[Semaphore]> = (0..RING).map(|_| Semaphore::new(0)).collect();
        let members: Vec<_> = (0..RING)
            .map(|i| {
                let semaphores = semaphores.clone();
                spawn(move || {
                    for _ in 0..laps {
                        semaphores[i].wait();
                        semaphores[(i + 1) % RING].post();
                    }
                })
            })
            .collect();
        // Every member runs to its first wait before the clock starts.
        yield_now();
        let start = Instant::now();
        semaphores[0].post();
        for member in members {
            member.join()?;
        }
        Ok(start.elapsed())
    })
}

pub(super) fn create_join(scheduler: &Scheduler, ops: u64) -> Result<Duration, Error> {
    on_fiber(scheduler, move || {
        let start = Instant::now();
        for _ in 0..ops {
            spawn(|| black_box(())).join()?;
        }
        Ok(start.elapsed())
    })
}
