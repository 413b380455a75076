//! A running job's console (`threadwire vm`, launcher `console` module):
//! the built `threadwire` command lists the job, shows its hosts and its
//! nodes with their state and thread counts, and grows it; the socket goes
//! with the job. The node program is `nodes/vm.rs`, mode `console`.
//!
//! The command is `target/<profile>/threadwire`, which this crate's tests
//! do not build: `cargo build --release -p threadwire-cli` first.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use threadwire_launch::{console, Event, FailurePolicy, NodeExit, OutputStream};

/// The `threadwire` command built for this test's profile.
fn threadwire_command() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps")
        .join("threadwire");
    assert!(
        path.is_file(),
        "{} is missing; build it with `cargo build -p threadwire-cli` (with \
         --release for a --release test run) before running this test",
        path.display()
    );
    path
}

/// What one `threadwire vm …` printed.
struct Vm {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Vm {
    fn show(&self) -> String {
        format!(
            "ok {}\n--- stdout\n{}--- stderr\n{}",
            self.ok, self.stdout, self.stderr
        )
    }

    /// The stdout row whose first word is `first`, split into words.
    fn row(&self, first: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&first))
            .unwrap_or_else(|| panic!("no row {first}:\n{}", self.show()))
    }
}

fn vm(dir: &Path, args: &[&str]) -> Vm {
    let out = Command::new(threadwire_command())
        .arg("vm")
        .args(args)
        .env(console::DIR_VAR, dir)
        .env_remove(threadwire::env::JOB)
        .output()
        .expect("run threadwire vm");
    Vm {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn vm_ok(dir: &Path, args: &[&str]) -> Vm {
    let ran = vm(dir, args);
    assert!(ran.ok, "threadwire vm {args:?} failed:\n{}", ran.show());
    ran
}

/// `threadwire vm nodes` until node `node`'s row has `state` (the state
/// is its last words).
fn wait_for_state(dir: &Path, job: &str, node: &str, state: &str) -> Vm {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ran = vm_ok(dir, &["--job", job, "nodes"]);
        if ran.row(node)[5..].join(" ").starts_with(state) {
            return ran;
        }
        assert!(
            Instant::now() < deadline,
            "{node} never became {state}:\n{}",
            ran.show()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts a 2-node job whose n0 has 3 fibers, then from the shell: lists
/// it, shows its hosts and nodes (thread counts 4 and 1), adds a node that
/// waits, one that finishes and one that fails (each state shown), is
/// refused a bad request, and adds the node that ends the job; then the
/// console is gone.
#[test]
fn threadwire_vm_sees_and_grows_a_running_job() {
    let dir = std::env::temp_dir().join(format!("twvm-console-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The launcher, in this process, opens its console there too.
    std::env::set_var(console::DIR_VAR, &dir);
    let program = support::example("node-vm");
    let (tx, rx) = mpsc::channel();
    let job = std::thread::spawn(move || {
        support::run_observed(
            support::job(2, "node-vm")
                .args(["console"])
                .on_failure(FailurePolicy::Continue),
            move |e| {
                if let Event::Output {
                    node: 0,
                    stream: OutputStream::Stdout,
                    line,
                } = e
                {
                    let _ = tx.send(line.clone());
                }
            },
        )
    });
    let started = rx
        .recv_timeout(support::JOB_TIMEOUT)
        .expect("n0 says it has started");
    // "n0: job <id>, 4 threads"
    let id = started
        .strip_prefix("n0: job ")
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("{started}"))
        .to_string();
    assert!(started.ends_with(", 4 threads"), "{started}");
    let socket = dir.join(&id);
    assert!(socket.exists(), "no console at {}", socket.display());

    let listed = vm_ok(&dir, &[]);
    let row = listed.row(&id);
    assert_eq!(row[1..4], ["2", "of", "2"], "{}", listed.show());
    assert!(listed.stdout.contains("node-vm"), "{}", listed.show());

    let nodes = vm_ok(&dir, &["--job", &id, "nodes"]);
    assert_eq!(
        nodes
            .stdout
            .lines()
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["NODE", "HOST", "PID", "THREADS", "ADDRESS", "STATE"]),
        "{}",
        nodes.show()
    );
    for (node, threads) in [("n0", "4"), ("n1", "1")] {
        let row = nodes.row(node);
        assert_eq!(row[1], "local", "{}", nodes.show());
        assert!(row[2].parse::<u32>().is_ok(), "{}", nodes.show());
        assert_eq!(row[3], threads, "{}", nodes.show());
        assert!(row[4].starts_with("127.0.0.1:"), "{}", nodes.show());
        assert_eq!(row[5..], ["running"], "{}", nodes.show());
    }

    let hosts = vm_ok(&dir, &["--job", &id, "hosts"]);
    assert_eq!(
        hosts.row("0"),
        ["0", "local", "present", "n0", "n1"],
        "{}",
        hosts.show()
    );

    // The job's own program and arguments: a node that waits.
    let added = vm_ok(&dir, &["--job", &id, "add-nodes", "1"]);
    assert_eq!(added.stdout.trim(), "nodes added: n2", "{}", added.show());
    let nodes = vm_ok(&dir, &["--job", &id, "nodes"]);
    assert_eq!(nodes.row("n2")[3], "1", "{}", nodes.show());
    assert_eq!(nodes.row("n2")[5..], ["running"], "{}", nodes.show());
    let hosts = vm_ok(&dir, &["--job", &id, "hosts"]);
    assert_eq!(hosts.row("0")[3..], ["n0", "n1", "n2"], "{}", hosts.show());

    let exe = program.to_str().expect("a UTF-8 path");
    let added = vm_ok(
        &dir,
        &[
            "--job",
            &id,
            "add-nodes",
            "1",
            "--host",
            "local",
            "--",
            exe,
            "console",
            "quit",
        ],
    );
    assert_eq!(added.stdout.trim(), "nodes added: n3", "{}", added.show());
    let nodes = wait_for_state(&dir, &id, "n3", "finished");
    assert_eq!(nodes.row("n3")[3], "-", "{}", nodes.show());

    let added = vm_ok(
        &dir,
        &["--job", &id, "add-nodes", "1", exe, "console", "fail"],
    );
    assert_eq!(added.stdout.trim(), "nodes added: n4", "{}", added.show());
    let nodes = wait_for_state(&dir, &id, "n4", "failed: node n4 exited with status 3");
    assert_eq!(nodes.row("n0")[3], "4", "{}", nodes.show());

    // Refused requests: the job's reason, and no job of that id.
    let refused = vm(&dir, &["--job", &id, "add-nodes", "1", "--host", "mars"]);
    assert!(!refused.ok, "{}", refused.show());
    assert!(
        refused.stderr.contains("\"mars\" is not"),
        "{}",
        refused.show()
    );
    let refused = vm(&dir, &["--job", "ffffffffffffffff", "nodes"]);
    assert!(!refused.ok, "{}", refused.show());
    assert!(
        refused
            .stderr
            .contains("no running job of this user has id"),
        "{}",
        refused.show()
    );

    let added = vm_ok(
        &dir,
        &[
            "--job",
            &id,
            "add-nodes",
            "1",
            "--",
            exe,
            "console",
            "finish",
        ],
    );
    assert_eq!(added.stdout.trim(), "nodes added: n5", "{}", added.show());

    let out = job.join().expect("the job's thread");
    // n4's failure is the job's status; the others ended in order.
    assert_eq!(out.report.status, 3, "{}", out.transcript());
    assert_eq!(out.report.exits.len(), 6, "{}", out.transcript());
    assert_eq!(out.report.exits[3], NodeExit::Code(0));
    assert_eq!(out.report.exits[4], NodeExit::Code(3));
    for n in [0, 1, 2, 5] {
        assert_eq!(
            out.report.exits[n],
            NodeExit::Code(0),
            "{}",
            out.transcript()
        );
    }
    out.line(0, "n0: told done");
    out.line(1, "n1: told done by n5");
    out.line(2, "n2: told done");
    out.line(5, "n5: told n1 done");
    let machine: Vec<&str> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Machine(what) => Some(what.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        machine.contains(&"the console adds 1 node: n2 on local"),
        "{machine:?}"
    );

    // The console went with the job.
    assert!(!socket.exists(), "{} outlived its job", socket.display());
    let gone = vm(&dir, &["--job", &id, "nodes"]);
    assert!(!gone.ok, "{}", gone.show());
    let none = vm_ok(&dir, &[]);
    assert!(
        none.stdout.starts_with("no running jobs of this user"),
        "{}",
        none.show()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
