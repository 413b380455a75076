//! [`Done`]: the completion of one announced send or one fetch, set once
//! by the router (or a receive) and waited for by the thread that started
//! it.

use crate::PeerLost;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use threadwire_fiber::Unparker;

const PENDING: u8 = 0;
const SUCCEEDED: u8 = 1;
const FAILED: u8 = 2;

/// A once-set outcome with its owner to wake.
pub(crate) struct Done {
    state: AtomicU8,
    lost: OnceLock<PeerLost>,
    owner: Unparker,
}

impl std::fmt::Debug for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Done({})", self.state.load(Ordering::Relaxed))
    }
}

impl Done {
    /// Pending, owned by the calling thread (or fiber).
    pub(crate) fn new() -> Done {
        Done {
            state: AtomicU8::new(PENDING),
            lost: OnceLock::new(),
            owner: threadwire_fiber::current_unparker(),
        }
    }

    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) != PENDING
    }

    /// The outcome once [`is_done`](Self::is_done).
    pub(crate) fn outcome(&self) -> Result<(), PeerLost> {
        match self.state.load(Ordering::Acquire) {
            FAILED => Err(self.lost.get().cloned().expect("set before the state")),
            _ => Ok(()),
        }
    }

    pub(crate) fn succeed(&self) {
        self.set(SUCCEEDED);
    }

    pub(crate) fn fail(&self, lost: &PeerLost) {
        let _ = self.lost.set(lost.clone());
        self.set(FAILED);
    }

    fn set(&self, state: u8) {
        if self
            .state
            .compare_exchange(PENDING, state, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            && !self.owner.is_current_thread()
        {
            self.owner.unpark();
        }
    }
}
