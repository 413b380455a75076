//! A benchmark on emulated hosts with its peers, interrupted by SIGINT (a
//! terminal's Ctrl-C, `timeout -s INT`), leaves nothing behind: not its
//! hosts, nor its peers' processes, nor their scratch directories
//! (`threadwire_testbed::interrupt`). Needs root and network namespaces;
//! skips saying why without them.

mod support;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::command::on_path;
use threadwire_testbed::process::Pidfd;
use threadwire_testbed::retry::retry_until;
use threadwire_testbed::wait_deadline;
use threadwire_testbed::watch::{self, Watched};

/// Where `ip netns add` makes a namespace's file.
const NETNS_DIR: &str = "/run/netns";
/// Generous: the ping-pong runs about 20 s before the first peer starts.
const PEER_DEADLINE: Duration = Duration::from_secs(240);
/// Generous: the interrupt thread waits at most 2 s for the peers to die,
/// then removes two hosts.
const CLEANUP_DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn an_interrupted_benchmark_leaves_nothing_behind() {
    if let Some(reason) = cannot_make_namespaces() {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_threadwire"))
        .args([
            "bench",
            "pingpong",
            "--link",
            "none",
            "--paths",
            "tcp",
            "--peers",
            "--sizes",
            "8,1000000",
            "--repetitions",
            "50",
            "--ms",
            "200",
        ])
        .env_remove(threadwire::env::JOB)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start threadwire bench pingpong");
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().expect("piped");
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // ScopedNet::up_with_free_prefix: `twb` and the id plus 0 to 4.
    let prefixes: Vec<String> = (0..5)
        .map(|k| format!("twb{}", (pid as u32 + k) % 100_000))
        .collect();
    let _guard = Cleanup(prefixes.clone());

    // `ip netns add` makes the namespace's file in /run/netns (the probe
    // of `cannot_make_namespaces` made the directory): watched, not polled.
    let deadline = Instant::now() + PEER_DEADLINE;
    let pidfd = Pidfd::open(child.id()).expect("the benchmark's pidfd");
    let netns = Path::new(NETNS_DIR);
    let built = || {
        prefixes
            .iter()
            .find(|p| netns.join(format!("{p}h1")).exists())
            .cloned()
    };
    match watch::wait_until(netns, || built().is_some(), Some(&pidfd), deadline) {
        Ok(Watched::Ready) => {}
        Ok(Watched::ProcessExited) => panic!("the benchmark ended early"),
        Ok(Watched::TimedOut) => panic!("the emulated hosts never came up"),
        Err(e) => panic!("watching {NETNS_DIR}: {e}"),
    }
    let prefix = built().expect("a host 1 was built");
    let netpipe = on_path("NPtcp");
    if netpipe {
        // Another's fork signals nothing to us: retried (retry_until).
        let started = retry_until(deadline, || {
            if !peer_leaders(pid).is_empty() {
                return Some(true);
            }
            pidfd.has_exited().unwrap_or(true).then_some(false)
        });
        match started {
            Some(true) => {}
            Some(false) => panic!("the benchmark ended before a peer started"),
            None => panic!("no peer ever started"),
        }
        // Up to a second for mpirun or pvmd to start its ranks or tasks;
        // NPtcp starts none, and then the second passes.
        let ranks = Instant::now() + Duration::from_secs(1);
        let _ = retry_until(ranks, || {
            let leaders = peer_leaders(pid);
            (descendants(&processes(), &leaders).len() > leaders.len()).then_some(())
        });
    }
    // The peers' groups, and those their descendants took (Open MPI's and
    // Hydra's ranks each take one).
    let table = processes();
    let leaders = peer_leaders(pid);
    let groups: Vec<libc::pid_t> = descendants(&table, &leaders)
        .iter()
        .filter_map(|d| table.iter().find(|p| p.pid == *d).map(|p| p.group))
        .collect();
    assert!(!netpipe || !groups.is_empty(), "no peer found");
    let names: Vec<&str> = table
        .iter()
        .filter(|p| groups.contains(&p.group))
        .map(|p| p.name.as_str())
        .collect();
    eprintln!("interrupting {pid} on net {prefix}, peers {names:?}");

    // SAFETY: kill(2) takes no pointers; the child is not yet reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let deadline = Instant::now() + CLEANUP_DEADLINE;
    let Some(status) = wait_deadline(&mut child, deadline).expect("wait for the benchmark") else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("still running {CLEANUP_DEADLINE:?} after SIGINT");
    };
    let stderr = stderr.join().expect("stderr reader");
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGINT),
        "{status}: {stderr}"
    );
    assert!(stderr.contains("SIGINT:"), "says what it removed: {stderr}");
    eprintln!("{}", stderr.trim());

    let net_left = net_leftovers(&prefix);
    assert!(net_left.is_empty(), "left {net_left:?}; {stderr}");
    // Zombies do not count: they are dead, and a container's init may not
    // reap the orphans.
    let live: Vec<Process> = processes()
        .into_iter()
        .filter(|p| p.live && groups.contains(&p.group))
        .collect();
    assert!(live.is_empty(), "peers left: {live:?}; {stderr}");
    let dirs: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .expect("read the temporary directory")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(&format!("threadwire-peer-{pid}-"))
                || n.starts_with(&format!("threadwire-pvm-{pid}-"))
        })
        .collect();
    assert!(dirs.is_empty(), "scratch directories left: {dirs:?}");
}

