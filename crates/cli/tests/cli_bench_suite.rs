//! `threadwire bench suite --quick`: every step, into one report.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use support::command::*;

/// `bench suite --quick` runs every benchmark once into one report: each
/// step's command and table in README.md, the tables in NAME.txt, the
/// ping-pong plots beside; the apps' seed tables among them. The link
/// steps need root; without it they are listed as skipped, which the test
/// prints.
#[test]
fn bench_suite_quick_reports_every_step() {
    let out = std::env::temp_dir().join(format!("threadwire-suite-test-{}", std::process::id()));
    let ran = run_bench_ok(
        threadwire()
            .args([
                "bench",
                "suite",
                "--quick",
                "--no-peers",
                "--links",
                "none",
                "--out",
            ])
            .arg(&out),
    );
    let report = std::fs::read_to_string(out.join("README.md")).expect("the report");
    let steps = [
        "floors",
        "pingpong",
        "pingpong-none",
        "encodings",
        "comm",
        "spawn",
        "rate",
        "rate-none",
        "am",
        "threads",
        "coll",
        "bcast",
        "flood",
        "overlap",
        "dsm",
        "matmul-ncs1-none",
        "matmul-ncs1-scaled-none",
        "matmul-thesis54-none",
        "fft-ncs3-none",
        "jpeg-ncs2-none",
        "matmul-fig57",
        "agenda-matmul",
        "splash-plain",
        "splash-none",
    ];
    for step in steps {
        let section = report
            .split(&format!("\n## {step}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no section {step} in\n{report}"));
        let section = section.split("\n## ").next().unwrap_or_default();
        assert!(
            section.contains("threadwire bench ") || section.contains("threadwire apps "),
            "{step}: no command\n{section}"
        );
        if section.contains("Skipped: ") {
            eprintln!("SKIPPED the step {step}: {section}");
            continue;
        }
        assert!(section.contains("Took "), "{step} did not run\n{section}");
        let table = std::fs::read_to_string(out.join(format!("{step}.txt"))).unwrap_or_default();
        assert!(!table.trim().is_empty(), "{step}: no table\n{}", ran.show());
        assert!(
            section.contains(table.trim_end()),
            "{step}: table not in the report"
        );
    }
    for plot in ["pingpong-latency.png", "pingpong-bandwidth.svg"] {
        assert!(out.join("pingpong").join(plot).exists(), "no {plot}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
