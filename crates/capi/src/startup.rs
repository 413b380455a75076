//! Joining and leaving the job, who the caller is, and threads of its own:
//! spawned fibers and OS threads, and C threads made endpoints.

use crate::context::{self, Scope};
use crate::error::{call, Error, TwError};
use crate::types::{handle, take_handle, tw_address, write_opt, write_out};
use std::ffi::{c_int, c_void};

/// With `tw_init`: run as a one-node job when not started by a launcher.
pub const TW_INIT_STANDALONE: u32 = 1;

/// Joins the job this process was started into by `threadwire run`: the
/// calling OS thread becomes thread 0 of this node (`n<node>.t0`). Call it
/// once per process, before any other call but `tw_strerror` and
/// `tw_last_error`.
///
/// `flags`: 0, or `TW_INIT_STANDALONE` to run as a one-node job when the
/// program was not started by a launcher. The runtime's warnings go to
/// stderr, filtered by `THREADWIRE_LOG` (default `warn`).
///
/// Context: the main thread, once. Errors: `TW_ERR_INIT` (not started by
/// `threadwire run`, the launcher unreachable, or called again after
/// `tw_finalize`), `TW_ERR_ALREADY`, `TW_ERR_INVALID` (unknown flags).
#[no_mangle]
pub extern "C" fn tw_init(flags: u32) -> c_int {
    call(|| {
        if flags & !TW_INIT_STANDALONE != 0 {
            return Err(Error::invalid(format!("unknown tw_init flags {flags:#x}")));
        }
        if context::node().is_ok() {
            return Err(Error::new(
                TwError::TW_ERR_ALREADY,
                "tw_init was called already",
            ));
        }
        // A C program has no log subscriber of its own: the runtime's
        // warnings and a node's fatal errors (a home lost by the shared
        // memory) go to stderr, filtered by THREADWIRE_LOG.
        let ep = tw::Config::new()
            .standalone(flags & TW_INIT_STANDALONE != 0)
            .log(true)
            .init()?;
        context::set_node(Some(ep.node().clone()));
        context::bind_owned(ep);
        Ok(())
    })
}

/// Leaves the job in order: flushes what is queued, says goodbye to every
/// peer and waits for theirs. Calls after it fail with
/// `TW_ERR_FINALIZED` or `TW_ERR_NO_ENDPOINT`. Free groups and requests
/// first; join the threads you spawned first. With the shared memory set
/// up (`tw_dsm_init`), it first waits until thread 0 of every node has
/// called it: a node that said goodbye can no longer serve the units it
/// homes.
///
/// Context: the thread that called `tw_init`. Errors:
/// `TW_ERR_WRONG_THREAD` from another thread, `TW_ERR_NO_ENDPOINT`
/// before `tw_init`.
#[no_mangle]
pub extern "C" fn tw_finalize() -> c_int {
    call(|| {
        let is_thread_zero = context::with_endpoint(|ep| Ok(ep.address().thread == 0))?;
        if !is_thread_zero {
            return Err(Error::new(
                TwError::TW_ERR_WRONG_THREAD,
                "tw_finalize is for the thread that called tw_init",
            ));
        }
        context::with_endpoint(|ep| {
            crate::dsm::meet_before_leaving(ep);
            Ok(())
        })?;
        let ep = context::take_owned().expect("thread 0's endpoint is owned");
        context::set_node(None);
        // Finalizes the node, unless a call of this thread still holds it.
        drop(ep);
        Ok(())
    })
}

/// This node's number (0..node count) into `*node`.
///
/// Context: any thread, after `tw_init`. Errors: `TW_ERR_INVALID` (NULL),
/// `TW_ERR_NO_ENDPOINT` before `tw_init`.
///
/// # Safety
///
/// `node` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_node_id(node: *mut u32) -> c_int {
    call(|| {
        let id = context::node()?.id();
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(node, "node", id) }
    })
}

/// The number of nodes in the job into `*count`.
///
/// Context: any thread, after `tw_init`. Errors: as `tw_node_id`.
///
/// # Safety
///
/// `count` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_node_count(count: *mut u32) -> c_int {
    call(|| {
        let n = context::node()?.nodes();
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(count, "count", n) }
    })
}

/// The calling thread's address into `*self_address`.
///
/// Context: a thread with an endpoint. Errors: `TW_ERR_INVALID` (NULL),
/// `TW_ERR_NO_ENDPOINT`.
///
/// # Safety
///
/// `self_address` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_self(self_address: *mut tw_address) -> c_int {
    call(|| {
        let me = context::with_endpoint(|ep| Ok(ep.address()))?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(self_address, "self_address", me.into()) }
    })
}

/// Makes the calling OS thread — one the program started itself, e.g.
/// with `pthread_create` — an endpoint with the next thread number of
/// this node, written to `*address` unless it is NULL. Undo with
/// `tw_thread_detach` before the thread ends.
///
/// Context: an OS thread without an endpoint (not a fiber), after
/// `tw_init`. Errors: `TW_ERR_ALREADY` (an endpoint already),
/// `TW_ERR_NO_ENDPOINT` before `tw_init`, `TW_ERR_INVALID` from a fiber.
///
/// # Safety
///
/// `address` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_thread_attach(address: *mut tw_address) -> c_int {
    call(|| {
        if tw::fiber::in_fiber() {
            return Err(Error::invalid(
                "fibers have their endpoint from their spawn",
            ));
        }
        if context::has_endpoint() {
            return Err(Error::new(
                TwError::TW_ERR_ALREADY,
                "this thread is an endpoint already",
            ));
        }
        let ep = context::node()?.endpoint()?;
        let me = ep.address();
        context::bind_owned(ep);
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_opt(address, me.into()) };
        Ok(())
    })
}

