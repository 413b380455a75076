//! Notification as messages (`Endpoint::notify`): survivors are told of one
//! node's clean finish and another's death by SIGKILL, in their mailboxes.
//!
//! `node-notify`, 4 nodes, run under `FailurePolicy::Continue`:
//! - n0 and n1 survive. Their thread 0 subscribes to n2's exit, n3's exit
//!   and any node's exit, and makes two subscriptions it cancels (one by
//!   `cancel`, one by dropping the handle); two fibers subscribe to n2's
//!   exit, one waiting in an `irecv` from anyone, one in a `probe` of
//!   n2.t0; a third fiber subscribes and finishes at once.
//! - n3 waits until n0.t0 and n1.t0 have subscribed, sends each of them
//!   `DATA_COUNT` messages and finishes (goodbye).
//! - n2 waits until every survivor subscriber is ready and until it is told
//!   (by its own subscription) that n3 has finished, then kills itself.
//!
//! Survivors print one line per check, `<address>: <what>`; a failed check
//! panics, which ends the process with status 101.

mod common;

use threadwire::{
    Address, Endpoint, ExitCause, Message, Notification, Notify, NotifyError, Source, ANY_SOURCE,
    ANY_TAG,
};

const DATA: u32 = 10;
const DATA_COUNT: u32 = 5;
const READY: u32 = 100;
/// To a watcher: the checks may end. To the other survivor: these are done.
const GO: u32 = 101;
const N2: u32 = 200;
const N3: u32 = 201;
const ANY: u32 = 202;
const CANCELLED: u32 = 203;
const DROPPED: u32 = 204;
const LATE: u32 = 205;
const LATE_ANY: u32 = 206;
const FINISHED_THREAD: u32 = 207;
/// Survivor threads that tell n2 they are ready: thread 0 and the two
/// watchers of n0 and n1.
const SUBSCRIBERS: u32 = 6;

/// The exit a notification message tells of, checked to come from `n<k>.t0`.
fn read(m: Message) -> (u32, ExitCause) {
    let source = m.source();
    match Notification::from_message(m).expect("a notification") {
        Notification::NodeExit { node, cause } => {
            assert_eq!(source, Address::new(node, 0), "notification's source");
            (node, cause)
        }
        other => panic!("unexpected notification {other:?}"),
    }
}

fn failed(cause: &ExitCause) -> bool {
    matches!(cause, ExitCause::Failed(why) if !why.is_empty())
}

/// No message with `tag` waits.
fn none_waiting(ep: &Endpoint, tag: u32) {
    let waiting = ep.iprobe(ANY_SOURCE, tag).expect("iprobe");
    assert_eq!(
        waiting,
        None,
        "{}: a message with tag {tag} waits",
        ep.address()
    );
}

