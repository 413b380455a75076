//! `threadwire apps jpeg` end to end: the pipeline verified by PSNR on 1,
//! 2, 4 and 8 nodes with one and two threads per node, from a synthetic
//! image and from a PPM file, on one host and on emulated hosts; bad
//! arguments refused before any node starts; a node lost in the middle
//! failing the job, not hanging it.

mod support;
use support::command::*;
use support::lost_node::*;

/// The threads per node of the report's configuration rows.
fn configurations(stdout: &str) -> Vec<u32> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[n0] "))
        .filter_map(|l| {
            let mut cells = l.split_whitespace();
            let threads = cells.next()?.parse().ok()?;
            // A row has the threads and eight figures.
            (cells.count() == 8).then_some(threads)
        })
        .collect()
}

#[test]
fn apps_jpeg_verifies_on_one_to_eight_nodes_with_one_and_two_threads() {
    for nodes in [1u32, 2, 4, 8] {
        for threads in [1u32, 2] {
            let (n, t) = (nodes.to_string(), threads.to_string());
            let ran = run_ok(threadwire().args([
                "apps",
                "jpeg",
                "-n",
                &n,
                "--threads",
                &t,
                "--width",
                "64",
                "--height",
                "48",
                "--rounds",
                "2",
            ]));
            assert!(
                ran.stdout.contains(&format!(
                    "jpeg 64x48 RGB (9216 bytes, synthetic) on {nodes} nodes at quality 75: verified, PSNR"
                )),
                "{}",
                ran.show()
            );
            // Two threads per node are timed against one per node.
            let expected = match threads {
                1 => vec![1],
                _ => vec![1, 2],
            };
            assert_eq!(configurations(&ran.stdout), expected, "{}", ran.show());
            assert_eq!(
                ran.stdout.contains("2 threads/node vs 1:"),
                threads == 2,
                "{}",
                ran.show()
            );
            let seed_row = match nodes {
                1 => "NCS Table 2 has no row for 1 nodes".to_string(),
                _ => format!("NCS Table 2, {nodes} nodes, 600 KB"),
            };
            assert!(ran.stdout.contains(&seed_row), "{}", ran.show());
        }
    }
}

#[test]
fn apps_jpeg_reads_a_ppm_file() {
    let dir = std::env::temp_dir().join(format!("threadwire-jpeg-ppm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let (width, height) = (40usize, 24usize);
    let mut ppm = format!("P6\n{width} {height}\n255\n").into_bytes();
    for y in 0..height {
        for x in 0..width {
            ppm.extend([(x * 6) as u8, (y * 10) as u8, 128]);
        }
    }
    let path = dir.join("ramp.ppm");
    std::fs::write(&path, ppm).expect("writing the PPM");
    let ran = run_ok(
        threadwire()
            .args(["apps", "jpeg", "-n", "2", "--rounds", "1", "--image"])
            .arg(&path),
    );
    assert!(
        ran.stdout
            .contains("jpeg 40x24 RGB (2880 bytes, ramp.ppm) on 2 nodes at quality 75: verified"),
        "{}",
        ran.show()
    );
    std::fs::write(&path, b"P6\n40 24\n255\nshort").expect("writing the PPM");
    let ran = run(threadwire()
        .args(["apps", "jpeg", "-n", "2", "--image"])
        .arg(&path));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(ran.stderr.contains("the file has 5"), "{}", ran.show());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_are_refused_before_the_job_starts() {
    for (args, says) in [
        (&["-n", "3"][..], "1 node or an even number of nodes"),
        (&["-n", "66"], "up to 64"),
        (&["--threads", "0"], "threads per node"),
        (&["--quality", "0"], "quality 0: from 1 to 100"),
        (&["--rounds", "0"], "at least one round"),
        (&["--width", "0"], "each side from 1 to 65535"),
        (&["--width", "65535", "--height", "65535"], "64 MiB"),
        (&["-n", "8", "--height", "7"], "7 rows for 8 strips"),
        (&["--image", "/nonexistent/x.ppm"], "/nonexistent/x.ppm"),
    ] {
        let ran = run(threadwire().args(["apps", "jpeg"]).args(args));
        assert_eq!(ran.code(), Some(1), "{args:?}: {}", ran.show());
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.show());
        assert!(
            !ran.stdout.contains("[n0]"),
            "a node started: {}",
            ran.show()
        );
    }
}

/// Four nodes on two emulated hosts: the strips cross between hosts over
/// TCP on the bridge, the others through shared memory or within a node.
/// Needs root and network namespaces; skips saying why without them.
#[test]
fn apps_jpeg_verifies_on_namespace_hosts() {
    const PREFIX: &str = "twjp";
    let Some(hosts) = NamespaceHosts::up(PREFIX, 2, &[]) else {
        return;
    };
    let ran = run(threadwire()
        .args(["run", "-n", "4", "--hosts"])
        .arg(&hosts.file)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_threadwire"))
        .args([
            "apps", "jpeg", "--width", "128", "--height", "96", "--rounds", "1",
        ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(ran.stdout.contains("verified"), "{}", ran.show());
    assert_eq!(configurations(&ran.stdout), [1, 2], "{}", ran.show());
}

/// Node 1 (the decompressing one) killed while the pipeline runs, under
/// `--keep-going` so that the launcher does not end the job itself: node
/// 0's master or compressors notice the loss (a receive or send fails
/// with it) and node 0 fails with a message naming n1, within the hang
/// deadline.
#[test]
fn a_node_lost_during_the_pipeline_fails_the_job_with_its_name() {
    // 2048 x 2048 (12 MiB) for ever: both nodes `running` in the job's
    // console means joined and in the app.
    let app = [
        "apps", "jpeg", "--width", "2048", "--height", "2048", "--rounds", "100000",
    ];
    let (ran, killed) = kill_node1_when("threadwire-jpeg-consoles", 2, 50, &app, |row| {
        row.get(5).map(String::as_str) == Some("running")
    });
    assert_failed_naming_n1(&ran, killed);
    assert_ne!(ran.code(), Some(124), "a survivor hung: {}", ran.show());
}
