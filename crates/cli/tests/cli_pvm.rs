//! `threadwire pvm`: PVM programs on threadwire's libpvm3.so.3.
//!
//! The C programs of `crates/capi/pvm3/tests/c/` are built as a PVM user
//! builds them — against PVM's own `pvm3.h` and `-lgpvm3 -lpvm3` from
//! the `pvm-dev` package — and run unchanged on our libraries; Debian's
//! `pvm-examples` binaries run as installed. (Their output beside real
//! PVM's is the business of `pvm_examples.rs`.) Without `cc`, `pvm-dev`
//! or `pvm-examples` the tests say what is missing and skip.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod support;
use support::cdylib::{build, profile_dir, workspace};
use support::command::*;

/// Builds libpvm3.so and libgpvm3.so for this profile, once.
fn libraries() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(why) = BUILT.get_or_init(|| build(&["threadwire-pvm3", "threadwire-gpvm3"])) {
        panic!("building the PVM libraries: {why}");
    }
}

/// Whether `cc` and PVM's header and libraries are here; says why not.
fn can_build() -> bool {
    if !on_path("cc") {
        eprintln!("SKIPPED: no C compiler `cc` on PATH");
        return false;
    }
    if !Path::new("/usr/include/pvm3.h").is_file() {
        eprintln!("SKIPPED: no /usr/include/pvm3.h (package pvm-dev)");
        return false;
    }
    true
}

/// Compiles `tests/c/<name>.c` as a PVM program.
fn compile(name: &str) -> PathBuf {
    compile_with(name, &["-lgpvm3", "-lpvm3"])
}

/// Compiles `tests/c/<name>.c` against our libpvm3 itself, for
/// threadwire's extensions (`include/threadwire_pvm.h`).
fn compile_extended(name: &str) -> PathBuf {
    libraries();
    let lib = format!("-L{}", profile_dir().display());
    let include = format!(
        "-I{}",
        workspace().join("crates/capi/pvm3/include").display()
    );
    compile_with(name, &[&include, &lib, "-lpvm3"])
}

fn compile_with(name: &str, libraries: &[&str]) -> PathBuf {
    let source = workspace()
        .join("crates/capi/pvm3/tests/c")
        .join(format!("{name}.c"));
    let out_dir = profile_dir().join("pvm-tests");
    std::fs::create_dir_all(&out_dir).expect("create target/<profile>/pvm-tests");
    let exe = out_dir.join(name);
    let ran = run_ok(
        command("cc")
            .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-g"])
            .arg(format!(
                "-I{}",
                source.parent().expect("in tests/c").display()
            ))
            .arg(&source)
            .arg("-o")
            .arg(&exe)
            .args(libraries)
            .arg("-lpthread"),
    );
    assert!(ran.stderr.is_empty(), "cc warned:\n{}", ran.show());
    exe
}

/// Runs `program` (with `args`) under `threadwire pvm`.
fn pvm(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Ran {
    libraries();
    run(threadwire()
        .args(["pvm", "--timeout", "60", "--"])
        .arg(program)
        .args(args))
}

/// Compiles `tests/c/<name>.c`, runs it under `threadwire pvm` and checks
/// that it succeeded and printed `passed`; skips without `cc` or PVM's
/// header.
fn compiled_program_passes(name: &str, passed: &str) {
    if !can_build() {
        return;
    }
    let ran = pvm(compile(name), &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(ran.stdout.contains(passed), "{}", ran.show());
}

#[test]
fn bad_input_gets_pvm_error_codes_and_packing_round_trips() {
    compiled_program_passes("errors", "errors passed");
}

#[test]
fn every_thread_is_a_task_and_spawned_tasks_join_the_job() {
    compiled_program_passes("threads", "threads passed");
}

#[test]
fn the_mailbox_keeps_entries_with_pvm_permissions_and_wakes_waiting_readers() {
    compiled_program_passes("mailbox", "mailbox passed");
}

/// Tasks that send one message and exit at once, 16 to a pvm_spawn: the
/// launcher once dropped from the count those that ended before their
/// batch had joined.
#[test]
fn a_spawn_counts_tasks_that_end_at_once() {
    compiled_program_passes("spawn_burst", "spawn burst passed");
}

#[test]
fn exported_entry_points_spawn_as_thread_tasks() {
    if !can_build() {
        return;
    }
    let ran = pvm(compile_extended("export"), &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(ran.stdout.contains("export passed"), "{}", ran.show());
}

#[test]
fn a_task_told_of_the_command_line_programs_exit_is_told_when_it_ends() {
    if !can_build() {
        return;
    }
    // Its node lingers as the home of names until spawned tasks end; its
    // task's end is told at once, or this would wait forever.
    let ran = pvm(compile("notify_parent"), &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(ran.stdout.contains("parent ends"), "{}", ran.show());
    assert!(ran.stderr.contains("child notified"), "{}", ran.show());
}

/// A Debian example, or `None` after saying it skips.
fn example(name: &str) -> Option<PathBuf> {
    let p = Path::new("/usr/bin").join(name);
    if !p.is_file() {
        eprintln!("SKIPPED: no {} (package pvm-examples)", p.display());
        return None;
    }
    Some(p)
}

#[test]
fn debian_binaries_run_unchanged() {
    let Some(hello) = example("hello.pvm") else {
        return;
    };
    let ran = pvm(&hello, &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    assert_eq!(
        ran.stdout,
        format!(
            "i'm t40001\nfrom t80001: hello, world from {}\n",
            host.trim()
        ),
        "{}",
        ran.show()
    );
    let Some(master) = example("master1") else {
        return;
    };
    let ran = pvm(&master, &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    let mut lines: Vec<&str> = ran.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "I got 100.000000 from 1; (expecting 100.000000)",
            "I got 200.000000 from 0; (expecting 200.000000)",
            "I got 300.000000 from 2; (expecting 300.000000)",
            "Spawning 3 worker tasks ... SUCCESSFUL",
        ],
        "{}",
        ran.show()
    );
}

#[test]
fn groups_reduce_and_read_stdin() {
    let Some(gexample) = example("gexample") else {
        return;
    };
    libraries();
    let ran = run_fed(
        threadwire()
            .args(["pvm", "--timeout", "60", "--"])
            .arg(&gexample),
        Some("4\n3\n"),
    );
    assert!(ran.stdout.contains("The 1-Norm is 10"), "{}", ran.show());
    assert!(
        ran.stdout.contains("The product of column 1 is 24"),
        "{}",
        ran.show()
    );
}

#[test]
fn the_library_directory_names_the_sonames() {
    libraries();
    let ran = run_ok(threadwire().args(["pvm", "--library-dir"]));
    let dir = PathBuf::from(ran.stdout.trim());
    for soname in ["libpvm3.so.3", "libgpvm3.so.3"] {
        assert!(
            dir.join(soname).exists(),
            "{} lacks {soname}",
            dir.display()
        );
    }
}
