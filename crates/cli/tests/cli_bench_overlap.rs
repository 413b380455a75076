//! `threadwire bench overlap`: a tiny run has the comm-only row and a row
//! per mode and ratio, every figure positive, the gain over `serial` where
//! it exists; on an emulated link the same, or it says why it skips.
//! Whether overlap pays is the benchmark's to show, never a test's.

mod support;
use serde_json::Value;
use support::command::*;
use support::report::*;

/// 4 blocks of `block` bytes, ratio 1, one run a cell, and `args`.
fn tiny(block: &str, args: &[&str]) -> Ran {
    run(threadwire()
        .args(["bench", "overlap", "--block", block, "--blocks", "4"])
        .args(["--ratios", "1", "--repetitions", "1", "--json"])
        .args(args))
}

fn check(ran: &Ran, modes: &[&str]) {
    let doc = json_doc(ran);
    let rows = rows(&doc);
    assert_eq!(rows.len(), 1 + modes.len(), "{}", ran.show());
    assert_eq!(rows[0]["mode"], "comm only", "{}", ran.show());
    assert_positive(rows[0]["median_ms"].as_f64(), "comm only", ran);
    for mode in modes {
        let row = rows
            .iter()
            .find(|r| r["mode"] == *mode && r["ratio"] == 1)
            .unwrap_or_else(|| panic!("no row for {mode}\n{}", ran.show()));
        for key in [
            "median_ms",
            "compute_ms",
            "comm_ms",
            "serial_sum_ms",
            "ideal_ms",
        ] {
            assert_positive(row[key].as_f64(), key, ran);
        }
        let gain = &row["improvement_percent"];
        match *mode {
            "serial" => assert_eq!(*gain, Value::Null, "{}", ran.show()),
            _ => assert!(gain.is_number(), "{mode}: {}", ran.show()),
        }
    }
}

#[test]
fn every_mode_has_a_row_between_two_nodes_of_one_host() {
    let ran = tiny("65536", &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    check(&ran, &["serial", "posted", "fiber", "os"]);
}

#[test]
fn blocks_cross_an_emulated_link() {
    let ran = tiny("262144", &["--link", "fast100", "--modes", "serial,fiber"]);
    if ran.code() != Some(0) && ran.stderr.contains("emulated hosts") {
        eprintln!("SKIPPED: cannot build emulated hosts here: {}", ran.stderr);
        return;
    }
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    check(&ran, &["serial", "fiber"]);
    assert_eq!(json_doc(&ran)["link"], "fast100", "{}", ran.show());
}

#[test]
fn a_bad_mode_is_refused_by_name() {
    let ran = run(threadwire().args(["bench", "overlap", "--modes", "twice"]));
    assert_eq!(ran.code(), Some(2), "{}", ran.show());
    assert!(
        ran.stderr.contains("serial, posted, fiber or os"),
        "{}",
        ran.show()
    );
}
