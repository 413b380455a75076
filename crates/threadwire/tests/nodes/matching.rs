//! Receive matching across a real 2-node job: selectors, wildcards,
//! unexpected messages, requests, probes, and order per sender.
//!
//! n0.t0 is the receiver and drives every scenario; the senders n0.t1
//! (same node), n1.t0, n1.t1 and n1.t2 (other node) wait for orders from
//! it — "send these (tag, bytes) to me, in this order" — so the receiver
//! knows exactly what is in flight. Each scenario prints
//! `matching <name>: ok`; a failed check panics (status 101).

mod common;

use threadwire::{
    wait_all, wait_any, Address, Endpoint, Message, RecvError, SendError, Source, Status,
    ANY_SOURCE, ANY_TAG,
};

const RECEIVER: Address = Address::new(0, 0);
const LOCAL: Address = Address::new(0, 1);
const S0: Address = Address::new(1, 0);
const S1: Address = Address::new(1, 1);
const S2: Address = Address::new(1, 2);

/// Tag of an order to a sender; the payload lists the messages to send.
const ORDER: u32 = 1000;
/// Tag of the order to stop.
const QUIT: u32 = 1001;
/// Tag a scenario appends to know that a sender's earlier messages arrived:
/// messages from one thread to another arrive in the order sent.
const FENCE: u32 = 999;