/// n0 and n1, thread 0.
fn survivor_main(ep: &Endpoint) {
    let me = ep.address();
    let node = ep.node().clone();
    let id = node.id();
    assert_eq!(
        ep.notify(Notify::NodeExit(id), 1).unwrap_err(),
        NotifyError::OwnNode(id)
    );
    assert_eq!(
        ep.notify(Notify::NodeExit(9), 1).unwrap_err(),
        NotifyError::NoSuchNode(9)
    );
    assert_eq!(
        ep.notify(Notify::HostDelete(1), 1).unwrap_err(),
        NotifyError::NoSuchHost(1),
        "the job runs on one host, number 0"
    );
    let host_add = ep.notify(Notify::HostAdd, 1).expect("notify host add");
    assert!(host_add.is_active());
    drop(host_add);
    println!("{me}: notify refuses what it cannot do");

    let n2 = ep.notify(Notify::NodeExit(2), N2).expect("notify n2");
    let n3 = ep.notify(Notify::NodeExit(3), N3).expect("notify n3");
    let any = ep.notify(Notify::AnyNodeExit, ANY).expect("notify any");
    let cancelled = ep.notify(Notify::NodeExit(2), CANCELLED).expect("notify");
    assert!(cancelled.cancel(), "a fresh subscription is active");
    drop(ep.notify(Notify::AnyNodeExit, DROPPED).expect("notify"));
    assert!(n2.is_active() && n3.is_active() && any.is_active());

    // A thread that subscribes and finishes: its subscription goes with it.
    node.spawn(|ep| {
        ep.notify(Notify::NodeExit(2), FINISHED_THREAD)
            .expect("notify")
            .detach();
    })
    .join()
    .expect("short-lived subscriber");
    let watchers: Vec<_> = (0..2)
        .map(|i| node.spawn(move |ep| watcher(&ep, i)))
        .collect();

    ep.send(Address::new(3, 0), READY, Vec::new())
        .expect("ready to n3");
    ep.send(Address::new(2, 0), READY, Vec::new())
        .expect("ready to n2");

    // n3 finishes: its messages, then its notifications, in arrival order.
    let mut data = 0u32;
    let mut told = Vec::new();
    while told.len() < 2 {
        let m = ep.recv(Source::Node(3), ANY_TAG).expect("from n3");
        match m.tag() {
            DATA => {
                assert!(told.is_empty(), "{me}: n3's message after its notification");
                assert_eq!(m.into_vec(), data.to_le_bytes());
                data += 1;
            }
            tag @ (N3 | ANY) => told.push((tag, read(m))),
            tag => panic!("{me}: tag {tag} from n3"),
        }
    }
    assert_eq!(data, DATA_COUNT);
    for (_, exit) in &told {
        assert_eq!(*exit, (3, ExitCause::Finished));
    }
    println!("{me}: n3 finished: {data} messages, then one notification each for N3 and ANY");

    // n2 dies while this receive from anyone waits: the notification
    // completes it, it does not fail with the loss.
    let (node2, cause) = read(ep.recv(ANY_SOURCE, N2).expect("n2's notification"));
    assert_eq!(node2, 2);
    assert!(failed(&cause), "{me}: n2's cause {cause:?}");
    let (node2, any_cause) = read(ep.recv(ANY_SOURCE, ANY).expect("any-node notification"));
    assert_eq!((node2, &any_cause), (2, &cause));
    println!("{me}: n2 failed: {cause:?}");
    // Done, but for any node's exit: the other survivor is still here.
    assert!(!n2.is_active() && !n3.is_active() && any.is_active());

    // Asked after the loss: answered at once, without waiting.
    let late = ep.notify(Notify::NodeExit(2), LATE).expect("late notify");
    assert!(!late.is_active());
    let status = ep.iprobe(Address::new(2, 0), LATE).expect("iprobe");
    assert!(
        status.is_some(),
        "{me}: late notification not delivered at once"
    );
    assert_eq!(
        read(ep.recv(Address::new(2, 0), LATE).expect("late")),
        (2, cause.clone())
    );
    drop(ep.notify(Notify::AnyNodeExit, LATE_ANY).expect("late any"));
    let mut late_any = Vec::new();
    while let Some(s) = ep.iprobe(ANY_SOURCE, LATE_ANY).expect("iprobe") {
        late_any.push(read(ep.recv(s.source, LATE_ANY).expect("late any")));
    }
    late_any.sort_by_key(|(n, _)| *n);
    assert_eq!(late_any, [(2, cause.clone()), (3, ExitCause::Finished)]);
    println!("{me}: late subscriptions answered at once");

    // The late `notify` took the notification lock after n2's deliveries:
    // anything more would be here by now.
    for tag in [N2, N3, ANY, CANCELLED, DROPPED, LATE, LATE_ANY] {
        none_waiting(ep, tag);
    }
    println!("{me}: exactly one notification each, none cancelled");
    for w in &watchers {
        ep.send(w.address(), GO, Vec::new()).expect("go");
    }
    for w in watchers {
        w.join().expect("watcher");
    }
    // Neither survivor finishes before the other is through its checks,
    // which count on the survivors being there.
    assert!(any.cancel(), "still waiting for the other survivor");
    let other = Address::new(1 - id, 0);
    ep.send(other, GO, Vec::new()).expect("through");
    ep.recv(other, GO).expect("through");
}

/// A survivor fiber waiting on n2's exit: `irecv` from anyone (0) or
/// `probe` of n2.t0 (1).
fn watcher(ep: &Endpoint, how: u32) {
    let me = ep.address();
    let _sub = ep.notify(Notify::NodeExit(2), N2).expect("notify n2");
    let m = if how == 0 {
        let pending = ep.irecv(ANY_SOURCE, N2);
        ep.send(Address::new(2, 0), READY, Vec::new())
            .expect("ready");
        pending.wait().expect("irecv of n2's notification")
    } else {
        ep.send(Address::new(2, 0), READY, Vec::new())
            .expect("ready");
        let status = ep
            .probe(Address::new(2, 0), N2)
            .expect("probe of n2's notification");
        assert_eq!(status.tag, N2);
        ep.recv(status.source, N2).expect("recv")
    };
    let (node, cause) = read(m);
    assert!(node == 2 && failed(&cause), "{me}: {cause:?}");
    ep.recv(Address::new(me.node, 0), GO).expect("go");
    none_waiting(ep, N2);
    println!("{me}: one notification of n2's failure");
}

fn finish(ep: &Endpoint) {
    for _ in 0..2 {
        ep.recv(ANY_SOURCE, READY).expect("ready");
    }
    for to in [Address::new(0, 0), Address::new(1, 0)] {
        for i in 0..DATA_COUNT {
            ep.send(to, DATA, i.to_le_bytes().to_vec()).expect("data");
        }
    }
    println!("n3: finishing");
}

fn die(ep: &Endpoint) {
    let n3 = ep.notify(Notify::NodeExit(3), N3).expect("notify n3");
    for _ in 0..SUBSCRIBERS {
        ep.recv(ANY_SOURCE, READY).expect("ready");
    }
    let (node, cause) = read(ep.recv(Address::new(3, 0), N3).expect("n3's notification"));
    assert_eq!((node, cause), (3, ExitCause::Finished));
    drop(n3);
    println!("n2: killing myself");
    // SAFETY: kill(2) with our own pid; SIGKILL ends the process here.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL returned");
}

fn main() {
    common::exit_on_panic();
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    assert_eq!(ep.node().nodes(), 4, "run with -n 4");
    println!("pid {}", std::process::id());
    match ep.node().id() {
        2 => die(&ep),
        3 => finish(&ep),
        _ => survivor_main(&ep),
    }
    println!("n{}: done", ep.node().id());
}
