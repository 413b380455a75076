//! Many fibers per node exchanging messages across nodes.
//!
//! `node-fibers FIBERS ROUNDS WORKERS MODE`: every node spawns FIBERS fiber
//! endpoints on WORKERS workers (0: the runtime's default; MODE `fiber`;
//! `os` uses OS threads, for a small comparison). Fiber `i` of node `k` sends ROUNDS numbered messages
//! to fiber `i` of node `k+1` and receives ROUNDS from fiber `i` of node
//! `k-1`, checking their order and contents; in between it yields, so
//! sends and receives of thousands of fibers interleave on few workers.
//! Prints `fibers nK: ok received=.. workers=..` (the node's worker
//! threads, by their names) or panics (status 101).

mod common;

use threadwire::{Address, Config, Endpoint};

fn main() {
    common::exit_on_panic();
    let fibers: u32 = common::arg(1, 1000);
    let rounds: u32 = common::arg(2, 3);
    let workers: usize = common::arg(3, 2);
    let mode: String = common::arg(4, "fiber".to_string());
    let config = match workers {
        0 => Config::new(),
        n => Config::new().workers(n),
    };
    let ep = config.log(true).init().expect("init");
    let node = ep.node().clone();
    let (me, nodes) = (node.id(), node.nodes());
    let next = (me + 1) % nodes;
    let prev = (me + nodes - 1) % nodes;
    let body = move |ep: Endpoint| -> u64 {
        // Thread numbers: t0 is main, fiber i is t(i+1) on every node.
        let t = ep.address().thread;
        let to = Address::new(next, t);
        let from = Address::new(prev, t);
        let mut received = 0;
        for r in 0..rounds {
            ep.send(to, r, format!("{me}:{t}:{r}").into_bytes())
                .expect("send");
            threadwire::fiber::yield_now();
            let m = ep.recv(from, r).expect("recv");
            assert_eq!(m.into_vec(), format!("{prev}:{t}:{r}").into_bytes());
            received += 1;
        }
        received
    };
    let handles: Vec<_> = (0..fibers)
        .map(|_| match mode.as_str() {
            "os" => node.spawn_os(body),
            _ => node.spawn(body),
        })
        .collect();
    let received: u64 = handles
        .into_iter()
        .map(|h| h.join().expect("a fiber panicked"))
        .sum();
    assert_eq!(received, u64::from(fibers) * u64::from(rounds));
    let prefix = format!("n{me}-worker");
    let workers = std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(&prefix))
        })
        .count();
    println!("fibers n{me}: ok received={received} workers={workers}");
}
