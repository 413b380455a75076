//! Results reported by nodes reach the launcher as `Event::Report`, each
//! with its node, every one of them, in the order each node made them, and
//! before `run` returns; an oversized report is refused with a typed error
//! and nothing else is lost (see `nodes/report.rs`).

mod support;

use threadwire_launch::Event;

#[test]
fn every_report_arrives_in_order() {
    let out = support::run(support::job(3, "node-report"));
    out.assert_success();
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); 3];
    for ev in &out.events {
        if let Event::Report { node, data } = ev {
            seen[*node as usize].push(String::from_utf8(data.clone()).expect("utf-8 report"));
        }
    }
    for (node, reports) in seen.iter().enumerate() {
        let expected: Vec<String> = (0..100).map(|i| format!("n{node} report {i}")).collect();
        assert_eq!(reports, &expected, "n{node}:\n{}", out.transcript());
        assert_eq!(out.line(node as u32, "too large"), "too large refused");
    }
}
