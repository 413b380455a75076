//! Node program of `launch_report.rs`: every node reports 100 results to
//! the launcher (node and index in each), one of them from a spawned
//! fiber, then a report too large to send, and exits; a node told to
//! (`early`) reports before its peers have finished joining anything.

use threadwire::ReportError;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ep = threadwire::init()?;
    let node = ep.node().clone();
    let me = node.id();
    for i in 0..99 {
        node.report(format!("n{me} report {i}").as_bytes())?;
    }
    let from_fiber = node.spawn(move |ep| ep.node().report(format!("n{me} report 99").as_bytes()));
    from_fiber.join().expect("the reporting fiber")?;
    let huge = vec![0u8; 2 << 20];
    match node.report(&huge) {
        Err(ReportError::TooLarge { len, .. }) if len == huge.len() => {
            println!("too large refused")
        }
        other => println!("too large: unexpected {other:?}"),
    }
    Ok(())
}
