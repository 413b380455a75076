//! `threadwire bench comm` and `bench encodings`: the tables, `--json`
//! and `--csv`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use support::command::*;
use support::report::*;

/// `bench comm`: a row per path with a median (min–max) per size; the link
/// row, built for the run and removed after, may instead say why it is
/// missing (not root, no namespaces).
#[test]
fn bench_comm_reports_every_path_and_size() {
    let ran = bench_comm_tiny("gige", None);
    for path in ["thread", "shm", "tcp/gige"] {
        let row: Vec<&str> = ran
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(path).filter(|r| r.starts_with(' ')))
            .unwrap_or_else(|| panic!("no {path} row\n{}", ran.show()))
            .split_whitespace()
            .collect();
        if path == "tcp/gige" && row.first() == Some(&"missing:") {
            eprintln!("SKIPPED the link row: {}", row.join(" "));
            continue;
        }
        assert_eq!(row.len(), 8, "{path}: {row:?}\n{}", ran.show());
        for cell in row.chunks(2) {
            assert_spread(&ran, cell[0], cell[1]);
        }
    }
}

/// `bench encodings`: per size, a row for each encoding with a positive
/// median (min–max), MB/s and ratio to raw.
#[test]
fn bench_encodings_reports_every_encoding_and_size() {
    let ran = run_bench_ok(threadwire().args([
        "bench",
        "encodings",
        "--sizes",
        "8,1000",
        "--repetitions",
        "2",
        "--ms",
        "5",
    ]));
    // Rows: size, encoding, median, (min–max), MB/s, ÷ raw.
    let rows: Vec<Vec<&str>> = ran
        .rows()
        .into_iter()
        .filter(|w| w.first().is_some_and(|s| s.parse::<usize>().is_ok()))
        .collect();
    let cells: Vec<(&str, &str)> = rows.iter().map(|w| (w[0], w[1])).collect();
    let encodings = ["raw", "portable", "in-place", "receiver-makes-right"];
    let expected: Vec<(&str, &str)> = ["8", "1000"]
        .into_iter()
        .flat_map(|size| encodings.map(|e| (size, e)))
        .collect();
    assert_eq!(cells, expected, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}\n{}", ran.show());
        assert_spread(&ran, row[2], row[3]);
        assert_positive(row[4].parse().ok(), row[4], &ran);
        assert_positive(row[5].parse().ok(), row[5], &ran);
    }
}

/// `bench comm` runs name their emulated hosts `twc<pid>`, and each test
/// checks that none is left: one such test at a time, so that none sees
/// another's hosts while they run.
static COMM_NETS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `bench comm` with the smallest budget over `link`, printed as `format`
/// (the table if none); it leaves no hosts behind.
fn bench_comm_tiny(link: &str, format: Option<&str>) -> Ran {
    let _one_at_a_time = COMM_NETS.lock().unwrap_or_else(|e| e.into_inner());
    let ran = run_bench_ok(
        threadwire()
            .args(["bench", "comm", "--links", link, "--repetitions", "2"])
            .args(["--ms", "5", "--seconds", "1"])
            .args(format),
    );
    assert_no_namespaces_left("twc");
    ran
}

/// The sizes of `bench comm`'s columns.
const COMM_SIZES: [usize; 4] = [1, 1000, 32_000, 1_000_000];

/// `bench comm --json`: every path with a cell per size; the link's path,
/// built for the run, may instead say why it is missing (not root, no
/// namespaces).
#[test]
fn bench_comm_json_has_every_path_and_size() {
    let ran = bench_comm_tiny("none", Some("--json"));
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    let paths: Vec<Option<&str>> = rows.iter().map(|r| r.get("path")?.as_str()).collect();
    assert_eq!(
        paths,
        [Some("thread"), Some("shm"), Some("tcp/none")],
        "{}",
        ran.show()
    );
    for (row, path) in rows.iter().zip(["thread", "shm", "tcp/none"]) {
        if let Some(why) = row.get("missing").and_then(|m| m.as_str()) {
            assert_eq!(path, "tcp/none", "{path} is missing: {why}\n{}", ran.show());
            eprintln!("SKIPPED the link row: {why}");
            continue;
        }
        let cells = array(row, "cells");
        let sizes: Vec<Option<f64>> = cells.iter().map(|c| c.get("size")?.as_f64()).collect();
        let expected = COMM_SIZES.map(|s| Some(s as f64));
        assert_eq!(sizes, expected, "{path}\n{}", ran.show());
        for cell in cells {
            for key in ["median_ns", "min_ns", "max_ns", "repetitions"] {
                let value = cell.get(key).and_then(|x| x.as_f64());
                assert_positive(value, &format!("{path} {key}"), &ran);
            }
        }
    }
    // The 1998 threads figure sits beside the thread path at 1 B.
    let reference = array(&rows[0], "cells")
        .first()
        .and_then(|c| c.get("reference_1998_ns")?.as_f64());
    assert_positive(reference, "thread reference_1998_ns at 1 B", &ran);
}

/// `bench comm --csv`: a line per path and size; the link's path may
/// instead be one line that says why it is missing.
#[test]
fn bench_comm_csv_has_a_header_and_every_path_and_size() {
    let ran = bench_comm_tiny("none", Some("--csv"));
    let rows = csv_rows(
        &ran,
        "path,size,median_ns,min_ns,max_ns,repetitions,reference_1998_ns,missing",
    );
    for row in &rows {
        assert_eq!(row.len(), 8, "{row:?}\n{}", ran.show());
    }
    for path in ["thread", "shm", "tcp/none"] {
        let of_path: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == path).collect();
        if let [missing] = &of_path[..] {
            if path == "tcp/none" && !missing[7].is_empty() {
                eprintln!("SKIPPED the link row: {}", missing[7]);
                continue;
            }
        }
        let sizes: Vec<&str> = of_path.iter().map(|r| r[1].as_str()).collect();
        let expected = COMM_SIZES.map(|s| s.to_string());
        assert_eq!(sizes, expected, "{path}\n{}", ran.show());
        for row in of_path {
            for figure in &row[2..6] {
                assert_positive(figure.parse().ok(), figure, &ran);
            }
            assert!(row[7].is_empty(), "{row:?}\n{}", ran.show());
        }
    }
}
