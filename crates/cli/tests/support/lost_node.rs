//! A job that loses a node mid-run: `threadwire run --keep-going` of an
//! app on N nodes, node 1 killed once the console shows the app running
//! on nodes 0 and 1, then the job's end.

use super::command::{run, threadwire, Ran};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};
use threadwire_testbed::retry::retry_until;

/// Runs `threadwire APP…` on `nodes` nodes under `--keep-going` and
/// `--timeout timeout_s`, with a private console directory named by
/// `stem`; kills node 1 once `running(row)` holds for the `vm nodes` rows
/// of n0 and n1 (the row split on white space). Returns the job's run and
/// whether node 1 was killed (`false`: the app never ran on both).
pub fn kill_node1_when(
    stem: &str,
    nodes: u32,
    timeout_s: u32,
    app: &[&str],
    running: impl Fn(&[String]) -> bool,
) -> (Ran, bool) {
    let consoles = std::env::temp_dir().join(format!("{stem}-{}", std::process::id()));
    std::fs::create_dir_all(&consoles).expect("console directory");
    std::fs::set_permissions(&consoles, std::fs::Permissions::from_mode(0o700)).expect("mode 0700");
    let job = {
        let consoles = consoles.clone();
        let (nodes, timeout) = (nodes.to_string(), timeout_s.to_string());
        let app: Vec<String> = app.iter().map(|a| a.to_string()).collect();
        std::thread::spawn(move || {
            run(threadwire()
                .env("THREADWIRE_CONSOLE_DIR", &consoles)
                .args([
                    "run",
                    "-n",
                    &nodes,
                    "--keep-going",
                    "--timeout",
                    &timeout,
                    "--",
                ])
                .arg(env!("CARGO_BIN_EXE_threadwire"))
                .args(app))
        })
    };
    let node1 = retry_until(Instant::now() + Duration::from_secs(30), || {
        let listed = run(threadwire()
            .env("THREADWIRE_CONSOLE_DIR", &consoles)
            .args(["vm", "nodes"]));
        let rows: Vec<Vec<String>> = listed
            .stdout
            .lines()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect();
        let pid_if_running = |node: &str| {
            rows.iter()
                .find(|r| r.first().map(String::as_str) == Some(node))
                .filter(|r| running(r))
                .and_then(|r| r.get(2).cloned())
        };
        pid_if_running("n0").and(pid_if_running("n1"))
    });
    if let Some(pid) = &node1 {
        let killed = std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status()
            .expect("run kill");
        assert!(killed.success(), "kill -KILL {pid}");
    }
    let ran = job.join().expect("the job's thread");
    let _ = std::fs::remove_dir_all(&consoles);
    (ran, node1.is_some())
}

/// That node 0 failed with a message, n1's loss was named (by node 0,
/// or by another node when node 0 first saw that node leave because of
/// it: which a node notices first is a race), and the app printed no
/// verified result.
pub fn assert_failed_naming_n1(ran: &Ran, killed: bool) {
    assert!(killed, "the app never ran on both nodes: {}", ran.show());
    assert_ne!(ran.code(), Some(0), "{}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("[n0] threadwire: ")),
        "node 0 did not fail with a message: {}",
        ran.show()
    );
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.contains("threadwire: ") && l.contains("n1 was lost")),
        "no node named n1's loss: {}",
        ran.show()
    );
    assert!(!ran.stdout.contains("verified"), "{}", ran.show());
}
