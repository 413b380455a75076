//! `threadwire apps fft` end to end: the DIF FFT verified against rustfft
//! on 1, 2 and 4 nodes with one and two threads per node, on one host and
//! on emulated hosts; bad sizes refused before any node starts; a node
//! lost in the middle failing the job, not hanging it.

mod support;
use support::command::*;
use support::lost_node::*;

/// The configurations' rows of the report: (threads per node, workers).
fn configurations(stdout: &str) -> Vec<(u32, u32)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[n0] "))
        .filter_map(|l| {
            let mut cells = l.split_whitespace();
            let threads = cells.next()?.parse().ok()?;
            let workers = cells.next()?.parse().ok()?;
            Some((threads, workers))
        })
        .collect()
}

#[test]
fn apps_fft_verifies_on_one_two_and_four_nodes_with_one_and_two_threads() {
    for nodes in [1u32, 2, 4] {
        for threads in [1u32, 2] {
            let (n, t) = (nodes.to_string(), threads.to_string());
            let ran = run_ok(threadwire().args([
                "apps",
                "fft",
                "-n",
                &n,
                "--threads",
                &t,
                "--points",
                "64",
                "--sets",
                "3",
                "--rounds",
                "2",
            ]));
            assert!(
                ran.stdout.contains("verified against rustfft"),
                "{}",
                ran.show()
            );
            // Two threads per node are timed against one per node.
            let expected: Vec<(u32, u32)> = match threads {
                1 => vec![(1, nodes)],
                _ => vec![(1, nodes), (2, 2 * nodes)],
            };
            assert_eq!(configurations(&ran.stdout), expected, "{}", ran.show());
            assert_eq!(
                ran.stdout.contains("threads/node vs 1:"),
                threads == 2,
                "{}",
                ran.show()
            );
            assert!(
                ran.stdout.contains(&format!("NCS Table 3, {nodes} nodes")),
                "{}",
                ran.show()
            );
        }
    }
}

#[test]
fn apps_fft_with_one_butterfly_row_per_worker_verifies() {
    // 16 points on 4 nodes x 2 threads: the smallest set, every exchange.
    let ran = run_ok(threadwire().args([
        "apps", "fft", "-n", "4", "--points", "16", "--sets", "1", "--rounds", "1",
    ]));
    assert!(
        ran.stdout.contains("verified against rustfft"),
        "{}",
        ran.show()
    );
}

#[test]
fn bad_sizes_are_refused_before_the_job_starts() {
    for (args, says) in [
        (&["--points", "500"][..], "must be a power of two"),
        (&["-n", "3"], "power of two of nodes"),
        (&["--threads", "3"], "threads per node"),
        (&["-n", "4", "--points", "8"], "at least 16 points"),
        (&["--sets", "0"], "at least one set"),
        (&["--points", "67108864", "--sets", "2"], "points in all"),
    ] {
        let ran = run(threadwire().args(["apps", "fft"]).args(args));
        assert_eq!(ran.code(), Some(1), "{args:?}: {}", ran.show());
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.show());
        assert!(
            !ran.stdout.contains("[n0]"),
            "a node started: {}",
            ran.show()
        );
    }
}

/// Four nodes on two emulated hosts: the exchanges between hosts go over
/// TCP on the bridge, the others through shared memory or within a node.
/// Needs root and network namespaces; skips saying why without them.
#[test]
fn apps_fft_verifies_on_namespace_hosts() {
    const PREFIX: &str = "twff";
    let Some(hosts) = NamespaceHosts::up(PREFIX, 2, &[]) else {
        return;
    };
    let ran = run(threadwire()
        .args(["run", "-n", "4", "--hosts"])
        .arg(&hosts.file)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_threadwire"))
        .args([
            "apps", "fft", "--points", "256", "--sets", "2", "--rounds", "1",
        ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(
        ran.stdout.contains("verified against rustfft"),
        "{}",
        ran.show()
    );
    assert_eq!(
        configurations(&ran.stdout),
        [(1, 4), (2, 8)],
        "{}",
        ran.show()
    );
}

/// Node 1 killed while the transform runs, under `--keep-going` so that
/// the launcher does not end the job itself: node 0's host notices the
/// loss (a receive or send fails with it) and fails with a message
/// naming n1, within the hang deadline.
#[test]
fn a_node_lost_during_the_fft_fails_the_job_with_its_name() {
    // A node's thread count reaching 3 (t0 and the two workers: the app
    // runs) gives no sign but the console's answer: retried.
    let app = [
        "apps", "fft", "--points", "65536", "--sets", "8", "--rounds", "100000",
    ];
    let (ran, killed) = kill_node1_when("threadwire-fft-consoles", 2, 50, &app, |row| {
        row.get(3).and_then(|t| t.parse::<u32>().ok()) >= Some(3)
    });
    assert_failed_naming_n1(&ran, killed);
}
