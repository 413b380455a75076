//! Point-to-point: blocking send and receive, received messages the
//! library owns, probes.

use crate::context::with_endpoint;
use crate::error::{call, Error, Result, TwError};
use crate::types::{
    destination, handle, send_tag, slice, slice_mut, source, tag_match, take_handle, tw_address,
    tw_status, write_opt, write_out,
};
use std::ffi::{c_int, c_void};

/// A received message whose bytes the library owns, until
/// `tw_message_free` (or `tw_unpacker_new`, which takes it).
#[allow(non_camel_case_types)]
pub struct tw_message {
    pub(crate) status: tw::Status,
    /// How its bytes were packed, to unpack them.
    pub(crate) format: threadwire_wire::Format,
    pub(crate) bytes: Vec<u8>,
}

impl tw_message {
    pub(crate) fn new(m: tw::Message) -> tw_message {
        let status = m.status();
        let payload = m.into_payload();
        tw_message {
            status,
            format: payload.format(),
            bytes: payload.into_vec(),
        }
    }
}

/// The status of a receive that matched a message too long for `capacity`.
pub(crate) fn truncated(status: tw::Status, capacity: usize) -> Error {
    Error::new(
        TwError::TW_ERR_TRUNCATED,
        format!(
            "message of {} bytes from {} (tag {}) truncated to the buffer's {capacity}",
            status.len, status.source, status.tag
        ),
    )
}

/// Copies `bytes` into `buf`: the status, or `TW_ERR_TRUNCATED` with the
/// first bytes copied and `*status` holding the real length.
pub(crate) fn deliver(
    bytes: &[u8],
    status: tw::Status,
    buf: &mut [u8],
    out: *mut tw_status,
) -> Result<()> {
    let n = bytes.len().min(buf.len());
    buf[..n].copy_from_slice(&bytes[..n]);
    // SAFETY: the exported functions pass their caller's `status`, NULL or
    // valid for a write as their callers promise.
    unsafe { write_opt(out, status.into()) };
    match bytes.len() > buf.len() {
        true => Err(truncated(status, buf.len())),
        false => Ok(()),
    }
}

/// Sends `len` bytes at `data` to `to` with `tag`. Returns once `data` may
/// be reused: the bytes are copied, or — when long — read where they are
/// by the receiver before the call returns. Messages from one thread to
/// another arrive in the order sent.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID` (NULL
/// `data` with a non-zero `len`, a wildcard in `to`, `TW_ANY_TAG`),
/// `TW_ERR_NO_SUCH_ENDPOINT`, `TW_ERR_PEER_LOST`, `TW_ERR_TOO_LARGE`,
/// `TW_ERR_FINALIZED`, `TW_ERR_NO_ENDPOINT`.
///
/// # Safety
///
/// `data` is NULL or valid for reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tw_send(
    to: tw_address,
    tag: u32,
    data: *const c_void,
    len: usize,
) -> c_int {
    call(|| {
        let (to, tag) = (destination(to)?, send_tag(tag)?);
        // SAFETY: NULL or valid for `len` bytes, as the caller promises.
        let bytes = unsafe { slice(data.cast::<u8>(), len, "data") }?;
        with_endpoint(|ep| Ok(ep.send(to, tag, bytes)?))
    })
}

/// Receives the first message from `from` (an address, `{node, TW_ANY}`
/// or `{TW_ANY, TW_ANY}`) with `tag` (or `TW_ANY_TAG`) into `buf`, at most
/// `capacity` bytes, blocking only the calling thread or fiber. `*status`
/// (unless NULL) gets sender, tag and length. A longer message fills the
/// buffer, is consumed, and fails with `TW_ERR_TRUNCATED`, `status->len`
/// its real length.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID`,
/// `TW_ERR_TRUNCATED`, `TW_ERR_PEER_LOST` (the node waited on is gone),
/// `TW_ERR_NO_SUCH_ENDPOINT`, `TW_ERR_FINALIZED`, `TW_ERR_NO_ENDPOINT`.
///
/// # Safety
///
/// `buf` is NULL or valid for writes of `capacity` bytes; `status` is NULL
/// or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_recv(
    from: tw_address,
    tag: u32,
    buf: *mut c_void,
    capacity: usize,
    status: *mut tw_status,
) -> c_int {
    call(|| {
        let from = source(from)?;
        // SAFETY: NULL or valid for `capacity` bytes, as the caller promises.
        let buf = unsafe { slice_mut(buf.cast::<u8>(), capacity, "buf") }?;
        with_endpoint(|ep| match ep.recv_into(from, tag_match(tag), buf) {
            Ok(s) => {
                // SAFETY: NULL or valid, as the caller promises.
                unsafe { write_opt(status, s.into()) };
                Ok(())
            }
            Err(tw::RecvError::Truncated {
                status: s,
                capacity,
            }) => {
                // SAFETY: NULL or valid, as the caller promises.
                unsafe { write_opt(status, s.into()) };
                Err(truncated(s, capacity))
            }
            Err(e) => Err(e.into()),
        })
    })
}

