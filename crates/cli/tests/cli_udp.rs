//! The reliable UDP channel between emulated hosts (`threadwire net up`,
//! `run --channel udp --hosts`): the all-to-all exchange (every size from
//! 0 B to 4 MiB, wildcards, order per sender) and every collective pass on
//! a clean network, with 1% and 10% of each host's received packets lost,
//! and with a delay whose jitter reorders them. Needs root, network
//! namespaces and iptables; skips saying why without them.

mod support;
use support::command::*;

/// One net: its name, and the impairments `net up` is given.
const NETS: [(&str, &[&str]); 4] = [
    ("clean", &[]),
    ("loss 1%", &["--loss", "1"]),
    ("loss 10%", &["--loss", "10"]),
    ("reordering", &["--delay", "1ms/1ms"]),
];

#[test]
fn point_to_point_and_collectives_pass_over_udp_on_lossy_hosts() {
    const PREFIX: &str = "twudp";
    for (name, impairments) in NETS {
        let Some(hosts) = NamespaceHosts::up(PREFIX, 3, impairments) else {
            return;
        };
        // At 10% loss on a loaded machine the collectives' job recovers
        // thousands of lost datagrams: 21 s on a quiet net, up to 82 s
        // measured under load; its own launcher timeout is 120 s.
        let job = |program: &str, args: &[&str]| {
            run_within(
                threadwire()
                    .args([
                        "run",
                        "-n",
                        "3",
                        "-v",
                        "--channel",
                        "udp",
                        "--timeout",
                        "120",
                        "--hosts",
                    ])
                    .arg(&hosts.file)
                    .arg("--")
                    .arg(example(program))
                    .args(args),
                std::time::Duration::from_secs(150),
            )
        };
        let all = job("node-alltoall", &["2", "20", "7"]);
        assert_eq!(all.code(), Some(0), "{name}: {}", all.show());
        for node in 0..3 {
            assert!(
                all.stdout
                    .contains(&format!("[n{node}] alltoall n{node}: ok")),
                "{name}: {}",
                all.show()
            );
        }
        for pair in ["n0 -> n1: udp", "n1 -> n2: udp", "n2 -> n0: udp"] {
            assert!(
                all.stderr.contains(pair),
                "{name}: no {pair:?}\n{}",
                all.show()
            );
        }
        let coll = job("node-coll", &["all", "2", "7", "fibers"]);
        assert_eq!(coll.code(), Some(0), "{name}: {}", coll.show());
        for node in 0..3 {
            assert!(
                coll.stdout
                    .contains(&format!("[n{node}] coll n{node}: ok mode=all")),
                "{name}: {}",
                coll.show()
            );
        }
        let down = run(threadwire().args(["net", "down", "--prefix", PREFIX]));
        assert_eq!(down.code(), Some(0), "{}", down.show());
        drop(hosts);
    }
}

/// The UDP ports the processes named `program` have bound, from `ss`.
fn udp_ports_of(program: &str) -> Vec<u16> {
    let ss = run(std::process::Command::new("ss").args(["-Hulpn"]));
    ss.stdout
        .lines()
        .filter(|l| l.contains(&format!("\"{program}\"")))
        .filter_map(|l| {
            l.split_whitespace()
                .nth(3)?
                .rsplit(':')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Garbage, header-shaped strangers and truncated datagrams thrown at
/// both nodes' UDP sockets while they exchange messages: refused and
/// counted, and the job ends well, every message intact.
#[test]
fn datagrams_of_strangers_do_not_disturb_a_running_job() {
    if run(std::process::Command::new("ss").arg("-V")).code() != Some(0) {
        eprintln!("SKIPPED: no `ss` (iproute2) to find the nodes' UDP ports");
        return;
    }
    let job = std::thread::spawn(|| {
        run(threadwire()
            .args([
                "run",
                "-n",
                "2",
                "--channel",
                "udp",
                "--timeout",
                "120",
                "--",
            ])
            .arg(example("node-alltoall"))
            .args(["2", "150", "11"]))
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut ports = Vec::new();
    while ports.len() < 2 && std::time::Instant::now() < deadline && !job.is_finished() {
        ports = udp_ports_of("node-alltoall");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut thrown = 0;
    for round in 0..3000u32 {
        if job.is_finished() {
            break;
        }
        for &port in &ports {
            let len = (next() % 1500) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 3 == 0 && d.len() >= 24 {
                // Shaped like ours: version, sender 0 or 1 (a varint).
                d[0] = threadwire_wire::PROTOCOL_VERSION;
                d[1] = ((round / 3) % 2) as u8;
            }
            if socket.send_to(&d, ("127.0.0.1", port)).is_ok() {
                thrown += 1;
            }
        }
    }
    let ran = job.join().expect("the job's thread");
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    for node in 0..2 {
        assert!(
            ran.stdout
                .contains(&format!("[n{node}] alltoall n{node}: ok")),
            "{}",
            ran.show()
        );
    }
    assert_eq!(
        ports.len(),
        2,
        "the nodes' UDP ports were not found:\n{}",
        ran.show()
    );
    assert!(thrown > 0, "nothing was thrown: the job ended first");
}
