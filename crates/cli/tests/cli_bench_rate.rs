//! `threadwire bench rate`: the table and `--json`; `--peers` adds Open
//! MPI's msgrate at each thread count or says why it could not run.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use serde_json::Value;
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
    // Rows: source, kind, threads, send median, (min–max), end-to-end
    // median, (min–max).
    let rows: Vec<Vec<&str>> = ran
        .rows()
        .into_iter()
        .filter(|w| w.first() == Some(&"threadwire"))
        .collect();
    let kinds: Vec<(&str, &str)> = rows.iter().map(|w| (w[1], w[2])).collect();
    assert_eq!(
        kinds,
        [("os", "1"), ("os", "3"), ("fibers", "1"), ("fibers", "3")],
        "{}",
        ran.show()
    );
    for row in &rows {
        assert_eq!(row.len(), 7, "{row:?}\n{}", ran.show());
        assert_spread(&ran, row[3], row[4]);
        assert_spread(&ran, row[5], row[6]);
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

fn source(row: &Value) -> Option<&str> {
    row.get("source").and_then(Value::as_str)
}

/// `--peers`: Open MPI has a row per thread count with its rates and the
/// thread level it was given, and ours the ratio to it; or one error per
/// thread count naming what is missing.
#[test]
fn open_mpi_has_rows_or_says_why() {
    let mut cmd = threadwire();
    cmd.args([
        "bench",
        "rate",
        "--peers",
        "--threads",
        "1,2",
        "--messages",
        "2000",
    ])
    .args(["--repetitions", "1", "--json"]);
    let ran = run_bench_ok(&mut cmd);
    let doc = json_doc(&ran);
    let errors = array(&doc, "peers");
    if !errors.is_empty() {
        let text = errors[0]
            .get("error")
            .and_then(|e| e.as_str())
            .unwrap_or_default();
        assert!(text.contains("openmpi"), "{text}\n{}", ran.show());
        eprintln!("SKIPPED: Open MPI could not run: {text}");
        return;
    }
    let threads = |r: &Value| r.get("threads").and_then(|t| t.as_f64());
    let peer: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| source(r) == Some("Open MPI"))
        .collect();
    assert_eq!(
        peer.iter().map(|r| threads(r)).collect::<Vec<_>>(),
        [Some(1.0), Some(2.0)],
        "{}",
        ran.show()
    );
    for row in peer {
        assert_eq!(row.get("repetitions").and_then(|r| r.as_f64()), Some(1.0));
        assert!(row.get("provided").and_then(|p| p.as_str()).is_some());
        for rate in ["send", "end_to_end"] {
            let value = row.get(rate).and_then(|r| r.get("median")?.as_f64());
            assert_positive(value, rate, &ran);
        }
    }
    for row in rows(&doc)
        .iter()
        .filter(|r| source(r) == Some("threadwire"))
    {
        let ratio = row.get("end_to_end_ratio").and_then(|r| r.as_f64());
        assert_positive(ratio, "end_to_end_ratio", &ran);
    }
}

/// The peer runs over shared memory only: `--peers` with `--link` is
/// refused before anything starts.
#[test]
fn peers_are_refused_between_emulated_hosts() {
    let ran = run(threadwire().args(["bench", "rate", "--peers", "--link", "none"]));
    assert_eq!(ran.code(), Some(2), "{}", ran.show());
    assert!(ran.stderr.contains("--link"), "{}", ran.show());
}
