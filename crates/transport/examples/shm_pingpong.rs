//! The shared-memory channel alone: ping-pong (8 B, or the size given) between two threads of
//! one process through a real region (the setup steps in-process), both
//! spinning on `receive`. The floor under the runtime's node-to-node
//! latency: `cargo run --release -p threadwire-transport --example shm_pingpong`.
use std::time::Instant;
use threadwire_transport::shm::setup::{self, Pair, Setup};
use threadwire_transport::shm::{Doorbell, ShmChannel, ShmConfig};
use threadwire_wire::{Format, FrameBytes, FrameHeader, Payload};

fn pair() -> (ShmChannel, ShmChannel) {
    let mut config = ShmConfig::new(1 << 30);
    // The knobs the runtime reads from THREADWIRE_SHM_CMA(_MIN).
    if let Ok(v) = std::env::var("CMA") {
        config.cma = v != "0";
    }
    if let Some(v) = std::env::var("CMA_MIN").ok().and_then(|v| v.parse().ok()) {
        config.cma_min = v;
    }
    if let Some(v) = std::env::var("CHUNK").ok().and_then(|v| v.parse().ok()) {
        config.chunk = v;
    }
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
    // Both sides spin on `receive`: nobody sleeps, so nobody needs waking.
    let (one, ready) = offering
        .complete(&accept, Doorbell::new(|| {}))
        .expect("complete");
    let Setup::Ready { can_read } = ready else {
        unreachable!()
    };
    (
        one,
        attached
            .complete(can_read, Doorbell::new(|| {}))
            .expect("complete"),
    )
}

fn bounce(ch: &ShmChannel, rounds: u32, first: bool, size: usize) {
    let header = FrameHeader::data(0, 0, 1, Format::OPAQUE, size as u64);
    let mut buf = first.then(|| FrameBytes::from(vec![1u8; size]));
    for i in 0..rounds {
        if first || i > 0 {
            let _ = ch.send(
                &header,
                Payload::from_wire(Format::OPAQUE, buf.take().expect("a buffer")),
            );
        }
        while buf.is_none() {
            let _ = ch.receive(|f| buf = Some(f.payload)).expect("receive");
            let _ = ch.flush();
        }
    }
    if !first {
        let _ = ch.send(
            &header,
            Payload::from_wire(Format::OPAQUE, buf.take().expect("a buffer")),
        );
    }
    // The last answers to this side's rendezvous frames.
    while ch.queued_bytes() > 0 {
        let _ = ch.receive(|_| {}).expect("receive");
        let _ = ch.flush();
    }
}

fn main() {
    let size: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let (a, b) = pair();
    if std::env::var("FORK").is_ok() {
        // Two processes, as two nodes are (small sizes only: the
        // rendezvous pid is the parent's on both sides).
        let rounds = 200_000;
        // SAFETY: no other thread runs yet; the child only uses its copy
        // of the channel (the rings are MAP_SHARED) and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            for _ in 0..5 {
                bounce(&b, rounds, false, size);
            }
            std::process::exit(0);
        }
        for _ in 0..5 {
            let t = Instant::now();
            bounce(&a, rounds, true, size);
            let one_way = t.elapsed().as_secs_f64() / (2.0 * rounds as f64);
            println!("two processes: {size} B one-way {:.3} us", one_way * 1e6);
        }
        return;
    }
    for _ in 0..5 {
        let rounds = (200_000_000 / (size + 1000)).clamp(20, 200_000) as u32;
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| bounce(&b, rounds, false, size));
            bounce(&a, rounds, true, size);
        });
        let one_way = t.elapsed().as_secs_f64() / (2.0 * rounds as f64);
        println!(
            "{size} B one-way {:.3} us, {:.0} MB/s",
            one_way * 1e6,
            size as f64 / one_way / 1e6
        );
    }
}
