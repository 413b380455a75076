//! A node of the shared-memory tests.
//!
//! `node-dsm MODE THREADS UNIT`: every node maps the shared space with
//! coherence units of UNIT bytes, and THREADS OS threads of each node
//! (thread 0, the main thread, among them) take part:
//!
//! - `interleaved`: an array of 64 Ki `u64` written element by element
//!   round robin over every thread of every node, so that every unit has
//!   a writer on every node (false sharing); after a barrier every thread
//!   checks the whole array; then the same with the owners shifted by one,
//!   three rounds.
//! - `blocks`: each node writes a contiguous block, the others read it
//!   after a barrier, ten rounds (the pattern of SOR or LU).
//!
//! - `lock`: 10,000 increments of one shared counter, shared out among
//!   every thread of every node, each under lock 7; each increment also
//!   appends the thread's rank to a log under the lock, so that a holder
//!   sees what every earlier holder wrote (transitively, across nodes);
//!   after a barrier every node checks the counter and the log.
//!
//! - `fibers`: node 0 fills an array; after a barrier node 1 (on one
//!   fiber worker) starts 64 fibers, each reading its own unit homed on
//!   node 0: a fiber waiting for its unit parks, so the worker runs the
//!   others and their fetches overlap (`in-flight=` above 1).
//!
//! - `die`: the last node kills itself (SIGKILL) after a first barrier;
//!   the others go on taking a lock and meeting at barriers, and each must
//!   get an error naming the loss (printed `dsm die: nK failed: …`),
//!   never hang.
//! - `free`: after a barrier every node drops its handles: the space must
//!   be unmapped (`/proc/self/maps` has nothing at its base).
//!
//! Prints `dsm MODE: ok faults=R/W fetches=F diffs=D` or panics.

