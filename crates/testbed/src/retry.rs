//! The one bounded retry of this crate, for the few things that signal
//! nothing at all: no descriptor becomes readable, no file changes and no
//! process ends when they happen. Everything that does signal is awaited
//! on that signal instead ([`crate::process`], [`crate::watch`]).

use std::time::{Duration, Instant};

/// How long [`retry_until`] waits between tries: long enough that a
/// minute of retrying costs nothing, short against the seconds-long
/// deadlines it is used with.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(20);

/// Tries `attempt` until it returns `Some`, and returns that; `None` once
/// `deadline` has passed, having tried one last time. Between tries it
/// sleeps [`RETRY_INTERVAL`] (never past the deadline).
///
/// Use it only for what gives no sign when it happens, and say at the
/// call what that is. The uses:
///
/// - a NetPIPE receiver starting to listen: NPtcp prints nothing, and a
///   connection to probe it would be taken as its partner;
/// - a process appearing in the process table (a test waiting for a
///   benchmark's peers): no descriptor announces another's fork;
/// - slurmctld starting to listen, and its nodes becoming idle
///   ([`crate::slurm`]): it logs neither at its default level.
pub fn retry_until<T>(deadline: Instant, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(done) = attempt() {
            return Some(done);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(RETRY_INTERVAL.min(deadline - now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_tries_until_done_or_the_deadline() {
        let mut tries = 0;
        let far = Instant::now() + Duration::from_secs(30);
        let done = retry_until(far, || {
            tries += 1;
            (tries == 3).then_some(tries)
        });
        assert_eq!(done, Some(3));
        let soon = Instant::now() + Duration::from_millis(30);
        assert_eq!(retry_until(soon, || None::<()>), None);
        assert!(Instant::now() >= soon);
    }
}
