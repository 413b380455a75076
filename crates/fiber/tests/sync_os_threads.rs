//! Every primitive of `threadwire_fiber::sync` under contention from
//! several OS threads. No test asserts a time; each runs under a deadline
//! so that a lost wake-up fails the test rather than hanging it.

// Loom builds the crate without the scheduler, and its types work only
// inside `loom::model`.
#![cfg(not(loom))]

mod support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use support::within_deadline;
use threadwire_fiber::sync::{Barrier, Condvar, Event, Lockable, Mutex, Semaphore, Word};

fn spawn_n<T: Send + 'static>(
    n: usize,
    f: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<JoinHandle<T>> {
    let f = Arc::new(f);
    (0..n)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || f(i))
        })
        .collect()
}

fn join_all<T>(threads: Vec<JoinHandle<T>>) -> Vec<T> {
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn mutex_counter_four_threads() {
    within_deadline(|| {
        let counter = Arc::new(Mutex::new(0u64));
        let inside = Arc::new(AtomicUsize::new(0));
        let (c, i) = (counter.clone(), inside.clone());
        join_all(spawn_n(4, move |_| {
            for _ in 0..10_000 {
                let mut guard = c.lock();
                assert_eq!(i.fetch_add(1, Ordering::Relaxed), 0, "two holders");
                *guard += 1;
                i.fetch_sub(1, Ordering::Relaxed);
            }
        }));
        assert_eq!(*counter.lock(), 40_000);
    });
}

#[test]
fn mutex_try_lock_and_observers_under_contention() {
    within_deadline(|| {
        let m = Arc::new(Mutex::new(0u64));
        let stop = Arc::new(AtomicBool::new(false));
        let observers = {
            let (m, stop) = (m.clone(), stop.clone());
            spawn_n(2, move |_| {
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    m.wait_lockable();
                    seen += 1;
                }
                seen
            })
        };
        let m2 = m.clone();
        join_all(spawn_n(3, move |i| {
            for n in 0..5_000 {
                if i == 0 && n % 2 == 0 {
                    if let Some(mut g) = m2.try_lock() {
                        *g += 1;
                        continue;
                    }
                }
                let mut g = m2.lock();
                *g += 1;
                if n % 64 == 0 {
                    std::thread::yield_now();
                }
            }
        }));
        stop.store(true, Ordering::Relaxed);
        assert!(join_all(observers).iter().all(|&seen| seen > 0));
        assert_eq!(*m.lock(), 15_000);
    });
}

#[test]
fn semaphore_bounds_concurrency() {
    within_deadline(|| {
        const PERMITS: usize = 3;
        let slots = Arc::new(Semaphore::new(PERMITS as u32));
        let inside = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (s, i, p) = (slots.clone(), inside.clone(), peak.clone());
        join_all(spawn_n(8, move |_| {
            for n in 0..2_000 {
                s.wait();
                let now = i.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::Relaxed);
                if n % 100 == 0 {
                    std::thread::yield_now();
                }
                i.fetch_sub(1, Ordering::SeqCst);
                s.post();
            }
        }));
        assert!(peak.load(Ordering::Relaxed) <= PERMITS);
        assert_eq!(slots.value(), PERMITS as u32);
    });
}

#[test]
fn semaphore_as_a_signal_between_threads() {
    within_deadline(|| {
        let items = Arc::new(Semaphore::new(0));
        let producers = {
            let items = items.clone();
            spawn_n(2, move |_| {
                for _ in 0..10_000 {
                    items.post();
                }
            })
        };
        let consumers = {
            let items = items.clone();
            spawn_n(2, move |_| {
                for _ in 0..10_000 {
                    items.wait();
                }
            })
        };
        join_all(producers);
        join_all(consumers);
        assert_eq!(items.value(), 0);
        assert!(!items.try_wait());
    });
}

#[test]
fn condvar_bounded_producer_consumer() {
    within_deadline(|| {
        struct Channel {
            queue: Mutex<VecDeque<u64>>,
            not_empty: Condvar,
            not_full: Condvar,
        }
        const CAPACITY: usize = 4;
        const PER_PRODUCER: u64 = 5_000;
        let channel = Arc::new(Channel {
            queue: Mutex::new(VecDeque::new()),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        });
        let producers = {
            let ch = channel.clone();
            spawn_n(2, move |_| {
                for item in 1..=PER_PRODUCER {
                    let mut q = ch
                        .not_full
                        .wait_while(ch.queue.lock(), |q| q.len() == CAPACITY);
                    q.push_back(item);
                    drop(q);
                    ch.not_empty.notify_one();
                }
            })
        };
        let consumers = {
            let ch = channel.clone();
            spawn_n(2, move |_| {
                let mut sum = 0;
                for _ in 0..PER_PRODUCER {
                    let mut q = ch.not_empty.wait_while(ch.queue.lock(), |q| q.is_empty());
                    let item = q.pop_front().unwrap();
                    assert!(q.len() < CAPACITY);
                    drop(q);
                    ch.not_full.notify_one();
                    sum += item;
                }
                sum
            })
        };
        join_all(producers);
        let total: u64 = join_all(consumers).into_iter().sum();
        assert_eq!(total, 2 * PER_PRODUCER * (PER_PRODUCER + 1) / 2);
    });
}

