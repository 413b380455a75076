//! A real Slurm cluster on this machine (`threadwire_testbed::slurm`):
//! one host in the root namespace, and three hosts in network namespaces.
//! Each test brings its cluster up once and runs its jobs on it: `srun`
//! of `hostname`, of a PMI-1 client in C, of an MPICH program and of a
//! threadwire job through Slurm's pmi2 plugin, and batch jobs.
//!
//! They need root, Debian's `slurm-wlm` and `munge`, and skip, saying
//! why, without them. Some parts skip alone, saying so: the C programs
//! need `cc` and MPICH's `mpicc.mpich`; the threadwire job is
//! `node-managed`, an example of the `threadwire` crate, which `cargo
//! test --workspace` builds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use threadwire_testbed::slurm::{JobState, SlurmCluster, SlurmPlan};

/// Deadline of one `srun` or batch job.
const JOB_TIMEOUT: Duration = Duration::from_secs(60);

/// The cluster `plan` describes, or `None`, having said why, where it
/// cannot run.
fn start_or_skip(plan: &SlurmPlan) -> Option<SlurmCluster> {
    match SlurmCluster::start(plan) {
        Ok(cluster) => {
            eprintln!(
                "cluster {} of {} host(s) up in {:?}",
                cluster.name(),
                plan.hosts,
                cluster.started_in()
            );
            Some(cluster)
        }
        Err(e) if e.is_unavailable() => {
            eprintln!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("bring-up failed: {e}"),
    }
}

/// Standard output, asserting success (and showing stderr if not).
fn stdout(what: &str, output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what}: {}\n{stderr}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Builds `tests/support/{source}` with `compiler` into the tests'
/// scratch directory, once per run (the tests run in parallel, and one
/// must not run a program the other is rewriting); `None`, having said
/// why, if the compiler is missing.
fn build_c(compiler: &str, source: &'static str) -> Option<PathBuf> {
    static BUILT: Mutex<BTreeMap<&str, Option<PathBuf>>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(exe) = built.get(source) {
        return exe.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support")
        .join(source);
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(source.trim_end_matches(".c"));
    let exe = match Command::new(compiler)
        .arg("-O")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(out) if out.status.success() => Some(exe),
        Ok(out) => panic!(
            "{compiler} {source}: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => {
            eprintln!("SKIPPED {source}: cannot run {compiler}: {e}");
            None
        }
    };
    built.insert(source, exe.clone());
    exe
}

/// `srun --mpi=pmi2` of the PMI-1 client: every rank's `cmd=init` is
/// answered as PMI-1, and it gets the card its neighbour put.
fn pmi1_lines_are_answered(cluster: &SlurmCluster, placement: &[&str]) {
    let Some(probe) = build_c("cc", "pmi1_probe.c") else {
        return;
    };
    let mut args = vec!["--mpi=pmi2"];
    args.extend(placement);
    let probe = probe.to_str().expect("a UTF-8 path");
    args.push(probe);
    let out = stdout("pmi1 probe", &cluster.srun(&args, JOB_TIMEOUT).unwrap());
    eprintln!("{out}");
    let size = 4;
    // The answer to `step` of rank `rank`, holding every one of `words`
    // (PMI-1 fields come in any order).
    let answered = |rank: usize, step: &str, words: &[&str]| {
        let prefix = format!("rank {rank} {step}: ");
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in\n{out}"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        for word in words {
            assert!(fields.contains(word), "{word} not in {prefix}{line}");
        }
    };
    for rank in 0..size {
        let init = [
            "cmd=response_to_init",
            "rc=0",
            "pmi_version=1",
            "pmi_subversion=1",
        ];
        answered(rank, "init", &init);
        let card = format!("value=rank{}-was-here", (rank + 1) % size);
        answered(rank, "get", &["cmd=get_result", "rc=0", &card]);
        answered(rank, "finalize", &["cmd=finalize_ack"]);
    }
}

