//! `threadwire bench pingpong`: the table, `--json`, `--csv`, `--plot`,
//! `--link` and `--peers`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use serde_json::Value;
use std::process::Command;
use support::command::*;
use support::report::*;

/// `bench pingpong` with the smallest budget, with the extra `args`.
fn bench_pingpong(args: &[&str]) -> Command {
    let mut cmd = threadwire();
    cmd.args(["bench", "pingpong", "--repetitions", "2", "--ms", "5"])
        .args(args);
    cmd
}

/// `bench pingpong` over one path, printed as `format`.
fn bench_pingpong_shm(format: &str) -> Ran {
    run_bench_ok(&mut bench_pingpong(&[
        "--paths", "shm", "--sizes", "1,8,1000", format,
    ]))
}

#[test]
fn bench_pingpong_json_has_every_size_and_the_fit() {
    let ran = bench_pingpong_shm("--json");
    let doc = json_doc(&ran);
    let rows = rows(&doc);
    let sizes: Vec<Option<f64>> = rows.iter().map(|r| r.get("size")?.as_f64()).collect();
    assert_eq!(
        sizes,
        [Some(1.0), Some(8.0), Some(1000.0)],
        "{}",
        ran.show()
    );
    for row in rows {
        assert_eq!(row.get("path").and_then(|p| p.as_str()), Some("shm"));
        for key in ["median_ns", "min_ns", "max_ns", "mbps"] {
            assert_positive(row.get(key).and_then(|x| x.as_f64()), key, &ran);
        }
    }
    let fits = array(&doc, "fits");
    assert_eq!(fits.len(), 1, "one fit per path\n{}", ran.show());
    let fit = &fits[0];
    assert_eq!(fit.get("path").and_then(|p| p.as_str()), Some("shm"));
    assert_eq!(fit.get("sizes").and_then(|n| n.as_f64()), Some(3.0));
    assert_positive(fit.get("startup_ns").and_then(|x| x.as_f64()), "α", &ran);
    // β can come out at or below zero when three short messages take about
    // as long; then r∞ and n½ do not exist and are null.
    for key in [
        "ns_per_byte",
        "bandwidth_mbps",
        "half_bandwidth_bytes",
        "rms_relative_error",
    ] {
        let value = fit
            .get(key)
            .unwrap_or_else(|| panic!("the fit has no {key}\n{}", ran.show()));
        assert!(
            *value == Value::Null || value.as_f64().is_some_and(f64::is_finite),
            "{key} is {value:?}\n{}",
            ran.show()
        );
    }
}

#[test]
fn bench_pingpong_csv_has_a_header_and_every_size() {
    let ran = bench_pingpong_shm("--csv");
    let rows = csv_rows(&ran, "path,size,median_ns,min_ns,max_ns,mbps");
    let sizes: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        sizes,
        [("shm", "1"), ("shm", "8"), ("shm", "1000")],
        "{}",
        ran.show()
    );
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}\n{}", ran.show());
        for figure in &row[2..] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}

