//! `threadwire apps agenda-matmul` end to end: the agenda-parallel
//! multiply verified against blas on 1, 2, 4 and 8 nodes, with one
//! computing thread per node and with several, at sizes that no
//! granularity of the sweep divides; bad arguments refused before any
//! node starts; a node lost in the middle failing the job, not hanging it.

mod support;
use support::command::*;
use support::lost_node::*;

/// The sweep's rows of the report, per size: (best?, granularity,
/// concurrency).
fn rows(stdout: &str) -> Vec<Vec<(bool, usize, u32)>> {
    let mut sizes = Vec::new();
    for line in stdout.lines().filter_map(|l| l.strip_prefix("[n0] ")) {
        if line.starts_with("size ") {
            sizes.push(Vec::new());
            continue;
        }
        let best = line.starts_with('*');
        let mut cells = line.trim_start_matches('*').split_whitespace();
        let (Some(g), Some(k)) = (cells.next(), cells.next()) else {
            continue;
        };
        if let (Ok(g), Ok(k), Some(current)) = (g.parse(), k.parse(), sizes.last_mut()) {
            current.push((best, g, k));
        }
    }
    sizes
}

fn verifies(nodes: &str, kernel: &str, concurrency: &str) {
    let ran = run_ok(threadwire().args([
        "apps",
        "agenda-matmul",
        "-n",
        nodes,
        "--sizes",
        "13,100",
        "--granularity",
        "3,7,64",
        "--concurrency",
        concurrency,
        "--kernel",
        kernel,
        "--rounds",
        "1",
    ]));
    let header = format!("agenda-matmul on {nodes} node");
    assert!(ran.stdout.contains(&header), "{}", ran.show());
    for size in ["13", "100"] {
        let verified = format!("size {size}: C verified against blas's product in every round");
        assert!(ran.stdout.contains(&verified), "{}", ran.show());
    }
    let concurrencies: Vec<u32> = concurrency.split(',').map(|k| k.parse().unwrap()).collect();
    let sizes = rows(&ran.stdout);
    assert_eq!(sizes.len(), 2, "{}", ran.show());
    for table in &sizes {
        let combinations: Vec<(usize, u32)> = table.iter().map(|&(_, g, k)| (g, k)).collect();
        let expected: Vec<(usize, u32)> = [3, 7, 64]
            .into_iter()
            .flat_map(|g| concurrencies.iter().map(move |&k| (g, k)))
            .collect();
        assert_eq!(combinations, expected, "{}", ran.show());
        let best = table.iter().filter(|r| r.0).count();
        assert_eq!(best, 1, "one best combination a size: {}", ran.show());
    }
    assert_eq!(
        ran.stdout.matches("[n0] best: granularity").count(),
        2,
        "{}",
        ran.show()
    );
    assert_eq!(
        ran.stdout.contains(" vs 1 at granularity"),
        concurrencies.len() > 1,
        "{}",
        ran.show()
    );
    assert!(ran.stdout.contains("Figs 16-17 chart"), "{}", ran.show());
}

#[test]
fn apps_agenda_matmul_verifies_on_one_two_and_four_nodes() {
    for nodes in ["1", "2", "4"] {
        for concurrency in ["1", "1,2,3"] {
            verifies(nodes, "naive", concurrency);
        }
    }
}

#[test]
fn apps_agenda_matmul_verifies_with_blas_and_on_eight_nodes() {
    verifies("2", "blas", "1,2");
    verifies("8", "blas", "1,2");
}

#[test]
fn bad_arguments_are_refused_before_the_job_starts() {
    let many_sizes = vec!["8"; 17].join(",");
    for (args, says) in [
        (&["--size", "0"][..], "size 0: from 1 to 8192"),
        (&["--sizes", "64,9000"], "size 9000: from 1 to 8192"),
        (&["--granularity", "4,0"], "granularity 0"),
        (&["--concurrency", "65"], "concurrency 65: from 1 to 64"),
        (&["--concurrency", "0"], "concurrency 0"),
        (&["--rounds", "0"], "at least one round"),
        (&["--sizes", &many_sizes], "17 sizes: at most 16"),
        (&["--kernel", "gemm"], "invalid value 'gemm'"),
        (&["--granularity", "x"], "invalid value 'x'"),
    ] {
        let ran = run(threadwire().args(["apps", "agenda-matmul"]).args(args));
        assert_ne!(ran.code(), Some(0), "{args:?}: {}", ran.show());
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.show());
        assert!(
            !ran.stdout.contains("[n0]"),
            "a node started: {}",
            ran.show()
        );
    }
}

/// Node 1 killed while its threads compute for the master, under
/// `--keep-going` so that the launcher does not end the job itself: the
/// master's barrier fails with the loss and node 0 fails naming n1; the
/// other slave, whose requests then find no master, ends too.
#[test]
fn a_node_lost_during_the_agenda_fails_the_job_with_its_name() {
    // Naive at 200 rows, one row a task: rounds of about a second in a
    // debug build, for as long as it takes to kill n1.
    let app = [
        "apps",
        "agenda-matmul",
        "--sizes",
        "200",
        "--granularity",
        "1",
        "--concurrency",
        "2",
        "--kernel",
        "naive",
        "--rounds",
        "100000",
    ];
    let (ran, killed) = kill_node1_when("threadwire-agenda-consoles", 3, 20, &app, |row| {
        row.get(5).map(String::as_str) == Some("running")
    });
    assert_failed_naming_n1(&ran, killed);
    assert_ne!(ran.code(), Some(124), "a survivor hung: {}", ran.show());
}
