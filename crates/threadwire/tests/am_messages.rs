//! Active messages (`nodes/am.rs`) on every channel: handlers inline and
//! in fibers, request and reply, order, payloads of 0 B to 8 MiB, nested
//! calls, unknown, panicking and silent handlers, 1000 messages in flight
//! from 8 fibers within a small budget; large messages (announced and
//! fetched): checked, into a provider's buffer, refused, in order with
//! small ones, a flood of them within bounded memory; threads started on
//! other nodes by name and joined; requests, spawns and joins on a node
//! that dies.

mod support;

use threadwire_launch::FailurePolicy;

/// Shared memory with cross-memory pulls, shared memory pushing through
/// the rings, TCP, and the reliable UDP channel.
const CHANNELS: [(&str, &str, &str); 4] = [
    ("shm", "shm", "1"),
    ("shm-rings", "shm", "0"),
    ("tcp", "tcp", "1"),
    ("udp", "udp", "1"),
];

fn run(nodes: u32, mode: &str, budget: Option<&str>) {
    for &(name, channel, cma) in &CHANNELS {
        let mut spec = support::job(nodes, "node-am")
            .args([mode])
            .env(threadwire::env::CHANNEL, channel)
            .env(threadwire::env::SHM_CMA, cma);
        if let Some(b) = budget {
            spec = spec.env(threadwire::env::EAGER_BUDGET, b);
        }
        let out = support::run(spec);
        let done = format!("am {mode}: ok");
        assert!(
            out.stdout.iter().all(|lines| lines.contains(&done)),
            "{name}: {}",
            out.transcript()
        );
        out.assert_success();
    }
}

#[test]
fn handlers_answer_fail_and_keep_order_on_every_node() {
    run(3, "basic", None);
}

#[test]
fn a_thousand_messages_in_flight_from_eight_fibers_within_a_small_budget() {
    // 64 KiB: under a thousand messages' cost, so senders wait for credit.
    run(2, "flight", Some("65536"));
}

#[test]
fn a_handler_runs_for_every_member_of_a_group() {
    run(3, "group", None);
}

#[test]
fn fiber_handlers_beyond_the_bound_wait_their_turn() {
    for &(name, channel, cma) in &CHANNELS {
        let out = support::run(
            support::job(2, "node-am")
                .args(["bounded"])
                .env(threadwire::env::CHANNEL, channel)
                .env(threadwire::env::SHM_CMA, cma)
                .env(threadwire::env::AM_FIBERS, "2"),
        );
        assert!(
            out.stdout
                .iter()
                .all(|l| l.contains(&"am bounded: ok".to_string())),
            "{name}: {}",
            out.transcript()
        );
        out.line(0, "50 handlers ran on ");
        out.assert_success();
    }
}

#[test]
fn large_messages_are_fetched_kept_refused_and_ordered() {
    run(2, "large", None);
    // A budget below one message: each large one waits for the last
    // one's handler to return.
    run(2, "large", Some("1048576"));
}

#[test]
fn a_flood_of_large_messages_to_a_slow_handler_stays_bounded() {
    for &(name, channel, cma) in &CHANNELS {
        let out = support::run(
            support::job(2, "node-am")
                .args(["large-flood"])
                .env(threadwire::env::CHANNEL, channel)
                .env(threadwire::env::SHM_CMA, cma),
        );
        out.assert_success();
        // Unbounded, node 1 would hold all 160 MiB at once; it holds
        // at most the eager budget (32 MiB) of them, or one message.
        let kb = out.peak_kb(1);
        assert!(
            kb < 100 * 1024,
            "{name}: n1 peaked at {kb} kB for 20 × 8 MiB:\n{}",
            out.transcript()
        );
    }
}

#[test]
fn a_node_sees_the_machine() {
    run(3, "machine", None);
}

#[test]
fn threads_start_on_other_nodes_by_name_and_are_joined() {
    run(3, "spawn", None);
}

#[test]
fn a_request_to_a_node_that_dies_fails_with_peer_lost() {
    for &(name, channel, cma) in &CHANNELS {
        let out = support::run(
            support::job(2, "node-am")
                .args(["lost"])
                .env(threadwire::env::CHANNEL, channel)
                .env(threadwire::env::SHM_CMA, cma)
                // Below one large message: the second waits at node 1.
                .env(threadwire::env::EAGER_BUDGET, "1048576")
                .on_failure(FailurePolicy::Continue),
        );
        let t = out.transcript();
        assert!(!out.report.timed_out, "{name}: the job hung:\n{t}");
        out.line(0, "request failed: lost n1");
        out.line(0, "a large message waiting at n1 fails");
        out.line(0, "a later large request fails at once");
        out.line(0, "a later request fails at once");
        out.line(0, "the join fails");
        out.line(0, "a later spawn fails");
        out.line(0, "am lost: ok");
    }
}
