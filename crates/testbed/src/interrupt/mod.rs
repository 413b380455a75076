//! Leaving nothing behind when a benchmark is interrupted by SIGINT,
//! SIGTERM or SIGHUP: not the emulated hosts of a `--link` run, nor the
//! peers' process groups, nor their scratch directories.
//!
//! Their owners remove them when dropped ([`ScopedNet`], [`ProcessGroup`],
//! the directories of [`create_scratch_dir`]), but a signal's default action ends the
//! process at once, running no drop; and a peer in a process group of its
//! own does not even get a terminal's Ctrl-C. So each of them is also
//! registered here while it exists, and [`install`] starts a thread that
//! undoes whatever is registered when one of the signals arrives:
//!
//! 1. [`install`], on the main thread before it starts any other, blocks the
//!    three signals there; threads started later inherit the mask, so a
//!    signal stays pending until the interrupt thread takes it with
//!    `sigwait`. (Children start with an empty mask: std clears it before
//!    exec.)
//! 2. The thread records the signal, so that a net being built ([`crate::net::up`])
//!    stops before its next command and removes what it built.
//! 3. It takes the registry's lock and keeps it: it waits for a net change,
//!    a spawn or a reap under way, and no owner changes anything after.
//! 4. Every process of a registered group, and every descendant of one
//!    whatever its group (Open MPI's orted and ranks, Hydra's proxies and
//!    ranks take groups of their own), is stopped, scanning again until no
//!    new one turns up, then killed (SIGKILL); then a wait (at most
//!    [`GROUPS_GRACE`]) until none is left but zombies, so that none
//!    writes into a directory being removed.
//! 5. Every registered scratch directory is removed, then every registered
//!    net ([`crate::net::down`] of its prefix).
//! 6. The `report` given to [`install`] is called with what was removed
//!    ([`Interrupted`]; `threadwire` prints it as one line on stderr), and
//!    the process exits with status 128 + signal. The launcher's nodes,
//!    started with `PR_SET_PDEATHSIG`, die with it.
//!
//! A second signal during this stays pending and changes nothing.
//!
//! # The lock
//!
//! One mutex guards the registry (`registry.rs`). Its rules keep the interrupt thread
//! and an owner's drop safe against each other:
//!
//! 1. Something to undo is registered before it exists (a net's prefix, a
//!    directory) or in the critical section that creates it (a peer is
//!    spawned holding the lock): nothing to undo exists unregistered.
//! 2. A process group's leader is reaped only holding the lock, in the
//!    critical section that unregisters its group: as the unreaped leader
//!    (a zombie at worst) keeps its id from reuse, SIGKILL to a registered
//!    group reaches the peer and nothing else.
//! 3. [`crate::net::up`] and [`crate::net::down`] hold the lock while they change the
//!    system, and a [`ScopedNet`] is unregistered in the critical section
//!    that removes it: the interrupt thread never removes a net half-way
//!    through being built.
//! 4. The interrupt thread never releases the lock: an owner dropped after
//!    it took it waits there until the process exits. A net that the
//!    signal stopped half-way (step 2) and the program's own end
//!    ([`exit`]) wait for that exit too, so the status is 128 + signal.
//!
//! The registry knows process groups and directories itself, and nets only
//! as things to remove (a `Removable`, `registry.rs`), so that this module
//! does not depend on [`crate::net`], which depends on it.
//!
//! [`ScopedNet`]: crate::net::ScopedNet
//! [`ProcessGroup`]: crate::group::ProcessGroup

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{MutexGuard, Once};

mod registry;

pub use registry::GROUPS_GRACE;
pub(crate) use registry::{registry, Registry, Removable};

use crate::signals::{signal_name, signal_set};

/// The signal the interrupt thread took, 0 before one came (step 2).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// What the interrupt thread did on a signal, given to the `report` of
/// [`install`] just before the process exits. Displayed as
/// `SIGINT: killed 1 peer process group (3 processes), removed net twb42`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interrupted {
    signal: libc::c_int,
    done: Vec<String>,
}

