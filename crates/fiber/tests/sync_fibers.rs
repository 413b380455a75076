//! The primitives of `threadwire_fiber::sync` between fibers, on one and
//! two workers, and between fibers and OS threads. On one worker a waiting
//! fiber must park (switch away) for the fiber it waits for to run at all,
//! so these tests also show that fibers never spin-wait. Each test runs
//! under a deadline so that a lost wake-up fails rather than hangs.

// Loom builds the crate without the scheduler, and its types work only
// inside `loom::model`.
#![cfg(not(loom))]

mod support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::within_deadline;
use threadwire_fiber::sync::{Barrier, Condvar, Event, Lockable, Mutex, Semaphore, Word};
use threadwire_fiber::{in_fiber, yield_now, JoinHandle, Scheduler};

fn scheduler(workers: usize) -> Scheduler {
    Scheduler::builder().workers(workers).build().unwrap()
}

fn spawn_fibers<T: Send + 'static>(
    scheduler: &Scheduler,
    n: usize,
    f: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<JoinHandle<T>> {
    let f = Arc::new(f);
    (0..n)
        .map(|i| {
            let f = f.clone();
            scheduler.spawn(move || {
                assert!(in_fiber());
                f(i)
            })
        })
        .collect()
}

fn join_fibers<T>(fibers: Vec<JoinHandle<T>>) -> Vec<T> {
    fibers.into_iter().map(|f| f.join().unwrap()).collect()
}

/// Runs `test` with one worker, then with two.
fn on_one_and_two_workers(test: fn(&Scheduler)) {
    for workers in [1, 2] {
        within_deadline(move || test(&scheduler(workers)));
    }
}

#[test]
fn mutex_counter_between_fibers() {
    on_one_and_two_workers(|s| {
        let counter = Arc::new(Mutex::new(0u64));
        let c = counter.clone();
        join_fibers(spawn_fibers(s, 8, move |_| {
            for n in 0..2_000 {
                let mut guard = c.lock();
                *guard += 1;
                if n % 16 == 0 {
                    // Switch away while holding: the others must park.
                    yield_now();
                }
            }
        }));
        assert_eq!(*counter.lock(), 16_000);
    });
}

/// Ten fibers and an OS thread walk a chain of ten mutexes hand over hand
/// (each holds link k while it takes link k + 1).
#[test]
fn mutex_chain_of_ten_fibers_and_a_thread() {
    on_one_and_two_workers(|s| {
        const LINKS: usize = 10;
        const WALKS: u64 = 50;
        let chain: Arc<Vec<Mutex<u64>>> = Arc::new((0..LINKS).map(|_| Mutex::new(0)).collect());
        let walk = |chain: &[Mutex<u64>]| {
            for _ in 0..WALKS {
                let mut held = chain[0].lock();
                *held += 1;
                for link in &chain[1..] {
                    let mut next = link.lock();
                    *next += 1;
                    if in_fiber() {
                        yield_now();
                    }
                    held = next;
                }
                drop(held);
            }
        };
        let c = chain.clone();
        let fibers = spawn_fibers(s, 10, move |_| walk(&c));
        let c = chain.clone();
        let thread = std::thread::spawn(move || walk(&c));
        join_fibers(fibers);
        thread.join().unwrap();
        for link in chain.iter() {
            assert_eq!(*link.lock(), 11 * WALKS);
        }
    });
}

#[test]
fn fiber_observes_an_unlock_by_a_thread() {
    on_one_and_two_workers(|s| {
        let m = Arc::new(Mutex::new(()));
        let locked = Arc::new(Event::new());
        let release = Arc::new(Event::new());
        let holder = {
            let (m, locked, release) = (m.clone(), locked.clone(), release.clone());
            std::thread::spawn(move || {
                let _guard = m.lock();
                locked.set();
                release.wait();
            })
        };
        locked.wait();
        let observer = {
            let m = m.clone();
            s.spawn(move || m.wait_lockable())
        };
        release.set();
        observer.join().unwrap();
        holder.join().unwrap();
    });
}

#[test]
fn semaphore_bounds_fibers_and_threads() {
    on_one_and_two_workers(|s| {
        const PERMITS: usize = 3;
        let slots = Arc::new(Semaphore::new(PERMITS as u32));
        let inside = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let section = {
            let (slots, inside, peak) = (slots.clone(), inside.clone(), peak.clone());
            move |_| {
                for _ in 0..200 {
                    slots.wait();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::Relaxed);
                    if in_fiber() {
                        yield_now();
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                    slots.post();
                }
            }
        };
        let threads: Vec<_> = (0..2)
            .map(|i| {
                let section = section.clone();
                std::thread::spawn(move || section(i))
            })
            .collect();
        join_fibers(spawn_fibers(s, 20, section));
        for t in threads {
            t.join().unwrap();
        }
        assert!(peak.load(Ordering::Relaxed) <= PERMITS);
        assert_eq!(slots.value(), PERMITS as u32);
    });
}

