//! `threadwire bench coll`: a fast run of the table and the JSON, the
//! forced algorithms, `--explain`, and the arguments it refuses.

mod support;
use std::process::Command;
use support::command::*;
use support::report::*;

/// `bench coll` with the smallest budget, with the extra `args`.
fn bench_coll(args: &[&str]) -> Command {
    let mut cmd = threadwire();
    cmd.args(["bench", "coll", "--repetitions", "1", "--ms", "2"])
        .args(args);
    cmd
}

#[test]
fn every_layout_operation_and_size_has_a_row() {
    let ran = run_bench_ok(&mut bench_coll(&[
        "--layout", "2x1,1x3", "--sizes", "8,1024", "--json",
    ]));
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    // Per layout: one barrier row and 2 sizes of the 4 others.
    assert_eq!(rows.len(), 2 * (1 + 4 * 2), "{}", ran.show());
    for row in rows {
        for key in ["median_ns", "min_ns", "max_ns", "iterations"] {
            assert_positive(row.get(key).and_then(|x| x.as_f64()), key, &ran);
        }
    }
    let layouts: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.get("layout")?.as_str())
        .collect();
    assert_eq!(layouts.iter().filter(|l| **l == "1x3").count(), 9);
}

#[test]
fn the_table_has_a_line_per_row() {
    let ran = run_bench_ok(&mut bench_coll(&[
        "--layout",
        "1x2",
        "--sizes",
        "8",
        "--operations",
        "barrier,allreduce",
    ]));
    let lines: Vec<&str> = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("1x2"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", ran.show());
    assert!(lines[0].contains("barrier") && lines[1].contains("allreduce"));
}

#[test]
fn a_forced_algorithm_is_measured_and_reported() {
    let ran = run_bench_ok(&mut bench_coll(&[
        "--layout",
        "1x4",
        "--sizes",
        "65536",
        "--operations",
        "allreduce",
        "--algorithm",
        "allreduce=ring",
        "--json",
    ]));
    let doc = json_doc(&ran);
    let forced = array(&doc, "algorithms");
    assert_eq!(forced.len(), 1, "{}", ran.show());
    assert_eq!(forced[0].as_str(), Some("allreduce=ring"));
    assert_eq!(rows(&doc).len(), 1);
}

#[test]
fn explain_names_the_thresholds_and_measures_nothing() {
    let ran = run_ok(threadwire().args([
        "bench",
        "coll",
        "--explain",
        "--layout",
        "4x1",
        "--sizes",
        "8,16384,65536,1048576",
        "--operations",
        "allreduce",
    ]));
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(
        lines[0].contains("does not expose its choice"),
        "{}",
        ran.show()
    );
    assert!(ran.stdout.contains("ALLREDUCE_SHORT"));
    for (size, algorithm) in [
        ("8", "host-stage"),
        ("16384", "rabenseifner"),
        ("65536", "host-stage"),
        ("1048576", "host-stage"),
    ] {
        assert!(
            lines.iter().any(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.get(3) == Some(&size) && cells.get(4) == Some(&algorithm)
            }),
            "no {algorithm} at {size}\n{}",
            ran.show()
        );
    }
}

#[test]
fn bad_layouts_and_algorithms_are_refused() {
    for args in [
        &["--layout", "0x4"][..],
        &["--layout", "8x9"],
        &["--algorithm", "barrier=ring"],
    ] {
        let ran = run(bench_coll(args).arg("--explain"));
        assert_ne!(ran.code(), Some(0), "{args:?} accepted\n{}", ran.show());
    }
}
