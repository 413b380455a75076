//! `threadwire apps matmul` end to end: SUMMA on 1, 4 (2x2) and 6 (2x3)
//! nodes with every kernel, serial and threaded, at odd and even small
//! sizes, and host–node with every kernel — each verified (A x I = A at
//! every node and at the master, a random product against blas); a mesh
//! that does not fit the nodes refused before any node starts; a node
//! lost in the middle failing the job, not hanging it.

mod support;
use std::time::{Duration, Instant};
use support::command::*;
use threadwire_testbed::retry::retry_until;

const KERNELS: [&str; 4] = ["naive", "bmm", "strassen", "blas"];

/// Every kernel, serial and on 2 threads, at sizes 13 and 50, with
/// panels of 7 (several per owner: the overlap runs) and of 256 (one
/// per owner).
fn summa_verifies_on(nodes: &str, mesh: &str) {
    for kernel in KERNELS {
        for size in ["13", "50"] {
            for mode in [&["--serial"][..], &["--threads", "2", "--panel", "7"]] {
                let ran = run_ok(
                    threadwire()
                        .args(["apps", "matmul", "-n", nodes, "--mesh", mesh])
                        .args(["--kernel", kernel, "--size", size])
                        .args(mode),
                );
                let header =
                    format!("matmul {size}x{size}, summa {mesh} on {nodes} nodes, kernel {kernel}");
                assert!(ran.stdout.contains(&header), "{}", ran.show());
                assert!(
                    ran.stdout
                        .contains("verified: A x I = A at every node and at the master"),
                    "{}",
                    ran.show()
                );
                let serial = ran.stdout.contains("serial (1 thread/node, no overlap)");
                assert_eq!(serial, mode[0] == "--serial", "{}", ran.show());
                assert!(ran.stdout.contains("GFLOP/s"), "{}", ran.show());
            }
        }
    }
}

#[test]
fn apps_matmul_summa_verifies_on_one_node() {
    summa_verifies_on("1", "1x1");
}

#[test]
fn apps_matmul_summa_verifies_on_a_2x2_mesh() {
    summa_verifies_on("4", "2x2");
}

#[test]
fn apps_matmul_summa_verifies_on_a_2x3_mesh() {
    summa_verifies_on("6", "2x3");
}

#[test]
fn apps_matmul_host_node_verifies_with_every_kernel() {
    for kernel in KERNELS {
        let ran = run_ok(threadwire().args([
            "apps",
            "matmul",
            "-n",
            "3",
            "--layout",
            "host-node",
            "--kernel",
            kernel,
            "--size",
            "37",
        ]));
        assert!(
            ran.stdout.contains("verified: A x I = A at the master"),
            "{}",
            ran.show()
        );
    }
}

#[test]
fn a_mesh_that_does_not_fit_the_nodes_is_refused_before_the_job_starts() {
    for (args, says) in [
        (
            &["-n", "4", "--mesh", "2x3"][..],
            "a 2x3 mesh has 6 places but the job has 4 nodes",
        ),
        (&["-n", "4", "--mesh", "2by2"], "a mesh is RxC"),
        (
            &["--serial", "--threads", "2"],
            "--serial runs one thread per node",
        ),
        (
            &["--layout", "host-node", "--mesh", "2x2"],
            "--mesh is for the summa layout",
        ),
        (&["--size", "0"], "size 0"),
    ] {
        let ran = run(threadwire().args(["apps", "matmul"]).args(args));
        assert_ne!(ran.code(), Some(0), "{args:?}: {}", ran.show());
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.show());
        assert!(
            !ran.stdout.contains("[n0]"),
            "a node started: {}",
            ran.show()
        );
    }
}

/// Node 1 killed while SUMMA runs, under `--keep-going` so that the
/// launcher does not end the job itself: node 0's broadcasts or gathers
/// fail with the loss, and it fails with a message naming n1.
///
/// Every survivor ends before the job's deadline: n2, which shares no
/// group but the world with n1, learns that n0 and n3 failed after it
/// (the launcher tells every failure under `--keep-going`, and a node that
/// said goodbye and then failed counts as failed for the collectives).
#[test]
fn a_node_lost_during_summa_fails_the_job_with_its_name() {
    let consoles =
        std::env::temp_dir().join(format!("threadwire-matmul-consoles-{}", std::process::id()));
    std::fs::create_dir_all(&consoles).expect("console directory");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&consoles, std::fs::Permissions::from_mode(0o700)).expect("mode 0700");
    let job = {
        let consoles = consoles.clone();
        std::thread::spawn(move || {
            // Naive at 1200 on a 2x2 mesh: seconds in a debug build.
            run(threadwire()
                .env("THREADWIRE_CONSOLE_DIR", &consoles)
                .args(["run", "-n", "4", "--keep-going", "--timeout", "20", "--"])
                .arg(env!("CARGO_BIN_EXE_threadwire"))
                .args([
                    "apps", "matmul", "--kernel", "naive", "--size", "1200", "--panel", "16",
                ]))
        })
    };
    // Both nodes `running` in the job's console: joined, in the app (a
    // node killed while `joining` is the launcher's case, not the app's).
    let node1 = retry_until(Instant::now() + Duration::from_secs(30), || {
        let nodes = run(threadwire()
            .env("THREADWIRE_CONSOLE_DIR", &consoles)
            .args(["vm", "nodes"]));
        let rows: Vec<Vec<String>> = nodes
            .stdout
            .lines()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect();
        let running = |node: &str| {
            rows.iter()
                .find(|r| r.first().map(String::as_str) == Some(node))
                .filter(|r| r.get(5).map(String::as_str) == Some("running"))
                .and_then(|r| r.get(2).cloned())
        };
        running("n0").and(running("n1"))
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
    assert!(
        node1.is_some(),
        "the app never ran on both nodes: {}",
        ran.show()
    );
    assert_ne!(ran.code(), Some(0), "{}", ran.show());
    // Every survivor ends: none waits on the failed nodes until the job's
    // timeout (status 124).
    assert_ne!(ran.code(), Some(124), "a survivor hung: {}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("[n0] threadwire: ") && l.contains("n1 was lost")),
        "node 0 did not fail naming n1: {}",
        ran.show()
    );
    assert!(!ran.stdout.contains("verified"), "{}", ran.show());
}
