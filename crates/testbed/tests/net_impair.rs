//! Impaired emulated hosts (`NetConfig { loss, delay, load, .. }`) on the
//! real system: loss near what was asked and none on loopback, a delay
//! that TCP's round trips show, a load that runs and goes with `down`,
//! `up` again replacing, and Ctrl-C during `up` leaving nothing behind
//! (no namespace, link, iptables rule or helper process; the rules live
//! in the namespaces and go with them).
//!
//! Without libtest's harness (`harness = false` in Cargo.toml), for two
//! reasons: this binary is the nets' helper program (`NetConfig::helper`),
//! so run as `… net delay-queue …` it must serve, not run tests; and the
//! Ctrl-C test needs `up` on a child's main thread (`net_interrupt.rs`
//! says why). The tests run one after another; an argument filters them
//! by name, as libtest's does. They need root, namespaces and iptables,
//! and say so (and skip) otherwise.

mod support;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};
use support::{cannot_run, leftovers, output};
use threadwire_testbed::net::{self, Host, Link, NetConfig};
use threadwire_testbed::process::Pidfd;
use threadwire_testbed::watch::{self, Watched};

/// Set in the child of the Ctrl-C test.
const CHILD: &str = "THREADWIRE_NET_IMPAIR_CHILD";
/// Set for the helpers of the Ctrl-C test: a directory where each marks
/// its start.
const MARKS: &str = "THREADWIRE_NET_IMPAIR_MARKS";

const TESTS: [(&str, fn()); 5] = [
    ("loss_is_near_what_was_asked_and_spares_loopback", loss),
    ("delay_shows_in_round_trips_and_up_again_replaces", delay),
    ("a_full_delay_queue_drops_and_counts", full_queue),
    ("load_runs_on_every_receive_link_and_goes_with_down", load),
    ("an_interrupted_up_stops_its_helpers", interrupted_up),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("net") {
        serve_as_helper(&args[2..]);
    }
    if std::env::var_os(CHILD).is_some() {
        child_up();
    }
    if args.iter().any(|a| a == "--list") {
        for (name, _) in TESTS {
            println!("{name}: test");
        }
        return;
    }
    let filter = args[1..].iter().find(|a| !a.starts_with('-'));
    for (name, test) in TESTS {
        if filter.is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        if let Some(reason) = cannot_run("twimp").or_else(|| {
            (!threadwire_testbed::process::on_path("iptables"))
                .then(|| "iptables is not installed".to_string())
        }) {
            eprintln!("{name}: SKIPPED: {reason}");
            continue;
        }
        let start = Instant::now();
        test();
        eprintln!("{name}: ok ({:.1} s)", start.elapsed().as_secs_f64());
    }
}

/// Serves as a net's helper (this binary is `NetConfig::helper` below).
fn serve_as_helper(args: &[String]) -> ! {
    if let Some(marks) = std::env::var_os(MARKS) {
        let _ = File::create(Path::new(&marks).join(std::process::id().to_string()));
        // The Ctrl-C test's signal must land while `up` still has helpers
        // to start: this helper's `ready` is held up to make sure.
        thread::sleep(Duration::from_millis(300));
    }
    let result = net::serve_helper(args, &mut std::io::stdout());
    std::process::exit(i32::from(result.is_err()));
}

fn config(prefix: &str, hosts: u32, link: Link) -> NetConfig {
    NetConfig {
        prefix: prefix.to_string(),
        helper: Some(std::env::current_exe().expect("this test's own path")),
        ..NetConfig::new(hosts, link)
    }
}

