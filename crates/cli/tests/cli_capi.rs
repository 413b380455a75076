//! The C API end to end: the C programs of `crates/capi/tests/c/` and the
//! examples `crates/capi/examples/c/ring.c` and `parmacs_sum.c`, compiled
//! with the system `cc` against `include/threadwire.h` (and `parmacs.h`)
//! and `libthreadwire.so`, run as jobs of
//! `threadwire run`. Each program checks its own results and prints
//! `n<i> passed` per node; a failed check names the call and exits 1.
//!
//! `libthreadwire.so` is the one beside the `threadwire` binary (the same
//! target directory and profile), brought up to date with `cargo build -p
//! threadwire-capi` first, with `libthreadwire.so.0` (its soname) a link
//! to it. Without `cc` the tests say so and skip.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod support;
use support::cdylib::{build, profile_dir, workspace};
use support::command::*;

fn capi() -> PathBuf {
    workspace().join("crates/capi")
}

/// Builds `libthreadwire.so` for this profile (a no-op when it is current)
/// and returns its directory.
fn library_dir() -> &'static Path {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let dir = profile_dir();
    let built = BUILT.get_or_init(|| {
        build(&["threadwire-capi"])?;
        // Programs ask for the soname, libthreadwire.so.0, as an installed
        // library provides it (docs/CAPI.md).
        let soname = dir.join("libthreadwire.so.0");
        match std::os::unix::fs::symlink("libthreadwire.so", &soname) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(format!("linking {}: {e}", soname.display())),
        }
    });
    if let Err(why) = built {
        panic!("building libthreadwire.so: {why}; build it with `cargo build -p threadwire-capi`");
    }
    assert!(
        dir.join("libthreadwire.so").is_file(),
        "{} has no libthreadwire.so; build it with `cargo build -p threadwire-capi` \
         (with the same profile as this test)",
        dir.display()
    );
    dir
}

/// Whether a C compiler is here; says why not when not.
fn have_cc() -> bool {
    let found = on_path("cc");
    if !found {
        eprintln!("SKIPPED: no C compiler `cc` on PATH; the C API's tests need one");
    }
    found
}

/// Compiles `source` into an executable of its own name.
fn compile(source: &Path) -> PathBuf {
    let lib = library_dir();
    let out_dir = profile_dir().join("capi-tests");
    std::fs::create_dir_all(&out_dir).expect("create target/<profile>/capi-tests");
    let name = source.file_stem().expect("a C file has a name");
    let exe = out_dir.join(name);
    let ran = run_ok(
        command("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
            .arg("-I")
            .arg(capi().join("include"))
            .arg("-I")
            .arg(capi().join("tests/c"))
            .arg(source)
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(lib)
            .arg("-lthreadwire")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-lpthread"),
    );
    assert!(ran.stderr.is_empty(), "cc warned:\n{}", ran.show());
    exe
}

/// Compiles `tests/c/<name>.c`, runs it on `nodes` nodes and checks that
/// every node passed.
fn run_c_test(name: &str, nodes: u32) {
    run_c_test_on(name, &[nodes]);
}

/// As [`run_c_test`], once on each of `node_counts`, from one build (tests
/// running at once must not compile one executable).
fn run_c_test_on(name: &str, node_counts: &[u32]) {
    if !have_cc() {
        return;
    }
    let exe = compile(&capi().join("tests/c").join(format!("{name}.c")));
    for &nodes in node_counts {
        let ran = run_ok(
            threadwire()
                .args(["run", "-n", &nodes.to_string(), "--"])
                .arg(&exe),
        );
        for node in 0..nodes {
            assert!(
                ran.stdout.contains(&format!("n{node} passed")),
                "node {node} of {nodes} did not pass\n{}",
                ran.show()
            );
        }
    }
}

#[test]
fn point_to_point() {
    run_c_test("p2p", 2);
}

#[test]
fn pack_and_unpack() {
    run_c_test("pack", 2);
}

#[test]
fn groups_and_collectives() {
    run_c_test("collectives", 4);
}

#[test]
fn active_messages() {
    run_c_test("am", 2);
}

#[test]
fn spawned_and_attached_threads() {
    run_c_test("threads", 2);
}

#[test]
fn bad_input_gives_typed_codes() {
    run_c_test("errors", 2);
}

#[test]
fn peer_exit_is_notified() {
    run_c_test("notify", 2);
}

#[test]
fn parmacs_sor_on_one_two_and_four_nodes() {
    run_c_test_on("dsm_sor", &[1, 2, 4]);
}

#[test]
fn shared_memory_from_fibers() {
    run_c_test("dsm_fibers", 3);
}

#[test]
fn shared_memory_misuse_gives_typed_codes() {
    run_c_test("dsm_errors", 2);
}

#[test]
fn ring_example() {
    if !have_cc() {
        return;
    }
    let exe = compile(&capi().join("examples/c/ring.c"));
    let ran = run_ok(threadwire().args(["run", "-n", "4", "--"]).arg(&exe));
    assert!(
        ran.stdout
            .contains("token came back after 4 hops: n0 -> n1 -> n2 -> n3 -> n0"),
        "{}",
        ran.show()
    );
    for node in 0..4 {
        assert!(
            ran.stdout
                .contains(&format!("n{node}: sum of node numbers 6")),
            "{}",
            ran.show()
        );
    }
}

#[test]
fn parmacs_example() {
    if !have_cc() {
        return;
    }
    let exe = compile(&capi().join("examples/c/parmacs_sum.c"));
    let ran = run_ok(threadwire().args(["run", "-n", "2", "--"]).arg(&exe));
    assert!(
        ran.stdout.contains("4 processes, sum of pids 6"),
        "{}",
        ran.show()
    );
}
