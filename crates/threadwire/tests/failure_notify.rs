//! Notification as messages (`Endpoint::notify`): in a job of 4 nodes, n3
//! finishes cleanly and n2 dies by SIGKILL; the survivors' subscribed
//! threads each get exactly one message per exit, with the cause, in order
//! after n3's data, satisfying a pending `irecv` or `probe`; subscriptions
//! made after the loss are answered at once; cancelled ones get nothing
//! (see `nodes/notify.rs`).

mod support;

use threadwire_launch::{FailurePolicy, NodeExit};

/// Checks the transcript of a `node-notify` job over `channel`.
fn exits_arrive_as_messages(channel: &str) {
    let out = support::run(
        support::job(4, "node-notify")
            .env(threadwire::env::CHANNEL, channel)
            .on_failure(FailurePolicy::Continue),
    );
    let t = out.transcript();
    assert!(!out.report.timed_out, "the job hung:\n{t}");
    for node in 0..2u32 {
        for line in [
            "t0: notify refuses what it cannot do",
            "t0: n3 finished: 5 messages, then one notification each for N3 and ANY",
            "t0: n2 failed: Failed(",
            "t0: late subscriptions answered at once",
            "t0: exactly one notification each, none cancelled",
            "t2: one notification of n2's failure",
            "t3: one notification of n2's failure",
        ] {
            out.line(node, &format!("n{node}.{line}"));
        }
        out.line(node, &format!("n{node}: done"));
        assert_eq!(out.report.exits[node as usize], NodeExit::Code(0), "{t}");
    }
    out.line(3, "n3: finishing");
    assert_eq!(out.report.exits[3], NodeExit::Code(0), "{t}");
    out.line(2, "n2: killing myself");
    assert_eq!(out.report.exits[2], NodeExit::Signal(9), "{t}");
}

/// Nodes of one host: shared-memory channels, the default.
#[test]
fn exits_arrive_as_messages_over_shm() {
    exits_arrive_as_messages("auto");
}

/// TCP channels: the goodbye and the data share the connection.
#[test]
fn exits_arrive_as_messages_over_tcp() {
    exits_arrive_as_messages("tcp");
}
