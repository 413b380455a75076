//! `threadwire run` on `ssh:` hosts, for real: three network namespaces
//! each run an `sshd` with a key made for the test (`support::sshd`), and
//! jobs run there through one ssh connection and one proxy per host
//! (`threadwire_launch::proxy`). Needs root, `ip`, `/usr/sbin/sshd`, `ssh`
//! and `ssh-keygen`; without them it says why it skips.
//!
//! The node programs are examples of other workspace crates (`ring` of
//! threadwire-apps, `node-misbehave` of threadwire's tests).

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};
use support::command::*;
use support::sshd::{Process, SshHosts};
use threadwire_testbed::process::{wait_all_exited, Pidfd};

const HOSTS: usize = 3;
const NODES: usize = 6;

/// How soon a remote node's SIGKILL must be reported.
const REPORTED_WITHIN: Duration = Duration::from_secs(2);

/// How long what a job leaves may take to go once it has ended.
const CLEANUP: Duration = Duration::from_secs(5);

/// One sshd setup, six jobs: a ring of messages, a node that fails with
/// status 3, a node killed with SIGKILL (after a node was added to the
/// running job on an ssh host, through the same proxy, and that host
/// removed, which ends its proxy and its connection), a launcher killed
/// with SIGKILL, a proxy killed with SIGKILL, ssh refusing the hosts.
/// After each, nothing of the job is left on any host.
#[test]
fn jobs_on_ssh_hosts_run_fail_and_leave_nothing_behind() {
    if let Some(why) = SshHosts::unavailable("twssh") {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let hosts = SshHosts::up("twssh", HOSTS as u32);
    a_ring_runs_and_its_output_is_forwarded(&hosts);
    a_failing_node_sets_the_status(&hosts);
    a_killed_node_is_reported_and_ends_the_job(&hosts);
    a_killed_launcher_leaves_nothing_behind(&hosts);
    a_killed_proxy_takes_its_nodes_and_is_named(&hosts);
    a_refused_ssh_connection_fails_the_job_naming_it(&hosts);
}

fn a_ring_runs_and_its_output_is_forwarded(hosts: &SshHosts) {
    let ran = run(&mut job(hosts, &example("ring"), &["2", "20"]));
    assert_eq!(ran.code(), Some(0), "{}\n{}", ran.show(), hosts.sshd_logs());
    assert!(
        ran.stdout
            .contains("[n0] token passed 20 times through 12 threads on 6 nodes"),
        "{}",
        ran.show()
    );
    // Node i on host i % 3: the ring's neighbours are on different hosts.
    assert!(
        ran.stderr.contains("n0 -> n1: tcp"),
        "n0 and n1 are on different hosts\n{}",
        ran.show()
    );
    assert_nothing_left(hosts, "after a normal end");
}

fn a_failing_node_sets_the_status(hosts: &SshHosts) {
    let program = example("node-misbehave");
    let ran = run(&mut job(hosts, &program, &["exit-on", "4", "3"]));
    assert_eq!(ran.code(), Some(3), "{}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("threadwire: node n4 exited with status 3")),
        "no message naming the failed node:\n{}",
        ran.show()
    );
    assert!(
        ran.stdout.contains("[n0] n0: receive: node n4 was lost"),
        "{}",
        ran.show()
    );
    assert_nothing_left(hosts, "after a node's failure");
}

fn a_killed_node_is_reported_and_ends_the_job(hosts: &SshHosts) {
    let program = example("node-misbehave");
    let mut running = Running::start(job(hosts, &program, &["sleep"]));
    running.until_all_sleep();
    let job = hosts.processes();
    let nodes = nodes_of(&job, &program);
    assert_eq!(nodes.len(), NODES, "{job:?}\n{}", running.show());
    // One more node, on the third host, as the console asks.
    let id = job_id(nodes[0].pid).expect("the node's THREADWIRE_JOB");
    let third = format!("ssh:{}", hosts.net.hosts[2].addr);
    let added = run(console(hosts).args(["vm", "--job", &id, "add-nodes", "1", "--host", &third]));
    assert_eq!(added.code(), Some(0), "{}", added.show());
    assert!(added.stdout.contains("nodes added: n6"), "{}", added.show());
    let slept = running.until(|l| l == "[n6] n6: sleeping", Instant::now() + HANG);
    assert!(
        slept.is_some(),
        "the added node did not run\n{}",
        running.show()
    );
    let job = hosts.processes();
    let nodes = nodes_of(&job, &program);
    assert_eq!(nodes.len(), NODES + 1, "{job:?}");
    assert_eq!(nodes.iter().filter(|p| p.host == 2).count(), 3, "{job:?}");
    one_ssh_and_one_proxy_per_host(hosts, &mut running, &job);
    // Removing the third host kills its nodes and ends its proxy and its
    // ssh connection; the job goes on.
    let third_ssh: Vec<u32> = ssh_clients(running.child.id())
        .into_iter()
        .filter(|&p| cmdline(p).contains(&format!(" {} ", hosts.net.hosts[2].addr)))
        .collect();
    assert_eq!(third_ssh.len(), 1, "{third_ssh:?}");
    let removed = run(console(hosts).args(["vm", "--job", &id, "remove-hosts", &third]));
    assert_eq!(removed.code(), Some(0), "{}", removed.show());
    assert!(
        removed.stdout.contains("nodes killed: n2 n5 n6"),
        "{}",
        removed.show()
    );
    let on_third: Vec<&Process> = job.iter().filter(|p| p.host == 2).collect();
    assert!(
        all_gone(&on_third) && all_gone_pids(&third_ssh),
        "left on the removed host: {:?}",
        hosts.processes()
    );
    // A node on the second host, by the number its environment gives it.
    let victim = nodes.iter().find(|p| p.host == 1).expect("a node on h1");
    let number = node_number(victim.pid).expect("the node's THREADWIRE_NODE");
    let killed = Instant::now();
    // SAFETY: kill(2) of a node process of this test's job.
    unsafe { libc::kill(victim.pid as i32, libc::SIGKILL) };
    let said = format!("threadwire: node n{number} was killed by signal 9 (SIGKILL)");
    let reported = running.until(|l| l.starts_with(&said), killed + REPORTED_WITHIN);
    assert!(
        reported.is_some(),
        "no {said:?} within {REPORTED_WITHIN:?}\n{}",
        running.show()
    );
    let status = running.wait();
    assert_eq!(status.code(), Some(128 + 9), "{}", running.show());
    assert_nothing_left(hosts, "after a node's SIGKILL");
}

fn a_killed_launcher_leaves_nothing_behind(hosts: &SshHosts) {
    let program = example("node-misbehave");
    let mut running = Running::start(job(hosts, &program, &["sleep"]));
    running.until_all_sleep();
    let ssh = ssh_clients(running.child.id());
    assert_eq!(ssh.len(), HOSTS, "{}", running.show());
    running.child.kill().expect("SIGKILL the launcher");
    let _ = running.child.wait();
    assert!(
        all_gone_pids(&ssh),
        "ssh clients {ssh:?} outlived their launcher"
    );
    assert_nothing_left(hosts, "after the launcher's SIGKILL");
}

/// The `threadwire` command, with the jobs' consoles in the test's
/// directory.
fn console(hosts: &SshHosts) -> Command {
    let mut cmd = threadwire();
    cmd.env(
        threadwire_launch::console::DIR_VAR,
        hosts.dir.join("consoles"),
    );
    cmd
}

/// A proxy killed outright takes its host's nodes with it; the job fails
/// with ssh's status, naming the host.
fn a_killed_proxy_takes_its_nodes_and_is_named(hosts: &SshHosts) {
    let program = example("node-misbehave");
    let mut running = Running::start(job(hosts, &program, &["sleep"]));
    running.until_all_sleep();
    let proxy = env!("CARGO_BIN_EXE_threadwire");
    let job = hosts.processes();
    let victim = job
        .iter()
        .find(|p| p.host == 0 && p.cmdline == [proxy, "proxy"])
        .expect("the proxy on h0");
    // SAFETY: kill(2) of the proxy of this test's job.
    unsafe { libc::kill(victim.pid as i32, libc::SIGKILL) };
    let host = format!("ssh connection to {}", hosts.net.hosts[0].addr);
    let named = running.until(|l| l.contains(&host), Instant::now() + HANG);
    assert!(
        named.is_some(),
        "no line naming {host:?}\n{}",
        running.show()
    );
    let status = running.wait();
    assert_eq!(status.code(), Some(255), "{}", running.show());
    assert_nothing_left(hosts, "after a proxy's SIGKILL");
}

/// Without the test's ssh config, ssh refuses the hosts (their keys are
/// unknown, and it may not ask): the job fails with ssh's status and its
/// words.
fn a_refused_ssh_connection_fails_the_job_naming_it(hosts: &SshHosts) {
    let mut cmd = job(hosts, &example("ring"), &[]);
    cmd.env(threadwire_launch::SSH_OPTIONS, "-F /dev/null");
    let ran = run(&mut cmd);
    assert_eq!(ran.code(), Some(255), "{}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("threadwire: node n")
                && l.contains("was lost with the ssh connection to 10.")
                && l.contains("; ssh: ")),
        "{}",
        ran.show()
    );
    assert_nothing_left(hosts, "after a refused connection");
}

