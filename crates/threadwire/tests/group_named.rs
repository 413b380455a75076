//! Dynamic named groups in real jobs: joins and leaves from fibers of
//! several nodes at once with consistent instances; a frozen group's
//! collectives (blocking and not) while others join and leave the name;
//! over TCP too; a member's node
//! finishing; the home node's death (see `nodes/named.rs`).

mod support;

use threadwire_launch::FailurePolicy;

fn named(nodes: u32, threads: u32, mode: &str, env: &[(&str, &str)]) {
    let mut spec = support::job(nodes, "node-named").args([mode, &threads.to_string()]);
    for &(k, v) in env {
        spec = spec.env(k, v);
    }
    let out = support::run(spec);
    out.assert_success();
    for node in 0..nodes {
        out.line(node, &format!("named n{node}: ok mode={mode}"));
    }
}

#[test]
fn concurrent_joins_and_leaves_from_fibers() {
    named(1, 4, "churn", &[]);
    named(3, 3, "churn", &[]);
}

#[test]
fn concurrent_joins_and_leaves_over_tcp() {
    named(2, 3, "churn", &[(threadwire::env::CHANNEL, "tcp")]);
}

#[test]
fn frozen_group_runs_collectives_while_the_name_changes() {
    named(3, 3, "freeze", &[]);
    named(2, 4, "freeze", &[(threadwire::env::CHANNEL, "tcp")]);
}

#[test]
fn member_node_finishing_leaves_the_name() {
    named(3, 1, "member-finishes", &[]);
}

#[test]
fn home_node_lost_gives_a_typed_error() {
    let nodes = 3;
    let out = support::run(
        support::job(nodes, "node-named")
            .args(["home-lost", "1"])
            .on_failure(FailurePolicy::Continue),
    );
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    for node in 0..nodes - 1 {
        out.line(node, &format!("n{node}: HomeLost"));
        out.line(node, &format!("named n{node}: ok"));
    }
    out.line(2, "n2: killing myself");
}
