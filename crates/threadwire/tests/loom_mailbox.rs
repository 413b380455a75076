//! Loom models of the mailbox's receive slot (`src/mailbox/slot.rs`,
//! rules 1–4): a result completed on one thread is seen whole by the
//! owner polling on another, never half-written, never before `done`,
//! taken once; and a slot dropped with its result unread frees it. A
//! result read while being written shows as a loom access error.
//!
//! `RUSTFLAGS="--cfg loom" cargo test --release -p threadwire --test loom_mailbox`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use threadwire::slot::Slot;

/// The owner polls while a deliverer completes: the owner sees the
/// result and its stamp exactly once.
#[test]
fn completion_is_seen_whole_by_the_owner() {
    loom::model(|| {
        let slot = Arc::new(Slot::<Vec<u8>>::new());
        let deliverer = {
            let slot = slot.clone();
            // SAFETY: this thread is the slot's one completer (rule 1).
            thread::spawn(move || unsafe { slot.complete(vec![1, 2, 3], 7) })
        };
        // SAFETY: this thread is the owner, the only taker (rule 3).
        let got = loop {
            match unsafe { slot.take() } {
                Some(v) => break v,
                None => thread::yield_now(),
            }
        };
        assert_eq!(got, vec![1, 2, 3]);
        assert!(slot.is_done());
        assert_eq!(slot.arrival(), 7);
        // SAFETY: as above.
        assert_eq!(unsafe { slot.take() }, None, "taken once");
        deliverer.join().unwrap();
    });
}

/// The owner gives up (a withdrawn receive) while the deliverer completes:
/// either it finds nothing, or the whole result; the slot, dropped last by
/// either thread, frees what nobody took.
#[test]
fn a_withdrawn_slot_loses_nothing_and_leaks_nothing() {
    loom::model(|| {
        let slot = Arc::new(Slot::<Box<u64>>::new());
        let deliverer = {
            let slot = slot.clone();
            // SAFETY: this thread is the slot's one completer (rule 1).
            thread::spawn(move || unsafe { slot.complete(Box::new(42), 1) })
        };
        // SAFETY: this thread is the owner, the only taker (rule 3).
        if let Some(v) = unsafe { slot.take() } {
            assert_eq!(*v, 42);
            assert_eq!(slot.arrival(), 1);
        }
        drop(slot);
        deliverer.join().unwrap();
    });
}
