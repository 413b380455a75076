//! Silent peers (`progress/liveness.rs`): a node stopped by SIGSTOP, or
//! whose host's link is cut, closes nothing, yet the receives waiting on
//! it end with `PeerLost` for silence within the peer timeout, and the
//! launcher then ends the stopped node and the job; nodes that only
//! compute, in one thread or in all, are not taken for lost (see
//! `nodes/silent.rs`).

mod support;

use support::JobOutput;
use threadwire_launch::{FailurePolicy, NodeExit};

/// The peer timeout of these jobs: the default.
const TIMEOUT_MS: f64 = 1000.0;
/// Slack over the timeout for a detection on a loaded test machine. The
/// protocol's bound is the timeout itself; the figures are measured in
/// docs/PERFORMANCE-STUDIES.md, "Silent peers (issue 14)".
const SLACK_MS: f64 = 1000.0;

const SURVIVOR_CHECKS: [&str; 4] = [
    "n0.t0: recv from n2.t0: PeerLost n2 (silent for",
    "n0.t1: irecv from node n2: PeerLost n2 (silent for",
    "n1.t0: recv from n2.t0: PeerLost n2 (silent for",
    "n1.t1: irecv from node n2: PeerLost n2 (silent for",
];

/// The survivors' checks; returns the detection times, in milliseconds.
fn survivors_found_n2_silent(out: &JobOutput) -> Vec<f64> {
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    let mut times = Vec::new();
    for check in SURVIVOR_CHECKS {
        let node = if check.starts_with("n0") { 0 } else { 1 };
        let line = out.line(node, check);
        let ms: f64 = line
            .rsplit_once(" after ")
            .and_then(|(_, d)| d.strip_suffix(" ms"))
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("no detection time in {line:?}"));
        assert!(
            ms <= TIMEOUT_MS + SLACK_MS,
            "found silent only after {ms} ms:\n{t}"
        );
        times.push(ms);
    }
    for node in 0..2 {
        out.line(node, &format!("n{node}.t0: send to n2.t0: PeerLost n2"));
        out.line(node, &format!("n{node}: lost node n2 was lost: silent for"));
        out.line(node, &format!("n{node}: done"));
    }
    times
}

fn stopped(channel: &str) {
    let out = support::run(
        support::job(3, "node-silent")
            .args(["stop"])
            .env(threadwire::env::CHANNEL, channel)
            // A survivor that fails its checks ends the job, stopped n2
            // with it, instead of leaving it to the job's timeout.
            .on_failure(FailurePolicy::Abort),
    );
    let times = survivors_found_n2_silent(&out);
    eprintln!("{channel}: stopped n2 found silent after {times:?} ms");
    out.line(2, "n2: stopping");
    // The launcher found n2's control connection silent, and killed it.
    let t = out.transcript();
    assert_eq!(out.report.exits[2], NodeExit::Signal(9), "{t}");
    let (node, cause) = out.report.failure.clone().expect("a failure is reported");
    assert!(
        node == 2 && cause.contains("n2 was silent for"),
        "{cause}\n{t}"
    );
    for node in 0..2 {
        assert_eq!(out.report.exits[node], NodeExit::Code(0), "{t}");
    }
}

/// Between nodes of one host: the data goes through shared memory, the
/// heartbeats through the pair's TCP connection.
#[test]
fn stopped_node_is_found_silent_over_shared_memory() {
    stopped("auto");
}

#[test]
fn stopped_node_is_found_silent_over_tcp() {
    stopped("tcp");
}

/// On the reliable UDP channel the peer is watched once the pair has
/// settled its channel (`liveness`, step 4): the data and keep-alives go
/// in datagrams, and a stopped peer is found within the timeout all the
/// same.
#[test]
fn stopped_node_is_found_silent_over_udp() {
    stopped("udp");
}

/// A thread of n1 computes for three timeouts while another waits in a
/// receive: nobody is lost.
#[test]
fn node_busy_in_one_thread_is_not_lost() {
    let out = support::run(support::job(2, "node-silent").args(["busy"]));
    out.assert_success();
    out.line(1, "n1.t0: computed for 3000 ms");
    for node in 0..2 {
        out.line(node, &format!("n{node}: no peer lost"));
    }
}

/// n1's only thread computes for three timeouts while n0 floods it over
/// TCP with more than its socket holds: n1's liveness thread keeps
/// answering, and keeps reading, so that n0's heartbeats still land.
#[test]
fn node_busy_in_every_thread_is_not_lost() {
    let out = support::run(
        support::job(2, "node-silent")
            .args(["all-busy"])
            .env(threadwire::env::CHANNEL, "tcp"),
    );
    out.assert_success();
    out.line(1, "n1: computed for 3000 ms");
    for node in 0..2 {
        out.line(node, &format!("n{node}: no peer lost"));
    }
}

/// n2 on an emulated host of its own takes its link down: its peers find
/// it silent, and it finds them silent. Needs root and network
/// namespaces; without them it says why it skips.
#[test]
fn node_whose_link_is_cut_is_found_silent() {
    use threadwire_testbed::net::{self, Link, ScopedNet};
    if let Some(why) = net::unavailable("twls") {
        eprintln!("SKIPPED: cannot create network namespaces here: {why}");
        return;
    }
    let hosts = ScopedNet::up_with_free_prefix("twls", 3, Link::Unshaped)
        .expect("namespaces are available, yet the net could not be built");
    let out = support::run(
        support::job(3, "node-silent")
            .args(["cut"])
            .hosts(hosts.launch_hosts())
            .on_failure(FailurePolicy::Continue),
    );
    let times = survivors_found_n2_silent(&out);
    eprintln!("cut link: n2 found silent after {times:?} ms");
    out.line(2, "n2: link down");
    out.line(2, "n2: PeerLost n0 (silent for");
}
