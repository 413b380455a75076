//! Active messages between nodes (`am_messages.rs` runs it).
//!
//! `node-am MODE`, MODE one of
//! - `basic` (2 or more nodes): every node registers the same handlers;
//!   node 0 calls them on every node (itself included): request and reply
//!   inline and in fibers, one-way messages run in order, payloads of
//!   0 B to 8 MiB kept by the handler and sent back, a fiber handler that
//!   calls another node's handler while it runs, an unknown handler, a
//!   handler that panics (inline and in a fiber; the node goes on), one
//!   that does not answer, one that answers twice, and failures of
//!   one-way messages found by `am_check`.
//! - `flight` (2 nodes): 8 fibers of node 0 keep 1000 requests and 1000
//!   one-way messages in flight to node 1 (run with a small budget).
//! - `spawn` (2 or more nodes): node 0 starts threads on every node
//!   (itself included) by exported name, fibers and OS threads, joins
//!   them for their results, talks with one while it runs; an unknown
//!   entry and a panicking one fail, typed.
//! - `group` (2 or more nodes): a group of two threads a node; node 0
//!   runs a handler on every member, one-way and as requests, and each
//!   run knows its member.
//! - `bounded` (2 nodes, `THREADWIRE_AM_FIBERS=2`): 50 fiber handlers that
//!   each wait for node 0 run on at most 2 pool fibers, the rest queued.
//! - `machine` (3 nodes): node 0's view of the machine, every node alive,
//!   then node 1 finished.
//! - `lost` (2 nodes, a budget below 2 MiB): node 0 sends node 1 a large
//!   message whose handler holds it, a second that waits for memory
//!   there, starts a thread on node 1 that blocks, then a request whose
//!   fiber handler never answers; node 1 kills itself; node 0's request,
//!   waiting large message and join fail with `PeerLost`, and so do
//!   later ones, large ones included.
//!
//! - `large` (2 nodes): node 0 sends node 1 messages beyond the eager
//!   limit (announced and fetched, step 3b): a 16 MiB one-way message
//!   and a 16 MiB request, checked byte for byte by their handlers
//!   (checksums), and a 1 MiB one by `try_am_send`; a handler with a buffer provider that keeps the
//!   provider's buffer; a provider that refuses, as a request and one-way
//!   (`am_check`); one large one-way message and ten small ones behind it
//!   from one thread run in the order sent, while a slow handler holds
//!   another (with a small budget: the large one waits for memory).
//! - `large-flood` (2 nodes): node 0 sends 20 × 8 MiB one-way messages to
//!   a slow fiber handler of node 1, which then prints its peak memory
//!   (`peak n1 <kB>`).
//!
//! Every node prints `am <mode>: ok` at the end.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use threadwire::{ActiveMessage, Address, AmError, Endpoint, Group};

fn word(am: &ActiveMessage<'_>) -> u64 {
    u64::from_le_bytes(am.payload().to_vec().try_into().expect("8 bytes"))
}

fn pattern(len: usize, salt: u64) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) ^ salt) as u8)
        .collect()
}