/// Removes what a failed run left, so that it does not linger.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for prefix in &self.0 {
            let _ = Command::new(env!("CARGO_BIN_EXE_threadwire"))
                .args(["net", "down", "--prefix", prefix])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Why namespaces cannot be made here, if they cannot.
fn cannot_make_namespaces() -> Option<String> {
    threadwire_testbed::net::unavailable(&format!("twi{}", std::process::id() % 100_000))
}

fn output(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .expect("run a command");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The namespaces and links of the net with this prefix.
fn net_leftovers(prefix: &str) -> Vec<String> {
    let numbered = |rest: &str, kind: &str| {
        rest.strip_prefix(kind)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    let namespaces = output("ip", &["netns", "list"]);
    let links = output("ip", &["-o", "link", "show"]);
    namespaces
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .chain(links.lines().filter_map(|l| l.split(": ").nth(1)))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .filter(|n| {
            n.strip_prefix(prefix)
                .is_some_and(|rest| rest == "br" || numbered(rest, "h") || numbered(rest, "v"))
        })
        .collect()
}

/// A line of `/proc/<pid>/stat`, the fields used here.
#[derive(Debug)]
struct Process {
    pid: libc::pid_t,
    parent: libc::pid_t,
    group: libc::pid_t,
    live: bool,
    name: String,
}

fn processes() -> Vec<Process> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: libc::pid_t = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (head, tail) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_string();
            let mut fields = tail.split_whitespace();
            let state = fields.next()?;
            Some(Process {
                pid,
                parent: fields.next()?.parse().ok()?,
                group: fields.next()?.parse().ok()?,
                live: !matches!(state, "Z" | "X"),
                name,
            })
        })
        .collect()
}

/// The benchmark's live children that lead a process group of their own
/// and are not `ip` or `tc` of the net: its peers (`Group` in
/// `peers/process.rs` of threadwire-bench). Its nodes share its group.
fn peer_leaders(bench: libc::pid_t) -> Vec<libc::pid_t> {
    processes()
        .iter()
        .filter(|p| {
            p.live && p.parent == bench && p.group == p.pid && p.name != "ip" && p.name != "tc"
        })
        .map(|p| p.pid)
        .collect()
}

/// `roots` and their descendants in `table`.
fn descendants(table: &[Process], roots: &[libc::pid_t]) -> Vec<libc::pid_t> {
    let mut found = roots.to_vec();
    loop {
        let before = found.len();
        for p in table {
            if found.contains(&p.parent) && !found.contains(&p.pid) {
                found.push(p.pid);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}
