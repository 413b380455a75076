//! Nodes that end badly, for the launcher's and the command's tests.
//!
//! - `node-misbehave exit-on NODE CODE`: node NODE exits with status CODE
//!   as soon as every node has joined; the others wait on it, print the
//!   `PeerLost` they get and exit 0.
//! - `node-misbehave sleep`: every node sleeps forever after joining.

mod common;

use std::time::Duration;
use threadwire::{Address, RecvError, Source, ANY_SOURCE, ANY_TAG};

const JOINED: u32 = 1;

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, String::new());
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let id = ep.node().id();
    match mode.as_str() {
        "exit-on" => {
            let failing: u32 = common::arg(2, 1);
            let code: i32 = common::arg(3, 3);
            let nodes = ep.node().nodes();
            if id == failing {
                // Once every node has joined: a node lost while the others
                // still join fails their init instead.
                for _ in 1..nodes {
                    ep.recv(ANY_SOURCE, JOINED).expect("joined");
                }
                println!("n{id}: exiting with status {code}");
                std::process::exit(code);
            }
            ep.send(Address::new(failing, 0), JOINED, Vec::new())
                .expect("send joined");
            match ep.recv(Source::Node(failing), ANY_TAG) {
                Err(e @ RecvError::PeerLost(_)) => println!("n{id}: {e}"),
                other => panic!("n{id}: expected the loss of n{failing}, got {other:?}"),
            }
        }
        "sleep" => {
            println!("n{id}: sleeping");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        other => panic!("unknown mode {other:?}; see the module docs"),
    }
}
