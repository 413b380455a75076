//! A node SIGKILLed while the others wait on it through every kind of
//! operation (`nodes/lost.rs`): each ends once, with `PeerLost` (or, for
//! a notification, one message), and none hangs; over shared memory and
//! over TCP.

mod support;

use threadwire_launch::FailurePolicy;

#[test]
fn every_operation_waiting_on_a_killed_node_ends() {
    for channel in ["shm", "tcp"] {
        let out = support::run(
            support::job(3, "node-lost")
                .env(threadwire::env::CHANNEL, channel)
                .on_failure(FailurePolicy::Continue),
        );
        let t = out.transcript();
        assert!(!out.report.timed_out, "{channel}: the job hung:\n{t}");
        for line in [
            "recv: PeerLost",
            "ssend: PeerLost",
            "large ssend: PeerLost",
            "probe: PeerLost",
            "am_request: PeerLost",
            "join: PeerLost",
            "barrier: PeerLost",
        ] {
            assert_eq!(out.lines_with(0, line).len(), 1, "{channel}: {line}\n{t}");
        }
        let notice = out.line(0, "notify: ");
        assert!(
            notice.contains("node: 2") && notice.contains("Failed"),
            "{channel}: {notice}"
        );
        out.line(1, "recv from anyone: PeerLost");
        out.line(0, "lost: ok");
        out.line(1, "lost: ok");
    }
}
