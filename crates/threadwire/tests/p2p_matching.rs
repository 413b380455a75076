//! Receive matching in a real 2-node job: receives by address, by node, by
//! tag and by anything; unexpected messages wait for a matching receive;
//! `irecv` with `wait_any`, `wait_all` and `test`; `probe` and `iprobe`;
//! order per sender kept when messages are taken out of arrival order
//! (see `nodes/matching.rs`).

mod support;

const SCENARIOS: [&str; 8] = [
    "selectors",
    "unmatched-wait",
    "posting-order",
    "requests",
    "probes",
    "order-per-sender",
    "dropped-request",
    "errors",
];

fn run_matching(progress: &str) {
    let out =
        support::run(support::job(2, "node-matching").env(threadwire::env::PROGRESS, progress));
    for name in SCENARIOS {
        assert!(
            out.stdout[0]
                .iter()
                .any(|l| *l == format!("matching {name}: ok")),
            "scenario {name} did not pass:\n{}",
            out.transcript()
        );
    }
    out.line(0, "matching: all scenarios passed");
    out.assert_success();
}

#[test]
fn matching_with_polling_waiters() {
    run_matching("poll");
}

#[test]
fn matching_with_progress_thread() {
    run_matching("thread");
}
