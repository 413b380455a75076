//! Every collective between the threads of real jobs, against a sequential
//! reference, on layouts of nodes × fibers that fit two cores (32 members
//! as 1 × 32, 4 × 8 and 8 × 4), over shared memory, TCP and emulated
//! hosts (network namespaces, where this runs as root); every
//! algorithm forced at least once; contexts isolating groups and plain
//! traffic; nonblocking collectives overlapped with point-to-point; bad
//! arguments; a member's node killed mid-allreduce (see `nodes/coll.rs`).

mod support;

use support::JobOutput;
use threadwire_launch::FailurePolicy;

fn coll(nodes: u32, threads: u32, mode: &str, env: &[(&str, &str)]) -> JobOutput {
    coll_of(nodes, threads, mode, "fibers", env)
}

/// `members`: `fibers` or `os` (thread 0 is always the main OS thread).
fn coll_of(nodes: u32, threads: u32, mode: &str, members: &str, env: &[(&str, &str)]) -> JobOutput {
    let mut spec =
        support::job(nodes, "node-coll").args([mode, &threads.to_string(), "7", members]);
    for &(k, v) in env {
        spec = spec.env(k, v);
    }
    let out = support::run(spec);
    out.assert_success();
    for node in 0..nodes {
        out.line(node, &format!("coll n{node}: ok mode={mode} "));
    }
    out
}

#[test]
fn one_member() {
    coll(1, 1, "all", &[]);
}

#[test]
fn one_node_of_eight_fibers() {
    coll(1, 8, "all", &[]);
}

/// Also without the argument check (on by default in the debug builds
/// tests run; release builds run without it).
#[test]
fn two_nodes_of_four_fibers() {
    coll(2, 4, "all", &[]);
    coll(2, 4, "all", &[(threadwire::env::COLL_CHECKS, "0")]);
}

#[test]
fn four_nodes_of_two_fibers_over_tcp() {
    coll(4, 2, "all", &[(threadwire::env::CHANNEL, "tcp")]);
}

#[test]
fn three_nodes_of_three_fibers_over_shared_memory() {
    coll(3, 3, "all", &[(threadwire::env::CHANNEL, "shm")]);
}

/// The per-node stage (forced and by default) with OS-thread members,
/// which spin, yield and sleep where fibers park.
#[test]
fn two_nodes_of_four_os_threads() {
    coll_of(2, 4, "all", "os", &[]);
}

#[test]
fn one_node_of_eight_os_threads_and_three_of_three() {
    coll_of(1, 8, "world", "os", &[]);
    coll_of(3, 3, "world", "os", &[(threadwire::env::CHANNEL, "shm")]);
}

/// 32 members on two cores, spread three ways: the world group at small
/// sizes, then groups of 1 to 8 members at once (mode `world`). One node
/// (the per-node stage alone), four over shared memory, eight over TCP.
#[test]
fn thirty_two_members_as_one_node_of_thirty_two_fibers() {
    coll(1, 32, "world", &[]);
}

#[test]
fn thirty_two_members_as_four_nodes_of_eight_fibers_over_shared_memory() {
    coll(4, 8, "world", &[(threadwire::env::CHANNEL, "shm")]);
}

#[test]
fn thirty_two_members_as_eight_nodes_of_four_fibers_over_tcp() {
    coll(8, 4, "world", &[(threadwire::env::CHANNEL, "tcp")]);
}

/// Four nodes of two fibers on two emulated hosts (network namespaces on
/// a bridge): nodes of one host share memory, the hosts talk TCP. Needs
/// root and network namespaces; without them it says why it skips.
#[test]
fn four_nodes_of_two_fibers_on_two_namespace_hosts() {
    use threadwire_testbed::net::{self, Link, ScopedNet};
    if let Some(why) = net::unavailable("twcc") {
        eprintln!("SKIPPED: cannot create network namespaces here: {why}");
        return;
    }
    let hosts = ScopedNet::up_with_free_prefix("twcc", 2, Link::Unshaped)
        .expect("namespaces are available, yet the net could not be built");
    let nodes = 4;
    // Also with the host stage wherever it fits: two nodes a host, its
    // leaders on the network.
    for host_stage in ["0", "1"] {
        let spec = support::job(nodes, "node-coll")
            .args(["all", "2", "7", "fibers"])
            .env(threadwire::env::HOST_STAGE, host_stage)
            .hosts(hosts.launch_hosts());
        let out = support::run(spec);
        out.assert_success();
        for node in 0..nodes {
            out.line(node, &format!("coll n{node}: ok mode=all "));
        }
    }
}

