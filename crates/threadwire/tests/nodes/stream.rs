//! A stream of small messages between two nodes over TCP, which corks the
//! connection (`threadwire_transport`'s `cork` module), ended two ways.
//!
//! `node-stream N`: n0 sends n1.t0 `N` messages of 1 to 300 bytes, then
//! - computes for a second without calling the runtime: n1 must have had
//!   every message meanwhile — the tail Nagle's algorithm held is sent by
//!   the timer thread's uncork — and its answer is there when n0 looks
//!   (`stream n0: answered while computing`);
//! - sends `N` more and waits for the answer at once (uncorked by the
//!   wait).
//!
//! n1 checks every message's tag, length and bytes. Each node prints
//! `stream nK: ok`.

mod common;

use threadwire::{Address, Endpoint};

const DATA: u32 = 1;
const ANSWER: u32 = 2;

fn message(i: u32) -> Vec<u8> {
    let len = 1 + (i as usize * 37) % 300;
    (0..len).map(|j| (i as usize * 7 + j) as u8).collect()
}

fn send_stream(ep: &Endpoint, to: Address, n: u32, from: u32) {
    for i in from..from + n {
        ep.send(to, DATA, message(i)).expect("send to n1");
    }
}

fn receive_stream(ep: &Endpoint, from: Address, n: u32, first: u32) {
    for i in first..first + n {
        let m = ep.recv(from, DATA).expect("receive from n0");
        assert_eq!(m.into_vec(), message(i), "message {i}");
    }
}

fn main() {
    common::exit_on_panic();
    let n: u32 = common::arg(1, 2000);
    let ep = threadwire::Config::new().log(true).init().expect("init");
    let me = ep.address().node;
    let (n0, n1) = (Address::new(0, 0), Address::new(1, 0));
    match me {
        0 => {
            send_stream(&ep, n1, n, 0);
            // Computing: no call into the runtime for a second.
            std::thread::sleep(std::time::Duration::from_secs(1));
            let mut answered = false;
            for _ in 0..1000 {
                if ep.iprobe(n1, ANSWER).expect("iprobe").is_some() {
                    answered = true;
                    break;
                }
            }
            println!("stream n0: answered while computing={answered}");
            ep.recv(n1, ANSWER).expect("first answer");
            send_stream(&ep, n1, n, n);
            ep.recv(n1, ANSWER).expect("second answer");
        }
        1 => {
            receive_stream(&ep, n0, n, 0);
            ep.send(n0, ANSWER, Vec::new()).expect("answer");
            receive_stream(&ep, n0, n, n);
            ep.send(n0, ANSWER, Vec::new()).expect("answer");
        }
        _ => {}
    }
    println!("stream n{me}: ok");
}
