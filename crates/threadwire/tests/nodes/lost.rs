//! One node dies while the others wait on it through every kind of
//! operation (`failure_every_operation.rs` runs it, 3 nodes).
//!
//! n0 starts one fiber per operation on n2 — a receive, a synchronous
//! send, a large synchronous send, a probe, an active-message request, a
//! join of a thread started on n2, a notification of n2's exit — each of
//! which posts its operation, tells n0's thread 0 it is waiting, and
//! waits. n1's thread 0 waits in a receive from anyone. Once every fiber
//! waits, n0 tells n2 to die and enters a barrier of the world group,
//! which n2 never enters. n2 kills itself with SIGKILL. Every survivor
//! prints `<operation>: <outcome>` once per operation and `lost: ok`.

mod common;

use threadwire::{
    ActiveMessage, Address, AmError, CollError, Endpoint, Group, Notification, Notify, RecvError,
    RemoteJoinError, SendError, ANY_SOURCE,
};

const READY: u32 = 1;
const DIE: u32 = 2;
const NEVER: u32 = 3;
const NOTIFIED: u32 = 4;

fn main() {
    common::exit_on_panic();
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let me = ep.address().node;
    node.export("block", |ep, _args| -> Vec<u8> {
        let never = ep.recv(Address::new(0, 0), NEVER);
        panic!("the blocked thread got {never:?}");
    })
    .expect("export");
    let hang = node
        .register_fiber("hang", |ep: &Endpoint, _am: &mut ActiveMessage<'_>| {
            let never = ep.recv(Address::new(0, 0), NEVER);
            panic!("the hanging handler got {never:?}");
        })
        .expect("register");
    let world = Group::world(&ep).expect("world");
    world.barrier().expect("all here");
    let n2 = Address::new(2, 0);
    match me {
        2 => {
            ep.recv(Address::new(0, 0), DIE).expect("told to die");
            // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            unreachable!("killed");
        }
        1 => {
            let r = ep.recv(ANY_SOURCE, NEVER);
            assert!(
                matches!(r, Err(RecvError::PeerLost(ref l)) if l.node == 2),
                "{r:?}"
            );
            println!("recv from anyone: PeerLost");
        }
        _ => {
            let main = ep.address();
            let ready = move |ep: &Endpoint| ep.send(main, READY, Vec::new()).expect("ready");
            let fibers = vec![
                node.spawn(move |ep| {
                    let r = ep.irecv(n2, NEVER);
                    ready(&ep);
                    match r.wait() {
                        Err(RecvError::PeerLost(_)) => "recv: PeerLost".to_string(),
                        other => format!("recv: {other:?}"),
                    }
                }),
                node.spawn(move |ep| {
                    let r = ep.issend(n2, NEVER, b"never received".to_vec());
                    ready(&ep);
                    match r.wait() {
                        Err(SendError::PeerLost { .. }) => "ssend: PeerLost".to_string(),
                        other => format!("ssend: {other:?}"),
                    }
                }),
                node.spawn(move |ep| {
                    let r = ep.issend(n2, NEVER, vec![7u8; 4 << 20]);
                    ready(&ep);
                    match r.wait() {
                        Err(SendError::PeerLost { .. }) => "large ssend: PeerLost".to_string(),
                        other => format!("large ssend: {other:?}"),
                    }
                }),
                node.spawn(move |ep| {
                    ready(&ep);
                    match ep.probe(n2, NEVER) {
                        Err(RecvError::PeerLost(_)) => "probe: PeerLost".to_string(),
                        other => format!("probe: {other:?}"),
                    }
                }),
                node.spawn(move |ep| {
                    let r = ep.am_request(2, &hang, Vec::new());
                    ready(&ep);
                    match r.wait() {
                        Err(AmError::PeerLost { .. }) => "am_request: PeerLost".to_string(),
                        other => format!("am_request: {other:?}"),
                    }
                }),
                node.spawn(move |ep| {
                    let h = ep.spawn_remote(2, "block", Vec::new()).expect("spawn");
                    ready(&ep);
                    match h.join(&ep) {
                        Err(RemoteJoinError::PeerLost(_)) => "join: PeerLost".to_string(),
                        other => format!("join: {other:?}"),
                    }
                }),
                node.spawn(move |ep| {
                    let watch = ep.notify(Notify::NodeExit(2), NOTIFIED).expect("notify");
                    ready(&ep);
                    let m = ep.recv(n2, NOTIFIED).expect("the notification");
                    let told = Notification::from_message(m).expect("a notification");
                    let again = ep.iprobe(ANY_SOURCE, NOTIFIED);
                    assert!(
                        matches!(again, Ok(None) | Err(_)),
                        "a second notice: {again:?}"
                    );
                    drop(watch);
                    format!("notify: {told:?}")
                }),
            ];
            for _ in 0..fibers.len() {
                ep.recv(ANY_SOURCE, READY).expect("ready");
            }
            ep.send(n2, DIE, Vec::new()).expect("die");
            match world.barrier() {
                Err(CollError::PeerLost(_)) => println!("barrier: PeerLost"),
                other => println!("barrier: {other:?}"),
            }
            for f in fibers {
                println!("{}", f.join().expect("fiber"));
            }
        }
    }
    println!("lost: ok");
}
