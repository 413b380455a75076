//! The shared-memory channel alone: 8-byte ping-pong between two threads of
//! one process through a real region (the setup steps in-process), both
//! spinning on `receive`. The floor under the runtime's node-to-node
//! latency: `cargo run --release -p threadwire-transport --example shm_pingpong`.
use std::time::Instant;
use threadwire_transport::shm::setup::{self, Pair, Setup};
use threadwire_transport::shm::{ShmChannel, ShmConfig};
use threadwire_wire::{Format, FrameHeader, Payload};

fn pair() -> (ShmChannel, ShmChannel) {
    let config = ShmConfig::new(1 << 30);
    let pair = |me, peer| Pair {
        job_id: 1,
        me,
        peer,
    };
    let (offering, offer) = setup::offer(pair(1, 0), &config).expect("offer");
    let Setup::Offer(offer) = offer else {
        unreachable!()
    };
    let (attached, accept) = setup::attach(pair(0, 1), &offer, &config).expect("attach");
    let Setup::Accept(accept) = accept else {
        unreachable!()
    };
    let (one, ready) = offering.complete(&accept).expect("complete");
    let Setup::Ready { can_read } = ready else {
        unreachable!()
    };
    (one, attached.complete(can_read).expect("complete"))
}

fn bounce(ch: &ShmChannel, rounds: u32, first: bool) {
    let header = FrameHeader::data(0, 0, 1, Format::OPAQUE, 8);
    for i in 0..rounds {
        if first || i > 0 {
            let _ = ch.send(&header, Payload::from_vec(vec![0; 8]));
        }
        let mut got = false;
        while !got {
            let _ = ch.receive(|_| got = true).expect("receive");
        }
    }
    if !first {
        let _ = ch.send(&header, Payload::from_vec(vec![0; 8]));
    }
}

fn main() {
    let (a, b) = pair();
    for _ in 0..5 {
        let rounds = 200_000;
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| bounce(&b, rounds, false));
            bounce(&a, rounds, true);
        });
        let one_way = t.elapsed().as_secs_f64() / (2.0 * rounds as f64);
        println!("8 B one-way {:.3} us", one_way * 1e6);
    }
}
