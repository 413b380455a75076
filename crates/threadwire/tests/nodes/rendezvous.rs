//! Point-to-point under load between two nodes: receives into the
//! caller's buffer, synchronous sends, announced messages taken out of
//! order, many threads flooding one receiver, and the memory of a flood.
//!
//! `node-rendezvous MODE`, 2 nodes; n1 sends, n0 receives. MODE one of
//! - `into`: `recv_into` and `irecv_into` with exact, larger and too-small
//!   buffers, for an eager and an announced size;
//! - `ssend`: `issend` to the other node and to a thread of its own is
//!   not complete before the receive is posted (the receiver posts it only
//!   when told), then completes;
//! - `later-tag`: three announced messages are pending while the receiver
//!   first waits for a later, small one, then takes them last to first;
//! - `threads`: 4 threads send 200 messages of 64 KiB each to one thread
//!   receiving from any source (run with a small budget: most go announced);
//! - `probe-cancel`: a posted receive cancelled before any message, one
//!   matched already not cancelled; matched probes hold a message away
//!   from a wildcard receive, `improbe` of nothing, `mrecv_into` of an
//!   announced message, and a matched message dropped unreceived still
//!   completes its synchronous sender;
//! - `flood COUNT DELAY_MS`: COUNT blocking sends of one reused 1 MiB
//!   buffer to a receiver that starts DELAY_MS late (which checks every
//!   byte); each node prints `peak <node> <VmHWM kB>`;
//! - `direct-lost`: n1 builds 64 MiB, says so and sends them as borrowed
//!   bytes; n0 posts the receive, drives it a millisecond and kills
//!   itself; n1's send ends (with `PeerLost`, or complete if every byte
//!   left before the kill) and n1 prints
//!   `direct send ended: <result>`.
//!
//! Every surviving node prints `rendezvous <mode>: ok` at the end.

mod common;

use std::time::Duration;
use threadwire::{Address, Endpoint, RecvError, ANY_SOURCE};

const MIB: usize = 1 << 20;
const GO: u32 = 9000;

fn pattern(len: usize, salt: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(salt) as u8)
        .collect()
}

/// Sizes: one eager, one announced on every channel.
const SIZES: [usize; 2] = [1000, 2 * MIB + 17];

fn into(ep: &Endpoint) {
    let peer = Address::new(1 - ep.address().node, 0);
    if ep.address().node == 1 {
        for (i, &len) in SIZES.iter().enumerate() {
            for case in 0..6u32 {
                let tag = 10 * i as u32 + case;
                ep.send(peer, tag, pattern(len, tag)).expect("send");
            }
        }
        return;
    }
    for (i, &len) in SIZES.iter().enumerate() {
        let tag = 10 * i as u32;
        let want = pattern(len, tag);
        // Exact.
        let mut buf = vec![0u8; len];
        let s = ep.recv_into(peer, tag, &mut buf).expect("exact");
        assert_eq!((s.len, s.source, s.tag), (len, peer, tag));
        assert!(buf == want, "exact buffer of {len} B");
        // Larger: the prefix is written, the rest untouched.
        let mut buf = vec![0xee; len + 100];
        let s = ep.recv_into(peer, tag + 1, &mut buf).expect("larger");
        assert_eq!(s.len, len);
        assert!(buf[..len] == pattern(len, tag + 1)[..], "larger buffer");
        assert!(buf[len..].iter().all(|&b| b == 0xee), "past the message");
        // Too small: truncated, with the real length, the prefix filled.
        let mut buf = vec![0u8; len / 2];
        match ep.recv_into(peer, tag + 2, &mut buf) {
            Err(RecvError::Truncated { status, capacity }) => {
                assert_eq!((status.len, capacity), (len, len / 2));
                assert!(buf == pattern(len, tag + 2)[..len / 2], "truncated prefix");
            }
            other => panic!("too small a buffer for {len} B: {other:?}"),
        }
        // The same three through irecv_into, the buffer coming back.
        let (buf, s) = ep
            .irecv_into(peer, tag + 3, vec![0u8; len])
            .wait()
            .expect("irecv_into exact");
        assert_eq!(s.len, len);
        assert!(buf == pattern(len, tag + 3), "irecv_into exact");
        let mut r = ep.irecv_into(peer, tag + 4, vec![0u8; len + 1]);
        while !r.test() {
            std::thread::yield_now();
        }
        let (buf, s) = r.wait().expect("irecv_into larger");
        assert_eq!((s.len, buf.len()), (len, len + 1));
        match ep.irecv_into(peer, tag + 5, vec![0u8; 10]).wait() {
            Err(e) => {
                assert!(matches!(e.error, RecvError::Truncated { .. }), "{e}");
                assert_eq!(e.buffer, pattern(len, tag + 5)[..10]);
            }
            Ok(_) => panic!("10 bytes held {len}"),
        }
    }
}

