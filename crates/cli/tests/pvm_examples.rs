//! Debian's `pvm-examples`, the test of threadwire's drop-in libpvm3:
//! every program of the package that runs without X and without a person
//! at a terminal is run under a fresh private real pvmd, and what it
//! prints, normalized, must be what the catalog pins
//! (`support/pvm/catalog.rs`); then, once `threadwire pvm` exists, it is
//! run as `threadwire pvm -- <program> <args>` and must print what it
//! printed under real PVM.
//!
//! - Where PVM is not installed it prints `SKIPPED` and the packages.
//! - The threadwire half prints why it skips while `threadwire pvm
//!   --help` fails, and for each example the catalog says differs on
//!   purpose.
//! - Each example held to real PVM's transcript runs a second time across
//!   two emulated hosts (`threadwire net up`, `threadwire pvm --hosts`):
//!   the program on the first, the tasks it spawns on both in turn, so
//!   that its messages cross TCP between namespaces. Without root or
//!   network namespaces that pass prints why it skips.
//! - `THREADWIRE_PVM_EXAMPLES=print` prints each transcript under real
//!   PVM in the catalog's form instead of checking it.
//! - Arguments that do not start with `-` pick examples by name.
//!
//! Without libtest's harness (`harness = false` in Cargo.toml), so that
//! what it skips and why is seen without `--nocapture`.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::pvm::catalog::{Example, Run, Threadwire, CATALOG};
use support::pvm::{self, PACKAGES};

/// Examples whose output follows the number of hosts (`pvm_config`):
/// the machine of two emulated hosts makes them print other numbers than
/// the one-host machine their transcript is pinned from.
const SIZED_BY_THE_MACHINE: &[&str] = &["master1", "fmaster1", "fgexample", "hitc"];

/// A run of one example that takes longer has hung.
const HANG: Duration = Duration::from_secs(60);

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("pvm_examples: test");
        return;
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let printing = std::env::var("THREADWIRE_PVM_EXAMPLES").is_ok_and(|v| v == "print");
    check_catalog(printing);
    if let Some(reason) = pvm::missing() {
        eprintln!(
            "pvm_examples: SKIPPED: PVM is not installed ({reason}): apt-get install {PACKAGES}"
        );
        return;
    }
    let threadwire = Path::new(env!("CARGO_BIN_EXE_threadwire"));
    let threadwire_pvm = has_pvm_command(threadwire);
    if let Err(why) = &threadwire_pvm {
        eprintln!("pvm_examples: threadwire half SKIPPED: {why}");
    }
    let hosts = threadwire_pvm.is_ok().then(emulated_hosts).flatten();
    let mut failures = Vec::new();
    for example in CATALOG {
        if !filters.is_empty() && !filters.iter().any(|f| example.program.contains(f.as_str())) {
            continue;
        }
        let name = example.program;
        match example.run {
            Run::Steps(_) => {}
            Run::By(other) => {
                eprintln!("{name}: run by {other}");
                continue;
            }
            Run::Not(why) => {
                eprintln!("{name}: not run: {why}");
                continue;
            }
        }
        let real = match pvm::run_under_pvm(example, Instant::now() + HANG) {
            Ok(real) => real,
            Err(e) => {
                failures.push(format!("{name} under real PVM: {e}"));
                continue;
            }
        };
        if printing {
            println!("// {name}\nexpected: r#\"{}\"#,\n", real.text());
            continue;
        }
        if real.text() != example.expected {
            failures.push(format!(
                "{name} under real PVM printed something else than the catalog pins\n{}",
                diff(example.expected, &real.text())
            ));
            continue;
        }
        match (&threadwire_pvm, example.threadwire) {
            (Err(_), _) => eprintln!("{name}: real PVM ok; threadwire skipped"),
            (Ok(()), Threadwire::Differs(why)) => {
                eprintln!("{name}: real PVM ok; threadwire not compared: {why}")
            }
            (Ok(()), held) => match compare_threadwire(example, threadwire, None, &real, held) {
                Ok(()) => eprintln!("{name}: real PVM ok; threadwire ok"),
                Err(e) => failures.push(format!("{name} under threadwire: {e}")),
            },
        }
        if let (Ok(()), Threadwire::Same, Some(hosts)) =
            (&threadwire_pvm, example.threadwire, &hosts)
        {
            if SIZED_BY_THE_MACHINE.contains(&name) {
                eprintln!(
                    "{name}: across emulated hosts not compared: it sizes its work by the \
                     machine's hosts (pvm_config), and the real PVM it is pinned to has one"
                );
                continue;
            }
            match compare_threadwire(
                example,
                threadwire,
                Some(&hosts.file),
                &real,
                Threadwire::Same,
            ) {
                Ok(()) => eprintln!("{name}: threadwire across emulated hosts ok"),
                Err(e) => failures.push(format!(
                    "{name} under threadwire across emulated hosts: {e}"
                )),
            }
        }
    }
    drop(hosts);
    let left = threadwire_testbed::pvm::processes_left();
    if !left.is_empty() {
        failures.push(format!("PVM processes left running: {left:?}"));
    }
    if !failures.is_empty() {
        eprintln!("\n{} failed:\n\n{}", failures.len(), failures.join("\n\n"));
        std::process::exit(1);
    }
}