fn basic(ep: &Endpoint) {
    let node = ep.node().clone();
    let counter = Arc::new(AtomicU64::new(0));
    let c = counter.clone();
    let add = node
        .register_inline("counter.add", move |am| {
            let before = c.fetch_add(word(am), Ordering::SeqCst);
            if am.is_request() {
                am.reply(before.to_le_bytes().to_vec()).expect("reply");
            }
        })
        .expect("register counter.add");
    let echo = node
        .register_fiber("echo", |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let kept = am.take_payload();
            am.reply(kept).expect("reply");
        })
        .expect("register echo");
    // Calls `counter.add` with 1 on the node the payload names, from a
    // fiber handler, and answers with what it got.
    let add_by_name = node.handler("counter.add").expect("name");
    assert_eq!(add_by_name, add);
    let relay = node
        .register_fiber("relay", move |ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let target = word(am) as u32;
            let got = ep
                .am_request(target, &add_by_name, 0u64.to_le_bytes().to_vec())
                .wait()
                .expect("nested request");
            am.reply(got).expect("reply");
        })
        .expect("register relay");
    let boom_inline = node
        .register_inline("boom.inline", |_am| panic!("inline handler exploded"))
        .expect("register");
    let boom_fiber = node
        .register_fiber(
            "boom.fiber",
            |_ep: &Endpoint, _am: &mut ActiveMessage<'_>| panic!("fiber handler exploded"),
        )
        .expect("register");
    let silent = node.register_inline("silent", |_am| {}).expect("register");
    let twice_result = Arc::new(AtomicU64::new(0));
    let t = twice_result.clone();
    let twice = node
        .register_inline("twice", move |am| {
            am.reply(Vec::new()).expect("first reply");
            let second = am.reply(Vec::new());
            assert!(matches!(second, Err(AmError::AlreadyReplied)), "{second:?}");
            t.fetch_add(1, Ordering::SeqCst);
        })
        .expect("register");
    assert!(matches!(
        node.register_inline("echo", |_am| {}),
        Err(AmError::AlreadyRegistered { .. })
    ));
    let world = Group::world(ep).expect("world");
    world.barrier().expect("registered everywhere");

    if ep.address().node == 0 {
        for target in 0..node.nodes() {
            // Request and reply, inline: the counter's previous values.
            for i in 0..100u64 {
                let before = ep
                    .am_request(target, &add, 2u64.to_le_bytes().to_vec())
                    .wait()
                    .expect("request");
                assert_eq!(before.into_vec(), (2 * i).to_le_bytes(), "n{target}");
            }
            // One-way messages run in the order sent: a request after 50
            // of them sees them all.
            for _ in 0..50 {
                ep.am_send(target, &add, 1u64.to_le_bytes().to_vec())
                    .expect("one-way");
            }
            let before = ep
                .am_request(target, &add, 0u64.to_le_bytes().to_vec())
                .wait()
                .expect("request");
            assert_eq!(before.into_vec(), 250u64.to_le_bytes(), "n{target}");
            // Payloads of every size, kept by the fiber handler and sent back.
            for len in [0, 1, 1000, 300_000, 8 << 20] {
                let data = pattern(len, len as u64 + u64::from(target));
                let back = ep
                    .am_request(target, &echo, data.clone())
                    .wait()
                    .expect("echo");
                assert!(back.into_vec() == data, "echo of {len} B from n{target}");
            }
            // A fiber handler that calls a handler of another node.
            let other = (target + 1) % node.nodes();
            let got = ep
                .am_request(target, &relay, u64::from(other).to_le_bytes().to_vec())
                .wait()
                .expect("relay");
            // Targets go in order: the other's counter is done or untouched.
            let want: u64 = if other < target { 250 } else { 0 };
            assert_eq!(
                got.into_vec(),
                want.to_le_bytes(),
                "relay n{target} → n{other}"
            );
            // Failures, each named.
            let nobody = node.handler("nobody.registered.this").expect("name");
            match ep.am_request(target, &nobody, Vec::new()).wait() {
                Err(AmError::UnknownHandler { node: n, name }) => {
                    assert_eq!((n, name.as_str()), (target, "nobody.registered.this"))
                }
                other => panic!("unknown handler: {other:?}"),
            }
            for (h, what) in [(&boom_inline, "inline"), (&boom_fiber, "fiber")] {
                match ep.am_request(target, h, Vec::new()).wait() {
                    Err(AmError::HandlerPanicked {
                        node: n,
                        name,
                        message,
                    }) => {
                        assert_eq!(n, target);
                        assert_eq!(name, format!("boom.{what}"));
                        assert_eq!(message, format!("{what} handler exploded"));
                    }
                    other => panic!("panicking {what} handler: {other:?}"),
                }
            }
            match ep.am_request(target, &silent, Vec::new()).wait() {
                Err(AmError::NoReply { node: n, name }) => {
                    assert_eq!((n, name.as_str()), (target, "silent"))
                }
                other => panic!("silent handler: {other:?}"),
            }
            ep.am_request(target, &twice, Vec::new())
                .wait()
                .expect("first answer");
            // One-way failures come back as reports: the request after
            // them is answered after their reports are sent.
            ep.am_send(target, &boom_inline, Vec::new())
                .expect("one-way");
            ep.am_send(target, &nobody, Vec::new()).expect("one-way");
            ep.am_request(target, &add, 0u64.to_le_bytes().to_vec())
                .wait()
                .expect("after");
            match ep.am_check() {
                Err(AmError::HandlerPanicked { name, .. }) => assert_eq!(name, "boom.inline"),
                other => panic!("first report: {other:?}"),
            }
            match ep.am_check() {
                Err(AmError::UnknownHandler { name, .. }) => {
                    assert_eq!(name, "nobody.registered.this")
                }
                other => panic!("second report: {other:?}"),
            }
            assert!(ep.am_check().is_ok(), "no third report");
            // A node keeps 16 reports per thread and counts the rest.
            for _ in 0..20 {
                ep.am_send(target, &boom_inline, Vec::new())
                    .expect("one-way");
            }
            ep.am_request(target, &add, 0u64.to_le_bytes().to_vec())
                .wait()
                .expect("after");
            for i in 0..16 {
                let report = ep.am_check();
                assert!(
                    matches!(report, Err(AmError::HandlerPanicked { .. })),
                    "report {i}: {report:?}"
                );
            }
            match ep.am_check() {
                Err(AmError::ReportsDropped { count }) => assert_eq!(count, 4),
                other => panic!("the dropped reports' count: {other:?}"),
            }
            assert!(ep.am_check().is_ok(), "nothing more");
            println!("n{target}: every check passed");
        }
    }
    world.barrier().expect("done");
    assert_eq!(
        twice_result.load(Ordering::SeqCst),
        1,
        "the twice handler ran once"
    );
    // Node 0's relays added 0 to every counter; node 0 added 250.
    assert_eq!(counter.load(Ordering::SeqCst), 250);
}

