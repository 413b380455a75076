//! Ctrl-C while a Slurm cluster runs a job leaves nothing behind: no
//! daemon, no slurmstepd or task, no namespace, no scratch directory.
//!
//! Without libtest's harness (`harness = false` in Cargo.toml), as
//! `net_interrupt.rs`: [`interrupt::install`] must run on the main thread
//! before any other starts. So this binary runs itself again as a child
//! that installs it, brings up two hosts, submits a batch job whose step
//! sleeps on both, and says so on its standard output; then it is sent
//! SIGINT, as a terminal's Ctrl-C does to its foreground group.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use threadwire_testbed::interrupt;
use threadwire_testbed::retry::retry_until;
use threadwire_testbed::slurm::{SlurmCluster, SlurmPlan};

/// Set in the child.
const CHILD: &str = "THREADWIRE_SLURM_TEST_CHILD";
const TEST: &str = "an_interrupted_cluster_leaves_nothing_behind";

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
    }
    if std::env::args().any(|a| a == "--list") {
        // `cargo test -- --list` asks every test binary.
        println!("{TEST}: test");
        return;
    }
    an_interrupted_cluster_leaves_nothing_behind();
}

/// The processes running `sleep {marker}`, the job's tasks.
fn sleeping(marker: &str) -> usize {
    let out = Command::new("pgrep")
        .args(["-f", &format!("^(/usr/bin/)?sleep {marker}$")])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn child() -> ! {
    // As in net_interrupt.rs: a background shell may have ignored SIGINT.
    // SAFETY: resetting a disposition to the default, before any other
    // thread exists.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    interrupt::install(|done| eprintln!("child: {done}"));
    let cluster = match SlurmCluster::start(&SlurmPlan::new(2)) {
        Ok(cluster) => cluster,
        Err(e) if e.is_unavailable() => {
            println!("SKIPPED: {e}");
            std::process::exit(0);
        }
        Err(e) => panic!("bring-up: {e}"),
    };
    let marker = std::env::var(CHILD).unwrap();
    let script = format!("#SBATCH -N 2\n#SBATCH -n 2\nsrun sleep {marker}\n");
    cluster.sbatch(&script).unwrap();
    println!("{} {}", cluster.name(), cluster.dir().display());
    loop {
        std::thread::park();
    }
}

fn an_interrupted_cluster_leaves_nothing_behind() {
    let marker = format!("{}", 8000 + std::process::id() % 1000);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, &marker)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    if let Some(reason) = line.strip_prefix("SKIPPED: ") {
        eprintln!("{TEST}: SKIPPED: {}", reason.trim());
        child.wait().unwrap();
        return;
    }
    let (name, dir) = line.trim().split_once(' ').expect("name and directory");
    let dir = PathBuf::from(dir);
    // A task starting signals nothing here (retry.rs).
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = retry_until(deadline, || (sleeping(&marker) == 2).then_some(()));
    let group = child.id() as libc::pid_t;
    if running.is_none() {
        // SAFETY: the child leads this group and is not yet waited for.
        unsafe { libc::kill(-group, libc::SIGINT) };
        child.wait().unwrap();
        panic!("the job's two tasks never ran");
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "child: {status}");
    assert_eq!(sleeping(&marker), 0, "tasks outlived the interrupt");
    assert!(!dir.exists(), "{} outlived the interrupt", dir.display());
    let daemons = Command::new("pgrep")
        .args(["-f", &dir.display().to_string()])
        .output()
        .unwrap();
    let daemons = String::from_utf8_lossy(&daemons.stdout);
    assert!(
        daemons.is_empty(),
        "daemons outlived the interrupt: {daemons}"
    );
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let namespaces = String::from_utf8_lossy(&namespaces.stdout);
    assert!(
        !namespaces.lines().any(|l| l.starts_with(name)),
        "namespaces outlived the interrupt: {namespaces}"
    );
    eprintln!("{TEST}: ok");
}
