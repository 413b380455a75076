//! The collective peers (`peers::coll`), where each MPI is installed:
//! `coll.c` built with its `mpicc` and run with tiny sizes, plain and
//! hybrid, every row read back; and a run past its deadline killed with
//! its ranks. Where an MPI is missing each of its tests prints
//! `SKIPPED: <reason>` and returns.
//!
//! Without libtest's harness (`harness = false` in Cargo.toml), as
//! `pvm_peer.rs`: libtest hides what a passing test prints, and a skip
//! must be seen. The tests run one after the other, which the 2 cores
//! want anyway.

mod support;

use std::time::{Duration, Instant};

use support::{Outcome, Test};
use threadwire_bench::peers::coll::{
    Configuration, Error, Measured, Mpi, Operation, Options, Program,
};
use threadwire_testbed::process::{wait_all_exited, Pidfd};

const TESTS: [Test; 4] = [
    (
        "a_missing_mpi_or_its_headers_name_the_packages",
        missing_packages,
    ),
    ("open_mpi_runs_every_collective_plain_and_hybrid", || {
        every_collective(Mpi::OpenMpi)
    }),
    ("mpich_runs_every_collective_plain_and_hybrid", || {
        every_collective(Mpi::Mpich)
    }),
    (
        "a_run_past_its_deadline_is_killed_with_its_ranks",
        killed_at_the_deadline,
    ),
];

fn main() {
    support::run(&TESTS, |name| {
        let left = our_processes();
        assert!(left.is_empty(), "{name} left processes running: {left:?}");
    });
}

fn tiny() -> Options {
    Options {
        sizes: vec![8, 64],
        repetitions: 2,
        ms: 1,
        ..Options::default()
    }
}

fn build(mpi: Mpi) -> Result<Program, Outcome> {
    match Program::build(mpi) {
        Ok(program) => Ok(program),
        Err(e @ Error::Missing { .. }) => Err(Outcome::skipped(e)),
        Err(e) => panic!("building coll.c with {}: {e}", mpi.name()),
    }
}

fn every_collective(mpi: Mpi) -> Outcome {
    let program = match build(mpi) {
        Ok(program) => program,
        Err(skipped) => return skipped,
    };
    let options = tiny();
    for configuration in [
        Configuration::ranks(2),
        Configuration {
            ranks: 2,
            threads: 2,
        },
    ] {
        for operation in Operation::ALL {
            let outcome = program.run(configuration, operation, &options);
            assert!(outcome.skipped.is_empty(), "tiny sizes fit any cap");
            let rows = outcome
                .result
                .unwrap_or_else(|e| panic!("{} {operation} with {configuration}: {e}", mpi.name()));
            let sizes: Vec<usize> = rows.iter().map(|r| r.size).collect();
            assert_eq!(sizes, operation.sizes(&options.sizes), "{rows:?}");
            for row in &rows {
                check(row, mpi, configuration, operation);
            }
        }
    }
    Outcome::Ran
}

fn check(row: &Measured, mpi: Mpi, configuration: Configuration, operation: Operation) {
    assert_eq!(
        (row.mpi, row.configuration, row.operation),
        (mpi, configuration, operation)
    );
    assert_eq!(row.repetitions, 2, "{row:?}");
    assert!(row.iterations >= 1, "{row:?}");
    assert!(
        Duration::ZERO < row.min && row.min <= row.median && row.median <= row.max,
        "{row:?}"
    );
    assert!(row.max < Duration::from_secs(1), "{row:?}");
}

/// With `PATH` holding neither MPI, then a stand-in `mpicc.openmpi` that
/// fails as Debian's does without `libopenmpi-dev`. `PATH` is restored
/// before anything else runs: the tests run one at a time on this thread.
fn missing_packages() -> Outcome {
    let saved = std::env::var_os("PATH");
    let dir = std::env::temp_dir().join(format!("threadwire-coll-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("PATH", &dir);
    let nothing = Program::build(Mpi::Mpich).err();
    for (name, script) in [
        (
            "mpicc.openmpi",
            "#!/bin/sh\necho 'coll.c:85:10: fatal error: mpi.h: No such file or directory' >&2\nexit 1\n",
        ),
        ("mpirun.openmpi", "#!/bin/sh\nexit 1\n"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let no_headers = Program::build(Mpi::OpenMpi).err();
    match saved {
        Some(path) => std::env::set_var("PATH", path),
        None => std::env::remove_var("PATH"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
    match nothing {
        Some(Error::Missing { program, packages }) => {
            assert_eq!((program, packages), ("mpicc.mpich", "mpich libmpich-dev"))
        }
        other => panic!("not reported missing: {other:?}"),
    }
    match no_headers {
        Some(Error::Missing { program, packages }) => {
            assert_eq!((program, packages), ("mpi.h", "openmpi-bin libopenmpi-dev"))
        }
        other => panic!("missing headers not reported so: {other:?}"),
    }
    Outcome::Ran
}

fn killed_at_the_deadline() -> Outcome {
    let program = match build(Mpi::OpenMpi) {
        Ok(program) => program,
        Err(skipped) => return skipped,
    };
    // Far longer than the deadline: 1000 repetitions of a second.
    let options = Options {
        sizes: vec![8],
        repetitions: 1000,
        ms: 1000,
        max_ms_per_size: None,
        ..Options::default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let outcome = program.run_until(
        Configuration::ranks(2),
        Operation::Allreduce,
        &options,
        deadline,
    );
    match outcome.result {
        Err(Error::TimedOut { after, .. }) => assert!(after < Duration::from_secs(10)),
        other => panic!("not killed at its deadline: {other:?}"),
    }
    // The ranks (in process groups of their own) end once their launcher
    // is killed; wait for that on their pidfds.
    let pidfds: Vec<Pidfd> = our_processes()
        .into_iter()
        .filter_map(|pid| Pidfd::open(pid).ok())
        .collect();
    let gone = wait_all_exited(&pidfds, Instant::now() + Duration::from_secs(15));
    assert!(
        gone.unwrap_or(false),
        "ranks outlived their launcher: {:?}",
        our_processes()
    );
    Outcome::Ran
}

/// Live processes running from this process's scratch directories (the
/// built `coll`), or given one as an argument.
fn our_processes() -> Vec<u32> {
    let ours = format!("threadwire-peer-{}-coll-", std::process::id());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.windows(ours.len()).any(|w| w == ours.as_bytes()))
        })
        .filter(|&pid| threadwire_testbed::process::is_live(pid as libc::pid_t))
        .collect()
}
