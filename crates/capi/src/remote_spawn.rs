//! Remote spawn: a thread starts a fiber on another node by naming an
//! entry point that node exported, and joins it for its result.

use crate::context::{with_endpoint, Scope};
use crate::error::{call, Error, TwError};
use crate::startup::SendPtr;
use crate::types::{
    handle, non_null, slice, string, take_handle, tw_address, write_opt, write_out,
};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// An exported entry point: runs in a fiber of the node it was spawned
/// on, with an endpoint of its own, on the `len` bytes at `args` (valid
/// during the call); what it returns goes to `tw_remote_join`.
#[allow(non_camel_case_types)]
pub type tw_entry_fn =
    Option<unsafe extern "C" fn(args: *const c_void, len: usize, user: *mut c_void) -> c_int>;

/// A thread started on another node by `tw_spawn_remote`, until joined.
/// Belongs to the thread that spawned it (the result comes to it).
#[allow(non_camel_case_types)]
pub struct tw_remote {
    handle: tw::RemoteHandle,
}

impl From<tw::RemoteJoinError> for Error {
    fn from(e: tw::RemoteJoinError) -> Error {
        let code = match e {
            tw::RemoteJoinError::PeerLost(_) => TwError::TW_ERR_PEER_LOST,
            tw::RemoteJoinError::WrongThread { .. } => TwError::TW_ERR_WRONG_THREAD,
            tw::RemoteJoinError::Panicked { .. } => TwError::TW_ERR_PANIC,
            _ => TwError::TW_ERR_FINALIZED,
        };
        Error::new(code, e.to_string())
    }
}

/// Exports `entry` as `name`, for other nodes' `tw_spawn_remote`. Export
/// the same names on every node before any node spawns (a barrier after
/// exporting does it). `user` is passed to every call, on other threads.
///
/// Context: any thread, after `tw_init`. Errors: `TW_ERR_INVALID` (NULL),
/// `TW_ERR_ALREADY` (exported already).
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `entry` is a valid function.
#[no_mangle]
pub unsafe extern "C" fn tw_export(
    name: *const c_char,
    entry: tw_entry_fn,
    user: *mut c_void,
) -> c_int {
    call(|| {
        // SAFETY: NULL or NUL-terminated, as the caller promises.
        let name = unsafe { string(name, "name") }?;
        let f = entry.ok_or_else(|| Error::invalid("entry is NULL"))?;
        let user = Arc::new(SendPtr(user));
        let exported = crate::context::node()?.export(name, move |ep, args| {
            let _scope = Scope::bind(ep);
            let args = args.into_vec();
            // SAFETY: a C function of the documented type, with bytes valid
            // for the call and the user pointer its export gave.
            let result = unsafe { f(args.as_ptr().cast(), args.len(), user.get()) };
            result.to_le_bytes().to_vec()
        });
        match exported {
            Err(e @ tw::SpawnError::AlreadyExported { .. }) => {
                Err(Error::new(TwError::TW_ERR_ALREADY, e.to_string()))
            }
            other => Ok(other?),
        }
    })
}

/// Starts a fiber on `node` running the entry point `name` that node
/// exported, on the `len` bytes at `args` (copied); returns once it has
/// started, `*remote` its handle.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID`,
/// `TW_ERR_SPAWN` (no such entry, or the node could not start a thread),
/// `TW_ERR_PEER_LOST`, `TW_ERR_FINALIZED`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `args` is NULL or valid for
/// reads of `len` bytes; `remote` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_spawn_remote(
    node: u32,
    name: *const c_char,
    args: *const c_void,
    len: usize,
    remote: *mut *mut tw_remote,
) -> c_int {
    call(|| {
        // SAFETY: NULL or NUL-terminated, as the caller promises.
        let name = unsafe { string(name, "name") }?;
        // SAFETY: NULL or valid for `len` bytes, as the caller promises.
        let args = unsafe { slice(args.cast::<u8>(), len, "args") }?.to_vec();
        non_null(remote, "remote")?;
        let handle = with_endpoint(|ep| Ok(ep.spawn_remote(node, name, args)?))?;
        let r = Box::into_raw(Box::new(tw_remote { handle }));
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { remote.write(r) };
        Ok(())
    })
}

/// The address of a remote thread into `*address`.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `remote` is NULL or a live remote handle; `address` is NULL or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_remote_address(
    remote: *mut tw_remote,
    address: *mut tw_address,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let r = unsafe { handle(remote, "remote") }?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(address, "address", r.handle.address().into()) }
    })
}

/// Waits for a remote thread's entry point to return, frees the handle
/// (`*remote` becomes NULL) and writes what it returned to `*result`
/// unless NULL.
///
/// Context: the thread that spawned it. Errors: `TW_ERR_INVALID` (NULL),
/// `TW_ERR_WRONG_THREAD` (then the handle is freed all the same),
/// `TW_ERR_PEER_LOST`, `TW_ERR_FINALIZED`.
///
/// # Safety
///
/// `remote` is NULL or points to NULL or a live remote handle; `result` is
/// NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_remote_join(remote: *mut *mut tw_remote, result: *mut c_int) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let r = unsafe { take_handle(remote, "remote") }?
            .ok_or_else(|| Error::invalid("*remote is NULL"))?;
        let payload = with_endpoint(|ep| Ok(r.handle.join(ep)?))?;
        let bytes: [u8; 4] = payload
            .into_vec()
            .try_into()
            .map_err(|_| Error::new(TwError::TW_ERR_SPAWN, "the entry's result is not an int"))?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_opt(result, c_int::from_le_bytes(bytes)) };
        Ok(())
    })
}
