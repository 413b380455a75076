//! `threadwire apps splash` end to end: every SPLASH-2-style program at
//! `--small` on 1, 2 and 4 nodes with one and two processes per node,
//! verified by process 0; sizes the program cannot share out refused
//! before any node starts.

mod support;
use support::command::*;

const PROGRAMS: [&str; 6] = ["sor", "matmult", "lu-c", "radix", "water-n2", "water-sp"];

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
fn radix_verifies_on_one_two_and_four_nodes() {
    verifies_on_every_shape("radix");
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
