//! Ping-pong between n0.t0 and its partner — n1.t0, or n0.t1 in a one-node
//! job — printing one-way latency and bandwidth per size:
//! `threadwire run -n 2 -- target/release/examples/pingpong`. With the
//! argument `fibers`, two fibers (n0.t1 and n1.t1) play instead of the main
//! threads.
use std::time::Instant;
use threadwire::{Address, Endpoint};

fn bounce(
    ep: &Endpoint,
    partner: Address,
    first: bool,
    sizes: &[usize],
    iters: u32,
) -> Result<(), threadwire::RecvError> {
    for &size in sizes {
        let mut data = vec![0u8; size];
        let start = Instant::now();
        for i in 0..iters {
            if first {
                ep.send(partner, i, data).expect("send");
                data = ep.recv(partner, i)?.into_vec();
            } else {
                data = ep.recv(partner, i)?.into_vec();
                ep.send(partner, i, data).expect("send");
                data = Vec::new();
            }
        }
        if first {
            let one_way = start.elapsed().as_secs_f64() / (2.0 * iters as f64);
            println!(
                "{size:>9} B  {:>10.2} us  {:>9.1} MB/s",
                one_way * 1e6,
                size as f64 / one_way / 1e6
            );
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = (0..=20).step_by(2).map(|p| 1usize << p).collect();
    let iters = 1000;
    let ep = threadwire::init()?;
    let node = ep.node().clone();
    if node.nodes() == 1 {
        let partner = node.spawn({
            let sizes = sizes.clone();
            move |ep| bounce(&ep, Address::new(0, 0), false, &sizes, iters)
        });
        bounce(&ep, Address::new(0, 1), true, &sizes, iters)?;
        partner.join().expect("partner panicked")?;
    } else if node.id() < 2 {
        let fibers = std::env::args().nth(1).as_deref() == Some("fibers");
        let (me, partner) = (node.id(), Address::new(1 - node.id(), u32::from(fibers)));
        if fibers {
            node.spawn(move |ep| bounce(&ep, partner, me == 0, &sizes, iters))
                .join()
                .expect("the fiber panicked")?;
        } else {
            bounce(&ep, partner, me == 0, &sizes, iters)?;
        }
    }
    Ok(())
}
