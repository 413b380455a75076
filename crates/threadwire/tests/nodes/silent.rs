//! Peers that fall silent without closing anything, and peers that are
//! only busy (the runtime's liveness protocol, `progress/liveness.rs`).
//!
//! `node-silent MODE`:
//! - `stop`, 3 nodes of 2 threads (the main OS thread and a fiber): n2
//!   tells every survivor thread the time, after a delay of 0–249 ms,
//!   then stops its own process (SIGSTOP). Survivor thread 0 waits on a
//!   receive from n2.t0, thread 1 on a nonblocking receive from node 2;
//!   both must end with `PeerLost` for silence.
//!   Each prints `<address>: PeerLost n2 (silent for M ms) after D ms`,
//!   D from the stop to the error. The launcher, watching n2's control
//!   connection with a longer timeout, then kills it.
//! - `cut`, the same with n2 on an emulated host of its own: instead of
//!   stopping, n2 takes its host's link down (`ip link set eth0 down`)
//!   and then waits to find its peers silent in turn.
//! - `busy`, 2 nodes: n1's thread 0 computes for three peer timeouts
//!   without calling the runtime while its thread 1 waits in a receive;
//!   n0 waits for n1.t0's message meanwhile. Nobody may be lost.
//! - `all-busy`, 2 nodes of one thread: n1's only thread computes for
//!   three peer timeouts while n0 sends it 24 MiB of eager messages (more
//!   than a socket holds: run it over TCP). Nobody may be lost.
//!
//! Every node prints `n<id>: no peer lost` or what it lost, then `n<id>:
//! done`.

mod common;

use std::time::{Duration, Instant};
use threadwire::{Address, Endpoint, Failure, LossCause, PeerLost, RecvError, Source};

const WARM_UP: u32 = 10;
const STOPPING: u32 = 20;
const DONE: u32 = 40;
const FLOOD: u32 = 50;
/// Nobody ever sends this tag: a receive of it can only end by a loss.
const NEVER: u32 = 200;
const FLOOD_MESSAGES: usize = 384;
const FLOOD_LEN: usize = 64 << 10;

