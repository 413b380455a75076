//! Failure notification: a message with a chosen tag when a node exits,
//! or a callback.

use crate::context::{self, with_endpoint};
use crate::error::call;
use crate::startup::SendPtr;
use crate::types::{send_tag, TW_ANY};
use std::ffi::{c_int, c_void};

/// Asks for a message with `tag` in the calling thread's mailbox when node
/// `node` exits (finishes or fails) — or, with `node` = `TW_ANY`, one per
/// other node as each exits. The message comes from `{node, 0}` and is
/// packed (portable): `uint32_t` kind (1: a node exited), `uint32_t` node,
/// `uint32_t` cause (0: finished, 1: failed), string why (empty when it
/// finished); read it with `tw_recv_message` and `tw_unpacker_new`.
/// Those gone already are told at once. The subscription lasts until it
/// is told, or the thread's endpoint ends.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID` (the
/// caller's own node, `TW_ANY_TAG`), `TW_ERR_NO_SUCH_ENDPOINT`,
/// `TW_ERR_FINALIZED`.
#[no_mangle]
pub extern "C" fn tw_notify(node: u32, tag: u32) -> c_int {
    call(|| {
        let tag = send_tag(tag)?;
        let event = match node {
            TW_ANY => tw::Notify::AnyNodeExit,
            n => tw::Notify::NodeExit(n),
        };
        with_endpoint(|ep| {
            ep.notify(event, tag)?.detach();
            Ok(())
        })
    })
}

/// Called when a peer node finishes (`failed` 0) or fails (`failed` 1).
#[allow(non_camel_case_types)]
pub type tw_peer_lost_fn =
    Option<unsafe extern "C" fn(node: u32, failed: c_int, user: *mut c_void)>;

/// Calls `callback(node, failed, user)` whenever a peer node finishes or
/// fails, for the rest of the job. It runs on an arbitrary runtime thread
/// and must be short and thread-safe; it has no endpoint.
///
/// Context: any thread, after `tw_init`. Errors: `TW_ERR_INVALID` (NULL
/// callback), `TW_ERR_NO_ENDPOINT` before `tw_init`.
///
/// # Safety
///
/// `callback` is a valid function, callable from any thread with `user`.
#[no_mangle]
pub unsafe extern "C" fn tw_on_peer_lost(callback: tw_peer_lost_fn, user: *mut c_void) -> c_int {
    call(|| {
        let f = callback.ok_or_else(|| crate::error::Error::invalid("callback is NULL"))?;
        let user = SendPtr(user);
        context::node()?.on_peer_lost(move |lost| {
            let failed = c_int::from(matches!(lost.cause, tw::LossCause::Failed(_)));
            let _no_endpoint = context::InlineHandler::enter();
            // SAFETY: a C function of the documented type, with the user
            // pointer its registration gave.
            unsafe { f(lost.node, failed, user.get()) }
        });
        Ok(())
    })
}
