//! Which endpoint a C call acts for, and where its last error goes.
//!
//! A C function names no endpoint: it acts for the calling thread's. An
//! [`Endpoint`] is not `Send`, and a fiber shares its worker's OS thread
//! (and so its `thread_local!`s) with the worker's other fibers, which run
//! whenever it parks. So each OS thread keeps a list of the endpoints bound
//! on it, each under the identity of its owner — the fiber, or the OS
//! thread itself — as [`threadwire::fiber::current_unparker`] tells them
//! apart. Fibers never migrate between workers, so an entry stays on the
//! OS thread where it was made.
//!
//! Rules:
//! 1. An entry is `Owned` (thread 0 after `tw_init`, a thread after
//!    `tw_thread_attach`): it lives until `tw_finalize` / `tw_thread_detach`
//!    or the thread's end. Or it is `Borrowed` for the span of one C call
//!    (a spawned thread's body, a fiber handler): a [`Scope`] pushes it
//!    and removes it on drop, before the endpoint it points to is dropped.
//! 2. The list is never borrowed across a call into the runtime (which
//!    may park this fiber and run another that changes the list): the
//!    entry's endpoint is taken out (an `Rc` clone or the pointer) first.
//! 3. Inline handlers run wherever progress is driven and have no
//!    endpoint: while one runs, lookups fail with `TW_ERR_NO_ENDPOINT`.
//!
//! [`threadwire::fiber::current_unparker`]: tw::fiber::current_unparker

use crate::error::{c_string, Error, Result, TwError};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};
use std::rc::Rc;
use std::sync::Mutex;
use tw::fiber::{current_unparker, Unparker};
use tw::{Endpoint, Node};

/// The node this process joined, for threads that have no endpoint yet.
static NODE: Mutex<Option<Node>> = Mutex::new(None);

enum Bound {
    Owned(Rc<Endpoint>),
    Borrowed(*const Endpoint),
}

struct Entry {
    owner: Unparker,
    endpoint: Bound,
}