/// Two emulated hosts and a host file naming them, removed when dropped.
struct Hosts {
    file: std::path::PathBuf,
    _net: support::command::NetGuard,
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Two namespaces joined by a bridge, or `None` after saying why not.
fn emulated_hosts() -> Option<Hosts> {
    const PREFIX: &str = "twpx";
    let up = support::command::run(
        support::command::threadwire().args(["net", "up", "--hosts", "2", "--prefix", PREFIX]),
    );
    if up.code() != Some(0) {
        eprintln!(
            "pvm_examples: the pass across emulated hosts SKIPPED: cannot create network namespaces: {}",
            up.stderr.trim()
        );
        return None;
    }
    let net = support::command::NetGuard(PREFIX);
    let file = std::env::temp_dir().join(format!("threadwire-pvm-hosts-{}", std::process::id()));
    std::fs::write(&file, format!("netns:{PREFIX}h0\nnetns:{PREFIX}h1\n")).ok()?;
    Some(Hosts { file, _net: net })
}

/// `threadwire pvm` exists: `threadwire pvm --help` succeeds.
fn has_pvm_command(threadwire: &Path) -> Result<(), String> {
    let ran = support::command::run(support::command::command(threadwire).args(["pvm", "--help"]));
    match ran.code() {
        Some(0) => Ok(()),
        _ => Err(format!(
            "`threadwire pvm --help` fails ({}), so there is no `threadwire pvm` yet",
            ran.status
        )),
    }
}

/// Runs `example` under `threadwire pvm` and compares its transcript with
/// real PVM's: all of it, or its steps' blocks alone if `held` says so.
fn compare_threadwire(
    example: &Example,
    threadwire: &Path,
    hosts: Option<&Path>,
    real: &pvm::Transcript,
    held: Threadwire,
) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!(
        "threadwire-pvm-examples-{}-{}",
        std::process::id(),
        example.program
    ));
    threadwire_testbed::interrupt::create_scratch_dir(&dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let ran = pvm::run_under_threadwire(example, threadwire, hosts, &dir, Instant::now() + HANG);
    let _ = threadwire_testbed::interrupt::remove_scratch_dir(&dir);
    let ours = ran?;
    let (theirs, ours) = match held {
        Threadwire::StepsOnly(why) => {
            eprintln!("{}: its tasks' lines not compared: {why}", example.program);
            (real.steps.clone(), ours.steps)
        }
        _ => (real.text(), ours.text()),
    };
    match ours == theirs {
        true => Ok(()),
        false => Err(format!(
            "it printed something else than under real PVM\n{}",
            diff(&theirs, &ours)
        )),
    }
}

/// Every program that `pvm-examples` installs has one row, here and in
/// docs/PVM.md, and what a row refers to exists.
fn check_catalog(printing: bool) {
    let names: Vec<&str> = CATALOG.iter().map(|e| e.program).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "a program has two rows");
    for example in CATALOG {
        if let Run::By(other) = example.run {
            let by = CATALOG.iter().find(|e| e.program == other);
            assert!(
                by.is_some_and(|e| matches!(e.run, Run::Steps(_))),
                "{} is run by {other}, which is not run",
                example.program
            );
        }
        let pinned = !example.expected.is_empty();
        let runs = matches!(example.run, Run::Steps(_));
        assert!(
            printing || pinned == runs,
            "{}: expected output iff run",
            example.program
        );
    }
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/PVM.md");
    let docs = std::fs::read_to_string(docs).expect("docs/PVM.md");
    for name in &names {
        assert!(
            docs.contains(&format!("| `{name}` |")),
            "docs/PVM.md has no row for {name}"
        );
    }
    if let Some(installed) = pvm::installed_programs() {
        let missing: Vec<&String> = installed
            .iter()
            .filter(|p| !names.contains(&p.as_str()))
            .collect();
        assert!(missing.is_empty(), "not in the catalog: {missing:?}");
    }
}

/// The first lines where `expected` and `got` part, and both in full.
fn diff(expected: &str, got: &str) -> String {
    let at = expected
        .lines()
        .zip(got.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(got.lines().count()));
    format!(
        "first difference at line {}:\n  expected: {:?}\n  got:      {:?}\n--- expected\n{expected}--- got\n{got}",
        at + 1,
        expected.lines().nth(at).unwrap_or("<end>"),
        got.lines().nth(at).unwrap_or("<end>"),
    )
}
