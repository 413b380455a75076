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
        let up = run(threadwire()
            .args(["net", "up", "--hosts", "3", "--prefix", PREFIX])
            .args(impairments));
        if up.code() != Some(0) {
            eprintln!(
                "SKIPPED: cannot create impaired hosts here: {}",
                up.stderr.trim()
            );
            return;
        }
        let _guard = NetGuard(PREFIX);
        let file =
            std::env::temp_dir().join(format!("threadwire-udp-hosts-{}", std::process::id()));
        let hosts: String = (0..3).map(|h| format!("netns:{PREFIX}h{h}\n")).collect();
        std::fs::write(&file, hosts).expect("host file");
        let job = |program: &str, args: &[&str]| {
            run(threadwire()
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
                .arg(&file)
                .arg("--")
                .arg(example(program))
                .args(args))
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
        let _ = std::fs::remove_file(&file);
        let down = run(threadwire().args(["net", "down", "--prefix", PREFIX]));
        assert_eq!(down.code(), Some(0), "{}", down.show());
    }
}