fn flight(ep: &Endpoint) {
    const FIBERS: u64 = 8;
    const EACH: u64 = 125;
    let node = ep.node().clone();
    let sum = Arc::new(AtomicU64::new(0));
    let s = sum.clone();
    let add = node
        .register_inline("flight.add", move |am| {
            let v = word(am);
            s.fetch_add(v, Ordering::SeqCst);
            if am.is_request() {
                am.reply((v * 3).to_le_bytes().to_vec()).expect("reply");
            }
        })
        .expect("register");
    let world = Group::world(ep).expect("world");
    world.barrier().expect("registered");
    if ep.address().node == 0 {
        let fibers: Vec<_> = (0..FIBERS)
            .map(|f| {
                let add = add.clone();
                node.spawn(move |ep| {
                    // 125 requests in flight from each fiber: more than
                    // the small budget the test gives holds at once.
                    let requests: Vec<_> = (0..EACH)
                        .map(|i| ep.am_request(1, &add, (f * EACH + i).to_le_bytes().to_vec()))
                        .collect();
                    for (i, r) in threadwire::wait_all(requests).into_iter().enumerate() {
                        let v = f * EACH + i as u64;
                        assert_eq!(r.expect("answer").into_vec(), (v * 3).to_le_bytes());
                    }
                    for i in 0..EACH {
                        ep.am_send(1, &add, (f * EACH + i).to_le_bytes().to_vec())
                            .expect("one-way");
                    }
                    // Answered after this fiber's one-way messages ran
                    // (order holds per sending thread).
                    ep.am_request(1, &add, 0u64.to_le_bytes().to_vec())
                        .wait()
                        .expect("last");
                })
            })
            .collect();
        for f in fibers {
            f.join().expect("fiber");
        }
    }
    world.barrier().expect("all sent");
    if ep.address().node == 1 {
        // Requests and one-way messages each added 0..1000.
        let n = FIBERS * EACH;
        assert_eq!(sum.load(Ordering::SeqCst), 2 * (n * (n - 1) / 2));
        println!("1000 requests and 1000 one-way messages ran");
    }
}