/// `threadwire run` of `program args` on every host, two nodes each.
fn job(hosts: &SshHosts, program: &Path, args: &[&str]) -> Command {
    let mut cmd = console(hosts);
    cmd.env(
        threadwire_launch::SSH_OPTIONS,
        format!("-F {}", hosts.ssh_config().display()),
    )
    .args(["run", "-v", "-n", &NODES.to_string(), "--hosts"])
    .arg(hosts.host_file())
    .args(["--bind", &hosts.bridge().to_string(), "--"])
    .arg(program)
    .args(args);
    cmd
}

/// Exactly one ssh client per host, children of the launcher, and one
/// proxy in each host's namespace.
fn one_ssh_and_one_proxy_per_host(hosts: &SshHosts, running: &mut Running, job: &[Process]) {
    let ssh = ssh_clients(running.child.id());
    assert_eq!(ssh.len(), HOSTS, "ssh clients {ssh:?}\n{}", running.show());
    let mut to: Vec<String> = ssh
        .iter()
        .filter_map(|&pid| {
            let args = cmdline(pid);
            hosts
                .net
                .hosts
                .iter()
                .map(|h| h.addr.to_string())
                .find(|a| args.contains(a))
        })
        .collect();
    to.sort();
    to.dedup();
    assert_eq!(to.len(), HOSTS, "one ssh per host: {to:?}");
    let proxy = env!("CARGO_BIN_EXE_threadwire");
    for host in 0..HOSTS {
        let proxies: Vec<&Process> = job
            .iter()
            .filter(|p| p.host == host && p.cmdline == [proxy, "proxy"])
            .collect();
        assert_eq!(proxies.len(), 1, "proxies on h{host}: {job:?}");
    }
}