/// Ends the endpoint `tw_thread_attach` gave the calling thread; its
/// unreceived messages are dropped.
///
/// Context: a thread attached with `tw_thread_attach`. Errors:
/// `TW_ERR_NO_ENDPOINT` (not attached), `TW_ERR_WRONG_THREAD` from thread
/// 0 (use `tw_finalize`).
#[no_mangle]
pub extern "C" fn tw_thread_detach() -> c_int {
    call(|| {
        let thread = context::with_endpoint(|ep| Ok(ep.address().thread))?;
        if thread == 0 {
            return Err(Error::new(
                TwError::TW_ERR_WRONG_THREAD,
                "thread 0 leaves with tw_finalize",
            ));
        }
        match context::take_owned() {
            Some(ep) => {
                drop(ep);
                Ok(())
            }
            None => Err(Error::new(
                TwError::TW_ERR_NO_ENDPOINT,
                "this thread was not attached with tw_thread_attach",
            )),
        }
    })
}

/// The body of a spawned thread: returns its result, which `tw_thread_join`
/// gives back.
#[allow(non_camel_case_types)]
pub type tw_thread_fn = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_int>;

/// A spawned fiber or OS thread, until joined.
#[allow(non_camel_case_types)]
pub struct tw_thread {
    handle: tw::ThreadHandle<c_int>,
}

/// A C pointer handed to another thread, as the C caller allows.
pub(crate) struct SendPtr(pub(crate) *mut c_void);

impl SendPtr {
    /// The pointer (a method, so that closures capture the whole `SendPtr`).
    pub(crate) fn get(&self) -> *mut c_void {
        self.0
    }
}

// SAFETY: the C caller hands the pointer to another thread knowingly (the
// spawn's and the handlers' docs say where it is used).
unsafe impl Send for SendPtr {}
// SAFETY: as above; the library only passes it on.
unsafe impl Sync for SendPtr {}

fn spawn(
    body: tw_thread_fn,
    arg: *mut c_void,
    out: *mut *mut tw_thread,
    os_thread: bool,
) -> crate::error::Result<()> {
    let body = body.ok_or_else(|| Error::invalid("body is NULL"))?;
    crate::types::non_null(out, "thread")?;
    let node = context::node()?;
    let arg = SendPtr(arg);
    let run = move |ep: tw::Endpoint| {
        let scope = Scope::bind(&ep);
        // SAFETY: a C function of the documented type, called with the
        // argument its spawner gave for it.
        let result = unsafe { body(arg.get()) };
        drop(scope);
        result
    };
    let handle = match os_thread {
        true => node.try_spawn_os(run)?,
        false => node.try_spawn(run)?,
    };
    let thread = Box::into_raw(Box::new(tw_thread { handle }));
    // SAFETY: checked non-NULL above; valid as the caller promises.
    unsafe { out.write(thread) };
    Ok(())
}

/// Starts a fiber of this node running `body(arg)` with an endpoint of its
/// own (the next thread number); `*thread` is its handle, for
/// `tw_thread_join`. Fibers are cheap (thousands per node). A fiber that
/// waits in a threadwire call parks only itself; one that blocks in the
/// kernel (`sleep`, blocking I/O) holds up its worker: use
/// `tw_os_thread_spawn` for such code. `arg` is used on another thread.
///
/// Context: any thread, after `tw_init`. Errors: `TW_ERR_INVALID` (NULL
/// `body` or `thread`), `TW_ERR_SPAWN`, `TW_ERR_NO_ENDPOINT` before
/// `tw_init`.
///
/// # Safety
///
/// `body` is a valid function; `thread` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_fiber_spawn(
    body: tw_thread_fn,
    arg: *mut c_void,
    thread: *mut *mut tw_thread,
) -> c_int {
    call(|| spawn(body, arg, thread, false))
}

/// As `tw_fiber_spawn`, on an OS thread of its own: for code that blocks
/// in the kernel.
///
/// # Safety
///
/// As `tw_fiber_spawn`.
#[no_mangle]
pub unsafe extern "C" fn tw_os_thread_spawn(
    body: tw_thread_fn,
    arg: *mut c_void,
    thread: *mut *mut tw_thread,
) -> c_int {
    call(|| spawn(body, arg, thread, true))
}

/// The address of a spawned thread into `*address`.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `thread` is NULL or a live handle from a spawn; `address` is NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_thread_address(
    thread: *mut tw_thread,
    address: *mut tw_address,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let t = unsafe { handle(thread, "thread") }?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(address, "address", t.handle.address().into()) }
    })
}

/// Waits for a spawned thread to end, frees its handle (`*thread` becomes
/// NULL) and writes what its body returned to `*result` unless `result`
/// is NULL. A NULL `*thread` is an error.
///
/// Context: any thread or fiber (a fiber waiting parks only itself).
/// Errors: `TW_ERR_INVALID` (NULL), `TW_ERR_PANIC` if the thread panicked
/// in the library.
///
/// # Safety
///
/// `thread` is NULL or points to NULL or a live handle from a spawn;
/// `result` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_thread_join(thread: *mut *mut tw_thread, result: *mut c_int) -> c_int {
    call(|| {
        // SAFETY: as the caller promises.
        let t = unsafe { take_handle(thread, "thread") }?
            .ok_or_else(|| Error::invalid("*thread is NULL"))?;
        let r = t.handle.join()?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_opt(result, r) };
        Ok(())
    })
}
