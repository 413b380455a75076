//! Loom models of the wait-queue protocol through each primitive: every
//! interleaving of a waiter's enqueue and re-check with a waker's state
//! change and scan. A lost wake-up shows as a waiter parked forever (loom
//! reports a deadlock or exceeds its branch budget), a use-after-free of a
//! waiter's node as a loom access error.
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p threadwire-fiber --release --test loom_sync`
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use threadwire_fiber::sync::{Barrier, Condvar, Event, Lockable, Mutex, Semaphore, Word};

/// Runs `f` under loom: every interleaving (`None`), or those with at most
/// `bound` preemptions, which keeps the models of three threads (and the
/// barrier's four waits) to seconds.
fn model(bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = bound;
    builder.check(f);
}

const EXHAUSTIVE: Option<usize> = None;
const BOUNDED: Option<usize> = Some(3);

#[test]
fn mutex_two_lockers() {
    model(EXHAUSTIVE, || {
        let m = Arc::new(Mutex::new(0));
        let t = {
            let m = m.clone();
            thread::spawn(move || *m.lock() += 1)
        };
        *m.lock() += 1;
        t.join().unwrap();
        assert_eq!(*m.lock(), 2);
    });
}

#[test]
fn mutex_three_lockers() {
    model(BOUNDED, || {
        let m = Arc::new(Mutex::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || *m.lock() += 1)
            })
            .collect();
        *m.lock() += 1;
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(m.try_lock().map(|g| *g), Some(3));
    });
}

#[test]
fn mutex_unlock_wakes_acquirer_and_observer() {
    model(BOUNDED, || {
        let m = Arc::new(Mutex::new(0));
        let guard = m.lock();
        let acquirer = {
            let m = m.clone();
            thread::spawn(move || *m.lock() += 1)
        };
        let observer = {
            let m = m.clone();
            thread::spawn(move || m.wait_lockable())
        };
        drop(guard);
        acquirer.join().unwrap();
        observer.join().unwrap();
        assert_eq!(*m.lock(), 1);
    });
}

#[test]
fn event_set_releases_waiters() {
    model(BOUNDED, || {
        let event = Arc::new(Event::new());
        let data = Arc::new(AtomicUsize::new(0));
        let waiter = {
            let (event, data) = (event.clone(), data.clone());
            thread::spawn(move || {
                event.wait();
                assert_eq!(data.load(Ordering::Relaxed), 1);
            })
        };
        let setter = {
            let (event, data) = (event.clone(), data.clone());
            thread::spawn(move || {
                data.store(1, Ordering::Relaxed);
                event.set();
            })
        };
        event.wait();
        assert_eq!(data.load(Ordering::Relaxed), 1);
        waiter.join().unwrap();
        setter.join().unwrap();
    });
}

#[test]
fn semaphore_post_wakes_waiter() {
    model(EXHAUSTIVE, || {
        let s = Arc::new(Semaphore::new(0));
        let t = {
            let s = s.clone();
            thread::spawn(move || s.post())
        };
        s.wait();
        t.join().unwrap();
        assert_eq!(s.value(), 0);
    });
}

/// Two waiters, two posts: a waiter that takes a permit while a post is
/// waking it must not leave the other waiter asleep beside a permit.
#[test]
fn semaphore_two_waiters_two_posts() {
    model(BOUNDED, || {
        let s = Arc::new(Semaphore::new(0));
        let waiter = {
            let s = s.clone();
            thread::spawn(move || s.wait())
        };
        let poster = {
            let s = s.clone();
            thread::spawn(move || {
                s.post();
                s.post();
            })
        };
        s.wait();
        waiter.join().unwrap();
        poster.join().unwrap();
        assert_eq!(s.value(), 0);
    });
}

#[test]
fn condvar_notify_after_flag() {
    model(EXHAUSTIVE, || {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let t = {
            let pair = pair.clone();
            thread::spawn(move || {
                *pair.0.lock() = true;
                pair.1.notify_one();
            })
        };
        let (m, c) = &*pair;
        let guard = c.wait_while(m.lock(), |ready| !*ready);
        assert!(*guard);
        drop(guard);
        t.join().unwrap();
    });
}

#[test]
fn word_store_wakes_satisfied_waiter() {
    model(EXHAUSTIVE, || {
        let w = Arc::new(Word::new(0));
        let t = {
            let w = w.clone();
            thread::spawn(move || {
                w.store(1);
                w.store(2);
            })
        };
        assert!(w.wait_until(|v| v >= 1) >= 1);
        w.wait_equal(2);
        t.join().unwrap();
    });
}

#[test]
fn word_two_modifiers() {
    model(BOUNDED, || {
        let w = Arc::new(Word::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let w = w.clone();
                thread::spawn(move || {
                    w.fetch_add(1);
                })
            })
            .collect();
        w.wait_equal(2);
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn barrier_two_rounds() {
    model(BOUNDED, || {
        let b = Arc::new(Barrier::new(2));
        let t = {
            let b = b.clone();
            thread::spawn(move || (b.wait().is_leader(), b.wait().is_leader()))
        };
        let mine = (b.wait().is_leader(), b.wait().is_leader());
        let theirs = t.join().unwrap();
        assert!(mine.0 != theirs.0 && mine.1 != theirs.1);
    });
}