thread_local! {
    static ENTRIES: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    /// Last errors by owner, for callers with an endpoint (fibers share
    /// this OS thread); `LAST_ERROR` for the others.
    static ERRORS: RefCell<Vec<(Unparker, CString)>> = const { RefCell::new(Vec::new()) };
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static IN_INLINE_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// The node, once `tw_init` has joined the job.
pub(crate) fn node() -> Result<Node> {
    tw_lock(&NODE).clone().ok_or_else(|| {
        Error::new(
            TwError::TW_ERR_NO_ENDPOINT,
            "threadwire is not initialized: call tw_init first",
        )
    })
}

pub(crate) fn set_node(node: Option<Node>) {
    *tw_lock(&NODE) = node;
}

fn tw_lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the caller has an endpoint bound here.
pub(crate) fn has_endpoint() -> bool {
    let me = current_unparker();
    ENTRIES.with(|e| e.borrow().iter().any(|x| x.owner.same_as(&me)))
}

/// Runs `f` with the calling thread's endpoint (rule 2).
pub(crate) fn with_endpoint<T>(f: impl FnOnce(&Endpoint) -> Result<T>) -> Result<T> {
    if IN_INLINE_HANDLER.with(Cell::get) {
        return Err(Error::new(
            TwError::TW_ERR_NO_ENDPOINT,
            "inline handlers have no endpoint: register a fiber handler to send or receive",
        ));
    }
    let me = current_unparker();
    let found = ENTRIES.with(|e| {
        e.borrow()
            .iter()
            .find(|x| x.owner.same_as(&me))
            .map(|x| match &x.endpoint {
                Bound::Owned(rc) => Bound::Owned(rc.clone()),
                Bound::Borrowed(p) => Bound::Borrowed(*p),
            })
    });
    match found {
        Some(Bound::Owned(ep)) => f(&ep),
        // SAFETY: a borrowed entry lives only while its `Scope` does, and
        // the scope ends before the endpoint it points to (rule 1); this
        // call runs inside that scope, on its fiber or thread.
        Some(Bound::Borrowed(p)) => f(unsafe { &*p }),
        None => Err(Error::new(
            TwError::TW_ERR_NO_ENDPOINT,
            "the calling thread has no endpoint: call tw_init, or tw_thread_attach on this thread",
        )),
    }
}

/// Binds `endpoint` to the calling thread until [`take_owned`].
pub(crate) fn bind_owned(endpoint: Endpoint) {
    let owner = current_unparker();
    ENTRIES.with(|e| {
        e.borrow_mut().push(Entry {
            owner,
            endpoint: Bound::Owned(Rc::new(endpoint)),
        })
    });
}

/// Unbinds the calling thread's owned endpoint and returns it.
pub(crate) fn take_owned() -> Option<Rc<Endpoint>> {
    let me = current_unparker();
    let entry = ENTRIES.with(|e| {
        let mut e = e.borrow_mut();
        let i = e
            .iter()
            .position(|x| x.owner.same_as(&me) && matches!(x.endpoint, Bound::Owned(_)))?;
        Some(e.remove(i))
    })?;
    ended(&me);
    match entry.endpoint {
        Bound::Owned(ep) => Some(ep),
        Bound::Borrowed(_) => None,
    }
}

/// The caller `owner` leaves: its last error is forgotten and the
/// shared-memory locks it still holds are given up (`dsm.rs`, rule 2).
fn ended(owner: &Unparker) {
    ERRORS.with(|e| e.borrow_mut().retain(|(o, _)| !o.same_as(owner)));
    crate::dsm::release_held(owner);
}

/// An endpoint borrowed by the calling fiber or thread for the span of a
/// C call (rule 1).
pub(crate) struct Scope {
    owner: Unparker,
}

impl Scope {
    /// Binds `endpoint` until the scope is dropped, which must happen
    /// before `endpoint` is.
    pub(crate) fn bind(endpoint: &Endpoint) -> Scope {
        let owner = current_unparker();
        ENTRIES.with(|e| {
            e.borrow_mut().push(Entry {
                owner: owner.clone(),
                endpoint: Bound::Borrowed(endpoint),
            })
        });
        Scope { owner }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        ENTRIES.with(|e| {
            let mut e = e.borrow_mut();
            if let Some(i) = e.iter().rposition(|x| {
                x.owner.same_as(&self.owner) && matches!(x.endpoint, Bound::Borrowed(_))
            }) {
                e.remove(i);
            }
        });
        ended(&self.owner);
    }
}

/// Marks the calling thread as running an inline handler while alive.
pub(crate) struct InlineHandler {
    was: bool,
}

impl InlineHandler {
    pub(crate) fn enter() -> InlineHandler {
        InlineHandler {
            was: IN_INLINE_HANDLER.with(|c| c.replace(true)),
        }
    }
}

impl Drop for InlineHandler {
    fn drop(&mut self) {
        IN_INLINE_HANDLER.with(|c| c.set(self.was));
    }
}

/// Records `message` as the calling fiber's or thread's last error.
pub(crate) fn set_last_error(message: String) {
    let text = c_string(message);
    if !has_endpoint() {
        return LAST_ERROR.with(|e| *e.borrow_mut() = text);
    }
    let me = current_unparker();
    ERRORS.with(|e| {
        let mut e = e.borrow_mut();
        match e.iter_mut().find(|(o, _)| o.same_as(&me)) {
            Some((_, t)) => *t = text,
            None => e.push((me, text)),
        }
    });
}

/// The calling fiber's or thread's last error; valid until its next one.
pub(crate) fn last_error() -> *const c_char {
    let me = current_unparker();
    let mine = ERRORS.with(|e| {
        e.borrow()
            .iter()
            .find(|(o, _)| o.same_as(&me))
            // The string's buffer stays put until it is replaced or
            // forgotten, which only this fiber or thread does.
            .map(|(_, t)| t.as_ptr())
    });
    mine.unwrap_or_else(|| LAST_ERROR.with(|e| e.borrow().as_ptr()))
}
