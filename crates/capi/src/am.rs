//! Active messages: C handlers registered by name, run at the destination
//! node on arrival; one-way sends and requests with an answer.

use crate::context::{with_endpoint, InlineHandler, Scope};
use crate::error::{call, Error, Result};
use crate::request::{tw_request, Operation};
use crate::startup::SendPtr;
use crate::types::{
    handle, non_null, slice, slice_mut, string, take_handle, tw_address, write_out,
};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// With `tw_am_register`: the handler runs inline, in whichever thread
/// drives the node's progress when the message arrives. It must be short
/// and has no endpoint: it may read the message and answer it
/// (`tw_am_reply`), but not send, receive or wait.
pub const TW_AM_INLINE: c_int = 0;
/// With `tw_am_register`: the handler runs in a fiber of the node's pool
/// with an endpoint of its own: it may block, send, receive and call
/// other handlers.
pub const TW_AM_FIBER: c_int = 1;

/// A handler's name and id, for sending to it; until `tw_handler_free`.
#[allow(non_camel_case_types)]
pub struct tw_handler {
    handler: tw::Handler,
}

/// An active message as its handler sees it; valid only during the
/// handler's call.
#[allow(non_camel_case_types)]
pub struct tw_am_message {
    am: *mut tw::ActiveMessage<'static>,
    data: Vec<u8>,
}

/// A handler: `message` is valid during the call only; `user` is the
/// pointer given at registration. Return 0, or non-zero to fail: a
/// request then fails at its sender with `TW_ERR_HANDLER_FAILED`, and a
/// one-way message's failure is reported to its sender's `tw_am_check`.
#[allow(non_camel_case_types)]
pub type tw_am_fn =
    Option<unsafe extern "C" fn(message: *mut tw_am_message, user: *mut c_void) -> c_int>;

/// Calls the C handler `f` for `am`; its failure becomes the panic the
/// runtime reports to the sender (unwound here, in Rust, never through C).
fn run(
    name: &str,
    f: unsafe extern "C" fn(*mut tw_am_message, *mut c_void) -> c_int,
    user: &SendPtr,
    am: &mut tw::ActiveMessage<'_>,
) {
    let data = am.take_payload().into_vec();
    let mut message = tw_am_message {
        am: (am as *mut tw::ActiveMessage<'_>).cast(),
        data,
    };
    // SAFETY: a C function of the documented type, with the message (valid
    // for the call: it borrows `am`, alive until we return) and the user
    // pointer its registration gave.
    let rc = unsafe { f(&mut message, user.get()) };
    if rc != 0 {
        // `resume_unwind`, not `panic!`: no panic hook prints it; the
        // runtime catches it around the handler (`am`, step 5).
        std::panic::resume_unwind(Box::new(format!("C handler {name} returned {rc}")));
    }
}

/// Registers `handler` as the active-message handler `name` on this node,
/// of `kind` `TW_AM_INLINE` or `TW_AM_FIBER`; `*out` (unless NULL) is the
/// handle to send to it. Register the same names on every node that
/// serves them before any node sends to them (a barrier after registering
/// does it). `user` is passed to every call, on other threads.
///
/// Context: any thread, after `tw_init`. Errors: `TW_ERR_INVALID` (NULL,
/// unknown kind), `TW_ERR_ALREADY` (name registered already, or two
/// names with one id), `TW_ERR_NO_ENDPOINT` before `tw_init`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `handler` is a valid
/// function; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_am_register(
    name: *const c_char,
    kind: c_int,
    handler: tw_am_fn,
    user: *mut c_void,
    out: *mut *mut tw_handler,
) -> c_int {
    call(|| {
        // SAFETY: NULL or NUL-terminated, as the caller promises.
        let name = unsafe { string(name, "name") }?;
        let f = handler.ok_or_else(|| Error::invalid("handler is NULL"))?;
        let node = crate::context::node()?;
        let user = Arc::new(SendPtr(user));
        let label: Arc<str> = name.into();
        let registered = match kind {
            TW_AM_INLINE => node.register_inline(name, move |am| {
                let _inline = InlineHandler::enter();
                run(&label, f, &user, am)
            })?,
            TW_AM_FIBER => node.register_fiber(name, move |ep, am| {
                let _scope = Scope::bind(ep);
                run(&label, f, &user, am)
            })?,
            other => return Err(Error::invalid(format!("unknown handler kind {other}"))),
        };
        give(registered, out);
        Ok(())
    })
}

