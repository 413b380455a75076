//! PVM as a peer, where it is installed: `NPpvm` with tiny sizes and
//! `pvm_spawn` of one and of two tasks, each under a private pvmd that is
//! gone afterwards with every file it made. Where PVM is not installed
//! each test prints `SKIPPED: <reason>` and returns.
//!
//! Without libtest's harness (`harness = false` in Cargo.toml): the
//! `pvm_spawn` parent and its tasks are this binary run again, which must
//! call `pvm::task_main` before anything else, as `threadwire` does.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::{Outcome, Test};
use threadwire_bench::peers::pvm;
use threadwire_bench::peers::{self, Peer, Placement};

const TESTS: [Test; 2] = [
    ("nppvm_runs_locally_with_tiny_sizes", nppvm_runs_locally),
    (
        "pvm_spawn_of_one_and_of_two_tasks",
        pvm_spawn_of_one_and_two,
    ),
];

fn main() {
    if let Some(done) = pvm::task_main() {
        if let Err(e) = &done {
            eprintln!("pvm task: {e}");
        }
        std::process::exit(done.map_or_else(|e| e.exit_status(), |()| 0));
    }
    let before = pvm_entries_in_temp_dir();
    support::run(&TESTS, |name| {
        let left = threadwire_testbed::pvm::processes_left();
        assert!(
            left.is_empty(),
            "{name} left PVM processes running: {left:?}"
        );
        let new: Vec<_> = pvm_entries_in_temp_dir()
            .difference(&before)
            .cloned()
            .collect();
        assert!(
            new.is_empty(),
            "{name} left files in the temporary directory: {new:?}"
        );
    });
}

fn nppvm_runs_locally() -> Outcome {
    let options = peers::Options {
        upper_bound: 64,
        repeats: 5,
        deadline: Duration::from_secs(60),
        placement: Placement::Local,
    };
    let measured = match peers::run(Peer::Pvm, &options) {
        Ok(measured) => measured,
        Err(e) if e.is_missing() => return Outcome::skipped(e),
        Err(e) => panic!("NPpvm failed: {e}"),
    };
    let eight = measured.at(8).expect("a row near 8 B");
    assert!(eight.exact, "NetPIPE measures 8 B itself: {measured:?}");
    assert!(
        measured.points.iter().all(|p| p.size <= 67),
        "past -u 64: {measured:?}"
    );
    Outcome::Ran
}

fn pvm_spawn_of_one_and_two() -> Outcome {
    let task = pvm::Task {
        program: std::env::current_exe().expect("this test's path"),
        args: Vec::new(),
    };
    for count in [1, 2] {
        let deadline = Instant::now() + Duration::from_secs(60);
        match pvm::spawn_times(&task, count, 2, deadline) {
            Ok(times) => assert_eq!(times.len(), 2, "one time per repetition"),
            Err(e) if e.is_missing() => return Outcome::skipped(e),
            Err(e) => panic!("pvm_spawn of {count}: {e}"),
        }
    }
    Outcome::Ran
}

/// Entries of the temporary directory that PVM or these tests could make:
/// PVM's own `pvmd.<uid>`, `pvml.<uid>` and task sockets if it ever fell
/// back to it, and this process's scratch directories.
fn pvm_entries_in_temp_dir() -> BTreeSet<PathBuf> {
    let pid = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("pvm") || (name.starts_with("threadwire-") && name.contains(&pid))
        })
        .map(|e| e.path())
        .collect()
}