/// `srun --mpi=pmi2` of an MPICH program: four ranks that see a world of
/// four and reduce over it.
fn mpich_runs_under_pmi2(cluster: &SlurmCluster, placement: &[&str]) -> Option<String> {
    let hello = build_c("mpicc.mpich", "mpi_hello.c")?;
    let mut args = vec!["--mpi=pmi2"];
    args.extend(placement);
    let hello = hello.to_str().expect("a UTF-8 path");
    args.push(hello);
    let out = stdout("mpi hello", &cluster.srun(&args, JOB_TIMEOUT).unwrap());
    for rank in 0..4 {
        let line = format!("rank {rank} of 4 on ");
        let found = out.lines().find(|l| l.starts_with(&line));
        let found = found.unwrap_or_else(|| panic!("no {line:?} in\n{out}"));
        assert!(found.ends_with(" sum 6"), "{found}");
    }
    Some(out)
}

/// threadwire's node program for process managers (`node-managed`, an
/// example of the `threadwire` crate, built beside this test by `cargo
/// test --workspace`); `None`, having said why, if it was not built.
fn node_managed() -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let path = profile.join("examples/node-managed");
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "SKIPPED the threadwire job: {} is missing (`cargo build -p threadwire --example node-managed`)",
        path.display()
    );
    None
}

/// What four nodes of `node-managed` print: every one the sum of all.
fn assert_threadwire_job_ran(what: &str, out: &str) {
    for node in 0..4 {
        let line = format!("managed n{node} of 4: ok sum=6");
        let found = out.lines().filter(|l| l.starts_with(&line)).count();
        assert_eq!(found, 1, "{what}: {line:?} in\n{out}");
    }
}

/// A threadwire job of four nodes under `srun --mpi=pmi2`: the nodes
/// bootstrap through Slurm's PMI (`node::managed`).
fn threadwire_job_runs_under_srun(cluster: &SlurmCluster, placement: &[&str]) {
    let Some(exe) = node_managed() else {
        return;
    };
    let mut args = vec!["--mpi=pmi2"];
    args.extend(placement);
    args.push(exe.to_str().expect("a UTF-8 path"));
    let out = stdout("threadwire job", &cluster.srun(&args, JOB_TIMEOUT).unwrap());
    assert_threadwire_job_ran("srun", &out);
}

/// What `srun --mpi=pmi2` gives a task, printed for the record.
fn print_pmi_environment(cluster: &SlurmCluster) {
    let out = cluster
        .srun(&["--mpi=pmi2", "-n", "2", "env"], JOB_TIMEOUT)
        .unwrap();
    let out = stdout("env", &out);
    let mut vars: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("PMI_") || l.starts_with("SLURM_PROCID"))
        .collect();
    vars.sort_unstable();
    vars.dedup();
    eprintln!("srun --mpi=pmi2 gives a task: {vars:?}");
    for var in [
        "PMI_FD=",
        "PMI_RANK=0",
        "PMI_RANK=1",
        "PMI_SIZE=2",
        "PMI_JOBID=",
    ] {
        assert!(vars.iter().any(|v| v.starts_with(var)), "{var} in {vars:?}");
    }
}

#[test]
fn one_host_runs_srun_mpi_and_batch_jobs() {
    let Some(cluster) = start_or_skip(&SlurmPlan::new(1)) else {
        return;
    };
    let out = cluster.srun(&["-n", "4", "hostname"], JOB_TIMEOUT).unwrap();
    assert_eq!(sorted_lines(&stdout("hostname", &out)), ["node0"; 4]);

    print_pmi_environment(&cluster);
    pmi1_lines_are_answered(&cluster, &["-n", "4"]);
    mpich_runs_under_pmi2(&cluster, &["-n", "4"]);
    threadwire_job_runs_under_srun(&cluster, &["-n", "4"]);

    let job = cluster
        .sbatch("#SBATCH -n 2\nsrun -n 2 hostname\n")
        .unwrap();
    let done = cluster.wait_job(job, JOB_TIMEOUT).unwrap();
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(done.exit_code, "0:0");
    assert_eq!(sorted_lines(&done.output), ["node0"; 2]);
}

