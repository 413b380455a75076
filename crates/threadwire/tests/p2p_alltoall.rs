//! All-to-all exchange between every thread of a real multi-node job: random
//! tags, sizes from 0 B to 4 MiB, wildcard receives; every message arrives
//! intact, in order per sender, exactly once (see `nodes/alltoall.rs`).

mod support;

/// Fixed so that a failure replays; `THREADWIRE_TEST_SEED` overrides it.
fn seed() -> u64 {
    std::env::var("THREADWIRE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7357_a110)
}

fn all_to_all(nodes: u32, threads: u32, per_pair: u64, progress: &str) {
    all_to_all_with(nodes, threads, per_pair, progress, &[]);
}

/// The routes each node reported last, `routes[node][peer]`.
fn routes(out: &support::JobOutput) -> Vec<Vec<String>> {
    let mut routes = vec![Vec::new(); out.stdout.len()];
    for e in &out.events {
        if let threadwire_launch::Event::Channels { node, routes: r }
        | threadwire_launch::Event::Routes { node, routes: r } = e
        {
            routes[*node as usize] = r.clone();
        }
    }
    routes
}

fn all_to_all_with(
    nodes: u32,
    threads: u32,
    per_pair: u64,
    progress: &str,
    env: &[(&str, &str)],
) -> support::JobOutput {
    let seed = seed();
    let mut spec = support::job(nodes, "node-alltoall")
        .args([threads.to_string(), per_pair.to_string(), seed.to_string()])
        .env(threadwire::env::PROGRESS, progress);
    for &(k, v) in env {
        spec = spec.env(k, v);
    }
    let out = support::run(spec);
    out.assert_success();
    // Each thread hears from every other thread of the job.
    let per_node = u64::from(threads) * per_pair * u64::from(nodes * threads - 1);
    for node in 0..nodes {
        let line = out.line(node, &format!("alltoall n{node}: "));
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
        };
        assert!(line.contains(": ok "), "{}", out.transcript());
        assert_eq!(field("received"), per_node, "{line}");
        assert_eq!(field("sent"), per_node, "{line}");
        // The launcher's copy of the node's counters agrees.
        let stats = out.report.stats[node as usize]
            .unwrap_or_else(|| panic!("n{node} reported no counters:\n{}", out.transcript()));
        assert_eq!(stats.messages_received, per_node, "n{node}: {stats:?}");
        assert_eq!(stats.messages_sent, per_node, "n{node}: {stats:?}");
        assert_eq!(stats.bytes_received, field("bytes"), "n{node}: {stats:?}");
    }
    let sent: u64 = out
        .report
        .stats
        .iter()
        .flatten()
        .map(|s| s.bytes_sent)
        .sum();
    let received: u64 = out
        .report
        .stats
        .iter()
        .flatten()
        .map(|s| s.bytes_received)
        .sum();
    assert_eq!(sent, received, "bytes sent and received across the job");
    out
}

#[test]
fn three_nodes_of_three_threads() {
    all_to_all(3, 3, 40, "poll");
}

#[test]
fn two_nodes_of_four_threads() {
    all_to_all(2, 4, 40, "poll");
}

/// The same with a communication thread per node doing the progress.
#[test]
fn four_nodes_of_two_threads_with_progress_thread() {
    all_to_all(4, 2, 30, "thread");
}

/// Four nodes of three threads on this 2-core machine, every waiter
/// polling shared memory: twelve spinning threads must not starve the ones
/// they wait for (the job would run into its timeout).
#[test]
fn four_nodes_oversubscribing_the_cores_over_shared_memory() {
    all_to_all_with(4, 3, 30, "poll", &[(threadwire::env::CHANNEL, "shm")]);
}

/// Large messages in chunks through the rings, from many threads at once.
#[test]
fn three_nodes_over_shared_memory_in_chunks() {
    all_to_all_with(3, 3, 30, "poll", &[(threadwire::env::SHM_CMA, "0")]);
}

/// The same exchange over TCP, forced.
#[test]
fn three_nodes_over_tcp() {
    all_to_all_with(3, 2, 30, "poll", &[(threadwire::env::CHANNEL, "tcp")]);
}

/// The same over the reliable UDP channel between every pair.
#[test]
fn three_nodes_of_three_threads_over_udp() {
    for progress in ["poll", "thread"] {
        let out = all_to_all_with(3, 3, 40, progress, &[(threadwire::env::CHANNEL, "udp")]);
        for (node, r) in routes(&out).iter().enumerate() {
            assert_eq!(r.len(), 3, "n{node}'s routes:\n{}", out.transcript());
            for (peer, route) in r.iter().enumerate() {
                // At the join `udp`; at the end with the pair's counters.
                if peer != node {
                    assert!(
                        route == "udp" || route.starts_with("udp (datagrams sent "),
                        "n{node} to n{peer}: {route}\n{}",
                        out.transcript()
                    );
                }
            }
        }
    }
}
