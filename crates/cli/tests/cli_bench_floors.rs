//! `threadwire bench floors`: the table, `--json` and `--csv`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use serde_json::Value;
use support::command::*;
use support::report::*;

/// The rows of `bench floors`, in order, with its default memcpy sizes.
const FLOORS_ROWS: [&str; 8] = [
    "cache line, 2 cores",
    "cache line, 1 core",
    "wake-up, 2 cores",
    "memcpy 64 KiB",
    "memcpy 1 MiB",
    "memcpy 16 MiB",
    "tcp loopback 1 B",
    "tcp loopback stream",
];

/// Whether `row` of `bench floors` may be missing here: the cache line
/// between two cores is, by design, where the process may use one CPU.
fn floors_row_may_be_missing(row: &str) -> bool {
    row == "cache line, 2 cores"
        && std::thread::available_parallelism().map_or(true, |n| n.get() < 2)
}

/// `bench floors` with the smallest budget, with the extra `args`.
fn bench_floors_tiny(args: &[&str]) -> Ran {
    run_bench_ok(
        threadwire()
            .args(["bench", "floors", "--repetitions", "1", "--ms", "5"])
            .args(args),
    )
}

#[test]
fn bench_floors_prints_every_row_with_positive_figures() {
    let ran = bench_floors_tiny(&[]);
    for name in FLOORS_ROWS {
        let line = ran
            .stdout
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {name:?} row\n{}", ran.show()));
        // After the name: median, min–max, unit, note.
        let words: Vec<&str> = line[name.len()..].split_whitespace().collect();
        if floors_row_may_be_missing(name) && line.contains("missing:") {
            continue;
        }
        assert!(words.len() >= 4, "{line:?}\n{}", ran.show());
        assert_spread(&ran, words[0], &format!("({})", words[1]));
        assert!(
            matches!(words[2], "ns" | "µs" | "MB/s"),
            "{line:?}\n{}",
            ran.show()
        );
    }
}

#[test]
fn bench_floors_json_and_csv_have_every_row() {
    let ran = bench_floors_tiny(&["--json"]);
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    let names: Vec<Option<&str>> = rows.iter().map(|r| r.get("floor")?.as_str()).collect();
    assert_eq!(names, FLOORS_ROWS.map(Some), "{}", ran.show());
    for (row, name) in rows.iter().zip(FLOORS_ROWS) {
        let unit = row.get("unit").and_then(|u| u.as_str());
        assert!(matches!(unit, Some("ns" | "MB/s")), "{}", ran.show());
        if floors_row_may_be_missing(name) && row.get("median") == Some(&Value::Null) {
            continue;
        }
        for key in ["median", "min", "max", "iterations"] {
            let value = row.get(key).and_then(|x| x.as_f64());
            assert_positive(value, &format!("{name}: {key}"), &ran);
        }
        assert_eq!(row.get("missing"), Some(&Value::Null), "{}", ran.show());
    }

    let ran = bench_floors_tiny(&["--csv"]);
    let rows = csv_rows(&ran, "floor,unit,median,min,max,iterations,missing,note");
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, FLOORS_ROWS, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 8, "{row:?}\n{}", ran.show());
        if floors_row_may_be_missing(&row[0]) && row[2].is_empty() {
            continue;
        }
        for figure in &row[2..6] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}
