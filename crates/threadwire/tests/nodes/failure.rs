//! A node dies by SIGKILL in the middle of an exchange; the survivors'
//! pending operations on it end with `PeerLost` instead of waiting forever.
//!
//! `node-failure MODE`, 3 nodes of 2 threads, MODE one of
//! - `abort`: survivors check what they must and exit 0;
//! - `continue`: survivors then keep exchanging among themselves (run it
//!   under `FailurePolicy::Continue`);
//! - `stubborn`: survivors check, then ignore the loss and sleep forever,
//!   so that only the launcher can end the job.
//!
//! Every node prints `pid <pid>` first. n2.t0 waits until every survivor
//! thread says it is about to wait on node 2, starts a 4 MiB send (an
//! announced one: a rendezvous the dead node can never finish), and
//! kills itself while n2.t1 streams small messages to n0.t1. Survivors
//! print one line per check, `<address>: <what>: <result>`.

mod common;

use std::sync::mpsc;
use std::time::Duration;
use threadwire::{
    Address, Endpoint, LossCause, Message, PeerLost, RecvError, SendError, Source, ANY_SOURCE,
};

const WARM_UP: u32 = 10;
const READY: u32 = 100;
const STREAM: u32 = 150;
const BIG: u32 = 151;
/// Nobody ever sends this tag: a receive of it can only end by a loss.
const NEVER: u32 = 200;
const AFTER: u32 = 400;
const ROUNDS: u32 = 50;
/// Long enough to be under way when n2 dies, short enough to bound the
/// memory of n0.t1's unexpected queue if it ever is not.
const STREAM_LEN: u32 = 200_000;
const BIG_LEN: usize = 4 << 20;

fn big_payload() -> Vec<u8> {
    (0..BIG_LEN).map(|i| (i % 251) as u8).collect()
}

/// A few rounds between the same-numbered threads of every node.
fn warm_up(ep: &Endpoint) {
    let me = ep.address();
    let others: Vec<Address> = (0..3)
        .filter(|&n| n != me.node)
        .map(|n| Address::new(n, me.thread))
        .collect();
    for round in 0..5u32 {
        for &o in &others {
            ep.send(o, WARM_UP, round.to_le_bytes().to_vec())
                .expect("warm-up send");
        }
        for &o in &others {
            let m = ep.recv(o, WARM_UP).expect("warm-up receive");
            assert_eq!(m.into_vec(), round.to_le_bytes());
        }
    }
}

/// Checks that `r` is the loss of node 2 and prints it.
fn expect_lost(ep: &Endpoint, what: &str, r: Result<Message, RecvError>) {
    match r {
        Err(RecvError::PeerLost(PeerLost {
            node: 2,
            cause: LossCause::Failed(why),
        })) => println!("{}: {what}: PeerLost n2 ({why})", ep.address()),
        other => panic!(
            "{}: {what}: expected the loss of n2, got {other:?}",
            ep.address()
        ),
    }
}

/// Sends to the dead node must fail and give the message back.
fn send_to_dead(ep: &Endpoint) {
    let data = b"are you there?".to_vec();
    match ep.send(Address::new(2, 0), 1, data.clone()) {
        Err(SendError::PeerLost { to, lost, payload }) => {
            assert_eq!((to, lost.node), (Address::new(2, 0), 2));
            assert_eq!(payload.into_vec(), data, "the unsent message comes back");
            println!("{}: send to n2.t0: PeerLost n2", ep.address());
        }
        other => panic!("{}: send to n2.t0: {other:?}", ep.address()),
    }
}