/// Removes the net when dropped, so that a failed test leaves nothing.
struct Down(&'static str);

impl Drop for Down {
    fn drop(&mut self) {
        if let Err(e) = net::down(self.0) {
            eprintln!("removing net {}: {e}", self.0);
        }
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

/// Sends `count` datagrams from `from` (in namespace `from_ns`) to a
/// socket at `to` in namespace `to_ns`, and says how many arrived before
/// `quiet` passed without one.
fn datagrams_through(
    (from_ns, from): (&str, Ipv4Addr),
    (to_ns, to): (&str, Ipv4Addr),
    count: u32,
    quiet: Duration,
) -> u32 {
    let receiver = in_namespace(to_ns, || UdpSocket::bind((to, 0))).unwrap();
    // Room for every datagram, so that the socket drops none itself.
    let size: libc::c_int = 16 << 20;
    // SAFETY: an open socket; the value is a live c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            receiver.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUFFORCE: {}", std::io::Error::last_os_error());
    receiver.set_read_timeout(Some(quiet)).unwrap();
    let target = receiver.local_addr().unwrap();
    let sender = in_namespace(from_ns, || UdpSocket::bind((from, 0))).unwrap();
    for i in 0..count {
        sender.send_to(&i.to_be_bytes(), target).unwrap();
    }
    let mut buf = [0u8; 16];
    let mut arrived = 0;
    // The last datagram was sent before the first read: silence for
    // longer than any delay means no more are coming.
    while receiver.recv(&mut buf).is_ok() {
        arrived += 1;
    }
    arrived
}

fn loss() {
    let prefix = "twimp1";
    let _down = Down(prefix);
    let cfg = NetConfig {
        loss: Some("10".parse().unwrap()),
        ..config(prefix, 2, Link::Unshaped)
    };
    let net = net::up(&cfg).unwrap();
    assert_eq!(net::current(prefix).unwrap().as_ref(), Some(&net));
    let [h0, h1] = &net.hosts[..] else {
        unreachable!()
    };
    let sent = 2000;
    let quiet = Duration::from_millis(500);
    let arrived = datagrams_through((&h0.name, h0.addr), (&h1.name, h1.addr), sent, quiet);
    let lost = f64::from(sent - arrived) / f64::from(sent) * 100.0;
    eprintln!("10% loss asked, {lost:.1}% of {sent} datagrams lost h0 -> h1");
    assert!((5.0..=15.0).contains(&lost), "{lost:.1}% lost");
    let lo = Ipv4Addr::LOCALHOST;
    let looped = datagrams_through((&h1.name, lo), (&h1.name, lo), sent, quiet);
    assert_eq!(looped, sent, "loopback inside a host lost datagrams");
    net::down(prefix).unwrap();
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}

/// The median round trip of 1-byte TCP exchanges from `from` to `to`.
fn tcp_round_trip(from: &Host, to: &Host) -> Duration {
    let listener = in_namespace(&to.name, || TcpListener::bind((to.addr, 0))).unwrap();
    let target: SocketAddr = listener.local_addr().unwrap();
    let echo = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_nodelay(true).unwrap();
        let mut byte = [0u8];
        while stream.read_exact(&mut byte).is_ok() {
            stream.write_all(&byte).unwrap();
        }
    });
    let mut stream = in_namespace(&from.name, || TcpStream::connect(target)).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut times: Vec<Duration> = (0..21)
        .map(|_| {
            let start = Instant::now();
            let mut byte = [7u8];
            stream.write_all(&byte).unwrap();
            stream.read_exact(&mut byte).unwrap();
            start.elapsed()
        })
        .collect();
    drop(stream);
    echo.join().unwrap();
    times.sort();
    times[times.len() / 2]
}

/// Sends 4 MiB from `from` to `to` over TCP and checks that all arrive.
fn tcp_transfer(from: &Host, to: &Host) {
    let listener = in_namespace(&to.name, || TcpListener::bind((to.addr, 0))).unwrap();
    let target = listener.local_addr().unwrap();
    let receiver = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut data = Vec::new();
        stream.read_to_end(&mut data).unwrap();
        data
    });
    let sent: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    let mut stream = in_namespace(&from.name, || TcpStream::connect(target)).unwrap();
    stream.write_all(&sent).unwrap();
    drop(stream);
    assert!(receiver.join().unwrap() == sent, "TCP data arrived changed");
}

fn helper_count(prefix: &str) -> usize {
    leftovers(prefix)
        .iter()
        .filter(|l| l.contains(" net "))
        .count()
}

fn delay() {
    let prefix = "twimp2";
    let _down = Down(prefix);
    let plain = config(prefix, 2, Link::Unshaped);
    let net = net::up(&plain).unwrap();
    let before = tcp_round_trip(&net.hosts[0], &net.hosts[1]);

    let one_way = Duration::from_millis(10);
    let delayed = NetConfig {
        delay: Some("10ms/1ms".parse().unwrap()),
        ..plain.clone()
    };
    // `up` again replaces the net, and again: one queue per host, never
    // two.
    for _ in 0..2 {
        let net = net::up(&delayed).unwrap();
        assert_eq!(net::current(prefix).unwrap().as_ref(), Some(&net));
        assert_eq!(helper_count(prefix), 2, "{:?}", leftovers(prefix));
    }
    let after = tcp_round_trip(&net.hosts[0], &net.hosts[1]);
    eprintln!("TCP round trip: {before:?} undelayed, {after:?} with 10ms/1ms each way");
    let tolerance = Duration::from_millis(2);
    assert!(
        after + tolerance >= before + 2 * one_way,
        "{after:?} with a delay of 10 ms each way, {before:?} without"
    );
    tcp_transfer(&net.hosts[0], &net.hosts[1]);
    assert_eq!(
        net::delay_queue_drops(&net::current(prefix).unwrap().unwrap()).unwrap(),
        [0, 0]
    );

    // A program that is no helper: `up` says so and leaves nothing.
    let err = net::up(&NetConfig {
        helper: Some(PathBuf::from("/bin/true")),
        ..delayed.clone()
    })
    .unwrap_err();
    assert!(err.to_string().contains("no `ready` from it"), "{err}");
    assert_eq!(leftovers(prefix), Vec::<String>::new());

    // Without the delay: no queue, no rule.
    net::up(&plain).unwrap();
    assert_eq!(helper_count(prefix), 0, "{:?}", leftovers(prefix));
    let rules = output("ip", &["netns", "exec", "twimp2h0", "iptables", "-S"]);
    assert!(!rules.contains("NFQUEUE"), "{rules}");
    net::down(prefix).unwrap();
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}