fn ssend(ep: &Endpoint) {
    let node = ep.node().clone();
    let me = ep.address();
    let peer = Address::new(1 - me.node, 0);
    if me.node == 1 {
        for (i, &len) in SIZES.iter().enumerate() {
            let tag = i as u32;
            let mut r = ep.issend(peer, tag, pattern(len, tag));
            for _ in 0..50 {
                assert!(!r.test(), "issend of {len} B complete before its receive");
                std::thread::sleep(Duration::from_millis(1));
            }
            ep.send(peer, GO, Vec::new()).expect("go");
            r.wait().expect("issend completes once received");
        }
        // To a thread of this node.
        let local = node.spawn(|ep| {
            ep.recv(ANY_SOURCE, GO).expect("go");
            let m = ep.recv(ANY_SOURCE, 7).expect("local ssend");
            assert_eq!(m.into_vec(), b"local");
        });
        let to = local.address();
        let mut r = ep.issend(to, 7, &b"local"[..]);
        for _ in 0..20 {
            assert!(!r.test(), "local issend complete before its receive");
            std::thread::sleep(Duration::from_millis(1));
        }
        ep.send(to, GO, Vec::new()).expect("go");
        r.wait().expect("local issend");
        ep.ssend(peer, 8, &b"blocking"[..]).expect("ssend");
        local.join().expect("local receiver");
        return;
    }
    for (i, &len) in SIZES.iter().enumerate() {
        ep.recv(peer, GO).expect("go");
        let m = ep.recv(peer, i as u32).expect("ssend's message");
        assert!(m.into_vec() == pattern(len, i as u32), "ssend bytes");
    }
    assert_eq!(ep.recv(peer, 8).expect("ssend").into_vec(), b"blocking");
}

fn later_tag(ep: &Endpoint) {
    let peer = Address::new(1 - ep.address().node, 0);
    if ep.address().node == 1 {
        let big: Vec<_> = (1..=3u32)
            .map(|tag| ep.isend(peer, tag, pattern(4 * MIB, tag)))
            .collect();
        ep.send(peer, 4, &b"later"[..]).expect("small send");
        for r in threadwire::wait_all(big) {
            r.expect("announced send");
        }
        return;
    }
    assert_eq!(ep.recv(peer, 4).expect("later tag").into_vec(), b"later");
    for tag in (1..=3u32).rev() {
        let m = ep.recv(peer, tag).expect("announced message");
        assert!(m.into_vec() == pattern(4 * MIB, tag), "message {tag}");
    }
}

const SENDERS: u32 = 4;
const PER_SENDER: u32 = 200;