fn encode(msgs: &[(u32, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (tag, bytes) in msgs {
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        b.extend_from_slice(bytes);
    }
    b
}

fn decode(mut b: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let tag = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")) as usize;
        out.push((tag, b[8..8 + len].to_vec()));
        b = &b[8 + len..];
    }
    out
}

/// A sender: does what the receiver orders until told to quit.
fn serve(ep: &Endpoint) {
    loop {
        let m = ep.recv(RECEIVER, ANY_TAG).expect("order from the receiver");
        if m.tag() == QUIT {
            return;
        }
        assert_eq!(m.tag(), ORDER);
        for (tag, bytes) in decode(&m.into_vec()) {
            ep.send(RECEIVER, tag, bytes).expect("send to the receiver");
        }
    }
}

fn order(ep: &Endpoint, sender: Address, msgs: &[(u32, &[u8])]) {
    ep.send(sender, ORDER, encode(msgs)).expect("send an order");
}

/// Checks a received message's source, tag and bytes.
#[track_caller]
fn expect(m: Result<Message, RecvError>, source: Address, tag: u32, bytes: &[u8]) {
    let m = m.expect("receive");
    assert_eq!(
        (m.source(), m.tag()),
        (source, tag),
        "message from {} with tag {} ({} B)",
        m.source(),
        m.tag(),
        m.len()
    );
    assert_eq!(
        m.into_vec(),
        bytes,
        "payload of the message from {source}, tag {tag}"
    );
}

fn status(source: Address, tag: u32, len: usize) -> Status {
    Status { source, tag, len }
}

fn ok(name: &str) {
    println!("matching {name}: ok");
}

/// Receive by address, by node, by tag from anyone, and by anything; what
/// does not match waits.
fn selectors(ep: &Endpoint) {
    order(ep, S1, &[(10, b"a")]);
    order(ep, S2, &[(11, b"b")]);
    order(ep, LOCAL, &[(12, b"c")]);
    order(ep, S0, &[(13, b"d")]);
    assert_eq!(ep.probe(S1, 10).unwrap(), status(S1, 10, 1));
    assert_eq!(ep.probe(S2, 11).unwrap(), status(S2, 11, 1));
    assert_eq!(ep.probe(LOCAL, 12).unwrap(), status(LOCAL, 12, 1));
    assert_eq!(ep.probe(S0, 13).unwrap(), status(S0, 13, 1));
    expect(ep.recv(S2, ANY_TAG), S2, 11, b"b");
    expect(ep.recv(Source::Node(0), ANY_TAG), LOCAL, 12, b"c");
    expect(ep.recv(ANY_SOURCE, 13), S0, 13, b"d");
    expect(ep.recv(Source::Node(1), ANY_TAG), S1, 10, b"a");
    assert_eq!(ep.iprobe(ANY_SOURCE, ANY_TAG).unwrap(), None);
    // To itself.
    ep.send(RECEIVER, 14, b"me".to_vec()).unwrap();
    expect(ep.recv(Source::Node(0), 14), RECEIVER, 14, b"me");
    ok("selectors");
}

/// A posted receive takes only what matches; the rest stays queued, in
/// arrival order, for later receives.
fn unmatched_wait(ep: &Endpoint) {
    let mut r = ep.irecv(S1, 21);
    assert!(!r.test(), "nothing was sent yet");
    order(ep, S1, &[(20, b"x"), (22, b"z"), (21, b"y")]);
    expect(r.wait(), S1, 21, b"y");
    assert_eq!(ep.iprobe(S1, 20).unwrap(), Some(status(S1, 20, 1)));
    expect(ep.recv(ANY_SOURCE, ANY_TAG), S1, 20, b"x");
    expect(ep.recv(S1, 22), S1, 22, b"z");

    // A receive from another sender is not satisfied by S1's message.
    let mut from_s2 = ep.irecv(S2, ANY_TAG);
    order(ep, S1, &[(23, b"w"), (FENCE, b"")]);
    expect(ep.recv(S1, FENCE), S1, FENCE, b"");
    assert!(
        !from_s2.test(),
        "a receive from n1.t2 matched a message of n1.t1"
    );
    expect(ep.recv(S1, 23), S1, 23, b"w");
    order(ep, S2, &[(24, b"v")]);
    expect(from_s2.wait(), S2, 24, b"v");
    assert_eq!(ep.iprobe(ANY_SOURCE, ANY_TAG).unwrap(), None);
    ok("unmatched-wait");
}

/// Receives posted before their messages match them in posting order.
fn posting_order(ep: &Endpoint) {
    let a = ep.irecv(ANY_SOURCE, 30);
    let b = ep.irecv(S1, 30);
    let c = ep.irecv(Source::Node(1), ANY_TAG);
    order(ep, S1, &[(30, b"1"), (30, b"2"), (31, b"3")]);
    let mut results = wait_all(vec![a, b, c]).into_iter();
    expect(results.next().unwrap(), S1, 30, b"1");
    expect(results.next().unwrap(), S1, 30, b"2");
    expect(results.next().unwrap(), S1, 31, b"3");
    ok("posting-order");
}

/// `wait_any`, `wait_all` and `test` on receive requests.
fn requests(ep: &Endpoint) {
    let mut reqs = vec![ep.irecv(S0, 40), ep.irecv(S1, 41), ep.irecv(S2, 42)];
    assert!(
        reqs.iter_mut().all(|r| !r.test()),
        "no request can be complete yet"
    );
    order(ep, S1, &[(41, b"p")]);
    let (i, m) = wait_any(&mut reqs).expect("requests are pending");
    assert_eq!(i, 1, "wait_any returned the wrong request");
    expect(m, S1, 41, b"p");
    assert_eq!(reqs.len(), 2);
    order(ep, S2, &[(42, b"q")]);
    order(ep, S0, &[(40, b"r")]);
    let mut results = wait_all(reqs).into_iter();
    expect(results.next().unwrap(), S0, 40, b"r");
    expect(results.next().unwrap(), S2, 42, b"q");

    // A request complete at posting is found without waiting; dropping the
    // other, pending one loses nothing.
    order(ep, LOCAL, &[(43, b"s"), (FENCE, b"")]);
    expect(ep.recv(LOCAL, FENCE), LOCAL, FENCE, b"");
    let mut reqs = vec![ep.irecv(S0, 44), ep.irecv(LOCAL, 43)];
    let (i, m) = wait_any(&mut reqs).expect("requests are pending");
    assert_eq!(i, 1);
    expect(m, LOCAL, 43, b"s");
    drop(reqs);
    order(ep, S0, &[(44, b"t")]);
    expect(ep.recv(S0, 44), S0, 44, b"t");
    assert!(wait_any::<Message, RecvError>(&mut Vec::new()).is_none());

    // `test` makes progress by itself.
    let mut r = ep.irecv(S2, 45);
    order(ep, S2, &[(45, b"u")]);
    while !r.test() {
        std::thread::yield_now();
    }
    expect(r.wait(), S2, 45, b"u");
    ok("requests");
}

/// Probes report source, tag and length and leave the message queued.
fn probes(ep: &Endpoint) {
    let big: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    order(ep, S2, &[(50, &big), (51, b"")]);
    assert_eq!(ep.probe(ANY_SOURCE, 50).unwrap(), status(S2, 50, 1000));
    assert_eq!(ep.probe(S2, ANY_TAG).unwrap(), status(S2, 50, 1000));
    assert_eq!(ep.iprobe(S1, 50).unwrap(), None);
    assert_eq!(ep.iprobe(ANY_SOURCE, 52).unwrap(), None);
    assert_eq!(ep.iprobe(Source::Node(0), ANY_TAG).unwrap(), None);
    assert_eq!(ep.probe(ANY_SOURCE, 51).unwrap(), status(S2, 51, 0));
    // Probed twice, still there.
    assert_eq!(ep.iprobe(S2, 50).unwrap(), Some(status(S2, 50, 1000)));
    expect(ep.recv(ANY_SOURCE, ANY_TAG), S2, 50, &big);
    assert_eq!(ep.iprobe(ANY_SOURCE, 50).unwrap(), None);
    expect(ep.recv(S2, 51), S2, 51, b"");
    order(ep, LOCAL, &[(53, b"local")]);
    assert_eq!(
        ep.probe(Source::Node(0), ANY_TAG).unwrap(),
        status(LOCAL, 53, 5)
    );
    expect(ep.recv(LOCAL, 53), LOCAL, 53, b"local");
    assert_eq!(ep.iprobe(ANY_SOURCE, ANY_TAG).unwrap(), None);
    ok("probes");
}

/// Messages received out of arrival order — by tag, by node, by address —
/// still come in the order sent per sender within a tag, and a wildcard
/// receive from one sender gets the rest in the order sent.
fn order_per_sender(ep: &Endpoint) {
    const N: u32 = 30;
    let values: Vec<Vec<u8>> = (0..N).map(|i| i.to_le_bytes().to_vec()).collect();
    let batch: Vec<(u32, &[u8])> = (0..N)
        .map(|i| (60 + i % 3, &values[i as usize][..]))
        .chain([(FENCE, &b""[..])])
        .collect();
    let senders = [S1, S2, LOCAL];
    for s in senders {
        order(ep, s, &batch);
    }
    for s in senders {
        expect(ep.recv(s, FENCE), s, FENCE, b"");
    }
    let value = |m: Message| u32::from_le_bytes(m.into_vec().try_into().expect("4 bytes"));
    // The last value seen per (sender, tag).
    let mut last = std::collections::HashMap::<(Address, u32), u32>::new();
    let mut take = |m: Message, tag: u32| {
        assert_eq!(m.tag(), tag);
        let (from, v) = (m.source(), value(m));
        assert_eq!(v % 3, tag - 60, "value {v} under tag {tag}");
        if let Some(prev) = last.insert((from, tag), v) {
            assert!(
                v > prev,
                "from {from}: {v} after {prev}, overtaken within tag {tag}"
            );
        }
    };
    for _ in 0..N {
        take(ep.recv(ANY_SOURCE, 62).unwrap(), 62);
    }
    // The rest of S1's, whatever the tag: in the order sent.
    let mut prev = -1i64;
    for _ in 0..2 * N / 3 {
        let m = ep.recv(S1, ANY_TAG).unwrap();
        let v = i64::from(value(m));
        assert!(v > prev && v % 3 != 2, "from n1.t1: {v} after {prev}");
        prev = v;
    }
    for _ in 0..N / 3 {
        take(ep.recv(Source::Node(1), 61).unwrap(), 61);
        take(ep.recv(Source::Node(0), 61).unwrap(), 61);
    }
    for _ in 0..N / 3 {
        take(ep.recv(S2, 60).unwrap(), 60);
        take(ep.recv(LOCAL, 60).unwrap(), 60);
    }
    assert_eq!(ep.iprobe(ANY_SOURCE, ANY_TAG).unwrap(), None);
    ok("order-per-sender");
}

/// Dropping a receive request that completed meanwhile puts its message
/// back without letting it overtake earlier messages of the same sender.
fn dropped_request(ep: &Endpoint) {
    let mut r = ep.irecv(S1, 71);
    order(ep, S1, &[(70, b"A"), (71, b"B"), (72, b"C"), (FENCE, b"")]);
    expect(ep.recv(S1, FENCE), S1, FENCE, b"");
    assert!(r.test(), "the message with tag 71 has arrived");
    drop(r);
    expect(ep.recv(S1, ANY_TAG), S1, 70, b"A");
    expect(ep.recv(S1, ANY_TAG), S1, 71, b"B");
    expect(ep.recv(S1, ANY_TAG), S1, 72, b"C");
    ok("dropped-request");
}

/// Receives and sends naming what does not exist fail at once.
fn errors(ep: &Endpoint) {
    assert_eq!(
        ep.recv(Source::Node(5), ANY_TAG).unwrap_err(),
        RecvError::NoSuchNode(5)
    );
    match ep.send(Address::new(7, 0), 1, b"lost?".to_vec()) {
        Err(e @ SendError::NoSuchEndpoint { .. }) => {
            assert_eq!(e.into_payload().unwrap().into_vec(), b"lost?")
        }
        other => panic!("send to n7.t0: {other:?}"),
    }
    ok("errors");
}

fn main() {
    common::exit_on_panic();
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    assert_eq!(node.nodes(), 2, "run with -n 2");
    if node.id() == 1 {
        let others: Vec<_> = (0..2).map(|_| node.spawn(|ep| serve(&ep))).collect();
        serve(&ep);
        others.into_iter().for_each(|t| t.join().unwrap());
        return;
    }
    let local = node.spawn(|ep| serve(&ep));
    selectors(&ep);
    unmatched_wait(&ep);
    posting_order(&ep);
    requests(&ep);
    probes(&ep);
    order_per_sender(&ep);
    dropped_request(&ep);
    errors(&ep);
    for s in [LOCAL, S0, S1, S2] {
        ep.send(s, QUIT, Vec::new()).unwrap();
    }
    local.join().unwrap();
    println!("matching: all scenarios passed");
}