fn full_queue() {
    let prefix = "twimp5";
    let _down = Down(prefix);
    let cfg = NetConfig {
        delay: Some("500ms".parse().unwrap()),
        ..config(prefix, 2, Link::Unshaped)
    };
    let net = net::up(&cfg).unwrap();
    let [h0, h1] = &net.hosts[..] else {
        unreachable!()
    };
    // Sent in far less than 500 ms: the queue fills, the rest is dropped.
    let sent = net::DELAY_QUEUE_LIMIT + 1000;
    let quiet = Duration::from_millis(1500);
    let arrived = datagrams_through((&h0.name, h0.addr), (&h1.name, h1.addr), sent, quiet);
    let drops = net::delay_queue_drops(&net).unwrap();
    eprintln!("{sent} datagrams into a 500 ms queue: {arrived} arrived, {drops:?} dropped");
    assert!(
        arrived >= net::DELAY_QUEUE_LIMIT && arrived < sent,
        "{arrived}"
    );
    assert_eq!(drops, [0, u64::from(sent - arrived)]);
    net::down(prefix).unwrap();
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}

/// The bytes the load's rule has dropped in `host`.
fn load_bytes(host: &str) -> u64 {
    let listing = output(
        "ip",
        &[
            "netns", "exec", host, "iptables", "-w", "-L", "INPUT", "-v", "-x", "-n",
        ],
    );
    let line = listing
        .lines()
        .find(|l| l.contains("dpt:9"))
        .unwrap_or_else(|| panic!("no load rule in {host}: {listing}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn load() {
    let prefix = "twimp3";
    let _down = Down(prefix);
    let cfg = NetConfig {
        load: Some("0.5".parse().unwrap()),
        ..config(prefix, 2, Link::Fast100)
    };
    let net = net::up(&cfg).unwrap();
    assert_eq!(net::current(prefix).unwrap().as_ref(), Some(&net));
    assert_eq!(helper_count(prefix), 1, "{:?}", leftovers(prefix));
    let hosts = ["twimp3h0", "twimp3h1"];
    let start = Instant::now();
    let first = hosts.map(load_bytes);
    // A measurement window, not a wait for an event.
    thread::sleep(Duration::from_millis(1000));
    let last = hosts.map(load_bytes);
    let seconds = start.elapsed().as_secs_f64();
    for i in 0..2 {
        // iptables counts IP bytes, 1500 of each 1514-byte frame.
        let mbit = (last[i] - first[i]) as f64 * 8.0 / seconds / 1e6;
        eprintln!("load 0.5 of fast100: {mbit:.1} Mbit/s of IP arrives at h{i}");
        assert!((30.0..=55.0).contains(&mbit), "h{i}: {mbit:.1} Mbit/s");
    }
    net::down(prefix).unwrap();
    assert_eq!(leftovers(prefix), Vec::<String>::new());
    // Refused on an unshaped link, having built nothing.
    let err = net::up(&NetConfig {
        link: Link::Unshaped,
        ..cfg
    })
    .unwrap_err();
    assert!(err.to_string().contains("needs a shaped link"), "{err}");
    assert_eq!(leftovers(prefix), Vec::<String>::new());
}

/// The Ctrl-C test's child: `up` on its main thread, to be interrupted.
fn child_up() -> ! {
    // As in net_interrupt.rs: an inherited ignored SIGINT would be lost.
    // SAFETY: resetting a disposition to the default, before any other
    // thread exists.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    let cfg = NetConfig {
        delay: Some("1ms".parse().unwrap()),
        ..config("twimp4", 3, Link::Unshaped)
    };
    let result = net::up(&cfg);
    eprintln!("child: up returned instead of ending by SIGINT: {result:?}");
    std::process::exit(1);
}

fn interrupted_up() {
    let prefix = "twimp4";
    let _down = Down(prefix);
    let marks = PathBuf::from(format!("/tmp/twimp4-marks-{}", std::process::id()));
    std::fs::create_dir_all(&marks).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .env(MARKS, &marks)
        .process_group(0)
        .spawn()
        .unwrap();
    let pidfd = Pidfd::open(child.id()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let started = || std::fs::read_dir(&marks).is_ok_and(|mut d| d.next().is_some());
    let watched = watch::wait_until(&marks, started, Some(&pidfd), deadline);
    let group = child.id() as libc::pid_t;
    // SAFETY: the child leads this group and is not yet waited for.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    let left = leftovers(prefix);
    std::fs::remove_dir_all(&marks).unwrap();
    match watched {
        Ok(Watched::Ready) => {}
        other => panic!("no helper started: {other:?}"),
    }
    assert_eq!(status.signal(), Some(libc::SIGINT), "child: {status}");
    assert_eq!(left, Vec::<String>::new(), "left after the interrupted up");
}
