//! Waiting for something to show up in a directory: a daemon's first line
//! in its output file, a line in its log, a namespace in `/run/netns`.
//! inotify says when anything in the directory changes, and the condition
//! is checked again then, and only then.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use crate::process::Pidfd;

/// How [`wait_until`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    /// The condition holds.
    Ready,
    /// The process it was waiting on ended first, the condition unmet.
    ProcessExited,
    /// The deadline passed, the condition unmet.
    TimedOut,
}

/// Waits until `ready()` holds, checking it at once and again whenever a
/// file in `dir` is created, written, closed or moved in; or until
/// `process` (the one that should make it hold) ends, or `deadline`
/// passes. `dir` must exist.
///
/// ```no_run
/// use std::path::Path;
/// use std::time::{Duration, Instant};
/// use threadwire_testbed::watch::{wait_until, Watched};
///
/// let dir = Path::new("/run/netns");
/// let deadline = Instant::now() + Duration::from_secs(20);
/// let built = wait_until(dir, || dir.join("twh2").exists(), None, deadline)?;
/// assert_eq!(built, Watched::Ready);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn wait_until(
    dir: &Path,
    mut ready: impl FnMut() -> bool,
    process: Option<&Pidfd>,
    deadline: Instant,
) -> io::Result<Watched> {
    let inotify = Inotify::watch(dir)?;
    loop {
        // Checked after the watch is in place, so no change is missed.
        if ready() {
            return Ok(Watched::Ready);
        }
        let mut fds = vec![inotify.0.as_fd()];
        fds.extend(process.map(AsFd::as_fd));
        let readable = crate::poll::readable(&fds, Some(deadline))?;
        if readable[0] {
            inotify.drain()?;
        } else if readable.get(1) == Some(&true) {
            return Ok(match ready() {
                true => Watched::Ready,
                false => Watched::ProcessExited,
            });
        } else {
            return Ok(match ready() {
                true => Watched::Ready,
                false => Watched::TimedOut,
            });
        }
    }
}

/// An inotify instance watching one directory.
struct Inotify(OwnedFd);

impl Inotify {
    fn watch(dir: &Path) -> io::Result<Inotify> {
        // SAFETY: inotify_init1 takes flags only.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel has just returned this descriptor, open and
        // owned by nothing else.
        let inotify = Inotify(unsafe { OwnedFd::from_raw_fd(fd) });
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::ErrorKind::InvalidInput)?;
        let events = libc::IN_CREATE | libc::IN_MODIFY | libc::IN_CLOSE_WRITE | libc::IN_MOVED_TO;
        // SAFETY: `fd` is the inotify instance above; `path` is a
        // NUL-terminated string alive across the call.
        if unsafe { libc::inotify_add_watch(fd, path.as_ptr(), events) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(inotify)
    }

    /// Reads every queued event: which file changed does not matter, as
    /// the condition is checked again.
    fn drain(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: `buf` is writable for its length; the descriptor is
            // open while `self` lives.
            let n = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let error = io::Error::last_os_error();
                return match error.kind() {
                    io::ErrorKind::WouldBlock => Ok(()),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(error),
                };
            }
            if n == 0 {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("threadwire-watch-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_written_by_a_child_is_seen_and_a_silent_child_ends_the_wait() {
        let dir = scratch("write");
        let file = dir.join("out");
        let far = Instant::now() + Duration::from_secs(30);
        let mut writer = std::process::Command::new("sh")
            .args(["-c", "sleep 0.05; echo ready > out; exec sleep 30"])
            .current_dir(&dir)
            .spawn()
            .unwrap();
        let pidfd = Pidfd::open(writer.id()).unwrap();
        let has_line = || std::fs::read_to_string(&file).is_ok_and(|t| t.contains('\n'));
        assert_eq!(
            wait_until(&dir, has_line, Some(&pidfd), far).unwrap(),
            Watched::Ready
        );
        writer.kill().unwrap();
        writer.wait().unwrap();

        let mut silent = std::process::Command::new("true").spawn().unwrap();
        let pidfd = Pidfd::open(silent.id()).unwrap();
        assert_eq!(
            wait_until(&dir, || false, Some(&pidfd), far).unwrap(),
            Watched::ProcessExited
        );
        silent.wait().unwrap();

        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(
            wait_until(&dir, || false, None, soon).unwrap(),
            Watched::TimedOut
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
