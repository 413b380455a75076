//! The signals that end a run early: SIGINT (a terminal's Ctrl-C), SIGTERM
//! and SIGHUP; and holding them back on one thread while something must not
//! be cut off half-way (a net being built or removed, "Interruption" in
//! [`crate::net`]). [`crate::interrupt`] takes them on a thread of its own.

/// The signals that [`crate::interrupt`] handles and [`HeldSignals`] holds.
pub(crate) const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// [`SIGNALS`] as a signal set.
pub(crate) fn signal_set() -> libc::sigset_t {
    let mut set = empty_sigset();
    for signal in SIGNALS {
        // SAFETY: `set` is initialised and each signal number is valid.
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    set
}

/// The name of one of [`SIGNALS`].
pub(crate) fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// SIGINT, SIGTERM and SIGHUP held back on this thread while alive; those
/// that arrive stay pending and are delivered when it is dropped.
pub(crate) struct HeldSignals {
    /// The thread's signal mask before.
    old: libc::sigset_t,
    /// The held signals that were not already blocked before: the caller's
    /// own blocked signals (read with signalfd, say) are none of our
    /// business.
    watched: Vec<libc::c_int>,
}

impl HeldSignals {
    pub(crate) fn hold() -> HeldSignals {
        let hold = signal_set();
        let mut old = empty_sigset();
        // SAFETY: both sets are initialised; SIG_BLOCK is a valid `how`, so
        // the call cannot fail.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &hold, &mut old) };
        let watched = SIGNALS
            .into_iter()
            // SAFETY: `old` was filled in by pthread_sigmask.
            .filter(|&s| unsafe { libc::sigismember(&old, s) } == 0)
            .collect();
        HeldSignals { old, watched }
    }

    /// A held signal that has arrived, if any. After
    /// [`crate::interrupt::install`] there is none to find, as the signals
    /// were blocked already and the interrupt thread takes them: ask
    /// [`crate::interrupt::signal`] too.
    pub(crate) fn pending(&self) -> Option<libc::c_int> {
        let mut pending = empty_sigset();
        // SAFETY: `pending` is initialised and sigpending only writes it.
        unsafe { libc::sigpending(&mut pending) };
        self.watched
            .iter()
            .copied()
            // SAFETY: `pending` was filled in by sigpending.
            .find(|&s| unsafe { libc::sigismember(&pending, s) } == 1)
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        // SAFETY: `old` is the mask pthread_sigmask returned; SIG_SETMASK is
        // a valid `how`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

fn empty_sigset() -> libc::sigset_t {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the whole set it is given.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        set.assume_init()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raises `signal` at this thread, which must hold it.
    fn raise_here(signal: libc::c_int) {
        // SAFETY: pthread_self is this live thread; the signal is held.
        let sent = unsafe { libc::pthread_kill(libc::pthread_self(), signal) };
        assert_eq!(sent, 0);
    }

    /// Takes `signal` off this thread's pending set, so dropping the hold
    /// does not deliver it.
    fn take_pending(signal: libc::c_int) {
        let mut set = empty_sigset();
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `set` is initialised; the signal is blocked and pending,
        // so sigtimedwait returns it at once.
        let taken = unsafe {
            libc::sigaddset(&mut set, signal);
            libc::sigtimedwait(&set, std::ptr::null_mut(), &zero)
        };
        assert_eq!(taken, signal);
    }

    #[test]
    fn held_signals_wait_and_the_outer_hold_alone_reports_them() {
        let outer = HeldSignals::hold();
        assert_eq!(outer.pending(), None);
        let inner = HeldSignals::hold();
        raise_here(libc::SIGHUP);
        assert_eq!(outer.pending(), Some(libc::SIGHUP));
        // Already held when the inner hold began: the outer one's business.
        assert_eq!(inner.pending(), None);
        drop(inner);
        assert_eq!(outer.pending(), Some(libc::SIGHUP));
        take_pending(libc::SIGHUP);
        assert_eq!(outer.pending(), None);
    }
}