/// What each survivor thread waits on when node 2 dies.
fn survive(ep: &Endpoint) {
    let me = ep.address();
    ep.send(Address::new(2, 0), READY, Vec::new())
        .expect("ready");
    match (me.node, me.thread) {
        (0, 0) => expect_lost(ep, "recv from n2.t0", ep.recv(Address::new(2, 0), NEVER)),
        (0, 1) => {
            expect_lost(ep, "any-source recv", ep.recv(ANY_SOURCE, NEVER));
            // What n2.t1 sent before it died can still be received, in
            // order; after that, receives from it fail instead of waiting.
            let mut count = 0u32;
            loop {
                match ep.recv(Address::new(2, 1), STREAM) {
                    Ok(m) => {
                        assert_eq!(m.into_vec(), count.to_le_bytes(), "stream from n2.t1");
                        count += 1;
                    }
                    Err(e) => {
                        expect_lost(ep, "recv after the stream", Err(e));
                        break;
                    }
                }
            }
            println!("{me}: received {count} stream messages from n2.t1 before the loss");
        }
        (1, 0) => {
            expect_lost(ep, "recv from node n2", ep.recv(Source::Node(2), NEVER));
            // The 4 MiB message arrived whole or not at all.
            match ep.recv(Address::new(2, 0), BIG) {
                Ok(m) => {
                    assert!(m.into_vec() == big_payload(), "4 MiB message corrupted");
                    println!("{me}: the 4 MiB message arrived whole");
                }
                Err(e) => expect_lost(ep, "recv of the 4 MiB message", Err(e)),
            }
        }
        (1, 1) => {
            let r = ep.irecv(ANY_SOURCE, NEVER);
            expect_lost(ep, "any-source irecv", r.wait());
        }
        _ => unreachable!(),
    }
    send_to_dead(ep);
}

/// After the loss, survivors n0 and n1 keep talking (`continue` mode).
fn carry_on(ep: &Endpoint) {
    let me = ep.address();
    let partner = Address::new(1 - me.node, me.thread);
    for round in 0..ROUNDS {
        let bytes = round.to_le_bytes().to_vec();
        if me.node == 0 {
            ep.send(partner, AFTER, bytes).expect("send after the loss");
            let m = ep
                .irecv(ANY_SOURCE, AFTER)
                .wait()
                .expect("recv after the loss");
            assert_eq!(
                (m.source(), m.into_vec()),
                (partner, round.to_le_bytes().to_vec())
            );
        } else {
            let m = ep
                .recv(Source::Node(0), AFTER)
                .expect("recv after the loss");
            assert_eq!(m.source(), partner);
            ep.send(partner, AFTER, m.into_vec())
                .expect("send after the loss");
        }
    }
    println!("{me}: continued: {ROUNDS} rounds with {partner}");
}

fn die(ep: &Endpoint) {
    for _ in 0..4 {
        ep.recv(ANY_SOURCE, READY).expect("ready from a survivor");
    }
    // Let the survivors settle into their receives; they must not depend
    // on it (a receive posted after the loss fails at once).
    std::thread::sleep(Duration::from_millis(50));
    // Announced (it is above the eager limit): n1.t0 receives it only
    // after its receive of NEVER has failed, by when this process is gone,
    // so its fetch fails with the loss instead of hanging. A blocking send
    // would wait for that receive, and never return.
    let _pending = ep.isend(Address::new(1, 0), BIG, big_payload());
    println!("n2: killing myself");
    // SAFETY: kill(2) with our own pid; SIGKILL ends the process here.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL returned");
}

fn stream(ep: &Endpoint) {
    for seq in 0..STREAM_LEN {
        if ep
            .send(Address::new(0, 1), STREAM, seq.to_le_bytes().to_vec())
            .is_err()
        {
            break;
        }
    }
    // Wait to be killed with the rest of the process.
    let _ = ep.recv(ANY_SOURCE, NEVER);
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "abort".to_string());
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let id = node.id();
    assert_eq!(node.nodes(), 3, "run with -n 3");
    println!("pid {}", std::process::id());
    let (lost_tx, lost_rx) = mpsc::channel::<PeerLost>();
    node.on_peer_lost(move |lost| {
        println!("n{id}: on_peer_lost: {lost}");
        let _ = lost_tx.send(lost.clone());
    });

    let continuing = mode == "continue";
    let worker = node.spawn(move |ep| {
        warm_up(&ep);
        match ep.address().node {
            2 => stream(&ep),
            _ => {
                survive(&ep);
                if continuing {
                    carry_on(&ep);
                }
            }
        }
    });
    warm_up(&ep);
    if id == 2 {
        die(&ep);
    }
    survive(&ep);
    if continuing {
        carry_on(&ep);
    }
    worker.join().expect("worker panicked");

    let notified = loop {
        match lost_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(lost) if lost.node == 2 => break lost,
            Ok(_) => continue,
            Err(e) => panic!("n{id}: on_peer_lost was not called for n2: {e}"),
        }
    };
    assert!(
        matches!(notified.cause, LossCause::Failed(_)),
        "{notified:?}"
    );
    assert!(node.lost_peers().iter().any(|l| l.node == 2));
    println!("n{id}: notified of the loss of n2");
    if mode == "stubborn" {
        println!("n{id}: ignoring the loss");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    println!("n{id}: done");
}
