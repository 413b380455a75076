//! The shared memory across real nodes (`nodes/dsm.rs`): writes of every
//! node seen by every other after a barrier, with several writers on every
//! unit (false sharing) and with blocks, on 1, 2 and 4 nodes, one and
//! several threads per node, over shared memory and TCP.

#[path = "../../threadwire/tests/support/mod.rs"]
mod support;

use threadwire_launch::FailurePolicy;

fn run(nodes: u32, mode: &str, threads: usize, channel: &str) {
    run_with(nodes, mode, threads, channel, "auto");
}

/// [`run`], the engine told of accesses by `faults`
/// (`THREADWIRE_DSM_FAULTS`: auto, userfaultfd or mprotect).
fn run_with(nodes: u32, mode: &str, threads: usize, channel: &str, faults: &str) {
    let spec = support::job(nodes, "node-dsm")
        .args([mode, &threads.to_string()])
        .env(threadwire::env::CHANNEL, channel)
        .env("THREADWIRE_DSM_FAULTS", faults);
    let out = support::run(spec);
    print!("{}", out.transcript());
    let done = format!("dsm {mode}: ok");
    assert!(
        out.stdout
            .iter()
            .all(|lines| lines.iter().any(|l| l.starts_with(&done))),
        "{nodes} nodes x {threads} threads over {channel}: {}",
        out.transcript()
    );
    out.assert_success();
}

#[test]
fn every_writer_of_a_falsely_shared_unit_survives_the_barrier() {
    for (nodes, threads) in [(1, 1), (2, 1), (2, 3), (4, 2)] {
        run(nodes, "interleaved", threads, "shm");
    }
    run(2, "interleaved", 2, "tcp");
    run(2, "interleaved", 2, "udp");
}

#[test]
fn blocks_written_by_one_node_are_read_by_another_after_a_barrier() {
    for (nodes, threads) in [(2, 1), (4, 1), (2, 2)] {
        run(nodes, "blocks", threads, "shm");
    }
    run(4, "blocks", 1, "tcp");
}

#[test]
fn the_mprotect_fallback_keeps_every_mode_coherent() {
    run_with(2, "interleaved", 2, "shm", "mprotect");
    run_with(4, "blocks", 1, "shm", "mprotect");
    run_with(4, "lock", 2, "tcp", "mprotect");
    run_with(2, "free", 1, "shm", "mprotect");
}

#[test]
fn a_lock_handed_between_16_threads_on_4_nodes_keeps_a_counter_exact() {
    run(4, "lock", 4, "shm");
    run(2, "lock", 2, "tcp");
    run(3, "lock", 2, "udp");
    run(1, "lock", 3, "shm");
}

#[test]
fn fibers_waiting_for_units_let_the_others_run_and_fetch_at_once() {
    for channel in ["shm", "tcp"] {
        let spec = support::job(2, "node-dsm")
            .args(["fibers", "1"])
            .env(threadwire::env::CHANNEL, channel);
        let out = support::run(spec);
        out.assert_success();
        let line = out.line(1, "dsm fibers: ok");
        let in_flight: u64 = line
            .rsplit("in-flight=")
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(
            in_flight > 1,
            "64 fibers on one worker fetched one at a time over {channel}: {line}"
        );
    }
}

#[test]
fn a_node_killed_during_a_run_fails_every_other_node_with_an_error() {
    for channel in ["shm", "tcp"] {
        let spec = support::job(3, "node-dsm")
            .args(["die", "2"])
            .env(threadwire::env::CHANNEL, channel)
            .on_failure(FailurePolicy::Continue);
        let out = support::run(spec);
        assert!(!out.report.timed_out, "{}", out.transcript());
        for node in 0..2 {
            let lines = out.lines_with(node, "dsm die:");
            assert!(
                !lines.is_empty()
                    && lines
                        .iter()
                        .all(|l| l.contains("lost") || l.contains("finished")),
                "{channel}: {}",
                out.transcript()
            );
        }
    }
}

#[test]
fn a_space_dropped_by_every_handle_is_unmapped() {
    run(2, "free", 1, "shm");
}

/// Four nodes of two threads on two emulated hosts (network namespaces
/// on a bridge): nodes of one host share memory, the hosts talk TCP.
/// Needs root and network namespaces; without them it says why it skips.
#[test]
fn every_program_runs_across_two_namespace_hosts() {
    use threadwire_testbed::net::{self, Link, ScopedNet};
    if let Some(why) = net::unavailable("twds") {
        eprintln!("SKIPPED: cannot create network namespaces here: {why}");
        return;
    }
    let hosts = ScopedNet::up_with_free_prefix("twds", 2, Link::Unshaped)
        .expect("namespaces are available, yet the net could not be built");
    for mode in ["interleaved", "blocks", "lock"] {
        let spec = support::job(4, "node-dsm")
            .args([mode, "2"])
            .hosts(hosts.launch_hosts());
        let out = support::run(spec);
        out.assert_success();
        for node in 0..4 {
            out.line(node, &format!("dsm {mode}: ok"));
        }
    }
}
