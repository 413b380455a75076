//! Waiting on a process's pidfd (`pidfd_open(2)`, Linux 5.3): readable
//! once the process has ended, so poll(2) on it with a timeout waits for
//! the end or the deadline, whichever comes first, as tokio's process
//! driver does, and nothing wakes up in between.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, ExitStatus};
use std::time::Instant;

/// A process's pidfd: it names that process, and no other, even once its
/// id has been reused.
#[derive(Debug)]
pub struct Pidfd(OwnedFd);

impl Pidfd {
    /// Opens the pidfd of process `pid`. For a child, call it before the
    /// child is reaped, lest the id be another process's by then; for any
    /// other process, the pidfd names whichever process has the id now.
    pub fn open(pid: u32) -> io::Result<Pidfd> {
        let pid = libc::pid_t::try_from(pid).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: pidfd_open takes a process id and flags, no pointers.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = RawFd::try_from(fd).map_err(|_| io::ErrorKind::InvalidData)?;
        // SAFETY: the kernel has just returned this descriptor, open and
        // owned by nothing else.
        Ok(Pidfd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Whether the process has ended (it is a zombie, or reaped), without
    /// reaping it.
    pub fn has_exited(&self) -> io::Result<bool> {
        self.wait_exited(Instant::now())
    }

    /// Waits until the process has ended or `deadline` has passed, and
    /// says whether it ended. Does not reap it.
    pub fn wait_exited(&self, deadline: Instant) -> io::Result<bool> {
        Ok(crate::poll::readable(&[self.as_fd()], Some(deadline))?[0])
    }
}

impl AsFd for Pidfd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for Pidfd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Waits until `child` ends, and reaps it, or until `deadline` passes,
/// whichever comes first: `Some(status)` if it ended, `None` at the
/// deadline with the child still running (the caller decides whether to
/// kill it). Blocks on the child's pidfd, so it takes no CPU and returns
/// as soon as the child ends.
///
/// ```no_run
/// use std::process::Command;
/// use std::time::{Duration, Instant};
///
/// let mut child = Command::new("sleep").arg("1").spawn()?;
/// let deadline = Instant::now() + Duration::from_secs(10);
/// match threadwire_testbed::wait_deadline(&mut child, deadline)? {
///     Some(status) => assert!(status.success()),
///     None => {
///         child.kill()?;
///         child.wait()?;
///     }
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn wait_deadline(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    if let Some(status) = child.try_wait()? {
        return Ok(Some(status));
    }
    // Not yet reaped, so the id is still the child's.
    let pidfd = Pidfd::open(child.id())?;
    match pidfd.wait_exited(deadline)? {
        true => child.wait().map(Some),
        false => Ok(None),
    }
}

/// Waits until every one of `pidfds` has ended or `deadline` has passed,
/// and says whether they all ended. Reaps none of them.
pub fn wait_all_exited(pidfds: &[Pidfd], deadline: Instant) -> io::Result<bool> {
    let mut waiting: Vec<BorrowedFd<'_>> = pidfds.iter().map(AsFd::as_fd).collect();
    while !waiting.is_empty() {
        let ended = crate::poll::readable(&waiting, Some(deadline))?;
        if !ended.contains(&true) {
            return Ok(false);
        }
        let mut ended = ended.into_iter();
        waiting.retain(|_| !ended.next().unwrap_or(false));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;

    #[test]
    fn a_child_that_ends_is_reaped_and_one_that_runs_on_is_left() {
        let mut quick = Command::new("true").spawn().unwrap();
        let far = Instant::now() + Duration::from_secs(30);
        assert!(wait_deadline(&mut quick, far).unwrap().unwrap().success());
        // Reaped: waiting again returns the same status at once.
        assert!(wait_deadline(&mut quick, far).unwrap().unwrap().success());

        let mut slow = Command::new("sleep").arg("30").spawn().unwrap();
        let soon = Instant::now() + Duration::from_millis(50);
        assert_eq!(wait_deadline(&mut slow, soon).unwrap(), None);
        assert!(Instant::now() >= soon);
        slow.kill().unwrap();
        let status = wait_deadline(&mut slow, far).unwrap().unwrap();
        assert!(!status.success());
    }

    #[test]
    fn pidfds_see_an_end_without_reaping() {
        let mut children: Vec<_> = (0..3)
            .map(|_| Command::new("true").spawn().unwrap())
            .collect();
        let pidfds: Vec<Pidfd> = children
            .iter()
            .map(|c| Pidfd::open(c.id()).unwrap())
            .collect();
        let far = Instant::now() + Duration::from_secs(30);
        assert!(wait_all_exited(&pidfds, far).unwrap());
        assert!(pidfds.iter().all(|p| p.has_exited().unwrap()));
        for child in &mut children {
            // Still there to reap: a zombie until now.
            assert!(child.try_wait().unwrap().is_some());
        }
        let mut slow = Command::new("sleep").arg("30").spawn().unwrap();
        let pidfd = Pidfd::open(slow.id()).unwrap();
        assert!(!pidfd.has_exited().unwrap());
        slow.kill().unwrap();
        assert!(pidfd.wait_exited(far).unwrap());
        slow.wait().unwrap();
    }
}
