//! The virtual machine (`threadwire::vm`): nodes added to a running job,
//! used, and removed with their hosts.
//!
//! `node-vm MODE [HOST…]`:
//! - `grow` (2 nodes on this host): n0 adds 2 nodes of this program; the
//!   joiners (n2, n3) answer n0, greet n1 and each other, and all four
//!   combine their numbers in an allreduce of a group made after the
//!   growth. n1 waits until it counts 4 nodes. n0 checks the machine view
//!   and is told of each joiner's finish.
//! - `hosts H1 H2` (2 nodes, on `local` and a namespace host): n0 adds the
//!   namespace hosts H1 and H2, then 2 nodes on each; all six combine in
//!   an allreduce; n0 removes H1 and H2, which kills the four, and is told
//!   of the hosts' removal and of each node's exit; n1 sees them lost.
//! - `relost` (2 nodes): n0 adds a node that quits without a goodbye,
//!   then, once it is lost, another that must reach n0 and n1.
//! - `refuse` (1 node, `--max-nodes 3`): every bad request gets its typed
//!   error, then one good request adds a node all the same.
//! - `console [ROLE]` (2 nodes; the test drives it with `threadwire vm`):
//!   n0 starts 3 fibers, prints the job id and waits for n1's `DONE`, then
//!   tells its fibers and the live added nodes; n1 waits for `DONE` from
//!   any node and passes it on to n0; nodes added without a ROLE wait for
//!   n0's word. Added nodes with a ROLE: `quit` exits with status 0
//!   without finalizing, `fail` with status 3, `finish` sends n1 `DONE`
//!   (each after a pause, once surely counted as joined).
//!
//! Every check prints `n<k>: <what>`; a failed one panics (status 101).

mod common;

use std::time::{Duration, Instant};
use threadwire::{
    AddNodes, Address, Endpoint, ExitCause, Group, Notification, Notify, NotifyError, Op,
    RecvError, VmError, ANY_SOURCE,
};

const PING: u32 = 1;
const PONG: u32 = 2;
const HELLO: u32 = 3;
const DONE: u32 = 4;
const SUMMED: u32 = 5;
const EXITS: u32 = 50;
const HOST_ADDED: u32 = 51;
const HOST_GONE: u32 = 52;
const NEVER: u32 = 99;

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "grow".to_string());
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let id = ep.node().id();
    match (mode.as_str(), id) {
        ("grow", 0) => grow_n0(&ep),
        ("grow", 1) => grow_n1(&ep),
        ("grow", _) => grow_joiner(&ep),
        ("hosts", 0) => hosts_n0(&ep),
        ("hosts", 1) => hosts_n1(&ep),
        ("hosts", _) => hosts_joiner(&ep),
        ("refuse", 0) => refuse(&ep),
        ("console", _) => console(&ep),
        ("relost", 0) => relost_n0(&ep),
        ("relost", _) => {
            wait_for_nodes(&ep, 4);
            let m = ep.recv(Address::new(3, 0), HELLO).expect("hello from n3");
            ep.send(m.source(), HELLO, b"back".to_vec())
                .expect("hello back");
            ep.recv(Address::new(0, 0), DONE).expect("done");
        }
        ("relost-quitter", _) => {
            std::thread::sleep(Duration::from_millis(300));
            std::process::exit(0);
        }
        ("relost-echo", _) => {
            ep.recv(Address::new(0, 0), PING).expect("ping");
            ep.send(Address::new(0, 0), PONG, Vec::new()).expect("pong");
            ep.send(Address::new(1, 0), HELLO, Vec::new())
                .expect("hello to n1");
            ep.recv(Address::new(1, 0), HELLO)
                .expect("hello back from n1");
            println!("n{id}: reached n0 and n1");
        }
        ("idle", _) => {
            let m = ep.recv(Address::new(0, 0), DONE).expect("done from n0");
            println!("n{id}: told done, {} bytes", m.len());
        }
        (other, _) => panic!("unknown mode {other}"),
    }
    println!("n{id}: finished");
}

fn everyone(nodes: u32) -> Vec<Address> {
    (0..nodes).map(|n| Address::new(n, 0)).collect()
}

/// The sum of the node numbers of `nodes` nodes, through a group of all.
fn sum_ids(ep: &Endpoint, nodes: u32) -> u32 {
    let group = Group::new(ep, &everyone(nodes)).expect("a group of all nodes");
    let mut v = [ep.node().id()];
    group.allreduce(&mut v, Op::Sum).expect("allreduce");
    v[0]
}

