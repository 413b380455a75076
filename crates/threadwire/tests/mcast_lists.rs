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
