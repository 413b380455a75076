//! Blocking on file descriptors until one is ready or a deadline passes:
//! the one place this crate waits, so that every wait here is on an event
//! (a pidfd, an inotify descriptor) and a timer, never a sleep.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Instant;

/// Waits until one of `fds` is readable or `deadline` has passed (never,
/// if `None`), and returns which are readable: all false at the deadline.
/// A signal that interrupts the wait (EINTR) does not end it.
pub(crate) fn readable(fds: &[BorrowedFd<'_>], deadline: Option<Instant>) -> io::Result<Vec<bool>> {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let timeout = match deadline {
            None => -1,
            Some(deadline) => timeout_ms(deadline.saturating_duration_since(Instant::now())),
        };
        // SAFETY: `polled` is a live, writable array of `polled.len()`
        // pollfds whose descriptors the borrows keep open.
        let ready =
            unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, timeout) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        // POLLHUP and POLLERR count as readable: a read then says what
        // happened, and waiting on would spin.
        let readable: Vec<bool> = polled.iter().map(|p| p.revents != 0).collect();
        if ready > 0 || timeout == 0 {
            return Ok(readable);
        }
        // poll(2) may return a little early; go on until the deadline.
    }
}

/// `remaining` in whole milliseconds for poll(2), rounded up so that a wait
/// never ends before its deadline and then spins with a timeout of 0.
fn timeout_ms(remaining: std::time::Duration) -> libc::c_int {
    let ms = remaining.as_nanos().div_ceil(1_000_000);
    libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timeouts_round_up() {
        assert_eq!(timeout_ms(Duration::ZERO), 0);
        assert_eq!(timeout_ms(Duration::from_nanos(1)), 1);
        assert_eq!(timeout_ms(Duration::from_millis(3)), 3);
        assert_eq!(timeout_ms(Duration::from_secs(u64::MAX)), libc::c_int::MAX);
    }

    #[test]
    fn a_silent_socket_times_out_and_a_written_one_is_ready() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let (reader, mut writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(readable(&[reader.as_fd()], Some(soon)).unwrap(), [false]);
        assert!(Instant::now() >= soon);
        writer.write_all(b"x").unwrap();
        assert_eq!(readable(&[reader.as_fd()], None).unwrap(), [true]);
    }
}
