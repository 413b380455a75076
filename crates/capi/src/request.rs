//! Nonblocking operations: `tw_isend`, `tw_irecv` (and `tw_am_request`)
//! start one; `tw_wait` and `tw_test` complete it.

use crate::context::with_endpoint;
use crate::error::{call, Error, Result, TwError};
use crate::p2p::deliver;
use crate::types::{
    destination, non_null, send_tag, slice, source, tag_match, tw_address, tw_status,
};
use std::ffi::{c_int, c_void};
use tw::fiber::{current_unparker, Unparker};

/// An operation under way, until `tw_wait`, a `tw_test` that finds it
/// complete, or `tw_request_free`. Belongs to the thread (or fiber) that
/// started it.
#[allow(non_camel_case_types)]
pub struct tw_request {
    owner: Unparker,
    operation: Operation,
}

pub(crate) enum Operation {
    Send(tw::SendRequest),
    /// A receive; its bytes go to the caller's buffer when it completes.
    Recv {
        request: tw::RecvRequest,
        buf: *mut u8,
        capacity: usize,
    },
    /// An active-message request; the answer goes to the caller's buffer.
    Am {
        request: tw::AmRequest,
        node: u32,
        buf: *mut u8,
        capacity: usize,
    },
}

impl tw_request {
    pub(crate) fn new(operation: Operation) -> *mut tw_request {
        Box::into_raw(Box::new(tw_request {
            owner: current_unparker(),
            operation,
        }))
    }

    fn check_owner(&self) -> Result<()> {
        match self.owner.same_as(&current_unparker()) {
            true => Ok(()),
            false => Err(Error::new(
                TwError::TW_ERR_WRONG_THREAD,
                "a request belongs to the thread that started it",
            )),
        }
    }

    fn test(&mut self) -> bool {
        match &mut self.operation {
            Operation::Send(r) => r.test(),
            Operation::Recv { request, .. } => request.test(),
            Operation::Am { request, .. } => request.test(),
        }
    }

    /// Completes the operation, delivering what it received.
    fn finish(self, status: *mut tw_status) -> Result<()> {
        match self.operation {
            Operation::Send(r) => Ok(r.wait()?),
            Operation::Recv {
                request,
                buf,
                capacity,
            } => {
                let m = request.wait()?;
                let s = m.status();
                let bytes = m.into_vec();
                // SAFETY: the caller of `tw_irecv` keeps `buf` valid for
                // `capacity` bytes until the request completes (now), and
                // `tw_irecv` checked it.
                let buf = unsafe { crate::types::slice_mut(buf, capacity, "buf") }?;
                deliver(&bytes, s, buf, status)
            }
            Operation::Am {
                request,
                node,
                buf,
                capacity,
            } => {
                let answer = request.wait()?.into_vec();
                let s = tw::Status {
                    source: tw::Address::new(node, 0),
                    tag: 0,
                    len: answer.len(),
                };
                // SAFETY: as for a receive (`tw_am_request`'s contract).
                let buf = unsafe { crate::types::slice_mut(buf, capacity, "answer") }?;
                deliver(&answer, s, buf, status)
            }
        }
    }
}

/// Takes the request out of `*slot` and checks it is the caller's; a
/// request of another thread is left where it was.
///
/// # Safety
///
/// `slot` is NULL or valid, `*slot` NULL or a live request handle.
unsafe fn take(slot: *mut *mut tw_request) -> Result<Box<tw_request>> {
    non_null(slot, "request")?;
    // SAFETY: non-NULL and valid as the caller promises.
    let p = unsafe { slot.read() };
    non_null(p, "*request")?;
    // SAFETY: a live handle, as the caller promises.
    unsafe { &*p }.check_owner()?;
    // SAFETY: as above; taken from the caller, who gives it up.
    unsafe { crate::types::take_handle(slot, "request") }.map(|r| r.expect("checked non-NULL"))
}

