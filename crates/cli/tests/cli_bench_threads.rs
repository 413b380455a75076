//! `threadwire bench threads`: the table, `--json` and `--csv`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use support::command::*;
use support::json;

#[test]
fn bench_threads_prints_every_row() {
    let ran = run(threadwire().args([
        "bench",
        "threads",
        "--iterations",
        "1000",
        "--repetitions",
        "1",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    for row in [
        "mutex",
        "semaphore",
        "context switch",
        "thread switch",
        "thread synchronization",
        "create + join",
        "message round trip",
    ] {
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

/// `bench threads` with the smallest budget, printed as `format`.
fn bench_threads_tiny(format: &str) -> Ran {
    let ran = run(threadwire().args([
        "bench",
        "threads",
        "--iterations",
        "1000",
        "--repetitions",
        "1",
        format,
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    ran
}

#[test]
fn bench_threads_json_has_every_row_and_the_idle_cost() {
    let ran = bench_threads_tiny("--json");
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
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
    let ran = bench_threads_tiny("--csv");
    let mut lines = ran.stdout.lines();
    assert_eq!(
        lines.next(),
        Some(
            "measurement,fibers_ops,fibers_median_ns,fibers_min_ns,fibers_max_ns,\
             os_ops,os_median_ns,os_min_ns,os_max_ns,os_over_fibers,reference_1998_ns,note"
        ),
        "{}",
        ran.show()
    );
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, THREADS_ROWS, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 12, "{row:?}\n{}", ran.show());
        for figure in &row[1..10] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}