/// FNV-1a over the bytes, then the length: what a handler of a large
/// message answers, to be compared with the sender's own.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ bytes.len() as u64
}

fn large(ep: &Endpoint) {
    const MIB: usize = 1 << 20;
    let node = ep.node().clone();
    // One-way messages' checksums, for `large.sums` to answer.
    let sums: Arc<std::sync::Mutex<Vec<u64>>> = Arc::default();
    let s = sums.clone();
    let record = node
        .register_inline("large.record", move |am| {
            s.lock().unwrap().push(checksum(&am.payload().to_vec()));
        })
        .expect("register");
    let s = sums.clone();
    let report = node
        .register_inline("large.sums", move |am| {
            let b: Vec<u8> = s
                .lock()
                .unwrap()
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            am.reply(b).expect("reply");
        })
        .expect("register");
    let sum = node
        .register_fiber("large.sum", |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let v = checksum(&am.payload().to_vec());
            am.reply(v.to_le_bytes().to_vec()).expect("reply");
        })
        .expect("register");
    // The provider's buffers, by address: the handler checks that it got
    // one of them, and keeps it.
    let given: Arc<std::sync::Mutex<Vec<usize>>> = Arc::default();
    let kept: Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Arc::default();
    let (g, g2, k) = (given.clone(), given.clone(), kept.clone());
    let keep = node
        .register_fiber_into(
            "large.keep",
            move |len| {
                let v = Vec::with_capacity(len + 100);
                g.lock().unwrap().push(v.as_ptr() as usize);
                Some(v)
            },
            move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
                let v = am.take_payload().into_vec();
                let own = g2.lock().unwrap().contains(&(v.as_ptr() as usize));
                let mut answer = checksum(&v).to_le_bytes().to_vec();
                answer.push(own as u8);
                k.lock().unwrap().push(v);
                am.reply(answer).expect("reply");
            },
        )
        .expect("register");
    let refuse = node
        .register_inline_into(
            "large.refuse",
            |_len| None,
            |_am| panic!("a refused message ran"),
        )
        .expect("register");
    let order: Arc<std::sync::Mutex<Vec<u8>>> = Arc::default();
    let o = order.clone();
    let ordered = node
        .register_inline("large.order", move |am| {
            o.lock().unwrap().push(am.payload().to_vec()[0]);
        })
        .expect("register");
    let o = order.clone();
    let order_get = node
        .register_inline("large.order.get", move |am| {
            let got = o.lock().unwrap().clone();
            am.reply(got).expect("reply");
        })
        .expect("register");
    let pause = node
        .register_fiber(
            "large.pause",
            |_ep: &Endpoint, _am: &mut ActiveMessage<'_>| {
                std::thread::sleep(std::time::Duration::from_millis(200));
            },
        )
        .expect("register");
    let world = Group::world(ep).expect("world");
    world.barrier().expect("registered");
    if ep.address().node == 0 {
        // A 16 MiB one-way message, then its checksum asked for.
        let data = pattern(16 * MIB, 1);
        let want = checksum(&data);
        ep.am_send(1, &record, data).expect("16 MiB one-way");
        let got = ep
            .am_request(1, &report, Vec::new())
            .wait()
            .expect("sums")
            .into_vec();
        assert_eq!(got, want.to_le_bytes(), "the one-way message's checksum");
        let want_one_way = want;
        // A 16 MiB request.
        let data = pattern(16 * MIB, 2);
        let want = checksum(&data);
        let got = ep
            .am_request(1, &sum, data)
            .wait()
            .expect("16 MiB request")
            .into_vec();
        assert_eq!(got, want.to_le_bytes(), "the request's checksum");
        // Never waiting: announced, the payload kept here until fetched.
        let data = pattern(MIB + 3, 3);
        let again = checksum(&data);
        ep.try_am_send(1, &record, data)
            .expect("try_am_send of 1 MiB");
        let got = ep
            .am_request(1, &report, Vec::new())
            .wait()
            .expect("sums")
            .into_vec();
        let both: Vec<u8> = [want_one_way, again]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(got, both, "try_am_send's checksum");
        println!("16 MiB one-way and request checked");
        // Into the provider's buffer, kept by the handler.
        for i in 0..3u64 {
            let data = pattern(4 * MIB + i as usize, 10 + i);
            let want = checksum(&data);
            let got = ep
                .am_request(1, &keep, data)
                .wait()
                .expect("kept")
                .into_vec();
            assert_eq!(&got[..8], want.to_le_bytes(), "kept message's checksum");
            assert_eq!(got[8], 1, "the handler got the provider's buffer");
        }
        // A small message to the same handler arrives eagerly.
        let got = ep
            .am_request(1, &keep, vec![5u8; 10])
            .wait()
            .expect("small")
            .into_vec();
        assert_eq!(&got[..8], checksum(&[5u8; 10]).to_le_bytes());
        println!("the provider's buffers kept");
        // Refused: as a request, and one-way (reported to am_check).
        match ep.am_request(1, &refuse, vec![0u8; 2 * MIB]).wait() {
            Err(AmError::Refused { node: 1, name, .. }) => assert_eq!(name, "large.refuse"),
            other => panic!("refused request: {other:?}"),
        }
        ep.am_send(1, &refuse, vec![0u8; 2 * MIB]).expect("sent");
        ep.am_request(1, &report, Vec::new())
            .wait()
            .expect("after the refusal");
        match ep.am_check() {
            Err(AmError::Refused { name, .. }) => assert_eq!(name, "large.refuse"),
            other => panic!("refused one-way message: {other:?}"),
        }
        println!("refusals reported");
        // One large message, then ten small ones: run in the order sent.
        // A handler holds a large message meanwhile: with a budget below
        // it, the next large one waits for memory at node 1 and the small
        // ones wait behind it; else they may come while it is fetched.
        ep.am_send(1, &pause, vec![0u8; 2 * MIB]).expect("pause");
        let mut first = vec![0u8; 4 * MIB];
        first[0] = 0;
        ep.try_am_send(1, &ordered, first).expect("large");
        for i in 1..=10u8 {
            ep.am_send(1, &ordered, vec![i]).expect("small");
        }
        // And a large one behind small ones, twice.
        let mut last = vec![0u8; 3 * MIB];
        last[0] = 11;
        ep.am_send(1, &ordered, last).expect("large");
        ep.am_send(1, &ordered, vec![12]).expect("small");
        let got = ep
            .am_request(1, &order_get, Vec::new())
            .wait()
            .expect("order")
            .into_vec();
        assert_eq!(got, (0..=12).collect::<Vec<u8>>());
        println!("large and small messages ran in the order sent");
    }
    world.barrier().expect("done");
    if ep.address().node == 1 {
        assert_eq!(kept.lock().unwrap().len(), 4);
    }
}