/// The host stage taken wherever it fits (`THREADWIRE_HOST_STAGE=1`):
/// nodes of one thread (the stage alone), of several fibers and of
/// several OS threads (under the per-node stage), over shared memory; and
/// over TCP, where the group has no host stage and runs on messages.
#[test]
fn host_stage_between_the_nodes_of_one_host() {
    let on = [(threadwire::env::HOST_STAGE, "1")];
    coll(4, 1, "all", &on);
    coll(3, 3, "all", &on);
    coll_of(2, 4, "all", "os", &on);
    coll(4, 8, "world", &on);
    coll(2, 3, "mixed", &on);
    coll(3, 1, "overlap", &on);
    coll(4, 2, "all", &[on[0], (threadwire::env::CHANNEL, "tcp")]);
}

#[test]
fn eight_nodes_of_one_thread() {
    coll(8, 1, "world", &[]);
}

#[test]
fn contexts_isolate_groups_and_plain_traffic() {
    coll(1, 3, "isolation", &[]);
    coll(3, 2, "isolation", &[]);
}

#[test]
fn nonblocking_overlaps_point_to_point() {
    coll(2, 3, "overlap", &[]);
    coll(3, 1, "overlap", &[(threadwire::env::PROGRESS, "thread")]);
    coll(2, 2, "overlap", &[(threadwire::env::PROGRESS, "thread")]);
}

/// Some members call `barrier`, `allreduce` and `bcast` where the others
/// call the nonblocking forms, for the same calls (erroneous in MPI; here
/// both forms take the per-node stage and complete); stage calls under
/// way together; a freed group's id kept while a call on it is under way.
#[test]
fn blocking_and_nonblocking_forms_mix() {
    coll(1, 4, "mixed", &[]);
    coll(2, 3, "mixed", &[]);
}

#[test]
fn bad_arguments_give_typed_errors() {
    coll(1, 1, "errors", &[]);
    coll(2, 3, "errors", &[]);
}

/// Arguments bad or differing at only some members (a root, a length
/// across the per-node stage's limit, an operation, counts, another
/// collective): with the argument check every member gets a typed error.
#[test]
fn arguments_differing_at_some_members_fail_everywhere() {
    coll(1, 3, "disagree", &[]);
    coll(2, 3, "disagree", &[]);
}

/// Node 2 of 3 dies as the others enter an allreduce: every surviving
/// member's allreduce fails with `PeerLost`, none hangs. (The node named
/// is the dead one, unless a survivor that already saw the loss and
/// finished is what a member hears of first.)
#[test]
fn member_lost_during_allreduce() {
    member_lost("kill");
}

/// The same in the per-node stage: leaders see the loss among leaders,
/// their members see it while they wait for their leader.
#[test]
fn member_lost_during_small_allreduce() {
    member_lost("kill-small");
}

/// The same through the host stage: the host's leader sees the dead
/// node never arrive, the other node leaders see the loss while they wait
/// for its release.
#[test]
fn member_lost_during_small_allreduce_in_the_host_stage() {
    member_lost_with("kill-small", 3, &[(threadwire::env::HOST_STAGE, "1")]);
    // One thread a node: the host stage by default, with no per-node stage.
    member_lost_with("kill-small", 1, &[]);
}

/// The same in the host stage's cross-memory reads (1 MiB, nodes of one
/// host): a dead node never arrives, or its buffer cannot be read.
#[test]
fn member_lost_during_large_allreduce_in_the_host_stage() {
    member_lost_with("kill-large", 1, &[]);
    member_lost_with("kill-large", 3, &[]);
}

fn member_lost(mode: &str) {
    member_lost_with(mode, 3, &[]);
}

fn member_lost_with(mode: &str, threads: u32, env: &[(&str, &str)]) {
    let nodes = 3;
    let mut spec = support::job(nodes, "node-coll")
        .args([mode, &threads.to_string()])
        .on_failure(FailurePolicy::Continue);
    for &(k, v) in env {
        spec = spec.env(k, v);
    }
    let out = support::run(spec);
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    for node in 0..nodes - 1 {
        for thread in 0..threads {
            out.line(node, &format!("n{node}.t{thread}: PeerLost n"));
        }
        out.line(node, "coll n");
    }
    out.line(2, "n2: killing myself");
}
