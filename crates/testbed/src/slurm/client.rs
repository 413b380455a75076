//! Running a Slurm client (srun, sbatch, sinfo, scontrol, scancel) on a
//! cluster, with its configuration and a deadline.
//!
//! The client's standard output and error go to files of the cluster
//! directory, read once it has ended: no pipe to drain while waiting, so
//! one wait on its pidfd ([`ProcessGroup::wait_deadline`]) is the whole
//! wait. Past the deadline its process group is killed, with every
//! descendant.

use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use super::error::{io_error, SlurmErrorKind};
use super::SlurmError;
use crate::group::ProcessGroup;

/// The environment variables of the caller's that would tie a client to
/// another Slurm (an outer job's allocation, another configuration).
const FOREIGN_VARIABLES: &[&str] = &[
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_STEP_ID",
    "SLURM_NODELIST",
    "SLURM_JOB_NODELIST",
    "SLURM_CLUSTERS",
    "SLURM_CONF_SERVER",
];

/// How clients of one cluster are started.
#[derive(Debug)]
pub(super) struct Clients {
    /// Where their outputs go.
    scratch: PathBuf,
    conf: PathBuf,
    /// Numbers the output files.
    runs: AtomicU32,
}

impl Clients {
    pub(super) fn new(dir: &Path, conf: &Path) -> Result<Clients, SlurmError> {
        let scratch = dir.join("clients");
        std::fs::create_dir_all(&scratch)
            .map_err(io_error(format!("creating {}", scratch.display())))?;
        Ok(Clients {
            scratch,
            conf: conf.to_path_buf(),
            runs: AtomicU32::new(0),
        })
    }

    /// The environment a client needs: `SLURM_CONF`, the one variable
    /// (the munge socket is named in the configuration).
    pub(super) fn env(&self) -> Vec<(String, PathBuf)> {
        vec![("SLURM_CONF".to_string(), self.conf.clone())]
    }

    /// `program` set up to talk to this cluster: `SLURM_CONF` set and
    /// [`FOREIGN_VARIABLES`] removed.
    pub(super) fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        for name in FOREIGN_VARIABLES {
            cmd.env_remove(name);
        }
        cmd.envs(self.env());
        cmd
    }

    /// Runs `program args` to its end or `deadline`, and returns what it
    /// printed and its status, whatever the status.
    pub(super) fn output<S: AsRef<OsStr>>(
        &self,
        program: &Path,
        args: &[S],
        deadline: Instant,
    ) -> Result<Output, SlurmError> {
        let line = command_line(program, args);
        let run = self.runs.fetch_add(1, Ordering::Relaxed);
        let stdout_path = self.scratch.join(format!("{run}.out"));
        let stderr_path = self.scratch.join(format!("{run}.err"));
        let create = |path: &Path| -> Result<File, SlurmError> {
            File::create(path).map_err(io_error(format!("creating {}", path.display())))
        };
        let mut cmd = self.command(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(create(&stdout_path)?)
            .stderr(create(&stderr_path)?);
        let started = Instant::now();
        let mut group = ProcessGroup::spawn(cmd).map_err(io_error(format!("starting `{line}`")))?;
        let status = group
            .wait_deadline(deadline)
            .map_err(io_error(format!("waiting for `{line}`")))?;
        let Some(status) = status else {
            group.kill();
            return Err(SlurmErrorKind::Timeout {
                line,
                after: started.elapsed(),
                logs: String::new(),
            }
            .into());
        };
        let read = |path: &Path| -> Result<Vec<u8>, SlurmError> {
            let bytes =
                std::fs::read(path).map_err(io_error(format!("reading {}", path.display())));
            let _ = std::fs::remove_file(path);
            bytes
        };
        Ok(Output {
            status,
            stdout: read(&stdout_path)?,
            stderr: read(&stderr_path)?,
        })
    }

    /// [`output`](Self::output), and its standard output if it succeeded.
    pub(super) fn stdout<S: AsRef<OsStr>>(
        &self,
        program: &Path,
        args: &[S],
        deadline: Instant,
    ) -> Result<String, SlurmError> {
        let output = self.output(program, args, deadline)?;
        if !output.status.success() {
            return Err(SlurmErrorKind::Command {
                line: command_line(program, args),
                status: output.status,
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            }
            .into());
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// `program args` as one line, for messages.
pub(super) fn command_line<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> String {
    let name = program.file_name().unwrap_or(program.as_os_str());
    std::iter::once(name)
        .chain(args.iter().map(AsRef::as_ref))
        .map(|word| word.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}
