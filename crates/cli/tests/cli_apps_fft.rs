//! `threadwire apps fft` end to end: the DIF FFT verified against rustfft
//! on 1, 2 and 4 nodes with one and two threads per node, on one host and
//! on emulated hosts; bad sizes refused before any node starts; a node
//! lost in the middle failing the job, not hanging it.

mod support;
use std::time::{Duration, Instant};
use support::command::*;
use threadwire_testbed::retry::retry_until;

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
    let consoles =
        std::env::temp_dir().join(format!("threadwire-fft-consoles-{}", std::process::id()));
    std::fs::create_dir_all(&consoles).expect("console directory");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&consoles, std::fs::Permissions::from_mode(0o700)).expect("mode 0700");
    let job = {
        let consoles = consoles.clone();
        std::thread::spawn(move || {
            run(threadwire()
                .env("THREADWIRE_CONSOLE_DIR", &consoles)
                .args(["run", "-n", "2", "--keep-going", "--timeout", "50", "--"])
                .arg(env!("CARGO_BIN_EXE_threadwire"))
                .args([
                    "apps", "fft", "--points", "65536", "--sets", "8", "--rounds", "100000",
                ]))
        })
    };
    // A node's thread count reaching 3 (t0 and the two workers: the app
    // runs) gives no sign but the console's answer: retried.
    let node1 = retry_until(Instant::now() + Duration::from_secs(30), || {
        let nodes = run(threadwire()
            .env("THREADWIRE_CONSOLE_DIR", &consoles)
            .args(["vm", "nodes"]));
        let rows: Vec<Vec<String>> = nodes
            .stdout
            .lines()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect();
        let running = |node: &str| {
            rows.iter()
                .find(|r| r.first().map(String::as_str) == Some(node))
                .filter(|r| r.get(3).and_then(|t| t.parse::<u32>().ok()) >= Some(3))
                .and_then(|r| r.get(2).cloned())
        };
        running("n0").and(running("n1"))
    });
    if let Some(pid) = &node1 {
        let killed = std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status()
            .expect("run kill");
        assert!(killed.success(), "kill -KILL {pid}");
    }
    let ran = job.join().expect("the job's thread");
    let _ = std::fs::remove_dir_all(&consoles);
    assert!(
        node1.is_some(),
        "the app never ran on both nodes: {}",
        ran.show()
    );
    assert_ne!(ran.code(), Some(0), "{}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("[n0] threadwire: ") && l.contains("n1 was lost")),
        "node 0 did not fail naming n1: {}",
        ran.show()
    );
    assert!(!ran.stdout.contains("verified"), "{}", ran.show());
}
