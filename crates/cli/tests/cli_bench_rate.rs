//! `threadwire bench rate`: the table and `--json`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use std::process::Command;
use support::command::*;
use support::report::*;

/// `bench rate` of OS threads and fibers at each of `threads`, with 300
/// messages: in windows of 64 they end on a partial window.
fn bench_rate(threads: &str) -> Command {
    let mut cmd = threadwire();
    cmd.args(["bench", "rate", "--threads", threads, "--messages", "300"])
        .args(["--repetitions", "2", "--kinds", "os,fibers"]);
    cmd
}

#[test]
fn bench_rate_reports_every_kind_and_thread_count() {
    let ran = run_bench_ok(&mut bench_rate("1,3"));
    // Rows: kind, threads, send median, (min–max), end-to-end median, (min–max).
    let rows: Vec<Vec<&str>> = ran
        .rows()
        .into_iter()
        .filter(|w| matches!(w.first(), Some(&("os" | "fibers"))))
        .collect();
    let kinds: Vec<(&str, &str)> = rows.iter().map(|w| (w[0], w[1])).collect();
    assert_eq!(
        kinds,
        [("os", "1"), ("os", "3"), ("fibers", "1"), ("fibers", "3")],
        "{}",
        ran.show()
    );
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}\n{}", ran.show());
        assert_spread(&ran, row[2], row[3]);
        assert_spread(&ran, row[4], row[5]);
    }
}

#[test]
fn bench_rate_json_has_every_kind_and_thread_count() {
    let ran = run_ok(bench_rate("1,2").arg("--json"));
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    let kinds: Vec<(Option<&str>, Option<f64>)> = rows
        .iter()
        .map(|r| {
            let kind = r.get("kind").and_then(|k| k.as_str());
            (kind, r.get("threads").and_then(|t| t.as_f64()))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (Some("os"), Some(1.0)),
            (Some("os"), Some(2.0)),
            (Some("fibers"), Some(1.0)),
            (Some("fibers"), Some(2.0))
        ],
        "{}",
        ran.show()
    );
    for row in rows {
        for rate in ["send", "end_to_end"] {
            for figure in ["median", "min", "max"] {
                let value = row.get(rate).and_then(|r| r.get(figure)?.as_f64());
                assert_positive(value, &format!("{rate}.{figure}"), &ran);
            }
        }
    }
}
