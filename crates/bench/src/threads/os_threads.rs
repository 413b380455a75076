//! The OS column: `std::thread` and `std::sync`. The switching rows pin
//! their threads to one CPU, so that a handoff is a context switch on one
//! core, as it is between fibers of one worker, and not a wake-up of
//! another core.

use super::{Error, RING};
use crate::system;
use std::any::Any;
use std::hint::black_box;
use std::sync::{Barrier, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

pub(super) fn mutex(ops: u64) -> Duration {
    let mutex = Mutex::new(0u64);
    let start = Instant::now();
    for _ in 0..ops {
        *lock(black_box(&mutex)) += 1;
    }
    start.elapsed()
}

pub(super) fn semaphore(ops: u64) -> Duration {
    let semaphore = StdSemaphore::new();
    let start = Instant::now();
    for _ in 0..ops {
        black_box(&semaphore).post();
        black_box(&semaphore).wait();
    }
    start.elapsed()
}

/// Two pinned threads hand a token back and forth: two switches per round.
pub(super) fn context_switch(affinity: &Affinity, ops: u64) -> Result<Duration, Error> {
    let rounds = ops / 2;
    let (ping, pong) = (StdSemaphore::new(), StdSemaphore::new());
    let start_line = Barrier::new(2);
    thread::scope(|s| {
        let partner = spawn_pinned(s, affinity, || {
            start_line.wait();
            for _ in 0..rounds {
                ping.wait();
                pong.post();
            }
        });
        let timer = spawn_pinned(s, affinity, || {
            start_line.wait();
            let start = Instant::now();
            for _ in 0..rounds {
                ping.post();
                pong.wait();
            }
            start.elapsed()
        });
        let elapsed = join(timer)?;
        join(partner)?;
        Ok(elapsed)
    })
}

/// Two pinned threads call `sched_yield` `ops / 2` times each; timed from
/// the first start to the last end.
pub(super) fn thread_switch(affinity: &Affinity, ops: u64) -> Result<Duration, Error> {
    let each = ops / 2;
    let start_line = Barrier::new(2);
    thread::scope(|s| {
        let yielders: Vec<_> = (0..2)
            .map(|_| {
                spawn_pinned(s, affinity, || {
                    start_line.wait();
                    let start = Instant::now();
                    for _ in 0..each {
                        thread::yield_now();
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        span(yielders)
    })
}

/// A token goes round a ring of pinned threads, each waiting on its own
/// semaphore and posting the next one's.
pub(super) fn ring(affinity: &Affinity, ops: u64) -> Result<Duration, Error> {
    let laps = ops / RING as u64;
    let semaphores: Vec<StdSemaphore> = (0..RING).map(|_| StdSemaphore::new()).collect();
    let start_line = Barrier::new(RING);
    thread::scope(|s| {
        let members: Vec<_> = (0..RING)
            .map(|i| {
                let (semaphores, start_line) = (&semaphores, &start_line);
                spawn_pinned(s, affinity, move || {
                    start_line.wait();
                    let start = Instant::now();
                    if i == 0 {
                        semaphores[0].post();
                    }
                    for _ in 0..laps {
                        semaphores[i].wait();
                        semaphores[(i + 1) % RING].post();
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        span(members)
    })
}

pub(super) fn create_join(ops: u64) -> Result<Duration, Error> {
    let start = Instant::now();
    for _ in 0..ops {
        thread::spawn(|| black_box(()))
            .join()
            .map_err(|panic| Error::Panicked(panic_message(&*panic)))?;
    }
    Ok(start.elapsed())
}

/// A counting semaphore from a `std::sync::Mutex` and `Condvar`. It
/// notifies only when a thread waits, as a careful pthreads version does:
/// std's `notify_one` makes a system call even when nobody waits.
struct StdSemaphore {
    state: Mutex<Permits>,
    available: Condvar,
}

#[derive(Default)]
struct Permits {
    count: u64,
    waiting: u32,
}

impl StdSemaphore {
    fn new() -> StdSemaphore {
        StdSemaphore {
            state: Mutex::new(Permits::default()),
            available: Condvar::new(),
        }
    }

    fn post(&self) {
        let mut state = lock(&self.state);
        state.count += 1;
        if state.waiting > 0 {
            self.available.notify_one();
        }
    }

    fn wait(&self) {
        let mut state = lock(&self.state);
        while state.count == 0 {
            state.waiting += 1;
            state = self
                .available
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.waiting -= 1;
        }
        state.count -= 1;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where the switching rows pin their threads, and whether it worked.
pub(super) struct Affinity {
    cpu: std::io::Result<usize>,
    /// The first failure to pin a thread.
    failure: Mutex<Option<std::io::Error>>,
}

impl Affinity {
    /// The first CPU this process may use (CPU 0 is not always allowed).
    pub(super) fn first_allowed_cpu() -> Affinity {
        Affinity {
            cpu: system::first_allowed_cpu(),
            failure: Mutex::new(None),
        }
    }

    fn pin_current_thread(&self) {
        // Without a CPU to pin to, the note says why already.
        if let Ok(cpu) = &self.cpu {
            if let Err(e) = system::pin_current_thread(*cpu) {
                lock(&self.failure).get_or_insert(e);
            }
        }
    }

    /// What the row's note says about the OS threads.
    pub(super) fn note(&self) -> String {
        match (&self.cpu, &*lock(&self.failure)) {
            (Ok(cpu), None) => format!("OS threads pinned to CPU {cpu}"),
            (_, Some(e)) => format!("OS threads NOT pinned (affinity failed: {e})"),
            (Err(e), None) => format!("OS threads NOT pinned ({e})"),
        }
    }
}

fn spawn_pinned<'scope, T: Send + 'scope>(
    s: &'scope Scope<'scope, '_>,
    affinity: &'scope Affinity,
    body: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    s.spawn(move || {
        affinity.pin_current_thread();
        body()
    })
}

fn join<T>(handle: ScopedJoinHandle<'_, T>) -> Result<T, Error> {
    handle
        .join()
        .map_err(|panic| Error::Panicked(panic_message(&*panic)))
}

/// From the earliest start to the latest end of `threads`.
fn span(threads: Vec<ScopedJoinHandle<'_, (Instant, Instant)>>) -> Result<Duration, Error> {
    let mut first_start: Option<Instant> = None;
    let mut last_end: Option<Instant> = None;
    for thread in threads {
        let (start, end) = join(thread)?;
        first_start = Some(first_start.map_or(start, |s| s.min(start)));
        last_end = Some(last_end.map_or(end, |e| e.max(end)));
    }
    Ok(match (first_start, last_end) {
        (Some(start), Some(end)) => end - start,
        _ => Duration::ZERO,
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> std::sync::Arc<str> {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).into()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str().into()
    } else {
        "a panic without a message".into()
    }
}