fn large_flood(ep: &Endpoint) {
    const MIB: usize = 1 << 20;
    const COUNT: u64 = 20;
    let node = ep.node().clone();
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    let slow = node
        .register_fiber(
            "flood.slow",
            move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
                std::thread::sleep(std::time::Duration::from_millis(30));
                // Kept, not copied: the node's memory is the messages'.
                let p = am.take_payload().into_vec();
                assert_eq!(p.len(), 8 * MIB);
                assert!(p.iter().step_by(4096).all(|&b| b == p[0]), "payload intact");
                r.fetch_add(1, Ordering::SeqCst);
            },
        )
        .expect("register");
    let world = Group::world(ep).expect("world");
    world.barrier().expect("registered");
    if ep.address().node == 0 {
        for i in 0..COUNT {
            ep.am_send(1, &slow, vec![i as u8; 8 * MIB]).expect("flood");
        }
    }
    world.barrier().expect("sent");
    if ep.address().node == 1 {
        while ran.load(Ordering::SeqCst) < COUNT {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        println!("{COUNT} × 8 MiB handled");
        println!("peak n1 {}", common::vm_hwm());
    }
    world.barrier().expect("handled");
}

fn spawn(ep: &Endpoint) {
    let node = ep.node().clone();
    node.export("square", |_ep, args| {
        let x = u64::from_le_bytes(args.to_vec().try_into().expect("8 bytes"));
        (x * x).to_le_bytes().to_vec()
    })
    .expect("export");
    // Talks with its spawner: a remote thread is an endpoint like any.
    node.export("talk", |ep, args| {
        let spawner = Address::new(0, 0);
        ep.send(spawner, 5, ep.address().to_string().into_bytes())
            .expect("hello");
        let m = ep.recv(spawner, 6).expect("answer");
        let mut out = args.to_vec();
        out.extend_from_slice(&m.into_vec());
        out
    })
    .expect("export");
    node.export("explode", |_ep, _args| -> Vec<u8> {
        panic!("entry exploded")
    })
    .expect("export");
    assert!(matches!(
        node.export("square", |_ep, _args| Vec::new()),
        Err(threadwire::SpawnError::AlreadyExported { .. })
    ));
    let world = Group::world(ep).expect("world");
    world.barrier().expect("exported everywhere");
    if ep.address().node == 0 {
        for target in 0..node.nodes() {
            for os in [false, true] {
                let args = (u64::from(target) + 3).to_le_bytes().to_vec();
                let h = match os {
                    false => ep.spawn_remote(target, "square", args),
                    true => ep.spawn_remote_os(target, "square", args),
                }
                .expect("spawn");
                assert_eq!(h.address().node, target);
                let got = h.join(ep).expect("join");
                let x = u64::from(target) + 3;
                assert_eq!(got.into_vec(), (x * x).to_le_bytes(), "n{target} os {os}");
            }
            let h = ep
                .spawn_remote(target, "talk", b"args:".to_vec())
                .expect("spawn");
            let hello = ep.recv(h.address(), 5).expect("hello");
            assert_eq!(hello.into_vec(), h.address().to_string().into_bytes());
            ep.send(h.address(), 6, b"reply".to_vec()).expect("answer");
            assert_eq!(h.join(ep).expect("join").into_vec(), b"args:reply");
            match ep.spawn_remote(target, "nobody.exported.this", Vec::new()) {
                Err(threadwire::SpawnError::UnknownEntry { node: n, name }) => {
                    assert_eq!((n, name.as_str()), (target, "nobody.exported.this"))
                }
                other => panic!("unknown entry: {other:?}"),
            }
            let h = ep
                .spawn_remote(target, "explode", Vec::new())
                .expect("spawn");
            match h.join(ep) {
                Err(threadwire::RemoteJoinError::Panicked { message, .. }) => {
                    assert_eq!(message, "entry exploded")
                }
                other => panic!("panicking entry: {other:?}"),
            }
            println!("n{target}: spawn checks passed");
        }
    }
    world.barrier().expect("done");
}

