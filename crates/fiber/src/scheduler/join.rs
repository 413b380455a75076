//! Joining a fiber: any number of joiners, each told how the fiber ended.

use crate::loom::lock;
use crate::park::{current_unparker, park, Unparker};
use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Why a join did not produce the fiber's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JoinError {
    /// The fiber panicked; the panic's message.
    Panicked(Arc<str>),
    /// Another joiner already took the (non-`Clone`) result with
    /// [`JoinHandle::join`].
    Taken,
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(message) => write!(f, "the fiber panicked: {message}"),
            JoinError::Taken => f.write_str("another joiner took the fiber's result"),
        }
    }
}

impl std::error::Error for JoinError {}

impl JoinError {
    /// The error for a caught panic's payload, as `catch_unwind` or
    /// `std::thread::JoinHandle::join` give it.
    pub fn from_panic(payload: &(dyn Any + Send)) -> JoinError {
        JoinError::Panicked(panic_message(payload))
    }
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn Any + Send)) -> Arc<str> {
    if let Some(s) = payload.downcast_ref::<&str>() {
        Arc::from(*s)
    } else if let Some(s) = payload.downcast_ref::<String>() {
        Arc::from(s.as_str())
    } else {
        Arc::from("a panic without a message")
    }
}

/// How a fiber's end meets its joiners:
///
/// 1. The fiber stores its result, then swaps `state` to `DONE`; if the
///    old state was `JOINERS` it takes the joiner list and wakes them all.
/// 2. A joiner that finds `DONE` returns at once. Otherwise it adds itself
///    to the list and, still holding the list's lock, moves `state` from
///    `RUNNING` to `JOINERS` (or finds it there), then parks until `DONE`.
///
/// A joiner added before step 1's swap is woken by it (the swap sees
/// `JOINERS`, and the lock orders the list read after the push); one that
/// comes after sees `DONE`. A fiber nobody waits for takes no lock.
pub(crate) struct JoinState<T> {
    state: AtomicU8,
    result: Mutex<Option<Result<T, JoinError>>>,
    joiners: Mutex<Joiners>,
}

const RUNNING: u8 = 0;
const JOINERS: u8 = 1;
const DONE: u8 = 2;

/// Who waits: the usual single joiner needs no allocation.
#[derive(Default)]
struct Joiners {
    first: Option<Unparker>,
    more: Vec<Unparker>,
}

impl<T> JoinState<T> {
    pub(crate) fn new() -> Arc<JoinState<T>> {
        Arc::new(JoinState {
            state: AtomicU8::new(RUNNING),
            result: Mutex::new(None),
            joiners: Mutex::new(Joiners::default()),
        })
    }

    /// Step 1.
    pub(crate) fn complete(&self, result: Result<T, JoinError>) {
        *lock(&self.result) = Some(result);
        if self.state.swap(DONE, Ordering::AcqRel) == JOINERS {
            let joiners = std::mem::take(&mut *lock(&self.joiners));
            for joiner in joiners.first.into_iter().chain(joiners.more) {
                joiner.unpark();
            }
        }
    }

    fn done(&self) -> bool {
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Step 2.
    fn wait(&self) {
        if self.done() {
            return;
        }
        let me = current_unparker();
        {
            let mut joiners = lock(&self.joiners);
            if joiners.first.is_none() {
                joiners.first = Some(me);
            } else {
                joiners.more.push(me);
            }
            let _ =
                self.state
                    .compare_exchange(RUNNING, JOINERS, Ordering::AcqRel, Ordering::Acquire);
        }
        while !self.done() {
            park();
        }
    }
}

/// A handle on a fiber: join it (from fibers and OS threads, as many
/// joiners as you like) or let it run on its own.
pub struct JoinHandle<T> {
    pub(crate) state: Arc<JoinState<T>>,
    pub(crate) id: u64,
}

impl<T> Clone for JoinHandle<T> {
    fn clone(&self) -> Self {
        JoinHandle {
            state: self.state.clone(),
            id: self.id,
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JoinHandle(fiber #{})", self.id)
    }
}

impl<T> JoinHandle<T> {
    /// The fiber's number, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the fiber has ended.
    pub fn is_finished(&self) -> bool {
        self.state.done()
    }

    /// Waits for the fiber to end; `Err` if it panicked.
    pub fn wait(&self) -> Result<(), JoinError> {
        self.state.wait();
        match &*lock(&self.state.result) {
            Some(Err(JoinError::Panicked(m))) => Err(JoinError::Panicked(m.clone())),
            _ => Ok(()),
        }
    }

    /// Waits for the fiber and moves its result out. A joiner that comes
    /// after another took the result gets [`JoinError::Taken`]; use
    /// [`join_cloned`](Self::join_cloned) when several need the value.
    pub fn join(mut self) -> Result<T, JoinError> {
        self.state.wait();
        // The last handle, once the fiber has dropped its own reference,
        // needs no lock: the usual case, and two atomic operations less.
        if let Some(state) = Arc::get_mut(&mut self.state) {
            let result = state.result.get_mut().unwrap_or_else(|e| e.into_inner());
            return result.take().expect("done is set after the result");
        }
        let mut result = lock(&self.state.result);
        match &*result {
            Some(Err(e)) => Err(e.clone()),
            Some(Ok(_)) => match result.replace(Err(JoinError::Taken)) {
                Some(taken) => taken,
                None => unreachable!("checked just above"),
            },
            None => unreachable!("done is set after the result"),
        }
    }

    /// Waits for the fiber; every caller gets its own copy of the result.
    pub fn join_cloned(&self) -> Result<T, JoinError>
    where
        T: Clone,
    {
        self.state.wait();
        lock(&self.state.result)
            .clone()
            .expect("done is set after the result")
    }

    /// Lets the fiber run on without anyone joining it (the same as
    /// dropping every handle; a detached fiber's panic is logged nowhere
    /// but its result is dropped when it ends).
    pub fn detach(self) {}
}
