//! Dynamic named groups in real jobs: joins and leaves from fibers of
//! several nodes at once with consistent instances; a frozen group's
//! collectives (blocking and not) while others join and leave the name;
//! over TCP too; a member's node
//! finishing; the home node's death or finish, which the name survives,
//! also in the middle of joins and leaves (see `nodes/named.rs`).

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

/// The name's home killed, or finishing: the next node serves the name
/// with every survivor's instance (see `nodes/named.rs`).
#[test]
fn the_name_survives_its_home_node_killed() {
    home_gone("home-lost", 3, 1, Some(2));
    home_gone("home-lost", 2, 1, Some(1));
}

#[test]
fn the_name_survives_its_home_node_finishing() {
    home_gone("home-finishes", 3, 1, None);
}

/// Joins and leaves under way while the home dies: each applied once.
#[test]
fn joins_and_leaves_survive_their_home_killed_mid_stream() {
    home_gone("churn-home-killed", 4, 2, Some(3));
    home_gone("churn-home-killed", 3, 3, Some(2));
}

fn home_gone(mode: &str, nodes: u32, threads: u32, killed: Option<u32>) {
    let out = support::run(
        support::job(nodes, "node-named")
            .args([mode, &threads.to_string()])
            .on_failure(FailurePolicy::Continue),
    );
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    let gone = killed.unwrap_or(0);
    for node in (0..nodes).filter(|&n| n != gone) {
        if mode != "churn-home-killed" {
            out.line(node, &format!("n{node}: survived"));
        }
        out.line(node, &format!("named n{node}: ok"));
    }
    match killed {
        Some(n) => out.line(n, &format!("n{n}: killing myself")),
        None => out.line(0, "named n0: ok"),
    };
}