/// Two members a node (thread 0 and a fiber); node 0 calls a handler on
/// every member, one-way and as requests.
fn group(ep: &Endpoint) {
    let node = ep.node().clone();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let here = node.id();
    let whom = node
        .register_inline("group.whom", move |am| {
            let target = am.target().expect("sent for a member");
            assert_eq!(target.node, here, "runs at the member's node");
            s.lock().unwrap().push(target);
            if am.is_request() {
                let text = format!(
                    "{target}:{}",
                    String::from_utf8_lossy(&am.take_payload().into_vec())
                );
                am.reply(text.into_bytes()).expect("reply");
            }
        })
        .expect("register");
    let members: Vec<Address> = (0..node.nodes())
        .flat_map(|n| [Address::new(n, 0), Address::new(n, 1)])
        .collect();
    let m = members.clone();
    let fiber = node.spawn(move |ep| {
        let g = Group::new(&ep, &m).expect("group");
        g.barrier().expect("ready");
        g.barrier().expect("done");
    });
    let g = Group::new(ep, &members).expect("group");
    g.barrier().expect("ready");
    if ep.address().node == 0 {
        g.am_send_all(&whom, b"one-way".to_vec())
            .expect("send to all");
        let answers = threadwire::wait_all(g.am_request_all(&whom, b"asked".to_vec()));
        for (member, answer) in members.iter().zip(answers) {
            let answer = answer.expect("answer").into_vec();
            assert_eq!(String::from_utf8_lossy(&answer), format!("{member}:asked"));
        }
    }
    g.barrier().expect("done");
    fiber.join().expect("fiber");
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    let me = ep.address().node;
    let mine = [
        Address::new(me, 0),
        Address::new(me, 0),
        Address::new(me, 1),
        Address::new(me, 1),
    ];
    assert_eq!(
        seen, mine,
        "each member of this node, once one-way and once asked"
    );
    println!("n{me}: every member's handler ran");
}

