//! The seeds' application tables end to end: `apps matmul --compare` into
//! NCS' Table 1 (host–node) and the thesis' Table 5.4 (SUMMA on a 2x3
//! mesh), `--threads 1,2,4,8` into its Figure 5.7, each with the seed's
//! figures beside ours; `--link` running matmul, fft, jpeg and the agenda
//! multiply on emulated hosts (needs root: skips saying why without it);
//! a bad link name refused before anything starts. Times are printed,
//! never asserted.

mod support;
use support::command::*;

fn assert_all(stdout: &str, figures: &[&str], ran: &Ran) {
    for figure in figures {
        assert!(stdout.contains(figure), "no {figure}: {}", ran.show());
    }
}

#[test]
fn ncs_table_1_prints_both_of_the_seeds_networks_on_one_host() {
    let ran = run_ok(threadwire().args([
        "apps",
        "matmul",
        "--layout",
        "host-node",
        "--compare",
        "-n",
        "1,2,3,5",
        "--sizes",
        "16",
    ]));
    assert!(
        ran.stdout.starts_with("NCS Table 1: matmul host-node"),
        "{}",
        ran.show()
    );
    assert_all(
        &ran.stdout,
        &[
            "Ethernet p4",
            "NYNET p4",
            "25.77",
            "25.85",
            "16.89      13.72   18.77%",
            "10.64       7.88   25.94%",
            "14.40      11.51   20.07%",
            "7.52       5.41   28.06%",
            "ATM wide-area testbed",
        ],
        &ran,
    );
    // One row per job: 1, 2, 3 and 5 nodes are 1, 1, 2 and 4 worker nodes.
    let rows: Vec<(String, String)> = ran
        .rows()
        .iter()
        .filter(|r| r.first() == Some(&"16"))
        .map(|r| (r[1].to_string(), r[2].to_string()))
        .collect();
    let expected = [("1", "1"), ("2", "1"), ("3", "2"), ("5", "4")]
        .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(rows, expected, "{}", ran.show());
}

#[test]
fn thesis_table_5_4_prints_every_network_of_the_seed_on_one_host() {
    let ran = run_ok(threadwire().args([
        "apps",
        "matmul",
        "--mesh",
        "2x3",
        "--compare",
        "--sizes",
        "24,100",
    ]));
    assert!(
        ran.stdout.starts_with("Thesis Table 5.4: matmul summa 2x3"),
        "{}",
        ran.show()
    );
    assert_all(
        &ran.stdout,
        &[
            "Ethernet serial",
            "ATM AAL 3/4 serial",
            "ATM AAL 5 serial",
            "0.23    0.31    0.74",
            "0.18    0.17    1.06",
            "0.17    0.15    1.13",
        ],
        &ran,
    );
    let sizes: Vec<&str> = ran
        .rows()
        .iter()
        .filter(|r| r.get(1) == Some(&"6"))
        .map(|r| r[0])
        .collect();
    assert_eq!(sizes, ["24", "100"], "{}", ran.show());
}

#[test]
fn figure_5_7_sweeps_threads_on_one_node_and_quotes_the_seeds_finding() {
    let ran = run_ok(threadwire().args([
        "apps",
        "matmul",
        "-n",
        "1",
        "--threads",
        "1,2,4",
        "--sizes",
        "16,32",
    ]));
    assert!(
        ran.stdout.starts_with("Thesis Figure 5.7"),
        "{}",
        ran.show()
    );
    assert_all(
        &ran.stdout,
        &[
            "serial  2 threads  4 threads  fastest",
            "4 threads were fastest",
        ],
        &ran,
    );
}

#[test]
fn a_bad_link_is_refused_before_anything_starts() {
    for app in [&["matmul"][..], &["fft"], &["jpeg"], &["agenda-matmul"]] {
        let ran = run(threadwire()
            .arg("apps")
            .args(app)
            .args(["--link", "token-ring"]));
        assert_eq!(ran.code(), Some(2), "{}", ran.show());
        assert!(
            ran.stderr.contains("not a link (ethernet10"),
            "{}",
            ran.show()
        );
    }
    let ran = run(threadwire().args(["apps", "matmul", "--compare", "--serial"]));
    assert_ne!(ran.code(), Some(0), "{}", ran.show());
}

/// Every app on emulated hosts at tiny sizes, each net built for the
/// command and removed after it. Needs root and network namespaces.
#[test]
fn apps_run_on_emulated_hosts_with_link() {
    if let Some(why) = threadwire_testbed::net::unavailable("twap") {
        eprintln!("SKIPPED: cannot create emulated hosts here: {why}");
        return;
    }
    let ran = run_ok(threadwire().args([
        "apps",
        "matmul",
        "--layout",
        "host-node",
        "--compare",
        "-n",
        "2,3",
        "--sizes",
        "16",
        "--link",
        "ethernet10",
    ]));
    assert_all(
        &ran.stdout,
        &["on 3 emulated hosts joined by ethernet10", "Ethernet p4"],
        &ran,
    );
    assert!(!ran.stdout.contains("NYNET"), "{}", ran.show());
    let ran = run_ok(threadwire().args([
        "apps",
        "matmul",
        "--mesh",
        "2x3",
        "--compare",
        "--sizes",
        "24",
        "--link",
        "atm155",
        "--hosts",
        "3",
    ]));
    assert_all(
        &ran.stdout,
        &["on 3 emulated hosts joined by atm155", "ATM AAL 5 serial"],
        &ran,
    );
    assert!(!ran.stdout.contains("Ethernet"), "{}", ran.show());
    for app in [
        &[
            "fft", "-n", "2", "--points", "64", "--sets", "1", "--rounds", "1",
        ][..],
        &[
            "jpeg", "-n", "2", "--width", "32", "--height", "32", "--rounds", "1",
        ],
        &[
            "agenda-matmul",
            "-n",
            "2",
            "--sizes",
            "32",
            "--granularity",
            "8",
            "--concurrency",
            "1",
            "--rounds",
            "1",
        ],
    ] {
        let ran = run_ok(threadwire().arg("apps").args(app).args(["--link", "none"]));
        assert!(
            ran.stdout
                .contains("ran on 2 emulated hosts joined by none (unshaped)"),
            "{}",
            ran.show()
        );
    }
}