fn give(handler: tw::Handler, out: *mut *mut tw_handler) {
    if out.is_null() {
        return;
    }
    let h = Box::into_raw(Box::new(tw_handler { handler }));
    // SAFETY: non-NULL; valid as the exported function's caller promises.
    unsafe { out.write(h) };
}

/// A handle to send to the handler `name`, registered on other nodes,
/// without registering anything here.
///
/// Context: any thread, after `tw_init`. Errors: `TW_ERR_INVALID` (NULL),
/// `TW_ERR_ALREADY` (the name's id collides with another's).
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `out` is NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tw_am_handler(name: *const c_char, out: *mut *mut tw_handler) -> c_int {
    call(|| {
        // SAFETY: NULL or NUL-terminated, as the caller promises.
        let name = unsafe { string(name, "name") }?;
        non_null(out, "out")?;
        give(crate::context::node()?.handler(name)?, out);
        Ok(())
    })
}

/// Frees a handler handle (the registration stays); `*handler` becomes
/// NULL.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `handler` is NULL or points to NULL or a live handler handle.
#[no_mangle]
pub unsafe extern "C" fn tw_handler_free(handler: *mut *mut tw_handler) -> c_int {
    // SAFETY: as the caller promises.
    call(|| unsafe { take_handle(handler, "handler") }.map(drop))
}

/// The handler and payload, checked.
///
/// # Safety
///
/// `handler` is NULL or a live handler handle; `data` NULL or valid for
/// reads of `len` bytes.
unsafe fn message(
    handler: *mut tw_handler,
    data: *const c_void,
    len: usize,
) -> Result<(tw::Handler, Vec<u8>)> {
    // SAFETY: NULL or a live handle, as the caller promises.
    let h = unsafe { handle(handler, "handler") }?.handler.clone();
    // SAFETY: NULL or valid for `len` bytes, as the caller promises.
    let bytes = unsafe { slice(data.cast::<u8>(), len, "data") }?.to_vec();
    Ok((h, bytes))
}

/// Sends a one-way active message: `handler` runs on `node` with the `len`
/// bytes at `data` (copied). Returns once the message has left. A failure
/// of the handler is reported later to `tw_am_check`.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID`,
/// `TW_ERR_NO_SUCH_ENDPOINT`, `TW_ERR_PEER_LOST`, `TW_ERR_TOO_LARGE`,
/// `TW_ERR_FINALIZED`.
///
/// # Safety
///
/// `handler` is NULL or a live handler handle; `data` is NULL or valid for
/// reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tw_am_send(
    node: u32,
    handler: *mut tw_handler,
    data: *const c_void,
    len: usize,
) -> c_int {
    call(|| {
        // SAFETY: forwarded from the caller.
        let (h, bytes) = unsafe { message(handler, data, len) }?;
        with_endpoint(|ep| Ok(ep.am_send(node, &h, bytes)?))
    })
}