/// Node 1 runs at most `THREADWIRE_AM_FIBERS` (the test sets 2) fiber
/// handlers at once: 50 requests whose handlers each wait for node 0's
/// go-ahead all complete, run by at most 2 distinct pool fibers.
fn bounded(ep: &Endpoint) {
    const HELLO: u32 = 11;
    const GO: u32 = 12;
    let node = ep.node().clone();
    let slow = node
        .register_fiber(
            "bounded.slow",
            move |ep: &Endpoint, am: &mut ActiveMessage<'_>| {
                ep.send(am.source(), HELLO, Vec::new()).expect("hello");
                ep.recv(am.source(), GO).expect("go");
                am.reply(Vec::new()).expect("reply");
            },
        )
        .expect("register");
    let world = Group::world(ep).expect("world");
    world.barrier().expect("registered");
    if ep.address().node == 0 {
        let requests: Vec<_> = (0..50)
            .map(|_| ep.am_request(1, &slow, Vec::new()))
            .collect();
        let mut fibers = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let hello = ep.recv(threadwire::Source::Node(1), HELLO).expect("hello");
            fibers.insert(hello.source());
            ep.send(hello.source(), GO, Vec::new()).expect("go");
        }
        for r in threadwire::wait_all(requests) {
            r.expect("answer");
        }
        assert!(
            fibers.len() <= 2,
            "{} pool fibers ran: {fibers:?}",
            fibers.len()
        );
        println!("50 handlers ran on {} fibers", fibers.len());
    }
    world.barrier().expect("done");
}

/// The machine as node 0 sees it: every node alive with its pid, host
/// and threads; then node 1 finishes and shows as finished.
fn machine(ep: &Endpoint) {
    let node = ep.node().clone();
    if ep.address().node == 2 {
        for _ in 0..2 {
            node.spawn(|_| ()).join().expect("fiber");
        }
    }
    let world = Group::world(ep).expect("world");
    world.barrier().expect("ready");
    if ep.address().node == 0 {
        let exit = ep
            .notify(threadwire::Notify::NodeExit(1), 77)
            .expect("notify");
        let view = ep.machine();
        assert_eq!(view.len(), 3);
        let pids: std::collections::BTreeSet<_> = view.iter().map(|n| n.pid).collect();
        assert_eq!(pids.len(), 3, "{view:?}");
        for n in &view {
            assert_eq!(n.state, threadwire::NodeState::Alive, "{view:?}");
            assert!(n.host.as_ref().is_some_and(|h| !h.is_empty()), "{view:?}");
            assert!(n.listen.is_some(), "{view:?}");
        }
        assert_eq!(view[0].route, "self");
        assert_eq!(view[0].pid, Some(std::process::id()));
        assert!(view[2].threads.is_some_and(|t| t >= 3), "{view:?}");
        world.barrier().expect("n1 may go");
        ep.recv(Address::new(1, 0), 77).expect("n1's exit");
        drop(exit);
        let view = ep.machine();
        assert_eq!(view[1].state, threadwire::NodeState::Finished, "{view:?}");
        assert_eq!(view[2].state, threadwire::NodeState::Alive, "{view:?}");
        ep.send(Address::new(2, 0), 78, Vec::new()).expect("done");
        println!("machine: {} nodes seen, n1 finished", view.len());
    } else {
        world.barrier().expect("n1 may go");
        if ep.address().node == 2 {
            ep.recv(Address::new(0, 0), 78).expect("done");
        }
    }
}