#[test]
fn condvar_notify_all_and_timeout() {
    within_deadline(|| {
        let state = Arc::new((Mutex::new(false), Condvar::new()));
        let (m, c) = &*state;
        let (guard, result) = c.wait_timeout(m.lock(), Duration::from_millis(1));
        assert!(result.timed_out());
        drop(guard);
        let waiters = {
            let state = state.clone();
            spawn_n(6, move |_| {
                let (m, c) = &*state;
                let _open = c.wait_while(m.lock(), |open| !*open);
            })
        };
        std::thread::sleep(Duration::from_millis(5));
        *m.lock() = true;
        c.notify_all();
        join_all(waiters);
    });
}

#[test]
fn barrier_generations() {
    within_deadline(|| {
        const THREADS: usize = 4;
        const ROUNDS: usize = 200;
        let barrier = Arc::new(Barrier::new(THREADS));
        let arrived: Arc<Vec<AtomicUsize>> =
            Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
        let (b, a) = (barrier.clone(), arrived.clone());
        let leaders: usize = join_all(spawn_n(THREADS, move |_| {
            let mut leader_of = 0;
            for (round, count) in a.iter().enumerate() {
                count.fetch_add(1, Ordering::Relaxed);
                if b.wait().is_leader() {
                    leader_of += 1;
                }
                // No one passes before everyone of the round arrived.
                assert_eq!(count.load(Ordering::Relaxed), THREADS, "round {round}");
            }
            leader_of
        }))
        .into_iter()
        .sum();
        assert_eq!(leaders, ROUNDS);
    });
}

#[test]
fn event_releases_every_waiter() {
    within_deadline(|| {
        let event = Arc::new(Event::new());
        let data = Arc::new(AtomicUsize::new(0));
        let waiters = {
            let (e, d) = (event.clone(), data.clone());
            spawn_n(8, move |_| {
                e.wait();
                d.load(Ordering::Relaxed)
            })
        };
        std::thread::sleep(Duration::from_millis(5));
        data.store(42, Ordering::Relaxed);
        event.set();
        assert!(join_all(waiters).iter().all(|&d| d == 42));
        event.wait();
        assert!(event.wait_timeout(Duration::ZERO));
    });
}

#[test]
fn many_events_in_a_row() {
    within_deadline(|| {
        for _ in 0..2_000 {
            let event = Arc::new(Event::new());
            let e = event.clone();
            let waiter = std::thread::spawn(move || e.wait());
            event.set();
            waiter.join().unwrap();
        }
    });
}

#[test]
fn word_ping_pong() {
    within_deadline(|| {
        const TURNS: u32 = 10_000;
        let word = Arc::new(Word::new(0));
        let w = word.clone();
        join_all(spawn_n(2, move |parity| {
            let parity = parity as u32;
            loop {
                let v = w.wait_until(|v| v % 2 == parity || v >= TURNS);
                if v >= TURNS {
                    return;
                }
                assert_eq!(w.fetch_add(1), v);
            }
        }));
        assert_eq!(word.load(), TURNS);
    });
}

#[test]
fn word_waits_wake_only_when_satisfied() {
    within_deadline(|| {
        let word = Arc::new(Word::new(10));
        let waiters = {
            let w = word.clone();
            spawn_n(5, move |i| {
                let bound = 2 * i as u32 + 1; // 1, 3, 5, 7, 9
                let seen = w.wait_less_than(bound);
                assert!(seen < bound);
                seen
            })
        };
        let equal = {
            let w = word.clone();
            std::thread::spawn(move || w.wait_equal(4))
        };
        for v in (0..10).rev() {
            word.store(v);
            std::thread::sleep(Duration::from_micros(200));
        }
        join_all(waiters);
        // 4 was held for a while, but the waiter may have missed it; show
        // it again until the waiter has returned.
        while !equal.is_finished() {
            word.store(4);
            std::thread::sleep(Duration::from_millis(1));
        }
        equal.join().unwrap();
    });
}

#[test]
fn word_countdown_from_many_threads() {
    within_deadline(|| {
        let pending = Arc::new(Word::new(16 * 1_000));
        let p = pending.clone();
        let workers = spawn_n(16, move |_| {
            for _ in 0..1_000 {
                p.fetch_sub(1);
            }
        });
        pending.wait_equal(0);
        join_all(workers);
    });
}
