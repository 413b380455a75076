//! Ctrl-C during `net::up` leaves nothing behind.
//!
//! Without libtest's harness (`harness = false` in Cargo.toml): libtest runs
//! every test on a thread of its own, but a signal sent to the process
//! must land on the thread in `up` for `up` to hold it, as it does when
//! `threadwire net up` calls `up` on its main thread before starting any
//! other. So this binary runs itself again as a child that calls `up` on
//! its main thread, in a process group of its own, and sends that group
//! SIGINT, as a terminal's Ctrl-C does to its foreground group, once the
//! child has built a few hosts.

mod support;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{cannot_run, leftovers};
use threadwire_testbed::net::{self, Link, NetConfig};
use threadwire_testbed::process::Pidfd;
use threadwire_testbed::watch::{self, Watched};

const PREFIX: &str = "twt3";
/// Where `ip netns add` makes a namespace's file.
const NETNS_DIR: &str = "/run/netns";
/// Set in the child.
const CHILD: &str = "THREADWIRE_NET_TEST_CHILD";

fn main() {
    if std::env::var_os(CHILD).is_some() {
        // A terminal's Ctrl-C kills by default; a test run in the background
        // of a non-interactive shell (`.ci/run &`) inherits SIGINT ignored,
        // and an ignored signal held back is dropped when let through.
        // SAFETY: resetting a disposition to the default, before any other
        // thread exists.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
        // Big enough to be interrupted half-way (a host takes ~10 commands).
        let cfg = NetConfig {
            prefix: PREFIX.to_string(),
            ..NetConfig::new(120, Link::Fast100)
        };
        let result = net::up(&cfg);
        eprintln!("child: up returned instead of ending by SIGINT: {result:?}");
        std::process::exit(1);
    }
    if std::env::args().any(|a| a == "--list") {
        // `cargo test -- --list` asks every test binary.
        println!("an_interrupted_up_leaves_nothing_behind: test");
        return;
    }
    if let Some(reason) = cannot_run(PREFIX) {
        eprintln!("an_interrupted_up_leaves_nothing_behind: SKIPPED: {reason}");
        return;
    }
    an_interrupted_up_leaves_nothing_behind();
    eprintln!("an_interrupted_up_leaves_nothing_behind: ok");
}

fn an_interrupted_up_leaves_nothing_behind() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .process_group(0)
        .spawn()
        .unwrap();
    // `ip netns add` makes the namespace's file in /run/netns (the probe
    // of `cannot_run` made the directory): watched, not polled.
    let deadline = Instant::now() + Duration::from_secs(20);
    let pidfd = Pidfd::open(child.id()).unwrap();
    let host_2 = Path::new(NETNS_DIR).join("twt3h2");
    match watch::wait_until(
        Path::new(NETNS_DIR),
        || host_2.exists(),
        Some(&pidfd),
        deadline,
    ) {
        Ok(Watched::Ready) => {}
        Ok(Watched::ProcessExited) => panic!("the child ended early"),
        Ok(Watched::TimedOut) => panic!("the child never built host 2"),
        Err(e) => panic!("watching {NETNS_DIR}: {e}"),
    }
    let group = child.id() as libc::pid_t;
    // SAFETY: the child leads this group and is not yet waited for, so the
    // group is still ours.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    let left = leftovers(PREFIX);
    net::down(PREFIX).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "child: {status}");
    assert_eq!(left, Vec::<String>::new(), "left after the interrupted up");
}