/// Starts a send of `len` bytes at `data` to `to` with `tag`; `*request` is
/// its handle. The bytes are copied before the call returns, so `data` may
/// be reused at once.
///
/// Context: a thread with an endpoint. Errors: as `tw_send` (some are
/// reported by `tw_wait` instead).
///
/// # Safety
///
/// `data` is NULL or valid for reads of `len` bytes; `request` is NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_isend(
    to: tw_address,
    tag: u32,
    data: *const c_void,
    len: usize,
    request: *mut *mut tw_request,
) -> c_int {
    call(|| {
        let (to, tag) = (destination(to)?, send_tag(tag)?);
        // SAFETY: NULL or valid for `len` bytes, as the caller promises.
        let bytes = unsafe { slice(data.cast::<u8>(), len, "data") }?.to_vec();
        non_null(request, "request")?;
        let r = with_endpoint(|ep| Ok(ep.isend(to, tag, bytes)))?;
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { request.write(tw_request::new(Operation::Send(r))) };
        Ok(())
    })
}

/// Starts a receive as `tw_recv`'s into `buf` (at most `capacity` bytes);
/// `*request` is its handle. `buf` is written when the request completes
/// (`tw_wait`, `tw_test`), so keep it valid until then; a request freed
/// first writes nothing.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID`; others as
/// `tw_recv`, from `tw_wait`/`tw_test`.
///
/// # Safety
///
/// `buf` is NULL or valid for writes of `capacity` bytes until the request
/// completes or is freed; `request` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_irecv(
    from: tw_address,
    tag: u32,
    buf: *mut c_void,
    capacity: usize,
    request: *mut *mut tw_request,
) -> c_int {
    call(|| {
        let from = source(from)?;
        // SAFETY: NULL or valid for `capacity` bytes, as the caller promises.
        unsafe { crate::types::slice_mut(buf.cast::<u8>(), capacity, "buf") }?;
        non_null(request, "request")?;
        let r = with_endpoint(|ep| Ok(ep.irecv(from, tag_match(tag))))?;
        let op = Operation::Recv {
            request: r,
            buf: buf.cast(),
            capacity,
        };
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { request.write(tw_request::new(op)) };
        Ok(())
    })
}

/// Waits until the request completes, frees it (`*request` becomes NULL)
/// and writes its status (a receive's sender, tag and length; an
/// active-message answer's length) to `*status` unless NULL. The request's
/// own error is returned, e.g. `TW_ERR_TRUNCATED` for a receive whose
/// message was longer than its buffer.
///
/// Context: the thread that started the request. Errors: the operation's,
/// `TW_ERR_INVALID` (NULL), `TW_ERR_WRONG_THREAD`.
///
/// # Safety
///
/// `request` is NULL or points to NULL or a live request handle; `status`
/// is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_wait(request: *mut *mut tw_request, status: *mut tw_status) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let r = unsafe { take(request) }?;
        r.finish(status)
    })
}

/// Makes progress without waiting: `*done` is 1 if the request has
/// completed — then it is finished as by `tw_wait` (freed, `*request`
/// NULL, its status and error given) — else 0.
///
/// Context, errors: as `tw_wait`.
///
/// # Safety
///
/// As `tw_wait`; `done` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_test(
    request: *mut *mut tw_request,
    done: *mut c_int,
    status: *mut tw_status,
) -> c_int {
    call(|| {
        non_null(done, "done")?;
        non_null(request, "request")?;
        // SAFETY: non-NULL and valid as the caller promises.
        let p = unsafe { request.read() };
        non_null(p, "*request")?;
        // SAFETY: a live handle of the caller's, as it promises.
        let r = unsafe { &mut *p };
        r.check_owner()?;
        let complete = r.test();
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { done.write(c_int::from(complete)) };
        if !complete {
            return Ok(());
        }
        // SAFETY: as the caller promises.
        let r = unsafe { take(request) }?;
        r.finish(status)
    })
}

/// Frees a request without completing it: a receive not yet matched is
/// withdrawn (its buffer is not written, no message is lost); a send goes
/// on by itself. `*request` becomes NULL; a NULL `*request` is a no-op.
///
/// Context: the thread that started it. Errors: `TW_ERR_INVALID` (NULL
/// `request`), `TW_ERR_WRONG_THREAD`.
///
/// # Safety
///
/// `request` is NULL or points to NULL or a live request handle.
#[no_mangle]
pub unsafe extern "C" fn tw_request_free(request: *mut *mut tw_request) -> c_int {
    call(|| {
        non_null(request, "request")?;
        // SAFETY: non-NULL and valid as the caller promises.
        if unsafe { request.read() }.is_null() {
            return Ok(());
        }
        // SAFETY: as the caller promises.
        unsafe { take(request) }.map(drop)
    })
}
