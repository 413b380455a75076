//! Ping-pong between n0.t0 and n1.t0 that goes on while strangers knock at
//! node 0's door, until the file STOP_FILE exists.
//!
//! `node-strangers STOP_FILE`, 2 nodes. Node 0 prints
//! `listen <ip:port> job <16 hex digits>` before the first round,
//! `rounds <n>` every 500 rounds, and at the end
//! `pingpong: <n> rounds ok`.

mod common;

use std::path::PathBuf;
use threadwire::{Address, ANY_TAG};

const PING: u32 = 1;
const PONG: u32 = 2;
const STOP: u32 = 3;

/// Mostly small messages, every 16th of 64 KiB, all with checkable bytes.
fn payload(round: u64) -> Vec<u8> {
    let len = if round.is_multiple_of(16) {
        64 << 10
    } else {
        16
    };
    let seed = round.to_le_bytes();
    (0..len).map(|i| seed[i % 8] ^ (i as u8)).collect()
}

fn main() {
    common::exit_on_panic();
    let stop_file = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: node-strangers STOP_FILE"),
    );
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    assert_eq!(node.nodes(), 2, "run with -n 2");
    let (n0, n1) = (Address::new(0, 0), Address::new(1, 0));
    if node.id() == 1 {
        loop {
            let m = ep.recv(n0, ANY_TAG).expect("receive from n0");
            match m.tag() {
                PING => ep.send(n0, PONG, m.into_payload()).expect("pong"),
                STOP => return,
                other => panic!("unexpected tag {other}"),
            }
        }
    }
    let listen = node.listen_address().expect("a launched node listens");
    println!("listen {listen} job {:016x}", node.job_id());
    let mut round = 0u64;
    loop {
        if round.is_multiple_of(50) && stop_file.exists() {
            break;
        }
        ep.send(n1, PING, payload(round)).expect("ping");
        let m = ep.recv(n1, PONG).expect("pong from n1");
        assert!(
            m.into_vec() == payload(round),
            "round {round}: corrupted pong"
        );
        round += 1;
        if round.is_multiple_of(500) {
            println!("rounds {round}");
        }
    }
    ep.send(n1, STOP, Vec::new()).expect("stop");
    println!("pingpong: {round} rounds ok");
}