/// Sends a request: `handler` runs on `node` with the `len` bytes at
/// `data`, and its answer is written to `answer` (`capacity` bytes) when
/// the request completes (`tw_wait`, `tw_test`; the status's `len` is the
/// answer's length, `TW_ERR_TRUNCATED` if longer than `capacity`).
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID`; at
/// completion `TW_ERR_UNKNOWN_HANDLER`, `TW_ERR_HANDLER_FAILED`,
/// `TW_ERR_NO_REPLY`, `TW_ERR_PEER_LOST`, as `tw_am_send`.
///
/// # Safety
///
/// As `tw_am_send`; `answer` is NULL or valid for writes of `capacity`
/// bytes until the request completes or is freed; `request` is NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_am_request(
    node: u32,
    handler: *mut tw_handler,
    data: *const c_void,
    len: usize,
    answer: *mut c_void,
    capacity: usize,
    request: *mut *mut tw_request,
) -> c_int {
    call(|| {
        // SAFETY: forwarded from the caller.
        let (h, bytes) = unsafe { message(handler, data, len) }?;
        // SAFETY: NULL or valid for `capacity` bytes, as the caller promises.
        unsafe { slice_mut(answer.cast::<u8>(), capacity, "answer") }?;
        non_null(request, "request")?;
        let r = with_endpoint(|ep| Ok(ep.am_request(node, &h, bytes)))?;
        let op = Operation::Am {
            request: r,
            node,
            buf: answer.cast(),
            capacity,
        };
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { request.write(tw_request::new(op)) };
        Ok(())
    })
}

/// Takes the oldest failure reported for this thread's one-way active
/// messages, without waiting: `TW_SUCCESS` if none has been reported,
/// else that failure's code (`TW_ERR_HANDLER_FAILED`,
/// `TW_ERR_UNKNOWN_HANDLER`, ...). A failure shows once its report has
/// arrived: send a request last to be sure.
///
/// Context: a thread with an endpoint.
#[no_mangle]
pub extern "C" fn tw_am_check() -> c_int {
    call(|| with_endpoint(|ep| Ok(ep.am_check()?)))
}

/// # Safety
///
/// `message` is NULL or the message of a running handler.
unsafe fn am<'a>(message: *mut tw_am_message) -> Result<&'a mut tw_am_message> {
    // SAFETY: NULL or valid during the handler's call, as the caller
    // promises.
    unsafe { handle(message, "message") }
}

/// The thread that sent the message into `*source`.
///
/// Context: the message's handler. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `message` is NULL or the message of the running handler; `source` is
/// NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_am_source(
    message: *mut tw_am_message,
    source: *mut tw_address,
) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let m = unsafe { am(message) }?;
        // SAFETY: `m.am` borrows the message being handled, alive during
        // the call this function runs in.
        let from = unsafe { &*m.am }.source();
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(source, "source", from.into()) }
    })
}

/// The message's payload: `*data` points to `*len` bytes, valid during the
/// handler's call.
///
/// # Safety
///
/// `message` is NULL or the message of the running handler; `data` and
/// `len` are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn tw_am_data(
    message: *mut tw_am_message,
    data: *mut *const c_void,
    len: *mut usize,
) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let m = unsafe { am(message) }?;
        non_null(data, "data")?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(len, "len", m.data.len()) }?;
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { data.write(m.data.as_ptr().cast()) };
        Ok(())
    })
}

/// Whether the sender waits for an answer: `*is_request` 1 or 0.
///
/// # Safety
///
/// `message` is NULL or the message of the running handler; `is_request`
/// is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_am_is_request(
    message: *mut tw_am_message,
    is_request: *mut c_int,
) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let m = unsafe { am(message) }?;
        // SAFETY: `m.am` borrows the message being handled (see `tw_am_source`).
        let r = unsafe { &*m.am }.is_request();
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(is_request, "is_request", c_int::from(r)) }
    })
}

/// Answers the request with the `len` bytes at `data` (copied); once per
/// request.
///
/// Context: the message's handler. Errors: `TW_ERR_INVALID` (NULL, a
/// one-way message), `TW_ERR_ALREADY` (answered already),
/// `TW_ERR_PEER_LOST` (the requester is gone).
///
/// # Safety
///
/// `message` is NULL or the message of the running handler; `data` is NULL
/// or valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tw_am_reply(
    message: *mut tw_am_message,
    data: *const c_void,
    len: usize,
) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let m = unsafe { am(message) }?;
        // SAFETY: NULL or valid for `len` bytes, as the caller promises.
        let bytes = unsafe { slice(data.cast::<u8>(), len, "data") }?.to_vec();
        // SAFETY: `m.am` borrows the message being handled, exclusively:
        // only this handler's call reaches it.
        Ok(unsafe { &mut *m.am }.reply(bytes)?)
    })
}
