//! `threadwire bench comm` and `bench encodings`: the tables, `--json`
//! and `--csv`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use serde_json::Value;
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

/// `bench comm --links atm155`: the thesis' Table 5.2 under the paths it
/// compares with (threads, local processes, both AALs), and its Tables
/// 5.3, 5.5 and 5.6 beside the link, every figure as printed and ours a
/// real number with its ratio; the link needs root and namespaces, and
/// without them the test says so and checks the local rows only.
#[test]
fn bench_comm_prints_the_thesis_tables_beside_ours() {
    let ran = bench_comm_tiny("atm155", None);
    // Words of the first line starting with `label` after one starting
    // with `after`.
    let line = |after: &str, label: &str| -> Vec<&str> {
        ran.stdout
            .lines()
            .skip_while(|l| !l.starts_with(after))
            .find_map(|l| l.strip_prefix(label).filter(|r| r.starts_with(' ')))
            .unwrap_or_else(|| panic!("no {label:?} after {after:?}\n{}", ran.show()))
            .split_whitespace()
            .collect()
    };
    // A thesis' row: its figures, each with ours ÷ it in brackets.
    let seeds = |after: &str, label: &str, figures: &[&str]| {
        let words = line(after, label);
        assert_eq!(words.len(), 2 * figures.len(), "{label}\n{}", ran.show());
        for (pair, figure) in words.chunks(2).zip(figures) {
            assert_eq!(pair[0], *figure, "{label}\n{}", ran.show());
            assert_ratio(&ran, pair[1]);
        }
    };
    let table_5_2 = "path ";
    let local = [
        ("1998 threads", ["1.01", "1.09", "15.25", "238.44"]),
        ("1998 local processes", ["1.04", "2.92", "39.27", "897.17"]),
    ];
    for (label, figures) in local {
        seeds(table_5_2, label, &figures);
    }
    let link = line(table_5_2, "tcp/atm155");
    if link.first() == Some(&"missing:") {
        eprintln!("SKIPPED the link's tables: {}", link.join(" "));
        return;
    }
    let atm = [
        ("1998 ATM AAL 3/4", ["1.10", "4.09", "72.29", "1477.75"]),
        ("1998 ATM AAL 5", ["1.11", "4.12", "68.67", "1256.79"]),
    ];
    for (label, figures) in atm {
        seeds(table_5_2, label, &figures);
    }
    let table_5_3 = "the thesis' Table 5.3 (1998): bandwidth in Mbit/s";
    let ours = line(table_5_3, "tcp/atm155");
    assert_eq!(ours.len(), 5, "{}", ran.show());
    ours.iter()
        .for_each(|f| assert_positive(f.parse().ok(), f, &ran));
    let aal34 = ["9.94", "23.39", "27.22", "27.75", "27.01"];
    seeds(table_5_3, "1998 ATM AAL 3/4", &aal34);
    let aal5 = ["11.78", "27.26", "29.17", "29.26", "28.85"];
    seeds(table_5_3, "1998 ATM AAL 5", &aal5);
    assert!(
        ran.stdout.lines().any(|l| l.starts_with(
            "the thesis disagrees with itself: Table 5.2's 1 MB in 1477.75 ms over ATM AAL 3/4 \
             is 5.41"
        )),
        "no line on the thesis' 1 MB\n{}",
        ran.show()
    );
    let tables_5_5_and_5_6 = "the thesis' Tables 5.5 and 5.6 (1998)";
    let ours = line(tables_5_5_and_5_6, "tcp/atm155");
    assert_eq!(ours.len(), 2, "{}", ran.show());
    ours.iter()
        .for_each(|f| assert_positive(f.parse().ok(), f, &ran));
    seeds(
        tables_5_5_and_5_6,
        "1998 PVM-ATM on AAL 3/4",
        &["1910.3", "27.75"],
    );
    seeds(
        tables_5_5_and_5_6,
        "1998 PVM-ATM on AAL 5",
        &["1915.4", "29.26"],
    );
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

/// The sizes of a link's path: the columns', 4 B (t0) and the bandwidth
/// sizes of the thesis' Table 5.3.
const LINK_SIZES: [usize; 9] = [
    1, 4, 1000, 32_000, 80_000, 320_000, 1_000_000, 1_280_000, 5_120_000,
];

/// The sizes `path` measures.
fn sizes_of(path: &str) -> Vec<usize> {
    match path.starts_with("tcp/") {
        true => LINK_SIZES.to_vec(),
        false => COMM_SIZES.to_vec(),
    }
}

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
        let expected: Vec<Option<f64>> = sizes_of(path).iter().map(|&s| Some(s as f64)).collect();
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
    // The thesis' Table 5.2 beside thread and shm, figure by figure.
    let seeds = array(&doc, "seeds");
    let of = |path: &str| -> Vec<(Option<f64>, Option<f64>)> {
        seeds
            .iter()
            .filter(|c| c.get("path").and_then(Value::as_str) == Some(path))
            .map(|c| {
                let figure = |key| c.get(key).and_then(Value::as_f64);
                (figure("seed_figure"), figure("ours"))
            })
            .collect()
    };
    let thread = of("thread");
    let seed_figures: Vec<Option<f64>> = thread.iter().map(|c| c.0).collect();
    assert_eq!(
        seed_figures,
        [1.01, 1.09, 15.25, 238.44].map(Some),
        "{}",
        ran.show()
    );
    for (_, ours) in thread.iter().chain(&of("shm")) {
        assert_positive(*ours, "ours beside the thesis", &ran);
    }
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
        let expected: Vec<String> = sizes_of(path).iter().map(|s| s.to_string()).collect();
        assert_eq!(sizes, expected, "{path}\n{}", ran.show());
        for row in of_path {
            for figure in &row[2..6] {
                assert_positive(figure.parse().ok(), figure, &ran);
            }
            assert!(row[7].is_empty(), "{row:?}\n{}", ran.show());
        }
    }
}