/// Waits until no process is left in the hosts' namespaces but their
/// sshds: nodes, proxies and ssh sessions all gone.
fn assert_nothing_left(hosts: &SshHosts, when: &str) {
    let left = hosts.processes();
    let left: Vec<&Process> = left.iter().collect();
    assert!(
        all_gone(&left),
        "{when}, left on the hosts: {:?}",
        hosts.processes()
    );
}

/// Whether these processes all end within [`CLEANUP`].
fn all_gone(processes: &[&Process]) -> bool {
    all_gone_pids(&processes.iter().map(|p| p.pid).collect::<Vec<_>>())
}

fn all_gone_pids(pids: &[u32]) -> bool {
    // A process already gone has no pidfd to open.
    let pidfds: Vec<Pidfd> = pids.iter().filter_map(|&p| Pidfd::open(p).ok()).collect();
    wait_all_exited(&pidfds, Instant::now() + CLEANUP).expect("wait on pidfds")
}

fn nodes_of<'a>(job: &'a [Process], program: &Path) -> Vec<&'a Process> {
    let program = program.to_string_lossy();
    job.iter()
        .filter(|p| p.cmdline.first().is_some_and(|a| *a == program))
        .collect()
}

/// The node number in `pid`'s environment.
fn node_number(pid: u32) -> Option<u32> {
    environment(pid, threadwire::env::NODE)?.parse().ok()
}

/// The job id in `pid`'s environment.
fn job_id(pid: u32) -> Option<String> {
    environment(pid, threadwire::env::JOB)
}

fn environment(pid: u32, var: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{var}=");
    environ
        .split(|&b| b == 0)
        .filter_map(|v| std::str::from_utf8(v).ok())
        .find_map(|v| Some(v.strip_prefix(&prefix)?.to_string()))
}

/// The `ssh` processes whose parent is `parent`.
fn ssh_clients(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for pid in support::sshd::pids() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // pid (comm) state ppid …; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        if comm == "ssh" && ppid == Some(parent.to_string().as_str()) {
            found.push(pid);
        }
    }
    found
}

fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// A launcher running in the background, its output lines as they come.
struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    started: Instant,
}

impl Running {
    fn start(mut cmd: Command) -> Running {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start threadwire run");
        let (tx, lines) = mpsc::channel();
        let pipes: [Box<dyn Read + Send>; 2] = [
            Box::new(child.stdout.take().expect("piped")),
            Box::new(child.stderr.take().expect("piped")),
        ];
        for pipe in pipes {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Running {
            child,
            lines,
            seen: Vec::new(),
            started: Instant::now(),
        }
    }

    /// The first line, from now on, that `wanted` accepts, if one comes
    /// by `deadline`.
    fn until(&mut self, wanted: impl Fn(&str) -> bool, deadline: Instant) -> Option<String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            self.seen.push(line.clone());
            if wanted(&line) {
                return Some(line);
            }
        }
    }

    /// Waits until every node says it sleeps.
    fn until_all_sleep(&mut self) {
        let deadline = self.started + HANG;
        for _ in 0..NODES {
            let slept = self.until(|l| l.ends_with(": sleeping"), deadline);
            assert!(
                slept.is_some(),
                "the nodes did not all start\n{}",
                self.show()
            );
        }
    }

    /// Its exit status (killed if it hangs).
    fn wait(&mut self) -> std::process::ExitStatus {
        match threadwire_testbed::wait_deadline(&mut self.child, self.started + HANG) {
            Ok(Some(status)) => status,
            _ => {
                let _ = self.child.kill();
                panic!("threadwire run hung\n{}", self.show());
            }
        }
    }

    fn show(&mut self) -> String {
        self.seen.extend(self.lines.try_iter());
        self.seen.join("\n")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