/// `--into`: every size of every path twice, owned receives then receives
/// into a reused buffer, each with positive figures, and a fit for each.
#[test]
fn bench_pingpong_into_has_both_receives_at_every_size() {
    let ran = run_bench_ok(&mut bench_pingpong(&[
        "--paths",
        "thread,shm",
        "--sizes",
        "8,100000",
        "--into",
        "--json",
    ]));
    let doc = json_doc(&ran);
    let found: Vec<(&str, &str, u64)> = rows(&doc)
        .iter()
        .map(|r| {
            for key in ["median_ns", "min_ns", "max_ns", "mbps"] {
                assert_positive(r.get(key).and_then(Value::as_f64), key, &ran);
            }
            (
                r.get("path").and_then(Value::as_str).unwrap_or_default(),
                r.get("receive").and_then(Value::as_str).unwrap_or_default(),
                r.get("size").and_then(Value::as_u64).unwrap_or_default(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for path in ["thread", "shm"] {
        for size in [8, 100_000] {
            expected.push((path, "owned", size));
            expected.push((path, "into", size));
        }
    }
    assert_eq!(found, expected, "{}", ran.show());
    let fits: Vec<(&str, &str)> = array(&doc, "fits")
        .iter()
        .map(|f| {
            (
                f.get("path").and_then(Value::as_str).unwrap_or_default(),
                f.get("receive").and_then(Value::as_str).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        fits,
        [
            ("thread", "owned"),
            ("thread", "into"),
            ("shm", "owned"),
            ("shm", "into")
        ],
        "{}",
        ran.show()
    );
}

/// `bench pingpong --plot DIR` creates DIR and writes each chart as SVG
/// and PNG; what the charts show is not checked here.
#[test]
fn bench_pingpong_plot_writes_svg_and_png() {
    let dir = std::env::temp_dir()
        .join(format!("threadwire-plot-{}", std::process::id()))
        .join("missing");
    let ran = run_ok(
        bench_pingpong(&["--paths", "thread", "--sizes", "8,1000,100000", "--plot"]).arg(&dir),
    );
    for chart in ["latency", "bandwidth"] {
        let svg = dir.join(format!("pingpong-{chart}.svg"));
        let text = std::fs::read_to_string(&svg)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", svg.display(), ran.show()));
        assert!(
            text.starts_with("<svg") || text.starts_with("<?xml"),
            "{} is not SVG: {:?}",
            svg.display(),
            text.chars().take(80).collect::<String>()
        );
        let png = dir.join(format!("pingpong-{chart}.png"));
        let bytes = std::fs::read(&png)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", png.display(), ran.show()));
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} lacks the PNG signature",
            png.display()
        );
    }
    let _ = std::fs::remove_dir_all(dir.parent().expect("the temporary directory"));
}

/// `bench pingpong --link` builds two emulated hosts for the run, measures
/// TCP between them and removes them. Needs root and network namespaces;
/// skips saying why without them.
#[test]
fn bench_pingpong_on_an_emulated_link_leaves_nothing_behind() {
    let ran = run(&mut bench_pingpong(&[
        "--link", "gige", "--paths", "tcp", "--sizes", "8,1000",
    ]));
    if ran.code() != Some(0) && ran.stderr.contains("emulated hosts") {
        eprintln!(
            "SKIPPED: cannot build emulated hosts here: {}",
            ran.stderr.trim()
        );
        return;
    }
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    for size in ["8", "1000"] {
        let row: Vec<&str> = ran
            .rows()
            .into_iter()
            .find(|w| w.len() >= 3 && w[0] == "tcp/gige" && w[1] == size)
            .unwrap_or_else(|| panic!("no tcp/gige row for {size} B\n{}", ran.show()));
        assert_positive(row[2].parse().ok(), row[2], &ran);
    }
    assert_no_namespaces_left("twb");
}

/// `bench pingpong --peers`: each TCP peer either has a line per size with
/// positive figures or names the Debian packages that provide it.
#[test]
fn bench_pingpong_peers_have_figures_or_name_their_packages() {
    let ran = run_ok(&mut bench_pingpong(&[
        "--paths", "tcp", "--sizes", "8,1000", "--peers",
    ]));
    let peers = [
        ("NPtcp", "netpipe-tcp"),
        ("NPopenmpi/ob1-tcp", "netpipe-openmpi openmpi-bin"),
        ("NPpvm", "netpipe-pvm pvm"),
    ];
    let table = ran
        .stdout
        .split_once("\npeers:")
        .unwrap_or_else(|| panic!("no peers table\n{}", ran.show()))
        .1;
    for (peer, packages) in peers {
        let lines: Vec<&str> = table
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(peer))
            .collect();
        assert!(!lines.is_empty(), "no line for {peer}\n{}", ran.show());
        if lines[0].contains("not installed") {
            assert!(lines[0].contains(packages), "{}\n{}", lines[0], ran.show());
            continue;
        }
        assert_eq!(
            lines.len(),
            2,
            "one line per size for {peer}\n{}",
            ran.show()
        );
        for line in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 8, "{line}\n{}", ran.show());
            for figure in &f[2..] {
                assert_positive(figure.trim_end_matches('*').parse().ok(), figure, &ran);
            }
        }
    }
}
