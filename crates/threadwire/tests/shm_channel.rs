//! Nodes on one host over the shared-memory channel: chosen without
//! configuration, forced either way, messages of every size (inline,
//! chunked, cross-memory copy), nothing left behind after a normal exit or
//! a SIGKILL, and a forged record closing the channel instead of crashing
//! a node (see `nodes/shm.rs`). The launcher's own SIGKILL is tested with
//! the binary, in `crates/cli/tests/cli_run.rs`.

mod support;

use support::JobOutput;
use threadwire_launch::Event;

/// The channel names every node reported last (at its end: pairs connect
/// on first use), `routes[node][peer]`.
fn routes(out: &JobOutput) -> Vec<Vec<String>> {
    let mut routes = vec![Vec::new(); out.stdout.len()];
    for e in &out.events {
        if let Event::Channels { node, routes: r } | Event::Routes { node, routes: r } = e {
            routes[*node as usize] = r.clone();
        }
    }
    routes
}

/// Names of shared-memory objects in `/dev/shm` that could be ours.
fn dev_shm() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("threadwire"))
                .collect()
        })
        .unwrap_or_default()
}

/// Processes that still map a region named `name`.
fn mappers(name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(maps) = std::fs::read_to_string(entry.path().join("maps")) {
            if maps.contains(name) {
                found.push(pid);
            }
        }
    }
    found
}

/// The region names the nodes printed, checked to be gone.
fn assert_nothing_left(out: &JobOutput, before: &[String]) {
    let t = out.transcript();
    let names: Vec<&str> = (0..out.stdout.len() as u32)
        .flat_map(|n| out.lines_with(n, &format!("shm n{n}: region ")))
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    for name in names {
        assert!(name.starts_with("threadwire-job"), "{name}:\n{t}");
        assert!(mappers(name).is_empty(), "{name} is still mapped:\n{t}");
    }
    assert_eq!(dev_shm(), before, "/dev/shm changed:\n{t}");
}

#[test]
fn nodes_on_one_host_choose_shared_memory() {
    let before = dev_shm();
    let out = support::run(support::job(2, "node-shm").args(["exchange"]));
    out.assert_success();
    let t = out.transcript();
    let routes = routes(&out);
    assert_eq!(
        routes[0][1], "shm (large messages by cross-memory copy)",
        "{t}"
    );
    assert_eq!(routes[1][0], routes[0][1], "{t}");
    for node in 0..2 {
        out.line(node, &format!("shm n{node}: ok"));
        assert_eq!(
            out.lines_with(node, &format!("shm n{node}: region threadwire-job"))
                .len(),
            1,
            "one region per pair:\n{t}"
        );
    }
    assert_nothing_left(&out, &before);
}

/// Two pairs ping-ponging on this 2-core machine, every waiter polling:
/// no spinning node may starve the one it waits for (the job would run
/// into its timeout).
#[test]
fn four_nodes_ping_pong_in_pairs_on_two_cores() {
    let out = support::run(support::job(4, "node-shm").args(["exchange"]));
    out.assert_success();
    for node in 0..4 {
        out.line(node, &format!("shm n{node}: ok"));
    }
}

#[test]
fn without_cross_memory_attach_large_messages_go_in_chunks() {
    let out = support::run(
        support::job(2, "node-shm")
            .args(["exchange"])
            .env(threadwire::env::SHM_CMA, "0"),
    );
    out.assert_success();
    assert_eq!(
        routes(&out)[0][1],
        "shm (large messages in chunks)",
        "{}",
        out.transcript()
    );
}

#[test]
fn tcp_can_be_forced() {
    let out = support::run(
        support::job(2, "node-shm")
            .args(["exchange"])
            .env(threadwire::env::CHANNEL, "tcp"),
    );
    out.assert_success();
    assert_eq!(routes(&out)[1][0], "tcp", "{}", out.transcript());
    assert!(out.lines_with(0, "shm n0: region").is_empty());
}

#[test]
fn a_bad_channel_name_fails_init_clearly() {
    let out = support::run(
        support::job(2, "node-shm")
            .args(["exchange"])
            .env(threadwire::env::CHANNEL, "carrier-pigeon"),
    );
    assert_ne!(out.report.status, 0);
    assert!(
        out.stderr[0]
            .iter()
            .any(|l| l.contains("THREADWIRE_CHANNEL") && l.contains("carrier-pigeon")),
        "{}",
        out.transcript()
    );
}

#[test]
fn a_node_killed_by_sigkill_leaves_nothing_behind() {
    let before = dev_shm();
    let mut killed = false;
    let out = support::run_observed(
        support::job(2, "node-shm")
            .args(["wait"])
            .on_failure(threadwire_launch::FailurePolicy::Continue),
        |e| {
            if let Event::Output { node: 1, line, .. } = e {
                if let Some(pid) = line.strip_prefix("shm n1: ready pid=") {
                    let pid: i32 = pid.parse().expect("a pid");
                    // SAFETY: a plain kill(2) of the node process we started.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    killed = true;
                }
            }
        },
    );
    let t = out.transcript();
    assert!(killed, "n1 never got ready:\n{t}");
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    assert!(
        out.line(0, "shm n0: lost").contains("n1"),
        "n0 was not told of n1's death:\n{t}"
    );
    assert_eq!(
        out.report.exits[1],
        threadwire_launch::NodeExit::Signal(9),
        "{t}"
    );
    assert_nothing_left(&out, &before);
}

#[test]
fn a_forged_record_closes_the_channel_and_crashes_nothing() {
    let out = support::run(support::job(2, "node-shm").args(["corrupt"]));
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    assert!(
        out.report.exits.iter().all(|e| e.success()),
        "a node crashed:\n{t}"
    );
    assert!(
        out.line(0, "shm n0: PeerLost").contains("n1"),
        "n0 did not drop n1:\n{t}"
    );
    assert!(
        out.stderr[0]
            .iter()
            .any(|l| l.contains("shared-memory ring corrupt")),
        "the corruption was not reported:\n{t}"
    );
}
