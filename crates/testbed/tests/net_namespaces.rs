//! Emulated hosts (`threadwire_testbed::net`) on the real system: they need
//! root and a kernel that lets us create network namespaces, and say so
//! (and skip) otherwise. Each test has its own prefix, so they run in
//! parallel on their own subnets.
//!
//! Reachability is checked with TCP between sockets this process opens
//! inside the namespaces (a thread `setns`es into one, binds or connects,
//! and the socket stays there), so the tests need nothing but `ip` and
//! `tc`: no ping, netcat, python or iperf. Ctrl-C during `up` is tested in
//! `net_interrupt.rs`.

mod support;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};
use support::{cannot_run, leftovers, output};
use threadwire_testbed::net::{self, Host, Link, NetConfig};

/// Returns from the test, saying so, when namespaces cannot be made here.
macro_rules! skip_unless_namespaces {
    ($prefix:expr) => {
        if let Some(reason) = cannot_run($prefix) {
            eprintln!("SKIPPED: {reason}");
            return;
        }
    };
}

fn config(prefix: &str, hosts: u32, link: Link) -> NetConfig {
    NetConfig {
        prefix: prefix.to_string(),
        ..NetConfig::new(hosts, link)
    }
}

/// Runs `f` on a thread inside namespace `ns`; sockets it opens stay in
/// that namespace after the thread ends.
fn in_namespace<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = format!("/var/run/netns/{ns}");
    let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: `file` is an open namespace file; setns changes the
            // network namespace of this thread only, which ends with `f`.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {ns}: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the thread in the namespace panicked")
    })
}

/// Connects from namespace `from` (or the root namespace) to a listener
/// at `to`, opened in namespace `to_ns` (or the root namespace), and
/// exchanges a byte each way.
fn exchange(from: Option<&str>, to_ns: Option<&str>, to: Ipv4Addr) {
    let bind = || TcpListener::bind((to, 0));
    let listener = match to_ns {
        Some(ns) => in_namespace(ns, bind),
        None => bind(),
    }
    .unwrap_or_else(|e| panic!("listen on {to}: {e}"));
    let target = listener.local_addr().unwrap();
    let connect = || TcpStream::connect_timeout(&target, Duration::from_secs(2));
    let mut client = match from {
        Some(ns) => in_namespace(ns, connect),
        None => connect(),
    }
    .unwrap_or_else(|e| panic!("connect {from:?} -> {target}: {e}"));
    let (mut server, _) = listener.accept().unwrap();
    let mut byte = [0u8];
    client.write_all(b"q").unwrap();
    server.read_exact(&mut byte).unwrap();
    server.write_all(b"a").unwrap();
    client.read_exact(&mut byte).unwrap();
    assert_eq!(&byte, b"a");
}

/// TCP goodput from `from` to `to` for about `duration`, in Mbit/s, as the
/// receiver sees it (first byte to end of stream).
fn tcp_mbit(from: &Host, to: &Host, duration: Duration) -> f64 {
    let listener = in_namespace(&to.name, || TcpListener::bind((to.addr, 0))).unwrap();
    let target: SocketAddr = listener.local_addr().unwrap();
    let receiver = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let mut bytes = stream.read(&mut buf).unwrap() as u64;
        let start = Instant::now();
        loop {
            match stream.read(&mut buf).unwrap() {
                0 => break,
                n => bytes += n as u64,
            }
        }
        bytes as f64 * 8.0 / start.elapsed().as_secs_f64() / 1e6
    });
    let mut stream = in_namespace(&from.name, || TcpStream::connect(target)).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    let end = Instant::now() + duration;
    while Instant::now() < end {
        stream.write_all(&chunk).unwrap();
    }
    drop(stream);
    receiver.join().unwrap()
}

#[test]
fn three_unshaped_hosts_reach_each_other_and_go_away() {
    let prefix = "twt1";
    skip_unless_namespaces!(prefix);
    let net = net::up(&config(prefix, 3, Link::Unshaped)).unwrap();
    assert_eq!(net.bridge, "twt1br");
    let names: Vec<&str> = net.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["twt1h0", "twt1h1", "twt1h2"]);

    let listed = output("ip", &["netns", "list"]);
    let gateway = format!("default via {} dev eth0", net.bridge_addr);
    for host in &net.hosts {
        assert!(listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&host.name)));
        let addr = output(
            "ip",
            &[
                "netns", "exec", &host.name, "ip", "-4", "addr", "show", "eth0",
            ],
        );
        assert!(addr.contains(&format!("inet {}/24", host.addr)), "{addr}");
        let route = output("ip", &["-n", &host.name, "route", "show", "default"]);
        assert!(route.contains(&gateway), "{route}");
        let lo = output("ip", &["-n", &host.name, "link", "show", "lo"]);
        assert!(lo.contains(",UP"), "{lo}");
    }
    assert_eq!(net::current(prefix).unwrap().as_ref(), Some(&net));

    // Host to host across the bridge, both ways round, and between the
    // hosts and this (root) namespace through the bridge address.
    let [h0, h1, h2] = &net.hosts[..] else {
        unreachable!()
    };
    exchange(Some(&h0.name), Some(&h1.name), h1.addr);
    exchange(Some(&h2.name), Some(&h0.name), h0.addr);
    exchange(Some(&h1.name), None, net.bridge_addr);
    exchange(None, Some(&h2.name), h2.addr);

    // Idempotent: a second `up` rebuilds the same net.
    let again = net::up(&config(prefix, 3, Link::Unshaped)).unwrap();
    assert_eq!(again, net);
    exchange(Some(&h0.name), Some(&h2.name), h2.addr);

    net::down(prefix).unwrap();
    assert_eq!(leftovers(prefix), Vec::<String>::new());
    assert_eq!(net::current(prefix).unwrap(), None);
    net::down(prefix).unwrap();
}

