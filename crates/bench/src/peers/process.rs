//! Child processes of the peers: each in a process group of its own,
//! killed with the group when dropped or past its deadline, so that no
//! peer (mpirun and its ranks, pvmd and its tasks) outlives its run.
//!
//! Every group is registered with [`crate::interrupt`] while its leader is
//! unreaped, so that a signal kills it too: it is spawned, and its leader
//! reaped, only holding the registry's lock (rules 1 and 2 there). Hence
//! `child` is private: [`Group::try_wait`] and [`Group::wait`] reap.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::Error;

/// A child in a process group of its own, killed with the group when
/// dropped.
pub(crate) struct Group {
    child: Child,
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
    pub(crate) fn start(mut cmd: Command, log: PathBuf) -> std::io::Result<Group> {
        cmd.process_group(0);
        let mut registry = crate::interrupt::registry();
        let child = cmd.spawn()?;
        registry.add_group(child.id());
        Ok(Group { child, log })
    }

    /// The child's standard input, if piped and not yet taken.
    pub(crate) fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// Its exit status if it has ended, reaping it (module docs).
    pub(crate) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        let mut registry = crate::interrupt::registry();
        let status = self.child.try_wait()?;
        if status.is_some() {
            registry.remove_group(self.child.id());
        }
        Ok(status)
    }

    pub(crate) fn wait(&mut self, deadline: Instant) -> Result<ExitStatus, Error> {
        let started = Instant::now();
        loop {
            match self.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() >= deadline => {
                    self.kill();
                    return Err(Error::TimedOut(started.elapsed()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(source) => {
                    return Err(Error::Io {
                        what: "waiting for a peer",
                        source,
                    })
                }
            }
        }
    }

    /// Whether it has ended, without reaping it: while it is a zombie its
    /// id, and so its group's, cannot be reused, so [`kill`](Self::kill)
    /// reaches only its own group.
    pub(crate) fn exited(&self) -> bool {
        libc::pid_t::try_from(self.child.id()).map_or(true, |pid| !crate::interrupt::is_live(pid))
    }

    pub(crate) fn kill(&mut self) {
        {
            let mut registry = crate::interrupt::registry();
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                registry.remove_group(self.child.id());
                return;
            }
            if let Ok(pid) = i32::try_from(self.child.id()) {
                // SAFETY: kill(2) takes no pointers; the group is the
                // child's own (process_group(0)), and the child is not yet
                // reaped, so its id cannot have been reused.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            // Killed: nothing is left for the interrupt thread to do.
            registry.remove_group(self.child.id());
        }
        let _ = self.child.wait();
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

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(crate) fn require(programs: &[&'static str], packages: &'static str) -> Result<(), Error> {
    let on_path = |program: &str| {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program)))
        })
    };
    match programs.iter().find(|p| !on_path(p)) {
        Some(program) => Err(Error::Missing { program, packages }),
        None => Ok(()),
    }
}

pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub(crate) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

pub(crate) fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_or_a_missing_process_has_exited() {
        let child = Command::new("true").spawn().unwrap();
        let group = Group {
            child,
            log: PathBuf::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !group.exited() {
            assert!(Instant::now() < deadline, "`true` never ended");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
