//! Helpers shared by the `sync_*` integration tests.

use std::sync::mpsc;
use std::time::Duration;

/// How long a test may take before it counts as hung: generous, so that a
/// slow CI machine does not fail it, but a deadlock still ends the run.
pub const HANG: Duration = Duration::from_secs(120);

/// Runs `f` on a thread of its own and returns its result; panics (so the
/// test fails instead of hanging) if it does not finish within [`HANG`].
pub fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG) {
        Ok(value) => {
            thread.join().unwrap();
            value
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // `f` panicked: report its panic.
            std::panic::resume_unwind(thread.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish in {HANG:?}: hung"),
    }
}
