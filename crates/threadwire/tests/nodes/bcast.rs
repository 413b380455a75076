//! Broadcasts among the nodes of a job, every byte checked; across hosts
//! on the UDP channel they go by the root's multicast stream.
//!
//! `node-bcast verify ROUNDS THREADS`: the first THREADS threads of every
//! node (thread 0 and THREADS − 1 fibers) form `Group::world_threads`;
//! each round broadcasts 8, 100, 1000, 60000 and 1000000 bytes from a
//! root on the next node, and every member checks every byte.
//! Thread 0 of each node prints `bcast n<id>: ok rounds=<ROUNDS>`.
//!
//! `node-bcast leave ROUNDS`: thread 0 of each node; node 0 broadcasts
//! 1 MB each round and the last node leaves at once (exits without
//! finalizing) after receiving round ROUNDS / 2. Every survivor ends up
//! told of the loss by a broadcast or the barrier after it (printing
//! `bcast n<id>: PeerLost n<last>`), shrinks the group to the survivors
//! and broadcasts the remaining rounds among them, checked, then prints
//! `bcast n<id>: survivors ok`.

mod common;

use threadwire::{CollError, Endpoint, Group};

const SIZES: [usize; 5] = [8, 100, 1000, 60_000, 1_000_000];

/// Round `round`'s message of `len` bytes from `root`.
fn pattern(round: u32, root: usize, len: usize) -> Vec<u8> {
    let seed = (round as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ root as u64;
    (0..len)
        .map(|i| {
            (seed
                .wrapping_add(i as u64)
                .wrapping_mul(0xbf58_476d_1ce4_e5b9)
                >> 56) as u8
        })
        .collect()
}

/// One broadcast of round `round` from `root`, checked at every member.
fn one(g: &Group, round: u32, root: usize, len: usize) -> Result<(), CollError> {
    let want = pattern(round, root, len);
    let mut buf = match g.rank() == root {
        true => want.clone(),
        false => vec![0u8; len],
    };
    g.bcast(&mut buf, root)?;
    assert!(
        buf == want,
        "round {round}: {len} bytes from rank {root} differ at rank {}",
        g.rank()
    );
    Ok(())
}

fn verify(ep: &Endpoint, rounds: u32, threads: u32) {
    let g = Group::world_threads(ep, threads).expect("world");
    for round in 0..rounds {
        // Thread 0 of node `round` (mod the nodes): every node a root.
        let root = round as usize * threads as usize % g.size();
        for len in SIZES {
            one(&g, round, root, len).expect("broadcast");
        }
    }
    g.barrier().expect("barrier");
}

fn leave(ep: &Endpoint, rounds: u32) {
    let g = Group::world(ep).expect("world");
    let last = g.size() - 1;
    let mut round = 0;
    let lost = loop {
        if round == rounds {
            panic!("rank {}: no loss seen in {rounds} rounds", g.rank());
        }
        let r = one(&g, round, 0, 1_000_000).and_then(|()| g.barrier());
        if g.rank() == last && round == rounds / 2 {
            // Gone mid-job: no goodbye, no finalize.
            std::process::exit(0);
        }
        match r {
            Ok(()) => round += 1,
            Err(CollError::PeerLost(lost)) => break lost,
            Err(e) => panic!("rank {}: round {round}: {e}", g.rank()),
        }
    };
    println!("bcast n{}: PeerLost n{}", ep.address().node, lost.node);
    let survivors = g.shrink().expect("shrink");
    assert_eq!(survivors.size(), g.size() - 1);
    for round in rounds..rounds + 4 {
        one(&survivors, round, 0, 1_000_000).expect("broadcast among survivors");
    }
    survivors.barrier().expect("barrier among survivors");
    println!("bcast n{}: survivors ok", ep.address().node);
}

fn main() {
    common::exit_on_panic();
    let mode = std::env::args().nth(1).unwrap_or_default();
    let rounds: u32 = common::arg(2, 4);
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    match mode.as_str() {
        "verify" => {
            let threads: u32 = common::arg(3, 1);
            let node = ep.node().clone();
            let workers: Vec<_> = (1..threads)
                .map(|_| node.spawn(move |ep| verify(&ep, rounds, threads)))
                .collect();
            verify(&ep, rounds, threads);
            for w in workers {
                w.join().expect("worker panicked");
            }
            println!("bcast n{}: ok rounds={rounds}", node.id());
        }
        "leave" => leave(&ep, rounds),
        other => panic!("unknown mode {other:?}: verify or leave"),
    }
}