fn grow_n0(ep: &Endpoint) {
    let exits = ep.notify(Notify::AnyNodeExit, EXITS).expect("notify");
    let started = Instant::now();
    let added = ep.add_nodes(&AddNodes::new(2)).expect("add 2 nodes");
    println!(
        "n0: added {added:?} in {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(added, [2, 3]);
    assert_eq!(ep.node().nodes(), 4);
    for &n in &added {
        ep.send(Address::new(n, 0), PING, n.to_le_bytes().to_vec())
            .expect("ping");
    }
    for &n in &added {
        let m = ep.recv(Address::new(n, 0), PONG).expect("pong");
        assert_eq!(m.into_vec(), (n * 10).to_le_bytes().to_vec());
    }
    println!("n0: every joiner answered");
    println!("n0: sum of ids {}", sum_ids(ep, 4));
    let machine = ep.machine();
    println!("n0: machine has {} nodes", machine.len());
    for n in &machine[2..] {
        println!("n0: n{} is {:?}, route {}", n.node, n.state, n.route);
    }
    for &n in &added {
        ep.send(Address::new(n, 0), DONE, Vec::new()).expect("done");
    }
    let mut finished = Vec::new();
    while finished.len() < 2 {
        let m = ep.recv(ANY_SOURCE, EXITS).expect("exit notification");
        match Notification::from_message(m).expect("a notification") {
            Notification::NodeExit {
                node,
                cause: ExitCause::Finished,
            } if node >= 2 => finished.push(node),
            Notification::NodeExit { node: 1, .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    finished.sort();
    println!("n0: told joiners finished: {finished:?}");
    drop(exits);
}

/// Waits until this node counts `nodes` nodes (it learns of joiners as
/// they connect and from the launcher).
fn wait_for_nodes(ep: &Endpoint, nodes: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while ep.node().nodes() < nodes {
        assert!(Instant::now() < deadline, "never counted {nodes} nodes");
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("n{}: counts {nodes} nodes", ep.node().id());
}

fn grow_n1(ep: &Endpoint) {
    wait_for_nodes(ep, 4);
    for _ in 0..2 {
        let m = ep.recv(ANY_SOURCE, HELLO).expect("hello");
        ep.send(m.source(), HELLO, b"back".to_vec())
            .expect("hello back");
    }
    println!("n1: greeted both joiners");
    println!("n1: sum of ids {}", sum_ids(ep, 4));
}

fn grow_joiner(ep: &Endpoint) {
    let id = ep.node().id();
    println!("n{id}: joined a job of {} nodes", ep.node().nodes());
    let m = ep.recv(Address::new(0, 0), PING).expect("ping");
    assert_eq!(m.into_vec(), id.to_le_bytes().to_vec());
    ep.send(Address::new(0, 0), PONG, (id * 10).to_le_bytes().to_vec())
        .expect("pong");
    ep.send(Address::new(1, 0), HELLO, Vec::new())
        .expect("hello");
    let back = ep.recv(Address::new(1, 0), HELLO).expect("hello back");
    assert_eq!(back.into_vec(), b"back".to_vec());
    let other = 5 - id; // 2 <-> 3
    ep.send(Address::new(other, 0), HELLO, Vec::new())
        .expect("hello to the other");
    ep.recv(Address::new(other, 0), HELLO)
        .expect("hello from the other");
    println!("n{id}: greeted n0, n1 and n{other}");
    println!("n{id}: sum of ids {}", sum_ids(ep, 4));
    ep.recv(Address::new(0, 0), DONE).expect("done");
}

fn hosts_n0(ep: &Endpoint) {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let [h1, h2] = [&args[0], &args[1]];
    let before = ep.hosts();
    println!(
        "n0: hosts {:?}",
        before.iter().map(|h| h.name.as_str()).collect::<Vec<_>>()
    );
    let added_hosts = ep
        .notify(Notify::HostAdd, HOST_ADDED)
        .expect("notify host add");
    ep.add_hosts(&[h1.as_str(), h2.as_str()])
        .expect("add hosts");
    for _ in 0..2 {
        let m = ep.recv(ANY_SOURCE, HOST_ADDED).expect("host added");
        match Notification::from_message(m).expect("a notification") {
            Notification::HostAdded { host, name } => {
                println!("n0: told host {host} added: {name}")
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    drop(added_hosts);
    let table = ep.hosts();
    let number = |name: &str| {
        table
            .iter()
            .position(|h| h.name == *name)
            .expect("host in table") as u32
    };
    let gone_h1 = ep
        .notify(Notify::HostDelete(number(h1)), HOST_GONE)
        .expect("notify host gone");
    let exits = ep.notify(Notify::AnyNodeExit, EXITS).expect("notify exits");
    let started = Instant::now();
    let mut added = ep
        .add_nodes(&AddNodes::new(2).host(h1.as_str()))
        .expect("add on h1");
    added.extend(
        ep.add_nodes(&AddNodes::new(2).host(h2.as_str()))
            .expect("add on h2"),
    );
    println!(
        "n0: added {added:?} in {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(added, [2, 3, 4, 5]);
    for &n in &added {
        ep.send(Address::new(n, 0), PING, n.to_le_bytes().to_vec())
            .expect("ping");
        let m = ep.recv(Address::new(n, 0), PONG).expect("pong");
        assert_eq!(m.into_vec(), (n * 10).to_le_bytes().to_vec());
    }
    println!("n0: every joiner answered");
    println!("n0: sum of ids {}", sum_ids(ep, 6));
    for &n in &added {
        ep.recv(Address::new(n, 0), SUMMED).expect("summed");
    }
    assert!(matches!(
        ep.remove_hosts(&["local"]),
        Err(VmError::Refused(_))
    ));
    let mut killed = ep
        .remove_hosts(&[h1.as_str(), h2.as_str()])
        .expect("remove hosts");
    killed.sort();
    println!("n0: removing the hosts killed {killed:?}");
    // Host notifications come from this node's thread 0.
    let m = ep.recv(Address::new(0, 0), HOST_GONE).expect("host gone");
    match Notification::from_message(m).expect("a notification") {
        Notification::HostRemoved { name, .. } => println!("n0: told host removed: {name}"),
        other => panic!("unexpected {other:?}"),
    }
    drop(gone_h1);
    // From each node in turn: a receive from anyone fails when a node
    // fails while it waits (docs/FAILURES.md); one naming the node gets
    // its notification, which comes before its loss.
    let mut lost = Vec::new();
    for n in 2..6 {
        let m = ep
            .recv(Address::new(n, 0), EXITS)
            .expect("exit notification");
        match Notification::from_message(m).expect("a notification") {
            // Told by the launcher that the host was removed, mostly; or
            // the broken connection came first (first cause wins).
            Notification::NodeExit {
                node,
                cause: ExitCause::Failed(_),
            } if node == n => lost.push(node),
            other => panic!("unexpected {other:?}"),
        }
    }
    lost.sort();
    println!("n0: told removed nodes exited: {lost:?}");
    println!(
        "n0: hosts present {:?}",
        ep.hosts()
            .iter()
            .filter(|h| h.present)
            .map(|h| h.name.clone())
            .collect::<Vec<_>>()
    );
    ep.send(Address::new(1, 0), DONE, Vec::new())
        .expect("done to n1");
    drop(exits);
}

fn hosts_n1(ep: &Endpoint) {
    wait_for_nodes(ep, 6);
    println!("n1: sum of ids {}", sum_ids(ep, 6));
    for n in 2..6 {
        match ep.recv(Address::new(n, 0), NEVER) {
            Err(RecvError::PeerLost(lost)) => println!("n1: n{n} lost: {lost}"),
            other => panic!("n1: receive from n{n}: {other:?}"),
        }
    }
    ep.recv(Address::new(0, 0), DONE).expect("done");
}

fn hosts_joiner(ep: &Endpoint) {
    let id = ep.node().id();
    let m = ep.recv(Address::new(0, 0), PING).expect("ping");
    assert_eq!(m.into_vec(), id.to_le_bytes().to_vec());
    ep.send(Address::new(0, 0), PONG, (id * 10).to_le_bytes().to_vec())
        .expect("pong");
    println!("n{id}: sum of ids {}", sum_ids(ep, 6));
    ep.send(Address::new(0, 0), SUMMED, Vec::new())
        .expect("summed");
    // Until its host is removed. The others may give it up (and close
    // their connections) a moment before the launcher's kill lands.
    let _ = ep.recv(Address::new(0, 0), NEVER);
    std::thread::sleep(Duration::from_secs(30));
    panic!("n{id} outlived its host");
}

fn refuse(ep: &Endpoint) {
    let refused = |r: Result<Vec<u32>, VmError>, what: &str| match r {
        Err(VmError::Refused(why)) => println!("n0: {what}: refused: {why}"),
        other => panic!("n0: {what}: {other:?}"),
    };
    assert_eq!(ep.add_nodes(&AddNodes::new(0)), Err(VmError::Nothing));
    refused(ep.add_nodes(&AddNodes::new(3)), "beyond the maximum");
    refused(ep.add_nodes(&AddNodes::new(1).host("mars")), "unknown host");
    refused(ep.remove_hosts(&["local"]), "own host");
    refused(ep.remove_hosts(&["netns:nowhere"]), "absent host");
    refused(
        ep.add_nodes(&AddNodes::new(1).program("/nonexistent/node")),
        "missing program",
    );
    assert_eq!(
        ep.notify(Notify::HostDelete(7), 1).unwrap_err(),
        NotifyError::NoSuchHost(7)
    );
    let added = ep
        .add_nodes(&AddNodes::new(1).args(["idle"]))
        .expect("a good request after the bad ones");
    println!("n0: added {added:?}");
    ep.send(Address::new(added[0], 0), DONE, b"bye".to_vec())
        .expect("done");
}

fn console(ep: &Endpoint) {
    let id = ep.node().id();
    let role: String = common::arg(2, String::new());
    match (id, role.as_str()) {
        (0, _) => console_n0(ep),
        (1, _) => console_n1(ep),
        (_, "") => {
            ep.recv(Address::new(0, 0), DONE).expect("done from n0");
            println!("n{id}: told done");
        }
        (_, role) => {
            // The launcher counts a node in once it has said its channels,
            // which init did; its exit must come after.
            std::thread::sleep(Duration::from_millis(300));
            match role {
                "quit" => {
                    // Without finalize, which would wait for every peer's
                    // goodbye: the launcher sees it finish at once.
                    println!("n{id}: quits");
                    std::process::exit(0);
                }
                "fail" => {
                    println!("n{id}: fails");
                    std::process::exit(3);
                }
                "finish" => {
                    ep.send(Address::new(1, 0), DONE, Vec::new())
                        .expect("done to n1");
                    println!("n{id}: told n1 done");
                }
                other => panic!("unknown console role {other}"),
            }
        }
    }
}

/// Waits for `DONE` from any node, through the losses of others.
fn console_n1(ep: &Endpoint) {
    // A receive from anyone fails when a node fails meanwhile: again.
    let from = loop {
        match ep.recv(ANY_SOURCE, DONE) {
            Ok(m) => break m.source().node,
            Err(RecvError::PeerLost(lost)) => println!("n1: {lost}"),
            Err(e) => panic!("n1: waiting for done: {e}"),
        }
    };
    println!("n1: told done by n{from}");
    ep.send(Address::new(0, 0), DONE, Vec::new())
        .expect("done to n0");
}

fn console_n0(ep: &Endpoint) {
    let fibers: Vec<_> = (0..3)
        .map(|_| {
            ep.node().spawn(|ep| {
                ep.recv(Address::new(0, 0), DONE)
                    .expect("done from n0's main");
            })
        })
        .collect();
    println!(
        "n0: job {:016x}, {} threads",
        ep.node().job_id(),
        ep.node().threads_started()
    );
    ep.recv(Address::new(1, 0), DONE).expect("done from n1");
    println!("n0: told done");
    for t in 1..=3 {
        ep.send(Address::new(0, t), DONE, Vec::new())
            .expect("done to a fiber");
    }
    for f in fibers {
        f.join().expect("a fiber panicked");
    }
    // The nodes added without a role wait for this; one may have gone
    // meanwhile.
    for n in ep.machine() {
        if n.node > 1 && n.state == threadwire::NodeState::Alive {
            let _ = ep.send(Address::new(n.node, 0), DONE, Vec::new());
        }
    }
}

/// `relost`: a node added after another added one was lost still reaches
/// every node (the gone one is recorded lost while joining, and nothing
/// else with it).
fn relost_n0(ep: &Endpoint) {
    let q = ep
        .add_nodes(&AddNodes::new(1).args(["relost-quitter"]))
        .expect("add quitter");
    println!("n0: added {q:?}");
    match ep.recv(Address::new(q[0], 0), NEVER) {
        Err(RecvError::PeerLost(l)) => println!("n0: quitter lost: {l}"),
        other => panic!("{other:?}"),
    }
    let e = ep
        .add_nodes(&AddNodes::new(1).args(["relost-echo"]))
        .expect("add echo");
    println!("n0: added {e:?}");
    ep.send(Address::new(e[0], 0), PING, Vec::new())
        .expect("ping to the new node");
    ep.recv(Address::new(e[0], 0), PONG)
        .expect("pong from the new node");
    println!("n0: the node added after a loss answered");
    ep.send(Address::new(1, 0), DONE, Vec::new()).expect("done");
}
