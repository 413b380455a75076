//! Loom models of the park/unpark handoff: no wake-up is lost, and a
//! notification sent before the park is kept.
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p threadwire-fiber --release --test loom_park`
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use threadwire_fiber::Parker;

#[test]
fn notification_before_park_is_kept() {
    loom::model(|| {
        let parker = Parker::new();
        let unparker = parker.unparker();
        unparker.unpark();
        // Returns at once; a lost notification would spin here forever and
        // exhaust loom's branch budget.
        parker.park();
    });
}

#[test]
fn handoff_is_not_lost() {
    loom::model(|| {
        let parker = Parker::new();
        let unparker = parker.unparker();
        let ready = Arc::new(AtomicBool::new(false));
        let setter = {
            let ready = ready.clone();
            loom::thread::spawn(move || {
                ready.store(true, Ordering::Release);
                unparker.unpark();
            })
        };
        while !ready.load(Ordering::Acquire) {
            parker.park();
        }
        setter.join().unwrap();
    });
}

/// Two notifications racing with one park: the parker must not consume
/// the first and then overwrite the second.
#[test]
fn two_unparkers_one_parker() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let parker = Parker::new();
        let done = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let unparker = parker.unparker();
                let done = done.clone();
                loom::thread::spawn(move || {
                    done.fetch_add(1, Ordering::Release);
                    unparker.unpark();
                })
            })
            .collect();
        while done.load(Ordering::Acquire) < 2 {
            parker.park();
        }
        for t in threads {
            t.join().unwrap();
        }
    });
}
