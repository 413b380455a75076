//! Running the `threadwire` command and the node programs in tests: a
//! predictable environment, a deadline, and how a run must end.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use threadwire_testbed::wait_deadline;

/// Any command here that runs longer has hung.
pub const HANG: Duration = Duration::from_secs(60);

/// Whether `program` is a file in a directory of `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// The path of a workspace example built for this test's profile:
/// `target/<profile>/deps/<test>-<hash>` → `target/<profile>/examples/<name>`.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps")
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "example {} is missing; build it with `cargo test --workspace` \
         (or `cargo build --workspace --examples`) before running this test",
        path.display()
    );
    path
}

pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Standard output, a row of whitespace-separated words per line.
    pub fn rows(&self) -> Vec<Vec<&str>> {
        self.stdout
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect()
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn show(&self) -> String {
        format!(
            "{}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Checks that no progress bar was drawn: stderr is a pipe here, and the
/// bars are drawn only on a terminal.
pub fn assert_no_progress_bar(ran: &Ran) {
    assert!(
        !ran.stderr.contains('\r') && !ran.stderr.contains("bench "),
        "a progress bar on a pipe\n{}",
        ran.show()
    );
}

/// A command with a predictable environment: not inside a job, warnings
/// logged, no panic backtraces.
pub fn command(program: impl Into<PathBuf>) -> Command {
    let mut cmd = Command::new(program.into());
    for var in [
        threadwire::env::JOB,
        threadwire::env::NODE,
        threadwire::env::NODES,
        threadwire::env::RENDEZVOUS,
        threadwire::env::SECRET,
        threadwire::env::BIND,
        threadwire::env::PROGRESS,
    ] {
        cmd.env_remove(var);
    }
    cmd.env(threadwire::env::LOG, "warn")
        .env("RUST_BACKTRACE", "0");
    cmd
}

pub fn threadwire() -> Command {
    command(env!("CARGO_BIN_EXE_threadwire"))
}

/// Runs `cmd` to its end; kills it and fails if it hangs.
pub fn run(cmd: &mut Command) -> Ran {
    run_fed(cmd, None)
}

/// [`run`], taken for hung only after `hang` (a job that recovers from
/// heavy packet loss on a loaded machine may take minutes).
pub fn run_within(cmd: &mut Command, hang: Duration) -> Ran {
    run_fed_within(cmd, None, hang)
}

/// [`run`], with `input` on its stdin (else nothing).
pub fn run_fed(cmd: &mut Command, input: Option<&str>) -> Ran {
    run_fed_within(cmd, input, HANG)
}

fn run_fed_within(cmd: &mut Command, input: Option<&str>, hang: Duration) -> Ran {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the command");
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        let text = text.to_string();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(text.as_bytes());
        });
    }
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let status = match wait_deadline(&mut child, Instant::now() + hang) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} hung; killed after {hang:?}");
        }
        Err(e) => panic!("waiting for {cmd:?}: {e}"),
    };
    Ran {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// Runs `cmd` to its end and checks that it succeeded.
pub fn run_ok(cmd: &mut Command) -> Ran {
    let ran = run(cmd);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    ran
}

/// Runs a benchmark to its end and checks that it succeeded without
/// drawing a progress bar.
pub fn run_bench_ok(cmd: &mut Command) -> Ran {
    let ran = run_ok(cmd);
    assert_no_progress_bar(&ran);
    ran
}

/// Checks that no network namespace named `prefix…` is left.
pub fn assert_no_namespaces_left(prefix: &str) {
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        !namespaces.lines().any(|l| l.starts_with(prefix)),
        "the benchmark's hosts were left behind: {namespaces}"
    );
}

/// Removes a test net however the test ends.
pub struct NetGuard(pub &'static str);

impl Drop for NetGuard {
    fn drop(&mut self) {
        let _ = run(threadwire().args(["net", "down", "--prefix", self.0]));
    }
}

/// Emulated hosts for one test: `threadwire net up --hosts K --prefix P`
/// with `extra` arguments, and a host file naming them; both removed
/// however the test ends.
pub struct NamespaceHosts {
    /// The host file for `threadwire run --hosts`.
    pub file: std::path::PathBuf,
    _net: NetGuard,
}

impl NamespaceHosts {
    /// The hosts, or `None` after saying why the test skips (no root, no
    /// namespaces, no iptables for an impairment).
    pub fn up(prefix: &'static str, hosts: u32, extra: &[&str]) -> Option<NamespaceHosts> {
        let up = run(threadwire()
            .args([
                "net",
                "up",
                "--hosts",
                &hosts.to_string(),
                "--prefix",
                prefix,
            ])
            .args(extra));
        if up.code() != Some(0) {
            eprintln!(
                "SKIPPED: cannot create emulated hosts here: {}",
                up.stderr.trim()
            );
            return None;
        }
        let net = NetGuard(prefix);
        let file =
            std::env::temp_dir().join(format!("threadwire-{prefix}-hosts-{}", std::process::id()));
        let names: String = (0..hosts)
            .map(|h| format!("netns:{prefix}h{h}\n"))
            .collect();
        std::fs::write(&file, names).expect("host file");
        Some(NamespaceHosts { file, _net: net })
    }
}

impl Drop for NamespaceHosts {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}
