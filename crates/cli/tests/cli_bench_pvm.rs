//! `threadwire bench pvm`: its rows in the table, `--json` and `--csv`, on
//! a tiny configuration; what it skips says why. Figures are positive;
//! their size is the benchmark's business, never a test's.

mod support;
use serde_json::Value;
use support::cdylib::build;
use support::command::*;
use support::report::*;

/// Two repetitions of 5 ms at two sizes, pvm_spawn of 1 and 2.
const TINY: [&str; 10] = [
    "--repetitions",
    "2",
    "--ms",
    "5",
    "--sizes",
    "8,1000",
    "--counts",
    "1,2",
    "--encoding",
    "default",
];

const CSV_HEADER: &str = "placement,link,measure,runtime,size,unit,median,min,max";

/// Builds libpvm3.so for this profile: the threadwire rows need it.
fn libraries() {
    if let Err(why) = build(&["threadwire-pvm3", "threadwire-gpvm3"]) {
        panic!("building the PVM libraries: {why}");
    }
}

/// What this machine lacks for the rows: the reason `bench pvm` should
/// give, as a package name, or `None` if every row can run.
fn missing() -> Option<&'static str> {
    if !on_path("cc") {
        return Some("gcc");
    }
    if !std::path::Path::new("/usr/include/pvm3.h").is_file() {
        return Some("pvm-dev");
    }
    None
}

fn pvm_installed() -> bool {
    on_path("pvm") && std::path::Path::new("/usr/lib/pvm3/lib/pvmd").is_file()
}

/// Checks a row of the JSON: its kind, and median, min and max positive
/// and in order.
fn check_row(row: &Value, ran: &Ran) {
    let figure = |key: &str| row[key].as_f64();
    for key in ["median", "min", "max"] {
        assert_positive(figure(key), key, ran);
    }
    assert!(
        figure("min") <= figure("median") && figure("median") <= figure("max"),
        "{row} is not min ≤ median ≤ max\n{}",
        ran.show()
    );
}

/// The rows of the JSON document that match `placement`, `measure` and
/// `runtime`, by size.
fn sizes_of(doc: &Value, placement: &str, measure: &str, runtime: &str) -> Vec<u64> {
    rows(doc)
        .iter()
        .filter(|r| {
            r["placement"] == placement && r["measure"] == measure && r["runtime"] == runtime
        })
        .filter_map(|r| r["size"].as_u64())
        .collect()
}

fn skipped_reasons(doc: &Value) -> String {
    array(doc, "skipped")
        .iter()
        .map(|s| format!("{}: {}", s["rows"], s["reason"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every runtime has its rows at every size and count, or the report
/// says what is missing.
fn check_placement(doc: &Value, placement: &str, ran: &Ran) {
    let runtimes = |pvm: bool| {
        let mut r = vec!["threadwire libpvm3"];
        if pvm {
            r.extend(["PVM 3.4.6 direct", "PVM 3.4.6 via pvmd"]);
        }
        r
    };
    let skipped = skipped_reasons(doc);
    for runtime in runtimes(pvm_installed()) {
        for measure in ["round_trip", "bandwidth"] {
            assert_eq!(
                sizes_of(doc, placement, measure, runtime),
                [8, 1000],
                "{placement} {measure} {runtime}; skipped: {skipped}\n{}",
                ran.show()
            );
        }
        if runtime != "PVM 3.4.6 direct" {
            assert_eq!(
                sizes_of(doc, placement, "pvm_spawn", runtime),
                [1, 2],
                "{placement} pvm_spawn {runtime}; skipped: {skipped}\n{}",
                ran.show()
            );
        }
    }
    if !pvm_installed() {
        assert!(skipped.contains("apt-get install pvm"), "{}", ran.show());
    }
}

#[test]
fn bench_pvm_reports_every_row_on_one_host() {
    libraries();
    let ran = run_bench_ok(threadwire().args(["bench", "pvm"]).args(TINY));
    if let Some(package) = missing() {
        assert!(ran.stdout.contains(package), "{}", ran.show());
        eprintln!("SKIPPED: the rows need {package}");
        return;
    }
    for label in ["8 B", "1 kB", "1 task", "2 tasks"] {
        let line = ran
            .stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no line {label:?}\n{}", ran.show()));
        // The threadwire column: median (min–max).
        let words: Vec<&str> = line[label.len()..].split_whitespace().collect();
        assert_spread(&ran, words[0], words[1]);
    }
    assert!(ran.stdout.contains("PvmDataDefault"), "{}", ran.show());

    let json = run_bench_ok(threadwire().args(["bench", "pvm", "--json"]).args(TINY));
    let doc = json_doc(&json);
    assert_eq!(doc["benchmark"], "pvm", "{}", json.show());
    for row in rows(&doc) {
        check_row(row, &json);
    }
    check_placement(&doc, "one_host", &json);

    let csv = run_bench_ok(threadwire().args(["bench", "pvm", "--csv"]).args(TINY));
    let lines = csv_rows(&csv, CSV_HEADER);
    assert!(!lines.is_empty(), "{}", csv.show());
    for fields in lines {
        for figure in &fields[6..] {
            assert_positive(figure.parse().ok(), figure, &csv);
        }
    }
}

#[test]
fn bench_pvm_runs_across_emulated_hosts_or_says_why_not() {
    libraries();
    if missing().is_some() {
        eprintln!("SKIPPED: see bench_pvm_reports_every_row_on_one_host");
        return;
    }
    let ran = run_bench_ok(
        threadwire()
            .args(["bench", "pvm", "--json", "--link", "100mbit"])
            .args(TINY),
    );
    let doc = json_doc(&ran);
    for row in rows(&doc) {
        check_row(row, &ran);
    }
    check_placement(&doc, "one_host", &ran);
    let across = rows(&doc)
        .iter()
        .filter(|r| r["placement"] == "two_hosts")
        .count();
    if across == 0 {
        let skipped = skipped_reasons(&doc);
        assert!(skipped.contains("two hosts, fast100"), "{}", ran.show());
        eprintln!("SKIPPED: no emulated hosts: {skipped}");
        return;
    }
    assert!(
        rows(&doc)
            .iter()
            .filter(|r| r["placement"] == "two_hosts")
            .all(|r| r["link"] == "fast100"),
        "{}",
        ran.show()
    );
    check_placement(&doc, "two_hosts", &ran);
}
