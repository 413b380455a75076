//! Fiber endpoints: blocking calls park only the fiber, and thousands of
//! fibers exchange messages across nodes on a couple of workers.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn ten_thousand_fibers_exchange_messages_across_two_nodes() {
    let out = support::run(support::job(2, "node-fibers").args(["5000", "3", "2", "fiber"]));
    out.assert_success();
    for node in 0..2 {
        assert_eq!(
            out.line(node, &format!("fibers n{node}: ")),
            format!("fibers n{node}: ok received=15000 workers=2")
        );
    }
}

#[test]
fn fibers_on_one_worker_exchange_across_three_nodes() {
    let out = support::run(support::job(3, "node-fibers").args(["300", "5", "1", "fiber"]));
    out.assert_success();
    for node in 0..3 {
        assert!(out
            .line(node, "fibers ")
            .ends_with("ok received=1500 workers=1"));
    }
}

/// In one process: a fiber blocked in `recv` leaves its (only) worker to
/// the fiber that will send to it, and fibers and OS threads talk both ways.
#[test]
fn a_receiving_fiber_parks_only_itself() {
    let ep = threadwire::Config::new()
        .standalone(true)
        .workers(1)
        .init()
        .unwrap();
    let node = ep.node().clone();
    let main = ep.address();
    let computed = Arc::new(AtomicBool::new(false));
    let receiver = node.spawn(move |ep| {
        ep.send(main, 1, b"ready".to_vec()).unwrap();
        let m = ep.recv(threadwire::ANY_SOURCE, 2).unwrap();
        m.into_vec()
    });
    let receiver_address = receiver.address();
    assert_eq!(ep.recv(receiver_address, 1).unwrap().into_vec(), b"ready");
    // The receiver now waits; on the same single worker, this fiber runs.
    let c = computed.clone();
    let sender = node.spawn(move |ep| {
        threadwire::fiber::sleep(Duration::from_millis(5));
        c.store(true, Ordering::Release);
        ep.send(receiver_address, 2, b"from a fiber".to_vec())
            .unwrap();
    });
    sender.join().unwrap();
    assert!(computed.load(Ordering::Acquire));
    assert_eq!(receiver.join().unwrap(), b"from a fiber");

    // An OS thread endpoint and a fiber endpoint, both directions.
    let os = node.spawn_os(move |ep| {
        let m = ep.recv(threadwire::ANY_SOURCE, 3).unwrap();
        ep.send(m.source(), 4, m.into_vec()).unwrap();
    });
    let os_address = os.address();
    let fiber = node.spawn(move |ep| {
        ep.send(os_address, 3, b"echo".to_vec()).unwrap();
        ep.recv(os_address, 4).unwrap().into_vec()
    });
    assert_eq!(fiber.join().unwrap(), b"echo");
    os.join().unwrap();

    // A panic in a fiber endpoint reaches the joiner.
    let bad = node.spawn(|_ep| -> () { panic!("fiber failed on purpose") });
    let err = bad.join().unwrap_err();
    assert!(err.to_string().contains("fiber failed on purpose"), "{err}");
}

/// By default a node runs its share of the host's fiber workers: the
/// cores divided by the job's nodes on the host, rounded up. The count
/// comes from where the launcher placed the nodes, before any pair has
/// connected (pairs connect on first use, after the first spawn): counted
/// from the channels made so far, every node started a worker per core,
/// and fiber collectives across nodes ran 5-10 times slower.
#[test]
fn nodes_share_the_hosts_cores_among_their_workers() {
    let out = support::run(support::job(2, "node-fibers").args(["4", "2", "0", "fiber"]));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let share = cores.div_ceil(2);
    out.assert_success();
    for node in 0..2 {
        assert_eq!(
            out.line(node, &format!("fibers n{node}: ")),
            format!("fibers n{node}: ok received=8 workers={share}")
        );
    }
}
