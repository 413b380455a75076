//! Return codes, the per-thread message of the last failure, and the one
//! wrapper every exported function runs its body in.

use crate::context;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The codes every function returns: `TW_SUCCESS` (0) or a negative error.
/// `tw_strerror` names a code; `tw_last_error` says what failed.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TwError {
    /// The call succeeded.
    TW_SUCCESS = 0,
    /// An argument is invalid: a NULL pointer, a length that does not fit,
    /// an unknown datatype, operation or kind, a misaligned buffer, a
    /// wildcard where an address is needed.
    TW_ERR_INVALID = -1,
    /// The library panicked inside the call; the panic was caught and the
    /// node goes on (`tw_last_error` has the panic's message).
    TW_ERR_PANIC = -2,
    /// The calling thread has no endpoint: `tw_init` was not called, or
    /// this thread is neither thread 0, a spawned thread, a fiber handler
    /// nor attached (`tw_thread_attach`); inline handlers have none.
    TW_ERR_NO_ENDPOINT = -3,
    /// Joining the job failed (not started by `threadwire run`, the
    /// launcher unreachable, ...).
    TW_ERR_INIT = -4,
    /// The peer node involved is gone (finished or failed).
    TW_ERR_PEER_LOST = -5,
    /// No such node or thread in this job.
    TW_ERR_NO_SUCH_ENDPOINT = -6,
    /// A message is longer than a frame may be.
    TW_ERR_TOO_LARGE = -7,
    /// This node has finalized.
    TW_ERR_FINALIZED = -8,
    /// The message was longer than the buffer: the buffer holds its first
    /// bytes and the status (or count) the real length.
    TW_ERR_TRUNCATED = -9,
    /// The operation was cancelled.
    TW_ERR_CANCELLED = -10,
    /// A group was revoked by a member.
    TW_ERR_REVOKED = -11,
    /// A thread could not be started.
    TW_ERR_SPAWN = -12,
    /// Unpacking failed: the next item is of another type, the data is
    /// not packed, or it has ended.
    TW_ERR_UNPACK = -13,
    /// A collective or group call failed: the members' arguments differ,
    /// a root is out of range, the caller is not a member, ...
    TW_ERR_GROUP = -14,
    /// The destination node has no active-message handler of that name.
    TW_ERR_UNKNOWN_HANDLER = -15,
    /// An active-message handler failed: it returned non-zero, or panicked.
    TW_ERR_HANDLER_FAILED = -16,
    /// An active-message handler returned without answering a request.
    TW_ERR_NO_REPLY = -17,
    /// Done already: initialized twice, a name registered twice, a thread
    /// attached twice, a request answered twice.
    TW_ERR_ALREADY = -18,
    /// A handle used from a thread other than the one that made it
    /// (groups and requests belong to their thread).
    TW_ERR_WRONG_THREAD = -19,
    /// The shared memory is not set up: `tw_dsm_init` was not called (or
    /// failed) on this node.
    TW_ERR_NO_DSM = -20,
    /// `tw_dsm_unlock` of a lock the calling thread (or fiber) does not
    /// hold.
    TW_ERR_NOT_HELD = -21,
    /// The shared space has no room left for the allocation
    /// (`tw_dsm_init`'s `space_bytes`).
    TW_ERR_DSM_FULL = -22,
    /// The nodes allocated shared memory differently, found at the next
    /// `tw_dsm_barrier` (where the bytes they allocated differ).
    TW_ERR_DSM_DIVERGED = -23,
    /// The shared memory failed: the kernel refused the space or
    /// userfaultfd, or a home refused what a node sent it.
    TW_ERR_DSM = -24,
}

/// A failure: its code and what happened.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) code: TwError,
    pub(crate) message: String,
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(code: TwError, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(TwError::TW_ERR_INVALID, message)
    }
}