fn threads(ep: &Endpoint) {
    let node = ep.node().clone();
    if ep.address().node == 1 {
        let to = Address::new(0, 0);
        let handles: Vec<_> = (0..SENDERS)
            .map(|_| {
                node.spawn(move |ep| {
                    for seq in 0..PER_SENDER {
                        let mut m = pattern(64 << 10, seq);
                        m[..4].copy_from_slice(&seq.to_le_bytes());
                        ep.send(to, 1, m).expect("flooding send");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("sender");
        }
        return;
    }
    let mut next = std::collections::HashMap::new();
    for _ in 0..SENDERS * PER_SENDER {
        let m = ep.recv(ANY_SOURCE, 1).expect("flooded receive");
        let from = m.source();
        let bytes = m.into_vec();
        let seq = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        let expected = next.entry(from).or_insert(0u32);
        assert_eq!(seq, *expected, "order from {from}");
        *expected += 1;
        assert!(
            bytes[4..] == pattern(64 << 10, seq)[4..],
            "bytes from {from}"
        );
    }
    assert_eq!(next.len(), SENDERS as usize);
}

fn probe_cancel(ep: &Endpoint) {
    let peer = Address::new(1 - ep.address().node, 0);
    let big = 2 * MIB + 3;
    if ep.address().node == 1 {
        ep.recv(peer, GO).expect("go");
        ep.send(peer, 50, pattern(100, 50)).expect("send 50");
        ep.send(peer, 51, pattern(big, 51)).expect("send 51");
        ep.send(peer, 53, pattern(big, 53)).expect("send 53");
        ep.send(peer, 54, pattern(10, 54)).expect("send 54");
        ep.ssend(peer, 55, pattern(big, 55))
            .expect("ssend 55 completes when the dropped match is received");
        ep.send(peer, GO, Vec::new()).expect("done");
        return;
    }
    let mut r = ep.irecv(peer, 50);
    assert!(r.cancel(), "a receive nothing matched is cancelled");
    assert_eq!(r.wait().unwrap_err(), RecvError::Cancelled);
    assert!(ep.improbe(ANY_SOURCE, 99).expect("improbe").is_none());
    ep.send(peer, GO, Vec::new()).expect("go");
    let held = ep.mprobe(ANY_SOURCE, 50).expect("mprobe 50");
    assert_eq!((held.status().len, held.status().tag), (100, 50));
    let next = ep.recv(ANY_SOURCE, threadwire::ANY_TAG).expect("wildcard");
    assert_eq!(next.tag(), 51, "the held message is not received again");
    assert!(next.into_vec() == pattern(big, 51));
    assert!(held.mrecv().expect("mrecv").into_vec() == pattern(100, 50));
    let held = ep.mprobe(peer, 53).expect("mprobe 53");
    let mut buf = vec![0u8; held.status().len];
    assert_eq!(held.mrecv_into(&mut buf).expect("mrecv_into").len, big);
    assert!(buf == pattern(big, 53));
    let mut r = ep.irecv(peer, 54);
    while !r.test() {
        std::thread::yield_now();
    }
    assert!(!r.cancel(), "a matched receive is not cancelled");
    assert!(r.wait().expect("54").into_vec() == pattern(10, 54));
    drop(ep.mprobe(peer, 55).expect("mprobe 55"));
    ep.recv(peer, GO).expect("the ssend completed");
}

fn flood(ep: &Endpoint, count: u32, delay: Duration) {
    let peer = Address::new(1 - ep.address().node, 0);
    if ep.address().node == 1 {
        let mut buf = pattern(MIB, 0);
        for seq in 0..count {
            buf[..4].copy_from_slice(&seq.to_le_bytes());
            ep.send(peer, 1, &buf[..]).expect("flood send");
        }
        ep.recv(peer, GO).expect("all received");
    } else {
        std::thread::sleep(delay);
        let mut buf = vec![0u8; MIB];
        let want = pattern(MIB, 0);
        for seq in 0..count {
            let s = ep.recv_into(peer, 1, &mut buf).expect("flood receive");
            assert_eq!(s.len, MIB);
            assert_eq!(buf[..4], seq.to_le_bytes(), "flood order");
            assert!(buf[4..] == want[4..], "flood bytes of message {seq}");
        }
        ep.send(peer, GO, Vec::new()).expect("done");
    }
    println!("peak {} {}", ep.address().node, common::vm_hwm());
}

fn direct_lost(ep: &Endpoint) {
    let peer = Address::new(1 - ep.address().node, 0);
    const LEN: usize = 64 * MIB;
    if ep.address().node == 1 {
        let buf = pattern(LEN, 3);
        // Building 64 MiB takes a while; n0 dies only once the send is
        // under way, not before it starts.
        ep.send(peer, GO, b"built".as_slice()).expect("signal");
        let ended = ep.send(peer, 1, &buf[..]);
        // Nothing reads `buf` any more: dropping it is safe.
        drop(buf);
        println!("direct send ended: {ended:?}");
        return;
    }
    ep.recv(peer, GO).expect("n1's buffer is built");
    let mut r = ep.irecv_into(peer, 1, vec![0u8; LEN]);
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(1) {
        if r.test() {
            break;
        }
    }
    println!("n0: killing myself");
    // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("the process was killed");
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "into".to_string());
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    assert_eq!(ep.node().nodes(), 2, "run with -n 2");
    match mode.as_str() {
        "into" => into(&ep),
        "ssend" => ssend(&ep),
        "later-tag" => later_tag(&ep),
        "threads" => threads(&ep),
        "probe-cancel" => probe_cancel(&ep),
        "flood" => flood(
            &ep,
            common::arg(2, 2000),
            Duration::from_millis(common::arg(3, 3000)),
        ),
        "direct-lost" => direct_lost(&ep),
        other => panic!("unknown mode {other}"),
    }
    println!("rendezvous {mode}: ok");
}
