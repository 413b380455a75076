//! Two fibers hand a turn back and forth, each parking until the other
//! unparks it: the cost of making a fiber runnable from another fiber,
//! on the same worker (`W=1`) or across two workers (`W=2`, the default),
//! where the wake-up crosses cores through the worker's wake list.
//!
//! `cargo run --release -p threadwire-fiber --example handover`
//! (used by docs/PERFORMANCE.md, "Thread package").
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use threadwire_fiber::{Scheduler, Unparker};

const TURNS: u64 = 200_000;

fn main() {
    let workers: usize = std::env::var("W")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let scheduler = Scheduler::builder()
        .workers(workers)
        .build()
        .expect("workers");
    let turn = Arc::new(AtomicU64::new(0));
    let unparkers: Arc<Mutex<Vec<Option<Unparker>>>> = Arc::new(Mutex::new(vec![None, None]));
    let start = Instant::now();
    let fibers: Vec<_> = (0..2u64)
        .map(|me| {
            let (turn, unparkers) = (turn.clone(), unparkers.clone());
            let worker = me as usize % workers;
            scheduler.handle().fiber().worker(worker).spawn(move || {
                unparkers.lock().unwrap()[me as usize] = Some(threadwire_fiber::current_unparker());
                let other = loop {
                    if let Some(u) = unparkers.lock().unwrap()[1 - me as usize].clone() {
                        break u;
                    }
                    threadwire_fiber::yield_now();
                };
                for i in 0..TURNS {
                    let mine = 2 * i + me;
                    while turn.load(Ordering::Acquire) != mine {
                        threadwire_fiber::park();
                    }
                    turn.store(mine + 1, Ordering::Release);
                    other.unpark();
                }
            })
        })
        .collect();
    for f in fibers {
        f.join().expect("fiber");
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / (2 * TURNS) as f64;
    println!("{workers} worker(s): {per:.3} µs a hand-over");
}