#[test]
fn condvar_fiber_producers_thread_consumer() {
    on_one_and_two_workers(|s| {
        struct Channel {
            queue: Mutex<VecDeque<u64>>,
            not_empty: Condvar,
            not_full: Condvar,
        }
        const PER_FIBER: u64 = 1_000;
        let ch = Arc::new(Channel {
            queue: Mutex::new(VecDeque::new()),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        });
        let c = ch.clone();
        let producers = spawn_fibers(s, 4, move |_| {
            for item in 1..=PER_FIBER {
                let mut q = c.not_full.wait_while(c.queue.lock(), |q| q.len() >= 2);
                q.push_back(item);
                drop(q);
                c.not_empty.notify_one();
            }
        });
        let c = ch.clone();
        let consumer = std::thread::spawn(move || {
            let mut sum = 0;
            for _ in 0..4 * PER_FIBER {
                let mut q = c.not_empty.wait_while(c.queue.lock(), |q| q.is_empty());
                sum += q.pop_front().unwrap();
                drop(q);
                c.not_full.notify_all();
            }
            sum
        });
        join_fibers(producers);
        assert_eq!(
            consumer.join().unwrap(),
            4 * PER_FIBER * (PER_FIBER + 1) / 2
        );
    });
}

#[test]
fn barrier_of_a_hundred_fibers() {
    on_one_and_two_workers(|s| {
        const FIBERS: usize = 100;
        const ROUNDS: usize = 10;
        let barrier = Arc::new(Barrier::new(FIBERS));
        let arrived: Arc<Vec<AtomicUsize>> =
            Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
        let (b, a) = (barrier.clone(), arrived.clone());
        let leaders: usize = join_fibers(spawn_fibers(s, FIBERS, move |_| {
            let mut leader_of = 0;
            for count in a.iter() {
                count.fetch_add(1, Ordering::Relaxed);
                if b.wait().is_leader() {
                    leader_of += 1;
                }
                assert_eq!(count.load(Ordering::Relaxed), FIBERS);
            }
            leader_of
        }))
        .into_iter()
        .sum();
        assert_eq!(leaders, ROUNDS);
    });
}

#[test]
fn barrier_between_fibers_and_threads() {
    on_one_and_two_workers(|s| {
        let barrier = Arc::new(Barrier::new(4));
        let b = barrier.clone();
        let fibers = spawn_fibers(s, 2, move |_| {
            for _ in 0..100 {
                b.wait();
            }
        });
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        b.wait();
                    }
                })
            })
            .collect();
        join_fibers(fibers);
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn event_set_by_a_thread_releases_fibers() {
    on_one_and_two_workers(|s| {
        let event = Arc::new(Event::new());
        let e = event.clone();
        let fibers = spawn_fibers(s, 50, move |_| e.wait());
        let setter = {
            let event = event.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                event.set();
            })
        };
        join_fibers(fibers);
        setter.join().unwrap();
    });
}

#[test]
fn event_set_by_a_fiber_releases_a_thread() {
    on_one_and_two_workers(|s| {
        for _ in 0..200 {
            let event = Arc::new(Event::new());
            let e = event.clone();
            let setter = s.spawn(move || e.set());
            event.wait();
            setter.join().unwrap();
        }
    });
}

#[test]
fn word_ping_pong_between_fibers() {
    on_one_and_two_workers(|s| {
        const TURNS: u32 = 2_000;
        let word = Arc::new(Word::new(0));
        let w = word.clone();
        join_fibers(spawn_fibers(s, 2, move |parity| {
            let parity = parity as u32;
            loop {
                let v = w.wait_until(|v| v % 2 == parity || v >= TURNS);
                if v >= TURNS {
                    return;
                }
                w.fetch_add(1);
            }
        }));
        assert_eq!(word.load(), TURNS);
    });
}

#[test]
fn word_ping_pong_between_a_fiber_and_a_thread() {
    on_one_and_two_workers(|s| {
        const TURNS: u32 = 2_000;
        let word = Arc::new(Word::new(0));
        let turn = move |w: &Word, parity: u32| loop {
            let v = w.wait_until(|v| v % 2 == parity || v >= TURNS);
            if v >= TURNS {
                return;
            }
            w.fetch_add(1);
        };
        let w = word.clone();
        let fiber = s.spawn(move || turn(&w, 0));
        let w = word.clone();
        let thread = std::thread::spawn(move || turn(&w, 1));
        fiber.join().unwrap();
        thread.join().unwrap();
        assert_eq!(word.load(), TURNS);
    });
}
