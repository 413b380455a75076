//! Nodes started by a process manager instead of `threadwire run`: MPICH's
//! Hydra (`mpiexec.hydra`), through the PMI-1 wire protocol, and Open
//! MPI's `mpirun`, through PMIx (`node::managed`). The jobs run
//! `node-managed` (see `nodes/managed.rs`): a ring through every node, an
//! allreduce and a barrier over the world group. Without `mpiexec.hydra`
//! (Debian's `mpich`), or `mpirun.openmpi` and `libpmix.so.2` (Debian's
//! `openmpi-bin`, `libpmix2`), the tests say why they skip.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use threadwire_testbed::process::{run_supervised, Finished};

/// What a command printed and how it ended.
struct Ran {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn show(&self) -> String {
        format!(
            "status {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` for at most a minute, capturing its output in files.
fn run(cmd: &mut Command) -> Ran {
    let dir = std::env::temp_dir().join(format!(
        "threadwire-managed-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (out, err) = (dir.join("out"), dir.join("err"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let finished = run_supervised(cmd, deadline, Duration::from_secs(2)).expect("spawn");
    let ran = Ran {
        status: match finished {
            Finished::Exited(s) => s.code(),
            Finished::Stopped => None,
        },
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    };
    let _ = std::fs::remove_dir_all(&dir);
    ran
}

fn hydra() -> Option<&'static str> {
    let path = "/usr/bin/mpiexec.hydra";
    if Path::new(path).is_file() {
        return Some(path);
    }
    eprintln!("SKIPPED: {path} is missing (Debian package mpich)");
    None
}

/// Open MPI's `mpirun`, if it and the PMIx library it serves are here.
fn open_mpi() -> Option<&'static str> {
    let path = "/usr/bin/mpirun.openmpi";
    if !Path::new(path).is_file() {
        eprintln!("SKIPPED: {path} is missing (Debian package openmpi-bin)");
        return None;
    }
    let library = [
        "/usr/lib",
        "/usr/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
    ]
    .iter()
    .any(|dir| Path::new(dir).join("libpmix.so.2").exists());
    if !library {
        eprintln!("SKIPPED: libpmix.so.2 is missing (Debian package libpmix2)");
        return None;
    }
    Some(path)
}

/// `mpiexec.hydra -n N node-managed`: every node reports the right sum.
fn under_hydra(nodes: u32, extra: &[&str]) {
    let Some(hydra) = hydra() else {
        return;
    };
    let mut cmd = Command::new(hydra);
    cmd.args(extra).args(["-n", &nodes.to_string()]);
    runs_managed(&mut cmd, nodes);
}

/// `manager … node-managed` (the manager and its arguments in `cmd`):
/// every node reports the right sum, once.
fn runs_managed(cmd: &mut Command, nodes: u32) {
    let ran = run(cmd
        .arg(support::example("node-managed"))
        .env(threadwire::env::LOG, "warn"));
    assert_eq!(ran.status, Some(0), "{}", ran.show());
    let sum = nodes * (nodes - 1) / 2;
    for node in 0..nodes {
        let line = format!("managed n{node} of {nodes}: ok sum={sum}");
        assert_eq!(
            ran.stdout.lines().filter(|l| *l == line).count(),
            1,
            "{line:?}\n{}",
            ran.show()
        );
    }
}

#[test]
fn a_job_runs_under_hydra() {
    under_hydra(4, &[]);
}

/// Hydra's other way to reach its processes: a TCP port (`PMI_PORT`)
/// instead of an inherited socket.
#[test]
fn a_job_runs_under_hydra_on_a_pmi_port() {
    under_hydra(4, &["-pmi-port"]);
}

/// Sixteen nodes: every one reads from the manager only the addresses of
/// the nodes it connects to.
#[test]
fn sixteen_nodes_run_under_hydra() {
    under_hydra(16, &[]);
}

/// `mpirun -n 4 node-managed`: Open MPI's launcher starts the nodes and
/// serves them PMIx; they bootstrap through the PMIx library. As root
/// (containers, CI) `mpirun` wants `--allow-run-as-root`; more nodes than
/// cores want `--oversubscribe`.
#[test]
fn a_job_runs_under_open_mpi_mpirun() {
    let Some(mpirun) = open_mpi() else {
        return;
    };
    let mut cmd = Command::new(mpirun);
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-n", "4"]);
    runs_managed(&mut cmd, 4);
}

/// A process manager's variables, wrong or incomplete, stop `init` with
/// one error naming the variable, at once.
#[test]
fn a_wrong_pmi_variable_is_one_clear_error() {
    for (vars, says) in [
        (
            &[("PMI_FD", "3"), ("PMI_SIZE", "2")][..],
            "PMI_RANK: not set",
        ),
        (
            &[("PMI_FD", "3"), ("PMI_RANK", "x"), ("PMI_SIZE", "2")][..],
            "PMI_RANK: `x`",
        ),
        (
            &[("PMI_FD", "3"), ("PMI_RANK", "2"), ("PMI_SIZE", "2")][..],
            "rank 2 is not below the size 2",
        ),
        (
            &[("PMI_FD", "9999"), ("PMI_RANK", "0"), ("PMI_SIZE", "2")][..],
            "PMI_FD: not an open socket",
        ),
        (
            &[
                ("PMIX_NAMESPACE", "1"),
                ("PMIX_RANK", "x"),
                ("PMIX_SERVER_URI41", "1.0;tcp4://127.0.0.1:1"),
            ][..],
            "PMIX_RANK: `x`",
        ),
        (&[("PMIX_RANK", "0")][..], "PMIX_NAMESPACE: not set"),
    ] {
        let mut cmd = Command::new(support::example("node-managed"));
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let ran = run(&mut cmd);
        assert_ne!(ran.status, Some(0), "{vars:?}: {}", ran.show());
        assert!(ran.status.is_some(), "{vars:?} hung: {}", ran.show());
        let errors: Vec<&str> = ran.stderr.lines().filter(|l| l.contains("PMI")).collect();
        assert_eq!(errors.len(), 1, "{vars:?}: {}", ran.show());
        assert!(
            errors[0].contains(says),
            "{vars:?}: want {says:?}\n{}",
            ran.show()
        );
    }
}