/// Receives the first matching message (as `tw_recv`) whatever its length,
/// into a buffer the library allocates: `*message` is its handle, for
/// `tw_message_data`, `tw_message_status`, `tw_unpacker_new`; free it
/// with `tw_message_free`.
///
/// Context, errors: as `tw_recv` (no truncation).
///
/// # Safety
///
/// `message` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_recv_message(
    from: tw_address,
    tag: u32,
    message: *mut *mut tw_message,
) -> c_int {
    call(|| {
        let from = source(from)?;
        crate::types::non_null(message, "message")?;
        let m = with_endpoint(|ep| Ok(ep.recv(from, tag_match(tag))?))?;
        let boxed = Box::into_raw(Box::new(tw_message::new(m)));
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { message.write(boxed) };
        Ok(())
    })
}

/// The bytes of a received message: `*data` points to `*len` bytes owned by
/// the message, valid until it is freed.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `message` is NULL or a live message handle; `data` and `len` are NULL
/// or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn tw_message_data(
    message: *mut tw_message,
    data: *mut *const c_void,
    len: *mut usize,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let m = unsafe { handle(message, "message") }?;
        crate::types::non_null(data, "data")?;
        crate::types::non_null(len, "len")?;
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe {
            data.write(m.bytes.as_ptr().cast());
            len.write(m.bytes.len());
        }
        Ok(())
    })
}

/// The sender, tag and length of a received message.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `message` is NULL or a live message handle; `status` is NULL or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_message_status(
    message: *mut tw_message,
    status: *mut tw_status,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let m = unsafe { handle(message, "message") }?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(status, "status", m.status.into()) }
    })
}

/// Frees a received message; `*message` becomes NULL. A NULL `*message` is
/// a no-op.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL `message`).
///
/// # Safety
///
/// `message` is NULL or points to NULL or a live message handle.
#[no_mangle]
pub unsafe extern "C" fn tw_message_free(message: *mut *mut tw_message) -> c_int {
    // SAFETY: as the caller promises.
    call(|| unsafe { take_handle(message, "message") }.map(drop))
}

/// Waits until a message matching `from` and `tag` has arrived and writes
/// its status, leaving it to be received.
///
/// Context: a thread with an endpoint. Errors: as `tw_recv`.
///
/// # Safety
///
/// `status` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_probe(from: tw_address, tag: u32, status: *mut tw_status) -> c_int {
    call(|| {
        let from = source(from)?;
        let s = with_endpoint(|ep| Ok(ep.probe(from, tag_match(tag))?))?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_opt(status, s.into()) };
        Ok(())
    })
}

/// Whether a message matching `from` and `tag` has arrived, without
/// waiting: `*found` is 1 (and `*status` its status) or 0.
///
/// Context, errors: as `tw_probe`, and `TW_ERR_INVALID` for a NULL `found`.
///
/// # Safety
///
/// `found` and `status` are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn tw_iprobe(
    from: tw_address,
    tag: u32,
    found: *mut c_int,
    status: *mut tw_status,
) -> c_int {
    call(|| {
        let from = source(from)?;
        crate::types::non_null(found, "found")?;
        let s = with_endpoint(|ep| Ok(ep.iprobe(from, tag_match(tag))?))?;
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { found.write(c_int::from(s.is_some())) };
        if let Some(s) = s {
            // SAFETY: NULL or valid, as the caller promises.
            unsafe { write_opt(status, s.into()) };
        }
        Ok(())
    })
}
