//! The CPU cost of one send and one receive with no other core involved:
//! a thread sends 8 bytes to itself and receives them, 2,000,000 times,
//! first with the message waiting before the receive (unexpected), then
//! with the receive posted first; three rounds, nanoseconds per pair.
//! `threadwire run -n 1 -- target/release/examples/selfloop`. Used by
//! `docs/PERFORMANCE-STUDIES.md`, "The small-message receive path".
use std::time::Instant;

const PAIRS: u32 = 2_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ep = threadwire::init()?;
    let me = ep.address();
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..PAIRS {
            ep.send(me, 1, vec![0u8; 8])?;
            std::hint::black_box(ep.recv(me, 1)?.into_vec());
        }
        let unexpected = t.elapsed().as_nanos() as f64 / f64::from(PAIRS);
        let t = Instant::now();
        for _ in 0..PAIRS {
            let r = ep.irecv(me, 2);
            ep.send(me, 2, vec![0u8; 8])?;
            std::hint::black_box(r.wait()?.into_vec());
        }
        let posted = t.elapsed().as_nanos() as f64 / f64::from(PAIRS);
        println!("send + recv: unexpected {unexpected:.1} ns, posted {posted:.1} ns");
    }
    Ok(())
}
