//! The `threadwire` command end to end: `run` with its options, `apps`,
//! and what a node program says when started without it.
//!
//! The node programs are examples of other workspace crates (`hello` of
//! threadwire-apps, `node-misbehave` of threadwire's tests), which
//! `cargo test --workspace` builds into `target/<profile>/examples/`.

use std::process::Stdio;
use std::time::{Duration, Instant};
use threadwire_testbed::process::{wait_all_exited, Pidfd};

mod support;
use support::command::*;

#[test]
fn run_hello_prefixes_every_line_with_its_node() {
    let ran = run_ok(
        threadwire()
            .args(["run", "-n", "3", "--"])
            .arg(example("hello")),
    );
    let lines: Vec<&str> = ran.stdout.lines().collect();
    for line in &lines {
        let node = line
            .strip_prefix("[n")
            .and_then(|r| r.split_once("] "))
            .map(|(n, _)| n);
        assert!(
            matches!(node, Some("0" | "1" | "2")),
            "line without a node prefix: {line:?}\n{}",
            ran.show()
        );
    }
    // n0.t0 is greeted by every other thread: 3 nodes × 4 threads − itself.
    let mut greeters: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("[n0] n0.t0 got: hello from "))
        .collect();
    greeters.sort();
    let mut expected: Vec<String> = (0..3)
        .flat_map(|n| (0..4).map(move |t| format!("n{n}.t{t}")))
        .filter(|a| a != "n0.t0")
        .collect();
    expected.sort();
    assert_eq!(greeters, expected, "{}", ran.show());
}

#[test]
fn failing_node_sets_the_status_and_is_named() {
    let ran = run(threadwire()
        .args(["run", "-n", "3", "--"])
        .arg(example("node-misbehave"))
        .args(["exit-on", "1", "3"]));
    assert_eq!(ran.code(), Some(3), "{}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("threadwire: ") && l.contains("n1") && l.contains("status 3")),
        "no message naming the failed node:\n{}",
        ran.show()
    );
}

#[test]
fn keep_going_lets_the_others_finish() {
    let ran = run(threadwire()
        .args(["run", "-n", "3", "--keep-going", "--"])
        .arg(example("node-misbehave"))
        .args(["exit-on", "1", "3"]));
    assert_eq!(ran.code(), Some(3), "{}", ran.show());
    assert!(
        ran.stderr.contains("the other nodes run on"),
        "{}",
        ran.show()
    );
    for node in [0, 2] {
        assert!(
            ran.stdout
                .lines()
                .any(|l| l.starts_with(&format!("[n{node}] n{node}: receive: node n1"))),
            "n{node} did not see the loss of n1:\n{}",
            ran.show()
        );
    }
}

#[test]
fn timeout_ends_a_hung_job_with_status_124() {
    let ran = run(threadwire()
        .args(["run", "-n", "2", "--timeout", "1", "--"])
        .arg(example("node-misbehave"))
        .arg("sleep"));
    assert_eq!(ran.code(), Some(124), "{}", ran.show());
    assert!(ran.stderr.contains("timeout"), "{}", ran.show());
}

#[test]
fn stats_prints_one_row_per_node() {
    let ran = run_ok(
        threadwire()
            .args(["run", "-n", "3", "--stats", "--"])
            .arg(example("hello")),
    );
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.contains("node") && l.contains("msgs sent") && l.contains("msgs recv")),
        "no table header:\n{}",
        ran.show()
    );
    // Columns: node, msgs sent, bytes sent, msgs recv, bytes recv, mean size.
    let row = |node: &str| -> Vec<f64> {
        let rows: Vec<Vec<&str>> = ran
            .rows()
            .into_iter()
            .filter(|w| w.first() == Some(&node))
            .collect();
        assert_eq!(rows.len(), 1, "rows for {node}:\n{}", ran.show());
        rows[0][1..]
            .iter()
            .map(|w| {
                w.parse()
                    .unwrap_or_else(|_| panic!("{node}: {w:?} is not a number\n{}", ran.show()))
            })
            .collect()
    };
    let (n0, n1, n2) = (row("n0"), row("n1"), row("n2"));
    assert_eq!(n0.len(), 5);
    // hello: every thread but n0.t0 greets n0.t0; a node has 4 threads.
    assert_eq!((n0[0], n0[2]), (3.0, 11.0), "n0 sends 3 and receives 11");
    assert_eq!((n1[0], n1[2]), (4.0, 0.0), "n1 sends 4 and receives none");
    assert_eq!((n2[0], n2[2]), (4.0, 0.0), "n2 sends 4 and receives none");
}

