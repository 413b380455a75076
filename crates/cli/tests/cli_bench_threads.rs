//! `threadwire bench threads`: the table, `--json` and `--csv`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use support::command::*;
use support::report::*;

/// The rows of `bench threads`, in order.
const THREADS_ROWS: [&str; 7] = [
    "mutex",
    "semaphore",
    "context switch",
    "thread switch",
    "thread synchronization",
    "create + join",
    "message round trip",
];

/// `bench threads` with the smallest budget, printed as `format` (the
/// table if none).
fn bench_threads_tiny(format: Option<&str>) -> Ran {
    run_bench_ok(
        threadwire()
            .args([
                "bench",
                "threads",
                "--iterations",
                "1000",
                "--repetitions",
                "1",
            ])
            .args(format),
    )
}

#[test]
fn bench_threads_prints_every_row() {
    let ran = bench_threads_tiny(None);
    for row in THREADS_ROWS {
        assert!(
            ran.stdout.lines().any(|l| l.starts_with(row)),
            "no {row:?} row:\n{}",
            ran.show()
        );
    }
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.starts_with("idle: 10000 parked fibers") && l.contains("% of a core")),
        "no idle line:\n{}",
        ran.show()
    );
}

#[test]
fn bench_threads_json_has_every_row_and_the_idle_cost() {
    let ran = bench_threads_tiny(Some("--json"));
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    let names: Vec<Option<&str>> = rows
        .iter()
        .map(|r| r.get("measurement")?.as_str())
        .collect();
    assert_eq!(names, THREADS_ROWS.map(Some), "{}", ran.show());
    for row in rows {
        for column in ["fibers", "os"] {
            for key in ["ops", "median_ns", "min_ns", "max_ns"] {
                let value = row.get(column).and_then(|c| c.get(key)?.as_f64());
                assert_positive(value, &format!("{column}.{key}"), &ran);
            }
        }
        let ratio = row.get("os_over_fibers").and_then(|x| x.as_f64());
        assert_positive(ratio, "os_over_fibers", &ran);
    }
    let idle = doc.get("idle");
    let figure = |key: &str| idle.and_then(|i| i.get(key)?.as_f64());
    assert_eq!(figure("fibers"), Some(10000.0), "{}", ran.show());
    assert_positive(figure("window_ns"), "idle.window_ns", &ran);
    assert!(
        figure("percent_of_core").is_some_and(|p| p >= 0.0),
        "{}",
        ran.show()
    );
}

#[test]
fn bench_threads_csv_has_a_header_and_every_row() {
    let ran = bench_threads_tiny(Some("--csv"));
    let rows = csv_rows(
        &ran,
        "measurement,fibers_ops,fibers_median_ns,fibers_min_ns,fibers_max_ns,\
         os_ops,os_median_ns,os_min_ns,os_max_ns,os_over_fibers,reference_1998_ns,note",
    );
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, THREADS_ROWS, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 12, "{row:?}\n{}", ran.show());
        for figure in &row[1..10] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}
