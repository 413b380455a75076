//! `threadwire bench flood`: every path and both receives deliver every
//! message and report both ends' memory; `--peers` adds Open MPI's rows or
//! says why it could not run. Figures are checked for sense, not size:
//! the sender's peak is what the runtime makes it.

mod support;
use serde_json::Value;
use std::process::Command;
use support::command::*;
use support::report::*;

/// `bench flood --json` with `args`, by default a flood small enough for a
/// test: 50 messages of 64 KiB, 0.2 s late.
fn bench_flood(args: &[&str]) -> Command {
    let mut cmd = threadwire();
    cmd.args(["bench", "flood", "--delay", "0.2", "--json"]);
    if !args.contains(&"--count") {
        cmd.args(["--count", "50", "--size", "65536"]);
    }
    cmd.args(args);
    cmd
}

fn number(value: &Value, path: &[&str]) -> Option<f64> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_f64)
}

/// Both ends of `row` got every message, had a resident set, and the peak
/// is not below the start; the flood took time.
fn assert_row(row: &Value, ran: &Ran) {
    for side in ["sender", "receiver"] {
        assert_eq!(
            number(row, &[side, "messages"]),
            Some(50.0),
            "{side}\n{}",
            ran.show()
        );
        let start = number(row, &[side, "start_bytes"]);
        let peak = number(row, &[side, "peak_bytes"]);
        assert_positive(start, "start_bytes", ran);
        assert!(
            peak >= start,
            "{side}: peak {peak:?} < start {start:?}\n{}",
            ran.show()
        );
    }
    assert_positive(number(row, &["flood_seconds"]), "flood_seconds", ran);
}

#[test]
fn every_path_and_receive_delivers_every_message() {
    for receive in ["owned", "into"] {
        let into: &[&str] = if receive == "into" { &["--into"] } else { &[] };
        let ran = run_bench_ok(&mut bench_flood(into));
        let doc = json_doc(&ran);
        assert_eq!(doc.get("receive").and_then(Value::as_str), Some(receive));
        assert_eq!(number(&doc, &["count"]), Some(50.0));
        let paths: Vec<(&str, &str)> = rows(&doc)
            .iter()
            .map(|r| {
                assert_row(r, &ran);
                (
                    r.get("source").and_then(Value::as_str).unwrap_or_default(),
                    r.get("path").and_then(Value::as_str).unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            paths,
            [("threadwire", "shm"), ("threadwire", "tcp")],
            "{}",
            ran.show()
        );
    }
}

/// The sender's peak holds at least the buffer it sends from: a check
/// that the figure is the sender's own, read at the end.
#[test]
fn the_sender_peak_is_read_by_the_sender() {
    let ran = run_bench_ok(&mut bench_flood(&[
        "--paths", "shm", "--size", "8388608", "--count", "4",
    ]));
    let doc = json_doc(&ran);
    let row = &rows(&doc)[0];
    let peak = number(row, &["sender", "peak_bytes"]).unwrap_or_default();
    assert!(peak >= 8.0 * 1024.0 * 1024.0, "{peak}\n{}", ran.show());
}

/// `--peers`: Open MPI has a row per path with both ranks' figures, or
/// one error per path naming what is missing.
#[test]
fn open_mpi_has_rows_or_says_why() {
    let ran = run_bench_ok(&mut bench_flood(&["--peers"]));
    let doc = json_doc(&ran);
    let peer_rows: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r.get("source").and_then(Value::as_str) == Some("Open MPI"))
        .collect();
    let errors = array(&doc, "peers");
    if !errors.is_empty() {
        let text = errors[0]
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(text.contains("openmpi"), "{text}\n{}", ran.show());
        eprintln!("SKIPPED: Open MPI could not run: {text}");
        return;
    }
    assert_eq!(peer_rows.len(), 2, "{}", ran.show());
    for row in peer_rows {
        assert_row(row, &ran);
    }
}