use std::sync::Arc;
use threadwire_dsm::{Dsm, DsmConfig, Region};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let mode: String = arg(1, "interleaved".to_string());
    let threads: usize = arg(2, 1);
    let unit: usize = arg(3, 8192);
    let ep = match mode.as_str() {
        "fibers" => threadwire::Config::new().workers(1).init(),
        _ => threadwire::init(),
    }
    .expect("init");
    let node = ep.node().clone();
    let (me, nodes) = (node.id() as usize, node.nodes() as usize);
    let config = DsmConfig {
        threads,
        unit,
        size: 64 << 20,
        ..DsmConfig::default()
    };
    let dsm = Dsm::new(&ep, config).expect("dsm");
    let n = 64 * 1024;
    let a: Region<u64> = dsm.alloc(n).expect("alloc");
    let b: Region<u64> = match mode.as_str() {
        // Each node's block homed on it: its writes stay local.
        "blocks" => dsm.alloc_homed(n, threadwire_dsm::Homes::Blocks),
        _ => dsm.alloc(n),
    }
    .expect("alloc");
    let all = threads * nodes;
    let base = a.as_ptr() as usize;
    let spawner = node.clone();
    let body = Arc::new(move |t: usize, ep: &threadwire::Endpoint| {
        let rank = me * threads + t;
        match mode.as_str() {
            "interleaved" => {
                for round in 0..3 {
                    for i in (0..n).filter(|i| (i + round) % all == rank) {
                        a.set(i, (i * 10 + round) as u64);
                    }
                    a.dsm().expect("shared").barrier(ep).expect("barrier");
                    for i in 0..n {
                        assert_eq!(
                            a.get(i),
                            (i * 10 + round) as u64,
                            "element {i} round {round}"
                        );
                    }
                    a.dsm().expect("shared").barrier(ep).expect("barrier");
                }
            }
            "blocks" => {
                // No barrier after allocating: a node may ask a home that
                // has not allocated yet (engine rule 8).
                let block = n / all;
                for round in 0..10u64 {
                    for i in rank * block..(rank + 1) * block {
                        b.set(i, i as u64 * 1000 + round);
                    }
                    b.dsm().expect("shared").barrier(ep).expect("barrier");
                    let from = (rank + round as usize + 1) % all;
                    // Every other round, the block asked for ahead (engine
                    // rule 11): it must read the same.
                    if round % 2 == 1 {
                        b.prefetch(from * block..(from + 1) * block);
                    }
                    for i in from * block..(from + 1) * block {
                        assert_eq!(
                            b.get(i),
                            i as u64 * 1000 + round,
                            "element {i} round {round}"
                        );
                    }
                    b.dsm().expect("shared").barrier(ep).expect("barrier");
                }
            }
            "lock" => {
                let total = 10_000;
                let mine = total / all + usize::from(rank < total % all);
                for _ in 0..mine {
                    let _held = b.dsm().expect("shared").lock(ep, 7).expect("lock");
                    let count = b.get(0) as usize;
                    // The log: element 1 + k holds who made increment k.
                    if count > 0 {
                        assert!(b.get(count) > 0, "increment {count} left no trace");
                    }
                    b.set(1 + count, rank as u64 + 1);
                    b.set(0, count as u64 + 1);
                }
                b.dsm().expect("shared").barrier(ep).expect("barrier");
                assert_eq!(b.get(0), total as u64, "the counter");
                let mut per_rank = vec![0usize; all];
                for k in 1..=total {
                    per_rank[b.get(k) as usize - 1] += 1;
                }
                assert_eq!(per_rank[rank], mine, "the log of rank {rank}");
                b.dsm().expect("shared").barrier(ep).expect("barrier");
            }
            "fibers" => {
                let per_unit = unit / 8;
                // Units homed on node 0: every `nodes`-th unit of `b`.
                let first = n * 8 / unit; // b follows a
                let units: Vec<usize> = (0..n / per_unit)
                    .filter(|k| (first + k).is_multiple_of(nodes))
                    .collect();
                if me == 0 {
                    for &k in &units {
                        b.set(k * per_unit, k as u64 + 1);
                    }
                }
                b.dsm().expect("shared").barrier(ep).expect("barrier");
                if me == 1 {
                    let fibers: Vec<_> = units
                        .iter()
                        .take(64)
                        .map(|&k| {
                            let b = b.clone();
                            node.spawn(move |_ep| assert_eq!(b.get(k * per_unit), k as u64 + 1))
                        })
                        .collect();
                    for f in fibers {
                        f.join().expect("a fiber failed");
                    }
                }
                b.dsm().expect("shared").barrier(ep).expect("barrier");
            }
            "die" => {
                b.dsm().expect("shared").barrier(ep).expect("barrier");
                if me == nodes - 1 {
                    // SAFETY: killing our own process.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                }
                let failed = (0..1000).find_map(|round| {
                    let held = b.dsm().expect("shared").lock(ep, round % 3);
                    let r = held
                        .map(drop)
                        .and_then(|()| b.dsm().expect("shared").barrier(ep));
                    r.err()
                });
                let e = failed.expect("no operation failed after a node was killed");
                // One thread prints and ends the process: another's line
                // must not be cut off half written by the exit.
                static EXITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
                let _only = EXITING.lock().unwrap_or_else(|p| p.into_inner());
                println!("dsm die: n{me} failed: {e}");
                let _ = std::io::Write::flush(&mut std::io::stdout());
                std::process::exit(0);
            }
            "free" => b.dsm().expect("shared").barrier(ep).expect("barrier"),
            other => panic!("unknown mode {other}"),
        }
    });
    let others: Vec<_> = (1..threads)
        .map(|t| {
            let (body, node) = (body.clone(), spawner.clone());
            std::thread::spawn(move || body(t, &node.endpoint().expect("an endpoint")))
        })
        .collect();
    body(0, &ep);
    for t in others {
        t.join().expect("a thread failed");
    }
    let s = dsm.stats();
    if arg::<String>(1, String::new()) == "free" {
        let base = format!("{base:x}-");
        drop((body, dsm));
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        assert!(
            !maps.lines().any(|l| l.starts_with(&base)),
            "the space is still mapped:\n{maps}"
        );
    }
    println!(
        "dsm {}: ok faults={}/{} fetches={} diffs={} in-flight={}",
        arg::<String>(1, "interleaved".into()),
        s.read_faults,
        s.write_faults,
        s.fetches,
        s.diffs,
        s.most_in_flight
    );
}