impl Interrupted {
    /// The signal taken.
    pub fn signal(&self) -> libc::c_int {
        self.signal
    }

    /// What was removed, and what could not be, as phrases ("removed net
    /// twb42"); empty if nothing was registered.
    pub fn done(&self) -> &[String] {
        &self.done
    }

    /// The exit status the process ends with: 128 + the signal.
    pub fn exit_code(&self) -> i32 {
        128 + self.signal
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", signal_name(self.signal))?;
        match self.done.is_empty() {
            true => f.write_str("nothing to remove"),
            false => f.write_str(&self.done.join(", ")),
        }
    }
}

/// Starts the interrupt thread (module docs), which calls `report` once it
/// has undone everything, and then ends the process. Call it once, early,
/// on the main thread of a program that builds nets or runs peers, before
/// it starts any other thread: a thread started before does not block the
/// signals, and one that lands there still ends the process at once.
/// Later calls do nothing.
pub fn install(report: fn(&Interrupted)) {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let threads = std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count());
        if threads > 1 {
            tracing::warn!(
                "interrupt::install with {threads} threads running: \
                 a signal that reaches another ends the process at once"
            );
        }
        let set = signal_set();
        // SAFETY: `set` is initialised; SIG_BLOCK is a valid `how`.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        let spawned = std::thread::Builder::new()
            .name("interrupt".into())
            .spawn(move || clean_up_on_signal(set, report));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the interrupt thread: {e}");
            // SAFETY: as above; the signals end the process again.
            unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
        }
    });
}

/// The signal being handled, once the interrupt thread has taken one.
pub(crate) fn signal() -> Option<libc::c_int> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Ends the process with status `code`, unless the interrupt thread has
/// taken a signal: then waits for it to end the process, with 128 + the
/// signal, once it has undone everything (a program that calls
/// [`install`] ends so, lest an error the signal caused end it first).
pub fn exit(code: i32) -> ! {
    if signal().is_some() {
        wait_for_exit();
    }
    std::process::exit(code)
}

/// Waits for the interrupt thread, which has taken a signal, to end the
/// process. Holding the registry's lock here would deadlock.
pub(crate) fn wait_for_exit() -> ! {
    loop {
        std::thread::park();
    }
}

/// Creates a scratch directory (and its parents), registered (rule 1), so
/// that a signal removes it too.
pub fn create_scratch_dir(dir: &Path) -> std::io::Result<()> {
    let mut registry = registry();
    std::fs::create_dir_all(dir)?;
    registry.add_dir(dir);
    Ok(())
}

/// Removes a scratch directory made by [`create_scratch_dir`], and its
/// registration.
pub fn remove_scratch_dir(dir: &Path) -> std::io::Result<()> {
    let mut registry = registry();
    registry.remove_dir(dir);
    std::fs::remove_dir_all(dir)
}

/// The interrupt thread: steps 2 to 6.
fn clean_up_on_signal(set: libc::sigset_t, report: fn(&Interrupted)) {
    let signal = loop {
        let mut signal = 0;
        // SAFETY: `set` is initialised and `signal` is a valid place for
        // the result; every thread blocks the set (step 1).
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            break signal;
        }
    };
    SIGNAL.store(signal, Ordering::SeqCst);
    let registry: MutexGuard<'static, Registry> = registry();
    let interrupted = Interrupted {
        signal,
        done: registry.undo(),
    };
    report(&interrupted);
    std::process::exit(interrupted.exit_code());
    // `registry` is never dropped: rule 4.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_the_signal_and_what_was_done() {
        let nothing = Interrupted {
            signal: libc::SIGINT,
            done: Vec::new(),
        };
        assert_eq!(nothing.to_string(), "SIGINT: nothing to remove");
        assert_eq!(nothing.exit_code(), 130);
        let some = Interrupted {
            signal: libc::SIGTERM,
            done: vec![
                "removed 1 scratch directory".into(),
                "removed net tw1".into(),
            ],
        };
        assert_eq!(
            some.to_string(),
            "SIGTERM: removed 1 scratch directory, removed net tw1"
        );
    }
}
