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

/// SCALE's Table 1 beside the rows named after it: SCALE threads after
/// the fibers, Solaris threads after the OS threads, as printed, and our
/// figures real numbers.
#[test]
fn bench_threads_prints_scale_table_1_beside_ours() {
    let ran = bench_threads_tiny(None);
    let seeds = [
        ("mutex", "0.126", "0.706"),
        ("semaphore", "0.354", "5.82"),
        ("context switch", "0.81", "21.7"),
        ("thread switch", "2.33", "≈22"),
        ("thread synchronization", "2.54", "44.79"),
    ];
    for (name, scale, solaris) in seeds {
        // fibers (min–max) SCALE OS (min–max) Solaris OS/fiber [note]
        let cells: Vec<&str> = ran
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(name).filter(|r| r.starts_with("  ")))
            .unwrap_or_else(|| panic!("no {name} row\n{}", ran.show()))
            .split_whitespace()
            .collect();
        assert_spread(&ran, cells[0], cells[1]);
        assert_eq!(
            (cells[2], cells[5]),
            (scale, solaris),
            "{name}\n{}",
            ran.show()
        );
        assert_spread(&ran, cells[3], cells[4]);
    }
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.starts_with("SCALE threads, Solaris threads: SCALE Suite's Table 1 (1998")),
        "no line naming the seed\n{}",
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
         os_ops,os_median_ns,os_min_ns,os_max_ns,os_over_fibers,reference_1998_ns,\
         solaris_1998_ns,solaris_1998_approximate,note",
    );
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, THREADS_ROWS, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 14, "{row:?}\n{}", ran.show());
        for figure in &row[1..10] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}