/// The peer timeout the nodes run with.
fn peer_timeout() -> Duration {
    std::env::var(threadwire::env::PEER_TIMEOUT)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(threadwire::DEFAULT_PEER_TIMEOUT, Duration::from_millis)
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of a host
/// (and of its network namespaces).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the kernel to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Computes for `d` without calling the runtime.
fn compute(d: Duration) {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn warm_up(ep: &Endpoint, nodes: u32) {
    let me = ep.address();
    for n in (0..nodes).filter(|&n| n != me.node) {
        ep.send(Address::new(n, me.thread), WARM_UP, vec![1])
            .expect("warm-up send");
    }
    for n in (0..nodes).filter(|&n| n != me.node) {
        ep.recv(Address::new(n, me.thread), WARM_UP)
            .expect("warm-up receive");
    }
}

/// `r` must be n2's loss for silence; prints it with the time since `since`.
fn expect_silent(
    ep: &Endpoint,
    what: &str,
    since_ns: u64,
    r: Result<threadwire::Message, RecvError>,
) {
    let after_ms = monotonic_ns().saturating_sub(since_ns) as f64 / 1e6;
    match r {
        Err(RecvError::PeerLost(PeerLost {
            node: 2,
            cause: LossCause::Failed(Failure::Silent { ms }),
        })) => println!(
            "{}: {what}: PeerLost n2 (silent for {ms} ms) after {after_ms:.0} ms",
            ep.address()
        ),
        other => panic!(
            "{}: {what}: expected n2 lost as silent, got {other:?}",
            ep.address()
        ),
    }
}

/// A survivor thread in `stop` and `cut` modes.
fn survive(ep: &Endpoint) {
    let me = ep.address();
    let m = ep.recv(Address::new(2, 0), STOPPING).expect("n2's notice");
    let bytes = m.into_vec();
    let since = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    if me.thread == 0 {
        expect_silent(
            ep,
            "recv from n2.t0",
            since,
            ep.recv(Address::new(2, 0), NEVER),
        );
    } else {
        let r = ep.irecv(Source::Node(2), NEVER);
        expect_silent(ep, "irecv from node n2", since, r.wait());
    }
    match ep.send(Address::new(2, 0), 1, vec![0]) {
        Err(threadwire::SendError::PeerLost { lost, .. }) if lost.node == 2 => {
            println!("{me}: send to n2.t0: PeerLost n2")
        }
        other => panic!("{me}: send to n2.t0: {other:?}"),
    }
}

/// n2 in `stop` and `cut` modes: tells every survivor thread the time,
/// then falls silent.
fn fall_silent(ep: &Endpoint, mode: &str) {
    // Every node's liveness thread starts when the launcher's directory
    // arrives, so their ticks are in step; falling silent at once would
    // always fall at the same point of a tick. A delay of 0–249 ms spreads
    // the detection times over their whole range.
    std::thread::sleep(Duration::from_millis(monotonic_ns() / 1000 % 250));
    let notice = monotonic_ns().to_le_bytes().to_vec();
    for n in 0..2 {
        for t in 0..2 {
            ep.send(Address::new(n, t), STOPPING, notice.clone())
                .expect("notice");
        }
    }
    if mode == "stop" {
        println!("n2: stopping");
        // SAFETY: kill(2) with our own pid; the process stops here until
        // the launcher kills it.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGSTOP);
        }
        unreachable!("n2 resumed after SIGSTOP");
    }
    let status = std::process::Command::new("ip")
        .args(["link", "set", "dev", "eth0", "down"])
        .status()
        .expect("run ip");
    assert!(status.success(), "ip link set dev eth0 down: {status}");
    println!("n2: link down");
    // Its peers are silent to it in turn.
    match ep.recv(Source::Node(0), NEVER) {
        Err(RecvError::PeerLost(PeerLost {
            node: 0,
            cause: LossCause::Failed(Failure::Silent { ms }),
        })) => println!("n2: PeerLost n0 (silent for {ms} ms)"),
        other => panic!("n2: expected n0 lost as silent, got {other:?}"),
    }
}

fn stop_or_cut(ep: &Endpoint, mode: &str) {
    let node = ep.node().clone();
    let id = node.id();
    assert_eq!(node.nodes(), 3, "run with -n 3");
    // A fiber: its worker sleeps in the engine while it waits.
    let worker = node.spawn(|ep| {
        warm_up(&ep, 3);
        if ep.address().node != 2 {
            survive(&ep);
        }
    });
    warm_up(ep, 3);
    if id == 2 {
        // Both threads' warm-up messages must be out before n2 falls silent.
        worker.join().expect("worker");
        fall_silent(ep, mode);
        return;
    }
    survive(ep);
    worker.join().expect("worker");
}

fn busy(ep: &Endpoint) {
    let node = ep.node().clone();
    let three = 3 * peer_timeout();
    if node.id() == 1 {
        let idler = node.spawn_os(|ep| {
            let m = ep.recv(Address::new(0, 0), DONE).expect("n0's answer");
            println!("{}: received after waiting", ep.address());
            drop(m);
        });
        compute(three);
        println!("n1.t0: computed for {} ms", three.as_millis());
        ep.send(Address::new(0, 0), DONE, Vec::new()).expect("done");
        idler.join().expect("idler");
    } else {
        ep.recv(Address::new(1, 0), DONE).expect("n1.t0's message");
        ep.send(Address::new(1, 1), DONE, Vec::new())
            .expect("answer");
    }
}

fn all_busy(ep: &Endpoint) {
    let three = 3 * peer_timeout();
    if ep.node().id() == 1 {
        compute(three);
        println!("n1: computed for {} ms", three.as_millis());
        for i in 0..FLOOD_MESSAGES {
            let m = ep.recv(Address::new(0, 0), FLOOD).expect("flood");
            assert_eq!(m.into_vec()[0], i as u8);
        }
        ep.send(Address::new(0, 0), DONE, Vec::new()).expect("done");
    } else {
        for i in 0..FLOOD_MESSAGES {
            ep.send(Address::new(1, 0), FLOOD, vec![i as u8; FLOOD_LEN])
                .expect("flood");
        }
        ep.recv(Address::new(1, 0), DONE).expect("n1's message");
    }
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "stop".to_string());
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let id = node.id();
    match mode.as_str() {
        "stop" | "cut" => stop_or_cut(&ep, &mode),
        "busy" => {
            warm_up(&ep, 2);
            busy(&ep)
        }
        "all-busy" => {
            warm_up(&ep, 2);
            all_busy(&ep)
        }
        other => panic!("unknown mode {other}"),
    }
    let lost = node.lost_peers();
    let failed: Vec<&PeerLost> = lost
        .iter()
        .filter(|l| matches!(l.cause, LossCause::Failed(_)))
        .collect();
    if failed.is_empty() {
        println!("n{id}: no peer lost");
    } else {
        for l in failed {
            println!("n{id}: lost {l}");
        }
    }
    println!("n{id}: done");
}
