//! `threadwire bench pingpong --paths udp --peers`: sockperf and the
//! iperf3 floor beside the udp path, on emulated hosts and on loopback,
//! and `--loss`.
//!
//! The emulated hosts need root and network namespaces: without them the
//! tests on a link skip, saying why; a peer not installed is one line
//! naming its package, never silence.

mod support;
use serde_json::Value;
use std::process::Command;
use support::command::*;
use support::report::*;

/// `bench pingpong` over udp with its peers, the smallest budget, and
/// the extra `args`.
fn bench_pingpong_udp_peers(args: &[&str]) -> Command {
    let mut cmd = threadwire();
    cmd.args([
        "bench",
        "pingpong",
        "--paths",
        "udp",
        "--peers",
        "--repetitions",
        "1",
        "--ms",
        "20",
    ])
    .args(args);
    cmd
}

/// The run on `fast100` with `args`, or `None` after saying why it skips.
fn on_fast100(args: &[&str]) -> Option<Ran> {
    let mut cmd = bench_pingpong_udp_peers(&["--link", "fast100", "--sizes", "8,1000000"]);
    let ran = run(cmd.args(args));
    if ran.code() != Some(0) && ran.stderr.contains("emulated hosts") {
        eprintln!(
            "SKIPPED: cannot build emulated hosts here: {}",
            ran.stderr.trim()
        );
        return None;
    }
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    Some(ran)
}

/// The table's lines of `peer` (its first word) below the sweep.
fn peer_lines<'a>(ran: &'a Ran, peer: &str) -> Vec<Vec<&'a str>> {
    ran.rows()
        .into_iter()
        .filter(|w| w.first() == Some(&peer) && w.get(1) == Some(&"udp/fast100"))
        .collect()
}

/// Whether `line`, a peer's only line, says the peer is not installed,
/// naming `package`; fails if it does while the program is installed.
fn skipped(line: &[&str], program: &str, package: &str, ran: &Ran) -> bool {
    let text = line.join(" ");
    if on_path(program) {
        assert!(!text.contains("not installed"), "{text}\n{}", ran.show());
        return false;
    }
    assert!(
        text.contains("not installed") && text.contains(package),
        "{program} is not installed: its line should say so\n{}",
        ran.show()
    );
    eprintln!("SKIPPED: {program} figures: {text}");
    true
}

/// sockperf has a line at 8 B (its 14-byte message) and iperf3 its floor
/// beside our 1 MB, each with positive figures, or each says it is not
/// installed.
#[test]
fn bench_pingpong_udp_peers_on_a_link_have_figures_or_say_why_not() {
    let Some(ran) = on_fast100(&[]) else {
        return;
    };
    assert!(
        ran.stdout
            .starts_with("emulated link fast100: 100 Mbit/s each way, no loss"),
        "{}",
        ran.show()
    );
    let sockperf = peer_lines(&ran, "sockperf");
    assert_eq!(
        sockperf.len(),
        1,
        "one sockperf line, at 8 B\n{}",
        ran.show()
    );
    if !skipped(&sockperf[0], "sockperf", "sockperf", &ran) {
        let f = &sockperf[0];
        assert_eq!(f.len(), 8, "{f:?}\n{}", ran.show());
        assert_eq!((f[2], f[3]), ("8", "14*"), "{}", ran.show());
        for figure in [f[4], f[5], f[7]] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
    let iperf = peer_lines(&ran, "iperf3");
    assert_eq!(iperf.len(), 1, "one iperf3 line\n{}", ran.show());
    if !skipped(&iperf[0], "iperf3", "iperf3", &ran) {
        let f = &iperf[0];
        assert_eq!(f.len(), 10, "{f:?}\n{}", ran.show());
        assert_eq!(
            (f[2], f[5], f[9]),
            ("100M", "1000000", "%"),
            "{}",
            ran.show()
        );
        for figure in [f[3], f[6], f[7], f[8]] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
        let lost: f64 = f[4].parse().unwrap_or(f64::NAN);
        assert!((0.0..100.0).contains(&lost), "{}", ran.show());
    }
}

/// `--loss 1`: the header says so, and the benchmark and its peers still
/// finish, leaving no hosts behind.
#[test]
fn bench_pingpong_udp_with_loss_says_so_in_the_header() {
    if !on_path("iptables") {
        eprintln!("SKIPPED: --loss needs iptables");
        return;
    }
    let Some(ran) = on_fast100(&["--loss", "1"]) else {
        return;
    };
    let header = ran.stdout.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("emulated link fast100: 100 Mbit/s each way, 1% loss"),
        "{}",
        ran.show()
    );
    assert!(
        ran.stdout
            .contains("sockperf: under load, one message at a time"),
        "{}",
        ran.show()
    );
    assert_eq!(peer_lines(&ran, "sockperf").len(), 1, "{}", ran.show());
    assert_eq!(peer_lines(&ran, "iperf3").len(), 1, "{}", ran.show());
    assert_no_namespaces_left("twbl");
}

/// `--loss` without `--link` is refused: loopback loses nothing.
#[test]
fn bench_pingpong_loss_needs_a_link() {
    let ran = run(&mut bench_pingpong_udp_peers(&["--loss", "1"]));
    assert_eq!(ran.code(), Some(2), "{}", ran.show());
    assert!(ran.stderr.contains("--link"), "{}", ran.show());
}

/// On loopback (no root needed), `--json` has `udp_peers` with sockperf's
/// row and iperf3's floor, or each one's error.
#[test]
fn bench_pingpong_udp_peers_json_on_loopback() {
    let ran = run_bench_ok(&mut bench_pingpong_udp_peers(&["--sizes", "8", "--json"]));
    let doc = json_doc(&ran);
    let udp = doc
        .get("udp_peers")
        .unwrap_or_else(|| panic!("no udp_peers\n{}", ran.show()));
    assert_eq!(udp.get("path").and_then(Value::as_str), Some("udp"));
    let sockperf = &udp["sockperf"];
    match sockperf["error"].as_str() {
        Some(e) => assert!(!on_path("sockperf") && e.contains("not installed"), "{e}"),
        None => {
            let rows = array(sockperf, "rows");
            assert_eq!(rows.len(), 1, "{}", ran.show());
            assert_eq!(rows[0]["message_size"].as_u64(), Some(14));
            for key in ["one_way_ns", "threadwire_median_ns", "threadwire_over_peer"] {
                assert_positive(rows[0][key].as_f64(), key, &ran);
            }
        }
    }
    let iperf = &udp["iperf3"];
    match iperf["error"].as_str() {
        Some(e) => assert!(!on_path("iperf3") && e.contains("not installed"), "{e}"),
        None => {
            assert_eq!(iperf["offered_mbit"], Value::Null, "unlimited on loopback");
            for key in ["received_mbit", "threadwire_mbit", "threadwire_over_floor"] {
                assert_positive(iperf[key].as_f64(), key, &ran);
            }
        }
    }
}
