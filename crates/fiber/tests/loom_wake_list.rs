//! Loom model of a worker's wake list (`src/wake_list.rs`, rules 1–5):
//! items pushed by two threads while the worker takes the list, some
//! taken, pushed again and taken again, are each handed out exactly once
//! per push, and the items of one pusher in the order it pushed them.
//!
//! `RUSTFLAGS="--cfg loom" cargo test --release -p threadwire-fiber --test loom_wake_list`
#![cfg(loom)]

use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use threadwire_fiber::wake_list::{Linked, WakeList};

struct Item {
    id: usize,
    link: AtomicPtr<Item>,
    /// Times handed out.
    taken: AtomicUsize,
}

impl Linked for Item {
    fn link(&self) -> &AtomicPtr<Item> {
        &self.link
    }
}

fn item(id: usize) -> Item {
    Item {
        id,
        link: AtomicPtr::new(std::ptr::null_mut()),
        taken: AtomicUsize::new(0),
    }
}

/// Two pushers, two items each, against a taker taking while they push:
/// every item handed out once, each pusher's in its order.
#[test]
fn every_push_is_taken_once_in_order() {
    loom::model(|| {
        let list = Arc::new(WakeList::<Item>::default());
        let items: Arc<Vec<Item>> = Arc::new((0..4).map(item).collect());
        let pushers: Vec<_> = [0usize, 2]
            .into_iter()
            .map(|first| {
                let (list, items) = (list.clone(), items.clone());
                thread::spawn(move || {
                    for i in first..first + 2 {
                        // SAFETY: each item is pushed once, and `items`
                        // outlives every take.
                        unsafe { list.push(&items[i]) };
                    }
                })
            })
            .collect();
        let mut order = Vec::new();
        let take = |order: &mut Vec<usize>| {
            // SAFETY: this thread is the only taker.
            unsafe {
                list.take(|it| {
                    it.taken.fetch_add(1, Ordering::Relaxed);
                    order.push(it.id);
                })
            }
        };
        take(&mut order);
        for p in pushers {
            p.join().unwrap();
        }
        take(&mut order);
        assert!(list.is_empty());
        for it in items.iter() {
            assert_eq!(it.taken.load(Ordering::Relaxed), 1, "item {}", it.id);
        }
        let at = |id| order.iter().position(|&x| x == id).unwrap();
        assert!(at(0) < at(1) && at(2) < at(3), "order {order:?}");
    });
}

/// An item taken and pushed again (a fiber woken, run, parked and woken
/// again) while another thread pushes: handed out once per push.
#[test]
fn an_item_pushed_again_after_its_take_is_taken_again() {
    loom::model(|| {
        let list = Arc::new(WakeList::<Item>::default());
        let items: Arc<Vec<Item>> = Arc::new((0..2).map(item).collect());
        let other = {
            let (list, items) = (list.clone(), items.clone());
            // SAFETY: item 1 is pushed once.
            thread::spawn(move || unsafe { list.push(&items[1]) })
        };
        // SAFETY: item 0 is in no list; this thread is the only taker, and
        // pushes item 0 again only once it was handed out.
        unsafe {
            list.push(&items[0]);
            let mut seen = 0;
            while seen == 0 {
                list.take(|it| {
                    it.taken.fetch_add(1, Ordering::Relaxed);
                    seen += usize::from(it.id == 0);
                });
                thread::yield_now();
            }
            list.push(&items[0]);
        }
        other.join().unwrap();
        // SAFETY: as above.
        unsafe {
            list.take(|it| {
                it.taken.fetch_add(1, Ordering::Relaxed);
            })
        };
        assert!(list.is_empty());
        assert_eq!(items[0].taken.load(Ordering::Relaxed), 2);
        assert_eq!(items[1].taken.load(Ordering::Relaxed), 1);
    });
}
