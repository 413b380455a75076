//! A child in a process group of its own, killed with the group when
//! dropped, so that nothing it starts (mpirun and its ranks, pvmd and its
//! tasks) outlives it; and, on SIGINT, SIGTERM or SIGHUP, killed with
//! every descendant by [`crate::interrupt`].
//!
//! Every group is registered with [`crate::interrupt`] while its leader is
//! unreaped: it is spawned, and its leader reaped, only holding the
//! registry's lock (rules 1 and 2 there). Hence the child is private, and
//! only [`ProcessGroup::try_wait`], [`ProcessGroup::wait_deadline`] and
//! [`ProcessGroup::kill`] reap it.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::time::Instant;

use crate::interrupt::registry;
use crate::process::{kill_groups_and_descendants, Pidfd};

/// How long [`ProcessGroup::kill`] waits for what it killed to be gone.
const KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// A child leading a process group of its own, registered with
/// [`crate::interrupt`], killed with its group when dropped.
#[derive(Debug)]
pub struct ProcessGroup {
    child: Child,
    /// The child's, opened before it can be reaped.
    pidfd: Pidfd,
}

impl ProcessGroup {
    /// Starts `cmd`, its standard streams as set, in a process group of
    /// its own.
    pub fn spawn(mut cmd: Command) -> io::Result<ProcessGroup> {
        cmd.process_group(0);
        let mut registry = registry();
        let mut child = cmd.spawn()?;
        match Pidfd::open(child.id()) {
            Ok(pidfd) => {
                registry.add_group(child.id());
                Ok(ProcessGroup { child, pidfd })
            }
            Err(e) => {
                // Not registered, so not left to run unwatched either.
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// The leader's process id, which is also the group's.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader's pidfd, readable once it has ended: to wait for that
    /// together with something else ([`crate::watch::wait_until`]).
    pub fn pidfd(&self) -> &Pidfd {
        &self.pidfd
    }

    /// The leader's standard input, if piped and not yet taken.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The leader's standard output, if piped and not yet taken.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// The leader's standard error, if piped and not yet taken.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The leader's exit status if it has ended, reaping it (module docs).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let mut registry = registry();
        let status = self.child.try_wait()?;
        if status.is_some() {
            registry.remove_group(self.child.id());
        }
        Ok(status)
    }

    /// Waits until the leader ends, reaping it, or until `deadline`:
    /// `None` then, with it still running ([`crate::wait_deadline`], for
    /// a registered group).
    pub fn wait_deadline(&mut self, deadline: Instant) -> io::Result<Option<ExitStatus>> {
        match self.pidfd.wait_exited(deadline)? {
            true => self.try_wait(),
            false => Ok(None),
        }
    }

    /// Whether the leader has ended, without reaping it: while it is a
    /// zombie its id, and so its group's, cannot be reused, so
    /// [`kill`](Self::kill) reaches only its own group.
    pub fn has_exited(&self) -> bool {
        self.pidfd.has_exited().unwrap_or(true)
    }

    /// Waits until the leader has ended or `deadline` has passed, without
    /// reaping it; says whether it ended.
    pub fn wait_exited(&self, deadline: Instant) -> bool {
        self.pidfd.wait_exited(deadline).unwrap_or(true)
    }

    /// Kills the whole group and every descendant of it, whatever its
    /// group (mpirun's ranks, Hydra's proxies), unless the leader has
    /// ended; then reaps the leader.
    pub fn kill(&mut self) {
        {
            let mut registry = registry();
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                registry.remove_group(self.child.id());
                return;
            }
            if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
                // The group is the child's own (process_group(0)) and the
                // child is not yet reaped, so its id cannot have been reused.
                kill_groups_and_descendants(&[pid], KILL_GRACE);
            }
            // Killed: nothing is left for the interrupt thread to do.
            registry.remove_group(self.child.id());
        }
        let _ = self.child.wait();
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_ended_leader_is_seen_without_reaping_and_then_reaped() {
        let mut group = ProcessGroup::spawn(Command::new("true")).unwrap();
        let far = Instant::now() + Duration::from_secs(10);
        assert!(group.wait_exited(far), "`true` never ended");
        assert!(group.has_exited());
        let status = group.wait_deadline(far).unwrap().unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_running_group_is_left_at_the_deadline_and_killed_on_drop() {
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let mut group = ProcessGroup::spawn(sleep).unwrap();
        let pidfd = Pidfd::open(group.id()).unwrap();
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(group.wait_deadline(soon).unwrap(), None);
        assert!(!group.has_exited());
        drop(group);
        assert!(pidfd.has_exited().unwrap());
    }
}