/// The code of each runtime error, with its message.
macro_rules! from_error {
    ($ty:ty, |$e:ident| $code:expr) => {
        impl From<$ty> for Error {
            fn from($e: $ty) -> Error {
                let message = $e.to_string();
                Error::new($code, message)
            }
        }
    };
}

use TwError::*;

from_error!(tw::InitError, |_e| TW_ERR_INIT);
from_error!(tw::SendError, |e| match e {
    tw::SendError::PeerLost { .. } => TW_ERR_PEER_LOST,
    tw::SendError::NoSuchEndpoint { .. } => TW_ERR_NO_SUCH_ENDPOINT,
    tw::SendError::TooLarge { .. } => TW_ERR_TOO_LARGE,
    _ => TW_ERR_FINALIZED,
});
from_error!(tw::RecvError, |e| match e {
    tw::RecvError::PeerLost(_) => TW_ERR_PEER_LOST,
    tw::RecvError::NoSuchNode(_) => TW_ERR_NO_SUCH_ENDPOINT,
    tw::RecvError::Revoked => TW_ERR_REVOKED,
    tw::RecvError::Cancelled => TW_ERR_CANCELLED,
    tw::RecvError::Truncated { .. } => TW_ERR_TRUNCATED,
    _ => TW_ERR_FINALIZED,
});
from_error!(tw::SpawnError, |e| match e {
    tw::SpawnError::PeerLost(_) => TW_ERR_PEER_LOST,
    tw::SpawnError::Finalized => TW_ERR_FINALIZED,
    _ => TW_ERR_SPAWN,
});
from_error!(tw::CollError, |e| coll_code(&e));

fn coll_code(e: &tw::CollError) -> TwError {
    match e {
        tw::CollError::PeerLost(_) => TW_ERR_PEER_LOST,
        tw::CollError::Revoked => TW_ERR_REVOKED,
        tw::CollError::Finalized => TW_ERR_FINALIZED,
        tw::CollError::TooLarge { .. } => TW_ERR_TOO_LARGE,
        _ => TW_ERR_GROUP,
    }
}

from_error!(tw::AmError, |e| am_code(&e));

fn am_code(e: &tw::AmError) -> TwError {
    match e {
        tw::AmError::UnknownHandler { .. } => TW_ERR_UNKNOWN_HANDLER,
        tw::AmError::HandlerPanicked { .. } | tw::AmError::Refused { .. } => TW_ERR_HANDLER_FAILED,
        tw::AmError::NoReply { .. } => TW_ERR_NO_REPLY,
        tw::AmError::PeerLost { .. } => TW_ERR_PEER_LOST,
        tw::AmError::NoSuchNode { .. } => TW_ERR_NO_SUCH_ENDPOINT,
        tw::AmError::TooLarge { .. } => TW_ERR_TOO_LARGE,
        tw::AmError::AlreadyRegistered { .. }
        | tw::AmError::AlreadyReplied
        | tw::AmError::IdCollision { .. } => TW_ERR_ALREADY,
        tw::AmError::NotARequest => TW_ERR_INVALID,
        tw::AmError::NoFiber { .. } => TW_ERR_SPAWN,
        tw::AmError::Cancelled => TW_ERR_CANCELLED,
        tw::AmError::Finalized => TW_ERR_FINALIZED,
        _ => TW_ERR_HANDLER_FAILED,
    }
}

from_error!(tw::NotifyError, |e| match e {
    tw::NotifyError::Finalized => TW_ERR_FINALIZED,
    tw::NotifyError::NoSuchNode(_) => TW_ERR_NO_SUCH_ENDPOINT,
    _ => TW_ERR_INVALID,
});
from_error!(tw::UnpackError, |_e| TW_ERR_UNPACK);

