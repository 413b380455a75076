//! `threadwire bench dsm` at tiny counts: a row per operation and layout
//! with real times on every path, and the seed's Table 1 beside our
//! message sizes. Times are never asserted, only that they are numbers.

mod support;
use support::command::*;
use support::report::*;

/// The rows of a path: every operation of the 2-node job, then the
/// barriers of the 4-node jobs.
const ROWS: [(&str, &str); 11] = [
    ("remote read fault", "2x1"),
    ("write fault, valid unit", "2x1"),
    ("home read after diffs", "2x1"),
    ("lock, between nodes", "2x1"),
    ("lock, between threads", "2x1"),
    ("barrier", "2x1"),
    ("barrier after writes", "2x1"),
    ("barrier", "4x1"),
    ("barrier after writes", "4x1"),
    ("barrier", "4x4"),
    ("barrier after writes", "4x4"),
];

/// `bench dsm` runs name their emulated hosts `twd<pid>`, and each test
/// checks that none is left: one such test at a time, so that none sees
/// another's hosts while they run.
static DSM_NETS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `bench dsm` with the smallest counts over `links`, printed as
/// `format` (the table if none); it leaves no hosts behind.
fn bench_dsm_tiny(links: Option<&str>, format: Option<&str>) -> Ran {
    let _one_at_a_time = DSM_NETS.lock().unwrap_or_else(|e| e.into_inner());
    let ran = run_bench_ok(
        threadwire()
            .args(["bench", "dsm", "--repetitions", "2", "--faults", "4"])
            .args(["--hand-offs", "4", "--barriers", "4"])
            .args(links.map(|l| ["--link", l]).into_iter().flatten())
            .args(format),
    );
    assert_no_namespaces_left("twd");
    ran
}

#[test]
fn bench_dsm_table_has_every_operation_per_path_and_the_seeds_table_1() {
    let ran = bench_dsm_tiny(Some("fast100"), None);
    for path in ["shm", "tcp/fast100"] {
        let lines: Vec<&str> = ran
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix(path).filter(|r| r.starts_with(' ')))
            .collect();
        if let [missing] = &lines[..] {
            if path != "shm" && missing.trim_start().starts_with("missing:") {
                eprintln!("SKIPPED {path}: {}", missing.trim());
                continue;
            }
        }
        assert_eq!(lines.len(), ROWS.len(), "{path}\n{}", ran.show());
        for (line, (operation, layout)) in lines.iter().zip(ROWS) {
            let (name, figures) = line
                .split_once(&format!(" {layout} "))
                .unwrap_or_else(|| panic!("{path}: no {layout} in {line:?}\n{}", ran.show()));
            assert_eq!(name.trim(), operation, "{path}\n{}", ran.show());
            let figures: Vec<&str> = figures.split_whitespace().collect();
            assert_spread(&ran, figures[0], figures[1]);
            assert_positive(figures[2].parse().ok(), figures[2], &ran);
        }
        let fetched = lines[0].split_whitespace().rev().nth(2);
        assert_positive(
            fetched.and_then(|b| b.parse().ok()),
            "bytes per fetch",
            &ran,
        );
    }
    for (event, seed, ours) in [
        ("Get Page", "40 / 8226", "36 / 8233"),
        ("Lock Acquire", "36 / 28", "36 / 34 or 38"),
        ("Lock Grant", "≥ 36 / 28", "36 / 42 + 12n"),
        ("Barrier Arrival", "32 / 28", "48 + 12n / –"),
        ("Barrier Release", "32 / 28", "– / 34 + 12m"),
    ] {
        let line = ran
            .stdout
            .lines()
            .find(|l| l.starts_with(event))
            .unwrap_or_else(|| panic!("no {event} line\n{}", ran.show()));
        assert!(
            line.contains(seed) && line.contains(ours),
            "{line}\n{}",
            ran.show()
        );
    }
    assert!(ran.stdout.contains("Fig 13"), "{}", ran.show());
}

#[test]
fn bench_dsm_json_and_csv_have_every_operation() {
    let ran = bench_dsm_tiny(None, Some("--json"));
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    assert_eq!(rows.len(), 1, "{}", ran.show());
    let samples = array(&rows[0], "samples");
    let seen: Vec<(Option<&str>, Option<u64>, Option<u64>)> = samples
        .iter()
        .map(|s| {
            let n = |k| s.get(k).and_then(|v| v.as_u64());
            (
                s.get("operation").and_then(|v| v.as_str()),
                n("nodes"),
                n("threads"),
            )
        })
        .collect();
    let expected: Vec<(Option<&str>, Option<u64>, Option<u64>)> = ROWS
        .iter()
        .map(|(op, layout)| {
            let (n, t) = layout.split_once('x').unwrap();
            (Some(*op), n.parse().ok(), t.parse().ok())
        })
        .collect();
    assert_eq!(seen, expected, "{}", ran.show());
    for s in samples {
        for key in ["median_ns", "min_ns", "max_ns", "operations", "repetitions"] {
            assert_positive(s.get(key).and_then(|v| v.as_f64()), key, &ran);
        }
    }
    let fetched = samples[0].get("bytes").and_then(|v| v.as_f64());
    assert_positive(fetched, "bytes per fetch", &ran);
    let seed: Vec<Option<&str>> = array(&doc, "messages")
        .iter()
        .map(|m| m.get("seed_reply").and_then(|v| v.as_str()))
        .collect();
    assert_eq!(
        seed,
        [Some("8226"), Some("28"), Some("28"), Some("28"), Some("28")]
    );

    let ran = bench_dsm_tiny(None, Some("--csv"));
    let lines = csv_rows(
        &ran,
        "path,operation,nodes,threads,median_ns,min_ns,max_ns,operations,repetitions,bytes,missing",
    );
    assert_eq!(lines.len(), ROWS.len(), "{}", ran.show());
    for line in &lines {
        assert_eq!(line[0], "shm", "{line:?}");
        for figure in &line[4..9] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}
