//! Every thread of every node greets n0.t0:
//! `threadwire run -n 3 -- target/release/examples/hello [THREADS]`.
use threadwire::{Address, ANY_SOURCE, ANY_TAG};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3);
    let ep = threadwire::init()?;
    let node = ep.node().clone();
    let root = Address::new(0, 0);
    let greeters: Vec<_> = (0..threads)
        .map(|_| node.spawn(move |ep| ep.send(root, 0, format!("hello from {}", ep.address()))))
        .collect();
    if node.id() == 0 {
        // Every thread but n0.t0 itself greets it.
        for _ in 0..node.nodes() * (threads + 1) - 1 {
            let m = ep.recv(ANY_SOURCE, ANY_TAG)?;
            println!(
                "{} got: {}",
                ep.address(),
                String::from_utf8_lossy(&m.into_vec())
            );
        }
    } else {
        ep.send(root, 0, format!("hello from {}", ep.address()))?;
    }
    for g in greeters {
        g.join().expect("greeter panicked")?;
    }
    Ok(())
}