/// The shared memory's errors: those of the runtime underneath keep
/// their codes.
impl From<threadwire_dsm::DsmError> for Error {
    fn from(e: threadwire_dsm::DsmError) -> Error {
        use threadwire_dsm::DsmError;
        let code = match &e {
            DsmError::Am(am) => am_code(am),
            DsmError::Coll(coll) => coll_code(coll),
            DsmError::Config(_) => TW_ERR_INVALID,
            DsmError::Full { .. } => TW_ERR_DSM_FULL,
            DsmError::Diverged => TW_ERR_DSM_DIVERGED,
            DsmError::Lost(_) => TW_ERR_PEER_LOST,
            DsmError::Os(_) | DsmError::Refused(_) => TW_ERR_DSM,
        };
        Error::new(code, e.to_string())
    }
}

from_error!(tw::JoinError, |_e| TW_ERR_PANIC);

/// Runs an exported function's body: its error becomes a code and this
/// thread's last error, and a panic is caught here, never unwinding into C.
pub(crate) fn call(body: impl FnOnce() -> Result<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        Err(Error::new(
            TW_ERR_PANIC,
            format!("threadwire panicked: {}", panic_message(&*panic)),
        ))
    });
    match outcome {
        Ok(()) => TW_SUCCESS as c_int,
        Err(e) => {
            let code = e.code as c_int;
            context::set_last_error(e.message);
            code
        }
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (None, Some(s)) => s.clone(),
        (None, None) => "a panic without a message".to_string(),
    }
}

/// A C string of `message` (its NUL bytes replaced), for `tw_last_error`.
pub(crate) fn c_string(message: String) -> CString {
    CString::new(message.replace('\0', "\u{fffd}")).expect("NUL bytes were replaced")
}

/// The name and meaning of a return code, as a static string (never NULL):
/// `"TW_ERR_TRUNCATED: message longer than the buffer"`. Unknown codes give
/// `"unknown threadwire error code"`.
///
/// Callable from any thread, before `tw_init` too. Never fails.
#[no_mangle]
pub extern "C" fn tw_strerror(code: c_int) -> *const c_char {
    let text: &'static CStr = match code {
        0 => c"TW_SUCCESS: no error",
        -1 => c"TW_ERR_INVALID: invalid argument",
        -2 => c"TW_ERR_PANIC: the library panicked (caught)",
        -3 => c"TW_ERR_NO_ENDPOINT: the calling thread has no endpoint",
        -4 => c"TW_ERR_INIT: joining the job failed",
        -5 => c"TW_ERR_PEER_LOST: the peer node is gone",
        -6 => c"TW_ERR_NO_SUCH_ENDPOINT: no such node or thread in this job",
        -7 => c"TW_ERR_TOO_LARGE: message longer than a frame may be",
        -8 => c"TW_ERR_FINALIZED: the node has finalized",
        -9 => c"TW_ERR_TRUNCATED: message longer than the buffer",
        -10 => c"TW_ERR_CANCELLED: operation cancelled",
        -11 => c"TW_ERR_REVOKED: the group was revoked",
        -12 => c"TW_ERR_SPAWN: a thread could not be started",
        -13 => c"TW_ERR_UNPACK: unpacking failed",
        -14 => c"TW_ERR_GROUP: the group or collective call failed",
        -15 => c"TW_ERR_UNKNOWN_HANDLER: no active-message handler of that name",
        -16 => c"TW_ERR_HANDLER_FAILED: the active-message handler failed",
        -17 => c"TW_ERR_NO_REPLY: the handler did not answer the request",
        -18 => c"TW_ERR_ALREADY: done already",
        -19 => c"TW_ERR_WRONG_THREAD: handle used from another thread",
        -20 => c"TW_ERR_NO_DSM: the shared memory is not set up (tw_dsm_init)",
        -21 => c"TW_ERR_NOT_HELD: the lock is not held by the caller",
        -22 => c"TW_ERR_DSM_FULL: the shared space has no room left",
        -23 => c"TW_ERR_DSM_DIVERGED: the nodes allocated shared memory differently",
        -24 => c"TW_ERR_DSM: the shared memory failed",
        _ => c"unknown threadwire error code",
    };
    text.as_ptr()
}

