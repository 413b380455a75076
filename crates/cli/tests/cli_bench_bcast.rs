//! `threadwire bench bcast`: a tiny run across emulated hosts has a
//! figure for threadwire's tree and for every peer this machine has, in
//! the table and the JSON alike; without emulated hosts (no root) it says
//! why and skips. Figures are positive; their size is the benchmark's
//! business, never a test's.

mod support;
use serde_json::Value;
use std::path::Path;
use support::command::*;
use support::report::*;

/// k = 1 and 2 on fast100, 8 B and 60000 B, one round of 5 ms a size.
const TINY: [&str; 12] = [
    "bench",
    "bcast",
    "--link",
    "fast100",
    "--hosts",
    "1,2",
    "--sizes",
    "8,60000",
    "--repetitions",
    "1",
    "--ms",
    "5",
];

/// The peers this machine has everything for, as the JSON's `system`
/// and the table's column.
fn peers_present() -> Vec<(&'static str, &'static str)> {
    let mut present = Vec::new();
    let pvm = on_path("cc")
        && on_path("pvm")
        && Path::new("/usr/include/pvm3.h").is_file()
        && Path::new("/usr/lib/pvm3/lib/pvmgs").is_file();
    if pvm {
        present.extend([("pvm_mcast", "pvm_mcast"), ("pvm_bcast", "pvm_bcast")]);
    }
    if on_path("mpicc.openmpi") && on_path("mpirun.openmpi") {
        present.push(("openmpi", "Open MPI"));
    }
    if on_path("mpicc.mpich") && on_path("mpiexec.mpich") {
        present.push(("mpich", "MPICH"));
    }
    present
}

/// The JSON's skips as text.
fn skipped(doc: &Value) -> String {
    array(doc, "skipped")
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_system_present_has_a_figure_at_each_size_and_receivers() {
    let ran = run_bench_ok(threadwire().args(TINY).arg("--json"));
    let doc = json_doc(&ran);
    if rows(&doc).is_empty() {
        let why = skipped(&doc);
        assert!(why.contains("emulated hosts"), "{}", ran.show());
        eprintln!("SKIPPED: no emulated hosts here: {why}");
        return;
    }
    let mut systems = vec!["threadwire_tree"];
    systems.extend(peers_present().into_iter().map(|(key, _)| key));
    for system in systems {
        for k in [1, 2] {
            for size in [8, 60000] {
                let row = rows(&doc)
                    .iter()
                    .find(|r| r["system"] == system && r["receivers"] == k && r["size"] == size);
                let Some(row) = row else {
                    panic!(
                        "no row for {system}, k={k}, {size} B\nskipped: {}\n{}",
                        skipped(&doc),
                        ran.show()
                    );
                };
                for key in ["median_ns", "min_ns", "max_ns", "broadcasts"] {
                    assert_positive(row[key].as_f64(), key, &ran);
                }
                assert_eq!(row["link"], "fast100", "{}", ran.show());
            }
        }
    }
    // The multicast row runs, or says that the runtime refuses its
    // algorithm.
    let multicast = rows(&doc)
        .iter()
        .any(|r| r["system"] == "threadwire_multicast");
    assert!(
        multicast || skipped(&doc).contains("threadwire_multicast"),
        "{}",
        ran.show()
    );
}

#[test]
fn the_table_has_a_number_in_every_present_column() {
    let ran = run_bench_ok(
        threadwire()
            .args(TINY)
            .args(["--systems", "tree,pvm-mcast,openmpi"]),
    );
    let header = ran.stdout.lines().find(|l| l.contains(" size (B)"));
    let Some(header) = header else {
        assert!(ran.stdout.contains("emulated hosts"), "{}", ran.show());
        eprintln!("SKIPPED: no emulated hosts here");
        return;
    };
    let mut columns = vec!["tw tree"];
    columns.extend(
        peers_present()
            .into_iter()
            .map(|(_, column)| column)
            .filter(|c| ["pvm_mcast", "Open MPI"].contains(c)),
    );
    for column in &columns {
        assert!(
            header.contains(column),
            "no column {column}\n{}",
            ran.show()
        );
    }
    let lines: Vec<Vec<&str>> = ran
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        // Not the min–max lines below the table: `8 B k=1 …`.
        .filter(|w| w.len() > 2 && (w[0] == "8" || w[0] == "60000") && w[1] != "B")
        .collect();
    assert_eq!(lines.len(), 4, "size × k lines\n{}", ran.show());
    for words in lines {
        // size, k, then a median per column: every one a number.
        for cell in &words[2..2 + columns.len()] {
            assert_positive(cell.parse().ok(), cell, &ran);
        }
    }
}