#[test]
fn fast100_shapes_both_directions_of_every_link() {
    let prefix = "twt2";
    skip_unless_namespaces!(prefix);
    let net = net::up(&config(prefix, 2, Link::Fast100)).unwrap();
    for (i, host) in net.hosts.iter().enumerate() {
        let inside = output(
            "ip",
            &[
                "netns", "exec", &host.name, "tc", "qdisc", "show", "dev", "eth0",
            ],
        );
        assert!(
            inside.contains("tbf") && inside.contains("rate 100Mbit"),
            "{inside}"
        );
        let outside = output("tc", &["qdisc", "show", "dev", &format!("{prefix}v{i}")]);
        assert!(
            outside.contains("tbf") && outside.contains("rate 100Mbit"),
            "{outside}"
        );
    }
    assert_eq!(
        net::current(prefix).unwrap().map(|n| n.link),
        Some(Link::Fast100)
    );

    // Loose bounds, as the machine may be busy: unshaped, veths carry
    // several Gbit/s; shaped, at least half the rate must get through.
    let mbit = tcp_mbit(&net.hosts[0], &net.hosts[1], Duration::from_millis(1500));
    eprintln!("fast100, h0 -> h1: {mbit:.1} Mbit/s");
    net::down(prefix).unwrap();
    assert!(
        (50.0..=105.0).contains(&mbit),
        "{mbit:.1} Mbit/s on a 100 Mbit/s link"
    );
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}

#[test]
fn a_subnet_in_use_is_refused() {
    let prefix = "twt6";
    skip_unless_namespaces!(prefix);
    let bridge_addr = net::up(&config(prefix, 1, Link::Unshaped))
        .unwrap()
        .bridge_addr;
    net::down(prefix).unwrap();
    let [a, b, c, _] = bridge_addr.octets();
    let squatter = format!("{prefix}x");
    let peer = format!("{prefix}y");
    let squat = [
        "link", "add", &squatter, "type", "veth", "peer", "name", &peer,
    ];
    output("ip", &squat);
    output(
        "ip",
        &[
            "addr",
            "add",
            &format!("{a}.{b}.{c}.9/24"),
            "dev",
            &squatter,
        ],
    );
    let result = net::up(&config(prefix, 1, Link::Unshaped));
    output("ip", &["link", "del", &squatter]);
    let err = result.unwrap_err().to_string();
    assert!(
        err.contains(&format!("already used by interface {squatter}")),
        "{err}"
    );
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}

#[test]
fn a_half_built_net_is_named_and_down_clears_it() {
    let prefix = "twt7";
    skip_unless_namespaces!(prefix);
    // What an up killed by SIGKILL might leave: namespaces with a gap, a
    // veth pair still in the root namespace, no bridge.
    output("ip", &["netns", "add", "twt7h0"]);
    output("ip", &["netns", "add", "twt7h2"]);
    output(
        "ip",
        &[
            "link", "add", "twt7v0", "type", "veth", "peer", "name", "twt7p0",
        ],
    );
    let err = net::current(prefix).unwrap_err().to_string();
    assert!(err.contains("half-built (no bridge twt7br)"), "{err}");
    net::down(prefix).unwrap();
    assert_eq!(leftovers(prefix), Vec::<String>::new());
    assert!(!output("ip", &["-o", "link", "show"]).contains("twt7p0"));
    assert_eq!(net::current(prefix).unwrap(), None);
}

#[test]
fn without_root_up_says_why_and_runs_nothing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // As root, run this test again in a child as user `nobody`.
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "without_root_up_says_why_and_runs_nothing",
                "--quiet",
            ])
            .uid(65534)
            .gid(65534)
            .status();
        match child {
            Ok(status) => assert!(status.success(), "the test as user nobody: {status}"),
            Err(e) => eprintln!("SKIPPED: cannot run this test as user nobody: {e}"),
        }
        return;
    }
    let err = net::up(&config("twt5", 2, Link::Gige)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not root: creating network namespaces needs CAP_NET_ADMIN (run as root)"
    );
    let err = net::down("twt5").unwrap_err();
    assert!(err.to_string().starts_with("not root"), "{err}");
}

/// Measures TCP goodput on every link for the record:
/// `cargo test -p threadwire-testbed --test net_namespaces -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement of about 15 s, not a check"]
fn measure_every_link() {
    let prefix = "twt4";
    skip_unless_namespaces!(prefix);
    for link in Link::ALL {
        let net = net::up(&config(prefix, 2, link)).unwrap();
        let mbit = tcp_mbit(&net.hosts[0], &net.hosts[1], Duration::from_secs(3));
        let share = link.rate_mbit().map_or(String::new(), |r| {
            format!(" ({:.1}% of {r})", mbit / r * 100.0)
        });
        eprintln!("{link:>10}: {mbit:8.1} Mbit/s{share}");
        net::down(prefix).unwrap();
    }
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}
