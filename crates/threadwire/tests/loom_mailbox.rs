//! Loom models of the mailbox's incoming stack (`src/mailbox/incoming.rs`,
//! steps 1–4): items pushed by other threads while the owner takes them
//! all come out once each, each pusher's in the order it pushed them,
//! and none is lost or freed twice; an owner that sets itself before
//! its first take is seen by a pusher whose item that take missed.
//!
//! `RUSTFLAGS="--cfg loom" cargo test --release -p threadwire --test loom_mailbox`
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use threadwire::incoming::Incoming;

/// Two pushers, two items each, while the owner takes twice and then
/// once more after both finished: every item once, each pusher's in order.
#[test]
fn every_item_once_in_each_pushers_order() {
    loom::model(|| {
        let stack = Arc::new(Incoming::<(u8, u8)>::new());
        let pushers: Vec<_> = (0..2u8)
            .map(|p| {
                let stack = stack.clone();
                thread::spawn(move || {
                    stack.push((p, 0));
                    stack.push((p, 1));
                })
            })
            .collect();
        let mut got = Vec::new();
        got.extend(stack.take_all());
        got.extend(stack.take_all());
        for p in pushers {
            p.join().unwrap();
        }
        got.extend(stack.take_all());
        assert_eq!(got.len(), 4, "{got:?}");
        for p in 0..2u8 {
            let mine: Vec<u8> = got
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, i)| *i)
                .collect();
            assert_eq!(mine, vec![0, 1], "pusher {p}: {got:?}");
        }
        assert!(stack.is_empty());
    });
}

/// Step 4 (the mailbox's rule 4): the owner sets its flag, then takes
/// with the exchange made;
/// the pusher pushes, then reads the flag. Either the take finds the
/// item or the pusher finds the flag — never neither.
#[test]
fn a_missed_item_finds_the_owner_set() {
    loom::model(|| {
        let stack = Arc::new(Incoming::<u8>::new());
        let owner_set = Arc::new(AtomicBool::new(false));
        let pusher = {
            let (stack, owner_set) = (stack.clone(), owner_set.clone());
            thread::spawn(move || {
                stack.push(7);
                owner_set.load(Ordering::Relaxed)
            })
        };
        owner_set.store(true, Ordering::Relaxed);
        let took = stack.take_all_synchronized().count();
        let pusher_saw_owner = pusher.join().unwrap();
        assert!(
            took == 1 || pusher_saw_owner,
            "item missed and owner unseen"
        );
    });
}

/// Items left on the stack, or in a drain not iterated, are freed.
#[test]
fn untaken_items_are_freed() {
    loom::model(|| {
        let stack = Arc::new(Incoming::<Box<u64>>::new());
        let pusher = {
            let stack = stack.clone();
            thread::spawn(move || stack.push(Box::new(1)))
        };
        drop(stack.take_all());
        pusher.join().unwrap();
        drop(stack);
    });
}
