//! Multicast to lists spanning the threads of several nodes.
//!
//! `node-mcast THREADS ROUNDS`: the first THREADS threads of every node
//! (thread 0 and THREADS − 1 fibers) each multicast ROUNDS messages to a
//! list of its own — about two thirds of all threads, itself included,
//! with repeats — then send one plain message to each listed thread, and
//! receive from every sender whose list holds them. Every receiver checks
//! that it gets each round exactly once, in order, before the plain
//! message; bad lists give typed errors and deliver nothing.
//!
//! Thread 0 of each node prints `mcast n<id>: ok received=<n>`.
//!
//! `node-mcast flood COUNT` (2 nodes): n0.t0 multicasts COUNT messages of
//! 1 MiB to four threads of n1, which start receiving 2 s late; every
//! copy counts in n1's eager budget, so the sender waits instead of
//! piling copies up at the receiver. Each node prints `peak n<id> <VmHWM
//! kB>` and `mcast flood: ok`.

mod common;

use threadwire::{Address, Endpoint, McastError};

const TAG: u32 = 5;

fn rank(a: Address, threads: u32) -> u32 {
    a.node * threads + a.thread
}

/// The list sender `s` multicasts to: not deduplicated, not sorted.
fn list(s: Address, nodes: u32, threads: u32) -> Vec<Address> {
    let all = (0..nodes).flat_map(|n| (0..threads).map(move |t| Address::new(n, t)));
    let mut l: Vec<Address> = all
        .filter(|&a| a == s || !(rank(a, threads) + rank(s, threads)).is_multiple_of(3))
        .collect();
    l.reverse();
    let repeats: Vec<Address> = l.iter().copied().step_by(2).collect();
    l.extend(repeats);
    l.push(s);
    l
}

fn run(ep: &Endpoint, threads: u32, rounds: u32) -> u32 {
    let me = ep.address();
    let nodes = ep.node().nodes();
    let mine = list(me, nodes, threads);

    assert!(ep.mcast(&[], TAG, b"nothing".to_vec()).is_ok());
    let mut bad = mine.clone();
    bad.push(Address::new(nodes, 0));
    match ep.mcast(&bad, TAG, b"bad".to_vec()) {
        Err(McastError::NoSuchEndpoint { to, payload }) => {
            assert_eq!(to, Address::new(nodes, 0));
            assert_eq!(payload.into_vec(), b"bad");
        }
        other => panic!("{me}: a list with an unknown node gave {other:?}"),
    }

    for round in 0..rounds {
        let data = [
            me.node.to_le_bytes(),
            me.thread.to_le_bytes(),
            round.to_le_bytes(),
        ]
        .concat();
        ep.mcast(&mine, TAG, data).expect("multicast");
    }
    let mut distinct = mine.clone();
    distinct.sort_unstable();
    distinct.dedup();
    for &to in &distinct {
        let data = [
            me.node.to_le_bytes(),
            me.thread.to_le_bytes(),
            rounds.to_le_bytes(),
        ]
        .concat();
        ep.send(to, TAG, data).expect("plain send");
    }

    let mut received = 0;
    for n in 0..nodes {
        for t in 0..threads {
            let s = Address::new(n, t);
            if !list(s, nodes, threads).contains(&me) {
                continue;
            }
            for round in 0..=rounds {
                let m = ep.recv(s, TAG).expect("receive");
                assert_eq!(m.source(), s);
                let want = [
                    s.node.to_le_bytes(),
                    s.thread.to_le_bytes(),
                    round.to_le_bytes(),
                ]
                .concat();
                assert_eq!(m.into_vec(), want, "{me}: from {s}, round {round}");
                received += 1;
            }
        }
    }
    received
}

fn flood(ep: &Endpoint, count: u32) {
    const LEN: usize = 1 << 20;
    let node = ep.node().clone();
    let list: Vec<Address> = (0..4).map(|t| Address::new(1, t)).collect();
    if ep.address().node == 0 {
        let data = vec![7u8; LEN];
        for _ in 0..count {
            ep.mcast(&list, TAG, data.clone()).expect("mcast");
        }
    } else {
        let receivers: Vec<_> = (1..4)
            .map(|_| {
                node.spawn(move |ep| {
                    threadwire::fiber::sleep(std::time::Duration::from_secs(2));
                    for _ in 0..count {
                        let m = ep.recv(Address::new(0, 0), TAG).expect("copy");
                        assert_eq!(m.len(), LEN);
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_secs(2));
        for _ in 0..count {
            let m = ep.recv(Address::new(0, 0), TAG).expect("copy");
            assert_eq!(m.len(), LEN);
        }
        for r in receivers {
            r.join().expect("receiver");
        }
    }
    threadwire::Group::world(ep)
        .expect("world")
        .barrier()
        .expect("done");
    println!("peak n{} {}", node.id(), common::vm_hwm());
    println!("mcast flood: ok");
}

fn main() {
    common::exit_on_panic();
    if std::env::args().nth(1).as_deref() == Some("flood") {
        let ep = threadwire::Config::new()
            .log(true)
            .init()
            .expect("join the job");
        return flood(&ep, common::arg(2, 200));
    }
    let threads: u32 = common::arg(1, 2);
    let rounds: u32 = common::arg(2, 20);
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let workers: Vec<_> = (1..threads)
        .map(|_| node.spawn(move |ep| run(&ep, threads, rounds)))
        .collect();
    let mut received = run(&ep, threads, rounds);
    for w in workers {
        received += w.join().expect("worker panicked");
    }
    // Every thread is done sending before any node finishes.
    let world = threadwire::Group::world(&ep).expect("world");
    world.barrier().expect("barrier");
    println!("mcast n{}: ok received={received}", node.id());
}