/// What the last failing call of the calling thread (or fiber) said, as a
/// NUL-terminated string owned by the library: valid until this thread's
/// next failing call. `""` if no call has failed yet.
///
/// Callable from any thread, before `tw_init` too. Never fails.
#[no_mangle]
pub extern "C" fn tw_last_error() -> *const c_char {
    context::last_error()
}

/// Panics inside the library with `message` (NULL: a fixed message), to
/// check that no panic crosses into C: returns `TW_ERR_PANIC`, and
/// `tw_last_error` then holds the message. For tests.
///
/// # Safety
///
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tw_debug_panic(message: *const c_char) -> c_int {
    call(|| {
        let text = match message.is_null() {
            true => "tw_debug_panic".to_string(),
            // SAFETY: non-NULL and NUL-terminated, as the caller promises.
            false => unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned(),
        };
        std::panic::panic_any(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_name() {
        for (code, name) in [
            (TW_SUCCESS, "TW_SUCCESS"),
            (TW_ERR_INVALID, "TW_ERR_INVALID"),
            (TW_ERR_PANIC, "TW_ERR_PANIC"),
            (TW_ERR_NO_ENDPOINT, "TW_ERR_NO_ENDPOINT"),
            (TW_ERR_INIT, "TW_ERR_INIT"),
            (TW_ERR_PEER_LOST, "TW_ERR_PEER_LOST"),
            (TW_ERR_NO_SUCH_ENDPOINT, "TW_ERR_NO_SUCH_ENDPOINT"),
            (TW_ERR_TOO_LARGE, "TW_ERR_TOO_LARGE"),
            (TW_ERR_FINALIZED, "TW_ERR_FINALIZED"),
            (TW_ERR_TRUNCATED, "TW_ERR_TRUNCATED"),
            (TW_ERR_CANCELLED, "TW_ERR_CANCELLED"),
            (TW_ERR_REVOKED, "TW_ERR_REVOKED"),
            (TW_ERR_SPAWN, "TW_ERR_SPAWN"),
            (TW_ERR_UNPACK, "TW_ERR_UNPACK"),
            (TW_ERR_GROUP, "TW_ERR_GROUP"),
            (TW_ERR_UNKNOWN_HANDLER, "TW_ERR_UNKNOWN_HANDLER"),
            (TW_ERR_HANDLER_FAILED, "TW_ERR_HANDLER_FAILED"),
            (TW_ERR_NO_REPLY, "TW_ERR_NO_REPLY"),
            (TW_ERR_ALREADY, "TW_ERR_ALREADY"),
            (TW_ERR_WRONG_THREAD, "TW_ERR_WRONG_THREAD"),
            (TW_ERR_NO_DSM, "TW_ERR_NO_DSM"),
            (TW_ERR_NOT_HELD, "TW_ERR_NOT_HELD"),
            (TW_ERR_DSM_FULL, "TW_ERR_DSM_FULL"),
            (TW_ERR_DSM_DIVERGED, "TW_ERR_DSM_DIVERGED"),
            (TW_ERR_DSM, "TW_ERR_DSM"),
        ] {
            // SAFETY: `tw_strerror` returns a static NUL-terminated string.
            let text = unsafe { CStr::from_ptr(tw_strerror(code as c_int)) };
            assert!(
                text.to_str().unwrap().starts_with(&format!("{name}:")),
                "{code:?}"
            );
        }
    }

    #[test]
    fn a_panic_becomes_a_code_and_the_last_error() {
        let code = call(|| panic!("inside the library"));
        assert_eq!(code, TW_ERR_PANIC as c_int);
        // SAFETY: `tw_last_error` returns a NUL-terminated string valid
        // until this thread's next failure.
        let text = unsafe { CStr::from_ptr(tw_last_error()) };
        assert!(text.to_str().unwrap().contains("inside the library"));
        assert_eq!(call(|| Ok(())), 0);
    }
}
