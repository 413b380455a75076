//! Point-to-point under load, on every channel (`nodes/rendezvous.rs`):
//! receives into the caller's buffer, synchronous sends, announced
//! messages taken out of order, many threads flooding one receiver, and a
//! flood of 1 MiB sends to a late receiver whose memory stays bounded;
//! cancelled receives and matched probes; a send of borrowed bytes whose
//! receiver dies mid-transfer. (A node killed during a rendezvous:
//! `failure_peer_lost`.)

mod support;

/// Shared memory with cross-memory pulls, shared memory pushing through
/// the rings, TCP, and the reliable UDP channel.
const CHANNELS: [(&str, &str, &str); 4] = [
    ("shm", "shm", "1"),
    ("shm-rings", "shm", "0"),
    ("tcp", "tcp", "1"),
    ("udp", "udp", "1"),
];

fn run(mode: &[&str], budget: Option<&str>) -> Vec<support::JobOutput> {
    run_on(&CHANNELS, mode, budget)
}

fn run_on(
    channels: &[(&str, &str, &str)],
    mode: &[&str],
    budget: Option<&str>,
) -> Vec<support::JobOutput> {
    channels
        .iter()
        .map(|&(name, channel, cma)| {
            let mut spec = support::job(2, "node-rendezvous")
                .args(mode.iter().copied())
                .env(threadwire::env::CHANNEL, channel)
                .env(threadwire::env::SHM_CMA, cma);
            if let Some(b) = budget {
                spec = spec.env(threadwire::env::EAGER_BUDGET, b);
            }
            let out = support::run(spec);
            let done = format!("rendezvous {}: ok", mode[0]);
            assert!(
                out.stdout.iter().all(|lines| lines.contains(&done)),
                "{name}: {}",
                out.transcript()
            );
            out.assert_success();
            out
        })
        .collect()
}

#[test]
fn receives_into_exact_larger_and_too_small_buffers() {
    run(&["into"], None);
}

#[test]
fn synchronous_sends_complete_only_once_received() {
    run(&["ssend"], None);
}

#[test]
fn a_later_tag_is_received_while_announced_messages_wait() {
    // A budget below one message: all three are announced, not buffered.
    run(&["later-tag"], Some("1048576"));
}

#[test]
fn many_threads_flood_one_receiver_within_a_small_budget() {
    run(&["threads"], Some("1048576"));
}

#[test]
fn cancel_and_matched_probes() {
    run(&["probe-cancel"], None);
}

#[test]
fn a_flood_of_large_sends_to_a_late_receiver_stays_bounded() {
    // UDP carries fewer: its datagrams are authenticated one by one, a
    // slow business in a debug build (about 30 MB/s).
    let (stream_channels, udp) = CHANNELS.split_at(3);
    for out in run_on(stream_channels, &["flood", "2000", "3000"], None) {
        assert_bounded(&out, 2000);
    }
    for out in run_on(udp, &["flood", "200", "3000"], None) {
        assert_bounded(&out, 200);
    }
}

fn assert_bounded(out: &support::JobOutput, sends: u32) {
    for node in 0..2u32 {
        let kb = out.peak_kb(node);
        assert!(
            kb < 256 * 1024,
            "n{node} peaked at {kb} kB for {sends} × 1 MiB sends:\n{}",
            out.transcript()
        );
    }
}

/// A blocking send of 64 MiB of borrowed bytes (read where they are: by
/// the receiver's pull, or by the connection's writer) to a receiver that
/// dies while it takes them: the send ends, never hangs, and returns only
/// once nothing reads the bytes (the sender then frees them).
#[test]
fn a_borrowed_send_to_a_receiver_that_dies_ends() {
    for &(name, channel, cma) in &CHANNELS {
        let out = support::run(
            support::job(2, "node-rendezvous")
                .args(["direct-lost"])
                .env(threadwire::env::CHANNEL, channel)
                .env(threadwire::env::SHM_CMA, cma)
                .on_failure(threadwire_launch::FailurePolicy::Continue),
        );
        let t = out.transcript();
        assert!(!out.report.timed_out, "{name}: the job hung:\n{t}");
        out.line(0, "n0: killing myself");
        let ended = out.line(1, "direct send ended: ");
        eprintln!("{name}: {ended}");
        assert!(
            ended.contains("Ok(())") || ended.contains("PeerLost"),
            "{name}: {ended}"
        );
        out.line(1, "rendezvous direct-lost: ok");
    }
}