fn lost(ep: &Endpoint) {
    let node = ep.node().clone();
    node.export("block", |ep, _args| -> Vec<u8> {
        let never = ep.recv(Address::new(0, 0), 99);
        panic!("the blocked thread got {never:?}");
    })
    .expect("export");
    let hang = node
        .register_fiber("hang", |ep: &Endpoint, _am: &mut ActiveMessage<'_>| {
            // Tell node 0 the handler runs, then die without answering.
            ep.send(threadwire::Address::new(0, 0), 7, Vec::new())
                .expect("signal");
            println!("n1: killing myself");
            // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        })
        .expect("register");
    // Holds its large message's bytes until the node dies: with a budget
    // below one message, the next large message waits for memory.
    let hold = node
        .register_fiber("hold", |ep: &Endpoint, _am: &mut ActiveMessage<'_>| {
            let never = ep.recv(Address::new(0, 0), 98);
            panic!("the holding handler got {never:?}");
        })
        .expect("register");
    Group::world(ep)
        .expect("world")
        .barrier()
        .expect("registered");
    if ep.address().node == 0 {
        ep.am_send(1, &hold, vec![1u8; 2 << 20]).expect("held");
        let h = hold.clone();
        let waiting = node.spawn(move |ep| ep.am_send(1, &h, vec![2u8; 2 << 20]));
        let blocked = ep.spawn_remote(1, "block", Vec::new()).expect("spawn");
        let request = ep.am_request(1, &hang, Vec::new());
        ep.recv(threadwire::Address::new(1, 0), 7).ok();
        match request.wait() {
            Err(AmError::PeerLost { lost, .. }) => println!("request failed: lost n{}", lost.node),
            other => panic!("request to a dying node: {other:?}"),
        }
        match ep.am_request(1, &hang, Vec::new()).wait() {
            Err(AmError::PeerLost { .. }) => println!("a later request fails at once"),
            other => panic!("request to a dead node: {other:?}"),
        }
        match waiting.join().expect("fiber") {
            Err(AmError::PeerLost { .. }) => println!("a large message waiting at n1 fails"),
            other => panic!("large message to a dying node: {other:?}"),
        }
        match ep.am_request(1, &hold, vec![3u8; 2 << 20]).wait() {
            Err(AmError::PeerLost { .. }) => println!("a later large request fails at once"),
            other => panic!("large request to a dead node: {other:?}"),
        }
        match blocked.join(ep) {
            Err(threadwire::RemoteJoinError::PeerLost(_)) => println!("the join fails"),
            other => panic!("join of a thread on a dead node: {other:?}"),
        }
        match ep.spawn_remote(1, "block", Vec::new()) {
            Err(threadwire::SpawnError::PeerLost(_)) => println!("a later spawn fails"),
            other => panic!("spawn on a dead node: {other:?}"),
        }
    } else {
        // Waiting in the runtime drives progress, so the handler runs.
        let never = ep.recv(threadwire::Address::new(0, 0), 99);
        panic!("n1 outlived its handler: {never:?}");
    }
}

/// As `common::exit_on_panic`, but the handlers that panic on purpose
/// (their message says "exploded") leave the process running: the
/// runtime catches those.
fn exit_on_unexpected_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if !message.contains("exploded") {
            std::process::exit(101);
        }
    }));
}

fn main() {
    exit_on_unexpected_panic();
    let mode: String = common::arg(1, "basic".to_string());
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    match mode.as_str() {
        "basic" => basic(&ep),
        "flight" => flight(&ep),
        "lost" => lost(&ep),
        "spawn" => spawn(&ep),
        "group" => group(&ep),
        "bounded" => bounded(&ep),
        "machine" => machine(&ep),
        "large" => large(&ep),
        "large-flood" => large_flood(&ep),
        other => panic!("unknown mode {other}"),
    }
    println!("am {mode}: ok");
}
