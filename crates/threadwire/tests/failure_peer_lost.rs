//! A node killed by SIGKILL in the middle of an exchange: the survivors'
//! receives (by address, by node, from anyone, posted with `irecv`) end with
//! `PeerLost`, sends to it fail with `PeerLost`, `on_peer_lost` subscribers
//! are told, the launcher names the node and the signal, and the job ends
//! with no process left behind (see `nodes/failure.rs`).

mod support;

use support::JobOutput;
use threadwire_launch::{Event, FailurePolicy, NodeExit};

const SURVIVOR_CHECKS: [&str; 8] = [
    "n0.t0: recv from n2.t0: PeerLost n2",
    "n0.t0: send to n2.t0: PeerLost n2",
    "n0.t1: any-source recv: PeerLost n2",
    "n0.t1: send to n2.t0: PeerLost n2",
    "n1.t0: recv from node n2: PeerLost n2",
    "n1.t0: send to n2.t0: PeerLost n2",
    "n1.t1: any-source irecv: PeerLost n2",
    "n1.t1: send to n2.t0: PeerLost n2",
];

fn run_failure(mode: &str, policy: FailurePolicy) -> JobOutput {
    let out = support::run(
        support::job(3, "node-failure")
            .args([mode])
            .on_failure(policy),
    );
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    for check in SURVIVOR_CHECKS {
        let node = if check.starts_with("n0") { 0 } else { 1 };
        assert!(
            out.stdout[node].iter().any(|l| l.starts_with(check)),
            "missing {check:?}:\n{t}"
        );
    }
    for node in 0..2 {
        assert!(
            out.stdout[node]
                .iter()
                .any(|l| l.starts_with(&format!("n{node}: on_peer_lost: node n2 was lost"))),
            "n{node}'s on_peer_lost subscriber was not called for n2:\n{t}"
        );
        out.line(node as u32, &format!("n{node}: notified of the loss of n2"));
    }
    out.line(2, "n2: killing myself");

    // The launcher names the node and the signal.
    assert_eq!(out.report.exits[2], NodeExit::Signal(9), "{t}");
    let (node, cause) = out.report.failure.clone().expect("a failure is reported");
    assert_eq!(node, 2, "{t}");
    assert!(
        cause.contains("n2") && cause.contains("signal 9"),
        "{cause}"
    );
    assert_eq!(out.report.status, 128 + 9, "{t}");
    let aborting = policy == FailurePolicy::Abort;
    assert!(
        out.events.iter().any(|e| matches!(
            e,
            Event::NodeFailed { node: 2, aborting: a, .. } if *a == aborting
        )),
        "no NodeFailed event for n2:\n{t}"
    );
    assert_no_process_left(&out);
    out
}

/// Every node printed its pid first; none may outlive the job.
fn assert_no_process_left(out: &JobOutput) {
    for node in 0..3 {
        let pid: u32 = out
            .line(node, "pid ")
            .strip_prefix("pid ")
            .and_then(|p| p.parse().ok())
            .expect("pid line");
        assert!(
            !support::process_alive(pid, "node-failure"),
            "n{node} (pid {pid}) is still running after the job ended"
        );
    }
}

/// Survivor `node` printed `last` and ended with `exit`.
fn assert_survivor(out: &JobOutput, node: u32, last: &str, exit: NodeExit) {
    out.line(node, last);
    assert_eq!(
        out.report.exits[node as usize],
        exit,
        "survivor n{node} did not end as expected:\n{}",
        out.transcript()
    );
}

/// The default policy: the survivors see the loss, finish cleanly, and the
/// job reports node 2's death.
#[test]
fn sigkill_is_reported_as_peer_lost() {
    let out = run_failure("abort", FailurePolicy::Abort);
    for node in 0..2 {
        assert_survivor(&out, node, &format!("n{node}: done"), NodeExit::Code(0));
    }
}

/// Under `FailurePolicy::Continue` the survivors keep exchanging among
/// themselves after the loss and finish normally.
#[test]
fn survivors_continue_after_a_loss() {
    let out = run_failure("continue", FailurePolicy::Continue);
    for (node, lines) in [(0, ["n0.t0", "n0.t1"]), (1, ["n1.t0", "n1.t1"])] {
        for who in lines {
            out.line(node, &format!("{who}: continued: 50 rounds"));
        }
        assert_survivor(&out, node, &format!("n{node}: done"), NodeExit::Code(0));
    }
}

/// Survivors that ignore the loss are killed after the grace period: the
/// job still ends, and leaves nothing running.
#[test]
fn abort_ends_survivors_that_ignore_the_loss() {
    let out = run_failure("stubborn", FailurePolicy::Abort);
    for node in 0..2 {
        assert_survivor(
            &out,
            node,
            &format!("n{node}: ignoring the loss"),
            NodeExit::Signal(9),
        );
    }
}
