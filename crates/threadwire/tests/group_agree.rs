//! Agreement among a group's survivors and the group of survivors
//! (`nodes/agree.rs`): rounds with no failure; a member, the coordinator,
//! or two nodes at once dying before or during the agreement, at several
//! moments. Every survivor must return the same agreement, then shrink
//! the group and run collectives in it.

mod support;

use threadwire_launch::FailurePolicy;

/// Each survivor's `agreement …` lines, which must be the same everywhere.
fn agreements(out: &support::JobOutput, nodes: u32, dead: &[u32]) -> Vec<String> {
    let mut seen: Option<(u32, Vec<String>)> = None;
    for n in (0..nodes).filter(|n| !dead.contains(n)) {
        let lines: Vec<String> = out
            .lines_with(n, "agreement ")
            .into_iter()
            .map(str::to_string)
            .collect();
        assert!(
            !lines.is_empty(),
            "n{n} agreed nothing:\n{}",
            out.transcript()
        );
        match &seen {
            None => seen = Some((n, lines)),
            Some((first, theirs)) => assert_eq!(
                &lines,
                theirs,
                "n{n} and n{first} disagree:\n{}",
                out.transcript()
            ),
        }
    }
    seen.map(|(_, l)| l).unwrap_or_default()
}

fn dies(nodes: u32, killed: &[u32], delay_us: i64, channel: &str) -> Vec<String> {
    dies_with(nodes, killed, delay_us, channel, None)
}

/// As `dies`, with `fault` (`THREADWIRE_FAULT_AGREE`) set on every node.
fn dies_with(
    nodes: u32,
    killed: &[u32],
    delay_us: i64,
    channel: &str,
    fault: Option<&str>,
) -> Vec<String> {
    let list: Vec<String> = killed.iter().map(u32::to_string).collect();
    let mut spec = support::job(nodes, "node-agree")
        .args(["dies".to_string(), list.join(","), delay_us.to_string()])
        .env(threadwire::env::CHANNEL, channel)
        .on_failure(FailurePolicy::Continue);
    if let Some(f) = fault {
        spec = spec.env(threadwire::env::FAULT_AGREE, f);
    }
    let out = support::run(spec);
    assert!(!out.report.timed_out, "the job hung:\n{}", out.transcript());
    for n in (0..nodes).filter(|n| !killed.contains(n)) {
        out.line(n, "agree dies: ok");
    }
    agreements(&out, nodes, killed)
}

#[test]
fn rounds_without_failures_agree_everywhere() {
    for channel in ["shm", "tcp"] {
        let out = support::run(
            support::job(4, "node-agree")
                .args(["rounds"])
                .env(threadwire::env::CHANNEL, channel),
        );
        out.assert_success();
        let lines = agreements(&out, 4, &[]);
        assert_eq!(lines.len(), 20);
        // Round 1: flags (n + 1) % 3 != 0 for n = 0..4 → n2 contributes false.
        assert_eq!(lines[1], "agreement 1: false []");
        assert_eq!(lines[0], "agreement 0: true []");
    }
}

#[test]
fn a_member_lost_before_the_agreement_is_agreed_lost() {
    for channel in ["shm", "tcp"] {
        let lines = dies(4, &[3], -1, channel);
        assert_eq!(
            lines,
            [
                "agreement 0: false [3]",
                "agreement shrink: 3",
                "agreement 1: true []"
            ],
            "{channel}"
        );
    }
}

#[test]
fn the_coordinator_lost_before_the_agreement_is_replaced() {
    for channel in ["shm", "tcp"] {
        let lines = dies(4, &[0], -1, channel);
        assert_eq!(
            lines,
            [
                "agreement 0: false [0]",
                "agreement shrink: 3",
                "agreement 1: true []"
            ],
            "{channel}"
        );
    }
}

#[test]
fn coordinators_lost_during_the_agreement_leave_one_answer() {
    // The coordinator alone, then with the next one, killed at several
    // moments of the agreement: whatever the moment, the survivors agree.
    for killed in [&[0][..], &[0, 1]] {
        for delay in [0, 100, 300, 1000, 3000] {
            for channel in ["shm", "tcp"] {
                let lines = dies(5, killed, delay, channel);
                let left = 5 - killed.len();
                assert_eq!(lines.len(), 3, "{killed:?} {delay} µs {channel}");
                assert_eq!(
                    lines[1],
                    format!("agreement shrink: {left}"),
                    "{killed:?} {delay} µs {channel}"
                );
            }
        }
    }
}

#[test]
fn a_coordinator_lost_at_each_step_of_its_decision_leaves_one_answer() {
    // n0 coordinates and kills itself after gathering every part (nobody
    // told), then after telling one member (the next coordinator holds its
    // decision and has returned: the others must ask it). A large delay
    // keeps the test's own killer thread out of the way.
    for point in ["asked", "told-one"] {
        for channel in ["shm", "tcp"] {
            let fault = format!("0:{point}");
            let lines = dies_with(5, &[0], 10_000_000, channel, Some(&fault));
            assert_eq!(lines.len(), 3, "{point} {channel}");
            let expect_failed = match point {
                // Nobody was told: the next coordinator decides afresh, n0 lost.
                "asked" => "agreement 0: false [0]",
                // n1 was told n0's decision, made while every node was alive.
                _ => "agreement 0: false []",
            };
            assert_eq!(lines[0], expect_failed, "{point} {channel}");
            assert_eq!(lines[1], "agreement shrink: 4", "{point} {channel}");
        }
    }
}

/// A member finds a failure and revokes the group: the other survivor,
/// blocked in a receive the failure does not touch, returns `Revoked`;
/// every later operation but agree and shrink fails alike; the survivors
/// shrink the group and go on.
#[test]
fn a_revoked_group_stops_every_member_and_shrinks() {
    for channel in ["shm", "tcp"] {
        let out = support::run(
            support::job(3, "node-agree")
                .args(["revoke"])
                .env(threadwire::env::CHANNEL, channel)
                .on_failure(FailurePolicy::Continue),
        );
        assert!(!out.report.timed_out, "the job hung:\n{}", out.transcript());
        out.line(1, "n1: barrier failed: a member is gone");
        out.line(1, "n1: revoked");
        out.line(0, "n0: receive from n1 ended: the group was revoked");
        for n in 0..2 {
            out.line(n, &format!("n{n}: survivors 2 sum 2"));
            out.line(n, "agree revoke: ok");
        }
    }
}
