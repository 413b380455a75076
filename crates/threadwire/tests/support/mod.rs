//! Helpers shared by the integration tests: find a node program built by
//! cargo and run it as a real job through the library launcher.
//!
//! Node programs live in `tests/nodes/<name>.rs` and are declared as
//! `[[example]] name = "node-<name>"`, so `cargo test` builds them into
//! `target/<profile>/examples/` before any test runs. A run limited to one
//! test target (`cargo test --test p2p_matching`) does not rebuild them:
//! after changing a node program or the runtime, run
//! `cargo build --examples` first, or the test runs the old binaries.
#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;
use std::time::Duration;
use threadwire_launch::{Event, JobReport, JobSpec, OutputStream};

/// Every job ends by this long at the latest, so a hang fails the test
/// instead of hanging CI.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);

/// The path of example `name`, built by cargo for this test's profile:
/// `target/<profile>/deps/<test>-<hash>` → `target/<profile>/examples/<name>`.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.is_file(),
        "node program {} is missing; build it with `cargo test --workspace` \
         (or `cargo build --workspace --examples`) before running this test",
        path.display()
    );
    path
}

/// A job of `nodes` copies of example `name`, with the test timeout. Nodes
/// log at `warn` and print panics without a backtrace (whatever the test
/// runner's environment says), so transcripts stay short and predictable.
pub fn job(nodes: u32, name: &str) -> JobSpec {
    JobSpec::new(nodes, example(name))
        .timeout(JOB_TIMEOUT)
        .env(threadwire::env::LOG, "warn")
        .env("RUST_BACKTRACE", "0")
}

/// What a finished job printed, and how it ended.
#[derive(Debug)]
pub struct JobOutput {
    /// The launcher's report.
    pub report: JobReport,
    /// Lines printed on standard output, per node.
    pub stdout: Vec<Vec<String>>,
    /// Lines printed on standard error, per node.
    pub stderr: Vec<Vec<String>>,
    /// Every launcher event, in order, output lines included.
    pub events: Vec<Event>,
}

impl JobOutput {
    /// Everything the job printed, for assertion messages.
    pub fn transcript(&self) -> String {
        let mut s = format!(
            "status {} exits {:?} failure {:?} timed out {}\n",
            self.report.status, self.report.exits, self.report.failure, self.report.timed_out
        );
        for (node, (out, err)) in self.stdout.iter().zip(&self.stderr).enumerate() {
            for line in out {
                s += &format!("[n{node}] {line}\n");
            }
            for line in err {
                s += &format!("[n{node} err] {line}\n");
            }
        }
        s
    }

    /// Panics with the transcript unless the job ended with status 0 and
    /// every node exited cleanly.
    pub fn assert_success(&self) {
        assert!(
            self.report.status == 0
                && !self.report.timed_out
                && self.report.failure.is_none()
                && self.report.exits.iter().all(|e| e.success()),
            "the job failed:\n{}",
            self.transcript()
        );
    }

    /// Panics with the transcript unless the job ended with status 0, no
    /// failure and no timeout; nodes may have been killed on purpose.
    pub fn assert_status_ok(&self) {
        assert!(
            self.report.status == 0 && !self.report.timed_out && self.report.failure.is_none(),
            "the job failed:\n{}",
            self.transcript()
        );
    }

    /// Node `node`'s stdout lines that start with `prefix`.
    pub fn lines_with(&self, node: u32, prefix: &str) -> Vec<&str> {
        self.stdout
            .get(node as usize)
            .into_iter()
            .flatten()
            .filter(|l| l.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    /// The one stdout line of `node` that starts with `prefix`.
    pub fn line(&self, node: u32, prefix: &str) -> &str {
        let found = self.lines_with(node, prefix);
        assert!(
            found.len() == 1,
            "expected one line of n{node} starting with {prefix:?}, found {}:\n{}",
            found.len(),
            self.transcript()
        );
        found[0]
    }

    /// The peak resident memory node `node` printed, in kB: its one line
    /// `peak <…> <kB>` (`common::vm_hwm` in the node programs).
    pub fn peak_kb(&self, node: u32) -> u64 {
        let line = self.line(node, "peak ");
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("peak line {line:?}"))
    }
}

/// Runs `spec` to its end (with [`JOB_TIMEOUT`] unless it has a timeout).
pub fn run(spec: JobSpec) -> JobOutput {
    run_observed(spec, |_| {})
}

/// Runs `spec` to its end, showing every event to `observe` as it happens
/// (on the launcher's thread: `observe` must not block).
pub fn run_observed(mut spec: JobSpec, mut observe: impl FnMut(&Event)) -> JobOutput {
    if spec.timeout.is_none() {
        spec = spec.timeout(JOB_TIMEOUT);
    }
    let n = spec.nodes as usize;
    let mut stdout = vec![Vec::new(); n];
    let mut stderr = vec![Vec::new(); n];
    let mut events = Vec::new();
    let report = threadwire_launch::run(&spec, |ev| {
        if let Event::Output { node, stream, line } = ev {
            let lines = match stream {
                OutputStream::Stdout => &mut stdout,
                OutputStream::Stderr => &mut stderr,
            };
            // Nodes added while the job runs come after the founders.
            if lines.len() <= *node as usize {
                lines.resize(*node as usize + 1, Vec::new());
            }
            lines[*node as usize].push(line.clone());
        }
        observe(ev);
        events.push(ev.clone());
    })
    .unwrap_or_else(|e| panic!("cannot launch {}: {e}", spec.program.display()));
    let nodes = report.exits.len().max(stdout.len()).max(stderr.len());
    stdout.resize(nodes, Vec::new());
    stderr.resize(nodes, Vec::new());
    JobOutput {
        report,
        stdout,
        stderr,
        events,
    }
}

/// Whether a process with this pid still exists and runs `name` (a pid
/// reused by an unrelated process does not count).
pub fn process_alive(pid: u32, name: &str) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmdline) => String::from_utf8_lossy(&cmdline).contains(name),
        Err(_) => false,
    }
}
