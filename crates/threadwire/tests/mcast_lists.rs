//! Multicast to lists spanning threads of several nodes, the sender's own
//! node and repeated addresses included, over both channels; order per
//! (sender, receiver) kept between multicasts and plain sends; bad lists
//! refused before anything is sent (see `nodes/mcast.rs`).

mod support;

fn mcast(nodes: u32, threads: u32, env: &[(&str, &str)]) {
    let mut spec = support::job(nodes, "node-mcast").args([threads.to_string(), "20".into()]);
    for &(k, v) in env {
        spec = spec.env(k, v);
    }
    let out = support::run(spec);
    out.assert_success();
    for node in 0..nodes {
        out.line(node, &format!("mcast n{node}: ok "));
    }
}

#[test]
fn one_node_of_four_fibers() {
    mcast(1, 4, &[]);
}

#[test]
fn three_nodes_of_three_fibers_over_tcp() {
    mcast(3, 3, &[(threadwire::env::CHANNEL, "tcp")]);
}

#[test]
fn three_nodes_of_two_fibers_over_shared_memory() {
    mcast(3, 2, &[(threadwire::env::CHANNEL, "shm")]);
}

/// 200 multicasts of 1 MiB to four threads of a node that starts
/// receiving 2 s late: every copy counts in that node's eager budget, so
/// both nodes' peaks stay far below the 800 MiB the copies make.
#[test]
fn a_multicast_flood_to_a_late_node_stays_within_its_budget() {
    for channel in ["shm", "tcp"] {
        let out = support::run(
            support::job(2, "node-mcast")
                .args(["flood", "200"])
                .env(threadwire::env::CHANNEL, channel),
        );
        out.assert_success();
        for node in 0..2u32 {
            let kb = out.peak_kb(node);
            assert!(
                kb < 256 * 1024,
                "{channel}: n{node} peaked at {kb} kB:\n{}",
                out.transcript()
            );
            eprintln!("{channel}: n{node} peaked at {kb} kB");
        }
    }
}
