//! Broadcast by IP multicast between emulated hosts (`run --channel udp
//! --hosts`): every byte reaches every member of 8 hosts that each lose
//! 5% of the packets they receive, and a host that leaves mid-broadcast
//! is reported while the others complete. Needs root, network
//! namespaces and iptables; skips saying why without them.

mod support;
use support::command::*;

/// `run -n NODES --stats --channel udp --hosts FILE [extra] -- node-bcast args`.
fn bcast_job(hosts: &NamespaceHosts, nodes: u32, extra: &[&str], args: &[&str]) -> Ran {
    run(threadwire()
        .args([
            "run",
            "-n",
            &nodes.to_string(),
            "--stats",
            "--channel",
            "udp",
        ])
        .args(["--timeout", "240"])
        .args(extra)
        .arg("--hosts")
        .arg(&hosts.file)
        .arg("--")
        .arg(example("node-bcast"))
        .args(args))
}

/// The counter `name` of node `node`'s multicast stream, from `--stats`.
fn stream_counter(stdout: &str, node: u32, name: &str) -> Option<u64> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("n{node} multicast stream: ")))?;
    let at = line.find(&format!(" {name} "))? + name.len() + 2;
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[test]
fn a_broadcast_to_8_lossy_hosts_reaches_every_member_whole() {
    let Some(hosts) = NamespaceHosts::up("twmc", 8, &["--loss", "5"]) else {
        return;
    };
    let ran = bcast_job(&hosts, 8, &[], &["verify", "16", "2"]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    for node in 0..8 {
        assert!(
            ran.stdout
                .contains(&format!("[n{node}] bcast n{node}: ok rounds=16")),
            "{}",
            ran.show()
        );
    }
    // Every node was a root twice: each sent on its stream (the first
    // broadcasts may take a tree while the streams are being joined), and
    // with 5% loss on every host the receivers asked for repairs, which
    // came.
    let mut repairs = 0;
    for node in 0..8 {
        let sent = stream_counter(&ran.stdout, node, "datagrams sent");
        assert!(
            sent.is_some_and(|s| s > 0),
            "n{node} sent nothing by multicast:\n{}",
            ran.show()
        );
        repairs += stream_counter(&ran.stdout, node, "repairs").unwrap_or(0);
    }
    assert!(repairs > 0, "no repairs at 5% loss:\n{}", ran.show());
    // `--stats` also gives each UDP pair's datagram counters.
    assert!(
        ran.stdout.contains("n0 -> n1: udp (datagrams sent "),
        "no per-pair counters:\n{}",
        ran.show()
    );
}

#[test]
fn a_host_that_leaves_mid_broadcast_is_reported_and_the_others_complete() {
    let Some(hosts) = NamespaceHosts::up("twml", 4, &[]) else {
        return;
    };
    let ran = bcast_job(&hosts, 4, &["--keep-going"], &["leave", "8"]);
    for node in 0..3 {
        for line in [
            format!("[n{node}] bcast n{node}: PeerLost n3"),
            format!("[n{node}] bcast n{node}: survivors ok"),
        ] {
            assert!(ran.stdout.contains(&line), "no {line:?}:\n{}", ran.show());
        }
    }
    assert!(
        !ran.stdout.contains("[n3] bcast n3: survivors ok"),
        "{}",
        ran.show()
    );
}