#[test]
fn apps_matmul_verifies() {
    let ran = run_ok(threadwire().args(["apps", "matmul", "-n", "3", "--size", "64"]));
    assert!(ran.stdout.contains("verified"), "{}", ran.show());
}

#[test]
fn a_node_program_alone_says_to_use_threadwire_run() {
    let ran = run(&mut command(example("hello")));
    assert_ne!(ran.code(), Some(0), "{}", ran.show());
    assert!(
        ran.stderr.contains("threadwire run"),
        "no hint to start it with `threadwire run`:\n{}",
        ran.show()
    );
}

#[test]
fn a_missing_program_is_an_error() {
    let ran = run(threadwire().args(["run", "-n", "2", "--", "/nonexistent/threadwire-node"]));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(
        ran.stderr.contains("/nonexistent/threadwire-node"),
        "{}",
        ran.show()
    );
}

/// The launcher killed with SIGKILL while its nodes share memory: the nodes
/// notice, end, and leave no shared memory behind (regions are anonymous
/// memfds, freed with the last process that maps them).
#[test]
fn a_killed_launcher_leaves_no_shared_memory_behind() {
    use std::io::BufRead;
    let mut child = threadwire()
        .args(["run", "-n", "2", "--"])
        .arg(example("node-shm"))
        .arg("wait")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start threadwire run");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (mut pids, mut regions) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + HANG;
    while pids.len() < 2 && Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some((_, pid)) = line.split_once("ready pid=") {
            pids.push(pid.trim().parse::<u32>().expect("a pid"));
        }
        if let Some((_, name)) = line.split_once("region ") {
            regions.push(name.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    child.kill().expect("SIGKILL the launcher");
    let _ = child.wait();
    assert_eq!(pids.len(), 2, "both nodes get ready");
    assert!(!regions.is_empty(), "the nodes share memory");
    // A node already gone has no pidfd to open: it has ended.
    let pidfds: Vec<Pidfd> = pids
        .iter()
        .filter_map(|&pid| Pidfd::open(pid).ok())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let ended = wait_all_exited(&pidfds, deadline).expect("wait on the nodes' pidfds");
    if !ended {
        for pid in &pids {
            // SAFETY: kill(2) of a node process this test started.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
    }
    assert!(ended, "nodes {pids:?} outlived their launcher");
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let maps = std::fs::read_to_string(entry.path().join("maps")).unwrap_or_default();
        for name in &regions {
            assert!(!maps.contains(name.as_str()), "{name} still mapped");
        }
    }
    let dev_shm: Vec<_> = std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("threadwire"))
        .collect();
    assert!(dev_shm.is_empty(), "{dev_shm:?}");
}

/// Four nodes on two emulated hosts (`threadwire net up`, `run --hosts`):
/// nodes of one namespace share memory, nodes of different namespaces use
/// TCP over the bridge. Needs root and network namespaces; skips saying
/// why without them.
#[test]
fn nodes_on_namespace_hosts_share_memory_inside_and_use_tcp_between() {
    const PREFIX: &str = "twn1";
    let Some(hosts) = NamespaceHosts::up(PREFIX, 2, &[]) else {
        return;
    };
    let ran = run(threadwire()
        .args(["run", "-n", "4", "-v", "--hosts"])
        .arg(&hosts.file)
        .arg("--")
        .arg(example("node-shm"))
        .arg("exchange"));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    // Node i runs on host i % 2: n0 and n2 on h0, n1 and n3 on h1.
    for (line, why) in [
        ("n0 -> n2: shm", "same namespace"),
        ("n1 -> n3: shm", "same namespace"),
        ("n0 -> n1: tcp", "different namespaces"),
        ("n2 -> n3: tcp", "different namespaces"),
    ] {
        assert!(
            ran.stderr.contains(line),
            "{why}: no {line:?}\n{}",
            ran.show()
        );
    }
    for node in 0..4 {
        assert!(
            ran.stdout.contains(&format!("[n{node}] shm n{node}: ok")),
            "{}",
            ran.show()
        );
    }
}

/// `net up --loss --delay --load` starts the delay queues and the load's
/// source as `threadwire net …` helpers, `net show` lists the
/// impairments, and `net down` stops the helpers. Needs root, network
/// namespaces and iptables; skips saying why without them.
#[test]
fn net_up_with_impairments_starts_helpers_that_down_stops() {
    const PREFIX: &str = "twn2";
    let helpers = || {
        let ps = run(std::process::Command::new("ps").args(["-eo", "args"]));
        ps.stdout
            .lines()
            .filter(|l| l.contains(&format!(" net delay-queue {PREFIX} ")))
            .chain(
                ps.stdout
                    .lines()
                    .filter(|l| l.contains(&format!(" net load-source {PREFIX} "))),
            )
            .count()
    };
    let args = [
        "net",
        "up",
        "--hosts",
        "2",
        "--link",
        "fast100",
        "--loss",
        "1",
        "--delay",
        "1ms/0.2ms",
        "--load",
        "0.2",
        "--prefix",
        PREFIX,
    ];
    let up = run(threadwire().args(args));
    if up.code() != Some(0) {
        eprintln!(
            "SKIPPED: cannot create impaired hosts here: {}",
            up.stderr.trim()
        );
        return;
    }
    let _guard = NetGuard(PREFIX);
    assert_eq!(helpers(), 3, "{}", up.show());
    let show = run(threadwire().args(["net", "show", "--prefix", PREFIX]));
    for line in [
        "impairment: loss 1%",
        "impairment: delay 1ms/200us",
        "impairment: load 0.2",
    ] {
        assert!(show.stdout.contains(line), "no {line:?}\n{}", show.show());
    }
    let down = run(threadwire().args(["net", "down", "--prefix", PREFIX]));
    assert_eq!(down.code(), Some(0), "{}", down.show());
    assert_eq!(helpers(), 0);
    let refused = run(threadwire().args(["net", "up", "--load", "0.5", "--prefix", PREFIX]));
    assert!(
        refused.stderr.contains("needs a shaped link"),
        "{}",
        refused.show()
    );
}

/// `run --verbose` shows every node's join (with its channels) and its
/// leave, as the launcher's event log.
#[test]
fn run_verbose_shows_every_join_and_leave() {
    let ran = run_ok(
        threadwire()
            .args(["run", "-n", "2", "--verbose", "--"])
            .arg(example("hello")),
    );
    for node in 0..2 {
        for line in [
            format!("threadwire: n{node} joined"),
            format!("threadwire: n{node} left: exited with status 0"),
        ] {
            assert_eq!(
                ran.stderr.lines().filter(|l| *l == line).count(),
                1,
                "{line:?}\n{}",
                ran.show()
            );
        }
    }
}

/// A job of 128 nodes on this machine passes a token through every node,
/// and each node connects only to the two it talks to (pairs connect on
/// first use): `run --verbose` shows each node's routes at its end.
#[test]
fn a_ring_through_128_nodes_connects_only_neighbours() {
    let ran = run_ok(
        threadwire()
            .args(["run", "-n", "128", "--verbose", "--"])
            .arg(example("ring"))
            .args(["1", "10"]),
    );
    assert!(
        ran.stdout
            .contains("[n0] token passed 10 times through 128 threads on 128 nodes"),
        "{}",
        ran.show()
    );
    for node in 0..128u32 {
        let routes: Vec<&str> = ran
            .stderr
            .lines()
            .filter(|l| l.starts_with(&format!("threadwire: n{node} -> ")))
            .collect();
        let (prev, next) = ((node + 127) % 128, (node + 1) % 128);
        assert_eq!(routes.len(), 2, "n{node}: {routes:?}");
        for peer in [prev, next] {
            assert!(
                routes
                    .iter()
                    .any(|l| l.starts_with(&format!("threadwire: n{node} -> n{peer}: shm"))),
                "n{node}: {routes:?}"
            );
        }
    }
}
