//! Child processes of the peers: each a
//! [`ProcessGroup`](threadwire_testbed::group::ProcessGroup) (a process
//! group of its own, killed with the group when dropped, or past its
//! deadline, and on a signal), with its log files and its failures as
//! peers' [`Error`]s, so that no peer (mpirun and its ranks, pvmd and its
//! tasks) outlives its run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use threadwire_testbed::group::ProcessGroup;

use super::Error;

/// A peer's process group, and the log that [`failed`](Self::failed)
/// quotes.
pub(crate) struct Group {
    group: ProcessGroup,
    log: PathBuf,
}

impl Group {
    pub(crate) fn spawn(cmd: Command, out: &Path, err: &Path) -> Result<Group, Error> {
        Group::spawn_with_input(cmd, Stdio::null(), out, err)
    }

    pub(crate) fn spawn_with_input(
        mut cmd: Command,
        input: Stdio,
        out: &Path,
        err: &Path,
    ) -> Result<Group, Error> {
        let out_file = File::create(out).map_err(io("creating a log file"))?;
        let err_file = match out == err {
            true => out_file.try_clone(),
            false => File::create(err),
        }
        .map_err(io("creating a log file"))?;
        cmd.stdin(input).stdout(out_file).stderr(err_file);
        Group::start(cmd, err.to_path_buf()).map_err(io("starting a peer"))
    }

    /// Starts `cmd`, its standard streams as set, in a process group of
    /// its own; `log` is what [`failed`](Self::failed) quotes.
    pub(crate) fn start(cmd: Command, log: PathBuf) -> std::io::Result<Group> {
        Ok(Group {
            group: ProcessGroup::spawn(cmd)?,
            log,
        })
    }

    /// Waits for it to end, reaping it; past `deadline` kills its group
    /// and returns [`Error::TimedOut`].
    pub(crate) fn wait(&mut self, deadline: Instant) -> Result<ExitStatus, Error> {
        let started = Instant::now();
        match self.group.wait_deadline(deadline) {
            Ok(Some(status)) => Ok(status),
            Ok(None) => {
                self.kill();
                Err(Error::TimedOut(started.elapsed()))
            }
            Err(source) => Err(Error::Io {
                what: "waiting for a peer",
                source,
            }),
        }
    }

    /// The underlying process group: to wait for its end without reaping
    /// it, or together with something else.
    pub(crate) fn process(&self) -> &ProcessGroup {
        &self.group
    }

    pub(crate) fn kill(&mut self) {
        self.group.kill();
    }

    pub(crate) fn failed(&self, status: ExitStatus) -> Error {
        Group::failed_log(status, &self.log)
    }

    pub(crate) fn failed_log(status: ExitStatus, log: &Path) -> Error {
        Error::Failed {
            status,
            output: last_lines(&std::fs::read_to_string(log).unwrap_or_default()),
        }
    }
}

pub(crate) fn require(programs: &[&'static str], packages: &'static str) -> Result<(), Error> {
    match programs.iter().find(|p| !on_path(p)) {
        Some(program) => Err(Error::Missing { program, packages }),
        None => Ok(()),
    }
}

pub(crate) use threadwire_testbed::process::last_lines;
use threadwire_testbed::process::on_path;

pub(crate) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}
