//! A child that must not outlive its parent nor run past a deadline.
//!
//! 1. The child is started with `PR_SET_PDEATHSIG` = `SIGTERM`: if the
//!    parent dies, the child is told, and can clean up after itself (its
//!    peers, its emulated hosts) instead of running on alone.
//! 2. The parent waits on the child's pidfd until it ends or the deadline
//!    passes.
//! 3. Past the deadline the child gets `SIGTERM`, so that it removes what
//!    it built, and `grace` to end; then `SIGKILL`.

use super::wait_deadline;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// How a supervised child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// It ended by itself with this status.
    Exited(ExitStatus),
    /// It ran past its deadline and was stopped (step 3).
    Stopped,
}

/// Runs `cmd` to its end, at most until `deadline`, then stops it with
/// `SIGTERM` and, after `grace`, `SIGKILL` (module docs).
pub fn run_supervised(
    cmd: &mut Command,
    deadline: Instant,
    grace: Duration,
) -> io::Result<Finished> {
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
    let mut child = cmd.spawn()?;
    if let Some(status) = wait_deadline(&mut child, deadline)? {
        return Ok(Finished::Exited(status));
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) takes no pointers; the child is not yet reaped,
        // so its id is still its own.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    if wait_deadline(&mut child, Instant::now() + grace)?.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok(Finished::Stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_ends_in_time_gives_its_status() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let deadline = Instant::now() + Duration::from_secs(30);
        match run_supervised(&mut cmd, deadline, Duration::from_secs(1)).unwrap() {
            Finished::Exited(status) => assert_eq!(status.code(), Some(3)),
            Finished::Stopped => panic!("stopped"),
        }
    }

    #[test]
    fn a_child_past_its_deadline_is_stopped_even_if_it_ignores_sigterm() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; exec sleep 60"]);
        let started = Instant::now();
        let deadline = started + Duration::from_millis(100);
        let finished = run_supervised(&mut cmd, deadline, Duration::from_millis(200)).unwrap();
        assert_eq!(finished, Finished::Stopped);
        assert!(started.elapsed() < Duration::from_secs(30), "not killed");
    }
}
