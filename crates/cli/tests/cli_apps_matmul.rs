//! `threadwire apps matmul` end to end: SUMMA on 1, 4 (2x2) and 6 (2x3)
//! nodes with every kernel, serial and threaded, at odd and even small
//! sizes, and host–node with every kernel — each verified (A x I = A at
//! every node and at the master, a random product against blas); a mesh
//! that does not fit the nodes refused before any node starts; a node
//! lost in the middle failing the job, not hanging it.

mod support;
use support::command::*;
use support::lost_node::*;

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
    // Naive at 1200 on a 2x2 mesh: seconds in a debug build. Both nodes
    // `running` in the job's console: joined, in the app (a node killed
    // while `joining` is the launcher's case, not the app's).
    let app = [
        "apps", "matmul", "--kernel", "naive", "--size", "1200", "--panel", "16",
    ];
    let (ran, killed) = kill_node1_when("threadwire-matmul-consoles", 4, 20, &app, |row| {
        row.get(5).map(String::as_str) == Some("running")
    });
    assert_failed_naming_n1(&ran, killed);
    // Every survivor ends: none waits on the failed nodes until the job's
    // timeout (status 124).
    assert_ne!(ran.code(), Some(124), "a survivor hung: {}", ran.show());
}

/// `--peers`: ScaLAPACK's pdgemm on the same size and a 2x1 grid, with
/// one BLAS thread and with two, verified by the peer itself (A x I = A),
/// printed beside ours with the ratio. Without Open MPI's compiler or
/// ScaLAPACK the peer's line says what to install, and the test says it
/// skips.
#[test]
fn apps_matmul_peers_runs_pdgemm_beside() {
    let ran = run_ok(threadwire().args([
        "apps",
        "matmul",
        "-n",
        "2",
        "--mesh",
        "2x1",
        "--size",
        "96",
        "--peers",
        "--peer-rounds",
        "2",
    ]));
    assert!(ran.stdout.contains("verified"), "{}", ran.show());
    let peer_lines: Vec<&str> = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("peer: ScaLAPACK pdgemm"))
        .collect();
    assert_eq!(peer_lines.len(), 2, "{}", ran.show());
    if peer_lines.iter().any(|l| l.contains("not installed")) {
        eprintln!("skipping the pdgemm comparison: {}", peer_lines[0]);
        return;
    }
    for (line, threads) in peer_lines.iter().zip(["1 BLAS thread", "2 BLAS thread"]) {
        assert!(line.contains("2x1 ranks"), "{}", ran.show());
        assert!(line.contains(threads), "{}", ran.show());
        assert!(line.contains("GFLOP/s"), "{}", ran.show());
    }
    assert!(
        ran.stdout.contains("threadwire ÷ pdgemm's faster run:"),
        "{}",
        ran.show()
    );
}