#[test]
fn three_hosts_in_namespaces_run_srun_mpi_and_batch_jobs() {
    let Some(cluster) = start_or_skip(&SlurmPlan::new(3)) else {
        return;
    };
    let names: Vec<&str> = cluster.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node0", "node1", "node2"]);
    let net = cluster.net().expect("three hosts have namespaces");
    assert_eq!(net.hosts.len(), 3);

    // Block distribution: two tasks on node0, one on each other node.
    let out = cluster
        .srun(&["-N", "3", "-n", "4", "hostname"], JOB_TIMEOUT)
        .unwrap();
    let hosts = sorted_lines(&stdout("hostname", &out));
    assert_eq!(hosts, ["node0", "node0", "node1", "node2"]);

    pmi1_lines_are_answered(&cluster, &["-N", "3", "-n", "4"]);
    if let Some(out) = mpich_runs_under_pmi2(&cluster, &["-N", "3", "-n", "4"]) {
        for node in ["node0", "node1", "node2"] {
            assert!(
                out.contains(&format!(" on {node} ")),
                "no rank on {node}:\n{out}"
            );
        }
    }

    threadwire_job_runs_under_srun(&cluster, &["-N", "3", "-n", "4"]);
    if let Some(exe) = node_managed() {
        let script = format!(
            "#SBATCH -N 3\n#SBATCH -n 4\nsrun --mpi=pmi2 {}\n",
            exe.display()
        );
        let job = cluster.sbatch(&script).unwrap();
        let done = cluster.wait_job(job, JOB_TIMEOUT).unwrap();
        assert_eq!(done.state, JobState::Completed, "{done:?}");
        assert_threadwire_job_ran("sbatch", &done.output);
    }

    // As a benchmark times srun: its own command, steps in an allocation.
    let allocation = cluster.allocate(&["-N", "3", "-n", "6"]).unwrap();
    let jobid = format!("--jobid={allocation}");
    let out = cluster
        .command("srun")
        .args([jobid.as_str(), "-N", "3", "-n", "3", "hostname"])
        .output()
        .unwrap();
    let hosts = sorted_lines(&stdout("srun in an allocation", &out));
    assert_eq!(hosts, ["node0", "node1", "node2"]);

    let job = cluster
        .sbatch("#SBATCH -N 2\n#SBATCH -n 2\nsrun -n 2 hostname\n")
        .unwrap();
    let done = cluster.wait_job(job, JOB_TIMEOUT).unwrap();
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(sorted_lines(&done.output), ["node0", "node1"]);
}

#[test]
fn dropping_a_cluster_ends_its_running_steps() {
    let Some(cluster) = start_or_skip(&SlurmPlan::new(1)) else {
        return;
    };
    // A step that would run for minutes, from a client of the caller's
    // own (as a benchmark runs srun), and a batch job.
    let marker = format!("{}", 7000 + std::process::id() % 1000);
    let mut srun = cluster
        .command("srun")
        .args(["-n", "2", "sleep", &marker])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The batch job would wait for the scheduler's first pass anyway.
    cluster.wait_scheduler(JOB_TIMEOUT).unwrap();
    let job = cluster.sbatch(&format!("srun sleep {marker}\n")).unwrap();
    let dir = cluster.dir().to_path_buf();
    let sleeping = || {
        let out = Command::new("pgrep")
            .args(["-f", &format!("^(/usr/bin/)?sleep {marker}$")])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let deadline = std::time::Instant::now() + JOB_TIMEOUT;
    let started =
        threadwire_testbed::retry::retry_until(deadline, || (sleeping() == 3).then_some(()));
    assert!(started.is_some(), "job {job}: {} sleeps", sleeping());
    drop(cluster);
    assert_eq!(sleeping(), 0, "steps outlived their cluster");
    assert!(!dir.exists(), "{} outlived its cluster", dir.display());
    // Ours to end: it would try the gone slurmctld for some 20 s.
    srun.kill().unwrap();
    srun.wait().unwrap();
}
