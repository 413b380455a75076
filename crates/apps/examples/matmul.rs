//! The host–node matrix multiply: `threadwire run -n 4 -- target/release/examples/matmul [SIZE [THREADS]]`.
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
    if let Some(r) = matmul::run(&ep, cfg)? {
        println!(
            "matmul {}x{} on {} worker threads: verified (A x I = A; max error {:.1e}), {:.1} ms, {:.2} GFLOP/s",
            r.size, r.size, r.workers, r.max_error, r.elapsed.as_secs_f64() * 1e3, r.gflops()
        );
    }
    let s = ep.node().stats();
    println!(
        "messages sent {} ({} bytes), received {}",
        s.messages_sent, s.bytes_sent, s.messages_received
    );
    Ok(())
}
