//! The distributed matrix multiply, SUMMA on the squarest mesh of the
//! job's nodes with the blas kernel:
//! `threadwire run -n 4 -- target/release/examples/matmul [SIZE [THREADS]]`.
use threadwire_apps::matmul::{self, Config};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut cfg = Config::default();
    if let Some(s) = args.next() {
        cfg.size = s.parse()?;
    }
    if let Some(t) = args.next() {
        cfg.threads = t.parse()?;
    }
    let ep = threadwire::init()?;
    if let Some(report) = matmul::run(&ep, cfg)? {
        println!("{report}");
    }
    let s = ep.node().stats();
    println!(
        "messages sent {} ({} bytes), received {}",
        s.messages_sent, s.bytes_sent, s.messages_received
    );
    Ok(())
}
