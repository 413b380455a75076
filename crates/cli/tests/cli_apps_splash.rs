//! `threadwire apps splash` end to end: every SPLASH-2-style program at
//! `--small` on 1, 2 and 4 nodes with one and two processes per node,
//! verified by process 0; sizes the program cannot share out refused
//! before any node starts.

mod support;
use support::command::*;

const PROGRAMS: [&str; 10] = [
    "sor", "matmult", "lu-c", "lu-n", "radix", "fft", "ocean-c", "mri", "water-n2", "water-sp",
];

/// Runs `program` at `--small` on `nodes` × `threads` and checks node 0's
/// report: the right header, verified, a counter row per node.
fn verifies(program: &str, nodes: u32, threads: u32) {
    let (n, t) = (nodes.to_string(), threads.to_string());
    let ran = run_ok(threadwire().args([
        "apps",
        "splash",
        program,
        "-n",
        &n,
        "--threads",
        &t,
        "--small",
    ]));
    let header = format!("on {nodes} nodes x {threads} threads");
    assert!(ran.stdout.contains(&header), "{}", ran.show());
    assert!(ran.stdout.contains("[n0] verified: yes"), "{}", ran.show());
    let counter_rows = ran
        .rows()
        .iter()
        .filter(|r| r.len() == 9 && r[0] == "[n0]" && r[1].parse::<u32>().is_ok())
        .count();
    assert_eq!(counter_rows, nodes as usize, "{}", ran.show());
}

/// (nodes, threads per node) of every program's test.
const SHAPES: [(u32, u32); 6] = [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (4, 2)];

fn verifies_on_every_shape(program: &str) {
    for (nodes, threads) in SHAPES {
        verifies(program, nodes, threads);
    }
}

#[test]
fn sor_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("sor");
}

#[test]
fn matmult_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("matmult");
}

#[test]
fn lu_c_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("lu-c");
}

#[test]
fn lu_n_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("lu-n");
}

#[test]
fn radix_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("radix");
}

#[test]
fn fft_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("fft");
}

#[test]
fn ocean_c_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("ocean-c");
}

#[test]
fn mri_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("mri");
}

#[test]
fn water_n2_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("water-n2");
}

#[test]
fn water_sp_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("water-sp");
}

#[test]
fn more_processes_than_work_are_refused_before_the_job_starts() {
    // MATMULT has 16 blocks of C: 9 nodes x 2 threads is too many.
    let ran = run(threadwire().args([
        "apps",
        "splash",
        "matmult",
        "-n",
        "9",
        "--threads",
        "2",
        "--small",
    ]));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(
        ran.stderr.contains("at most 16 processes"),
        "{}",
        ran.show()
    );
    assert!(
        !ran.stdout.contains("[n0]"),
        "a node started: {}",
        ran.show()
    );
    for program in PROGRAMS {
        let ran = run(threadwire().args(["apps", "splash", program, "--threads", "0"]));
        assert_eq!(ran.code(), Some(1), "{program}: {}", ran.show());
    }
}

#[test]
fn plain_threads_run_every_program_and_compare_sets_them_beside_the_dsm() {
    for program in PROGRAMS {
        let ran = run_ok(threadwire().args([
            "apps",
            "splash",
            program,
            "--plain",
            "--threads",
            "3",
            "--small",
        ]));
        assert!(
            ran.stdout
                .contains("on 1 nodes x 3 threads (3 processes), plain threads sharing memory"),
            "{program}: {}",
            ran.show()
        );
        assert!(ran.stdout.contains("verified: yes"), "{}", ran.show());
    }
    let ran = run_ok(threadwire().args([
        "apps",
        "splash",
        "sor",
        "-n",
        "2",
        "--threads",
        "2",
        "--small",
        "--compare",
        "--rounds",
        "2",
    ]));
    assert!(
        ran.stdout.contains("4 processes, median of 2 rounds"),
        "{}",
        ran.show()
    );
    assert!(
        ran.stdout.contains("DSM, 2 nodes x 2 threads:"),
        "{}",
        ran.show()
    );
    assert!(ran.stdout.contains("DSM / plain: "), "{}", ran.show());
    assert!(
        !ran.stdout.contains("[n0]"),
        "nodes printed: {}",
        ran.show()
    );
    // Plain threads share one process's memory: one node only.
    let ran = run(threadwire().args(["apps", "splash", "sor", "--plain", "-n", "2"]));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(
        ran.stderr.contains("--plain runs one node"),
        "{}",
        ran.show()
    );
}

#[test]
fn figure_runs_one_two_and_four_nodes_and_all_runs_every_program() {
    let ran = run_ok(threadwire().args([
        "apps",
        "splash",
        "all",
        "--figure",
        "--threads",
        "2",
        "--small",
    ]));
    let figures = ran.stdout.matches(", 2 threads a node").count();
    assert_eq!(figures, PROGRAMS.len(), "{}", ran.show());
    let rows = ran
        .rows()
        .iter()
        .filter(|r| r.len() == 5 && ["1", "2", "4"].contains(&r[0]))
        .filter(|r| r[1..].iter().all(|c| c.parse::<f64>().is_ok()))
        .count();
    assert_eq!(rows, 3 * PROGRAMS.len(), "{}", ran.show());
    // The seed's figure of the program is named.
    assert!(ran.stdout.contains("(Strings' Fig. 12)"), "{}", ran.show());
    let ran = run(threadwire().args(["apps", "splash", "sor", "--scale", "2"]));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(
        ran.stderr.contains("sor does not scale by 2"),
        "{}",
        ran.show()
    );
    let ran = run(threadwire().args(["apps", "splash", "all", "-n", "2", "--small"]));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(
        ran.stderr.contains("with --figure, --compare or --plain"),
        "{}",
        ran.show()
    );
}
