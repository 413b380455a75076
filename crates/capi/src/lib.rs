//! threadwire's C API: `libthreadwire.so` and `include/threadwire.h`.
//!
//! ```c
//! #include <stdio.h>
//! #include <threadwire.h>
//!
//! int main(void) {
//!     if (tw_init(0) != TW_SUCCESS) {
//!         fprintf(stderr, "tw_init: %s\n", tw_last_error());
//!         return 1;
//!     }
//!     uint32_t me, n;
//!     tw_node_id(&me);
//!     tw_node_count(&n);
//!     tw_address next = {(me + 1) % n, 0};
//!     tw_address prev = {(me + n - 1) % n, 0};
//!     int token = me == 0 ? 42 : 0;
//!     if (me == 0) tw_send(next, 1, &token, sizeof token);
//!     tw_recv(prev, 1, &token, sizeof token, NULL);
//!     if (me != 0) tw_send(next, 1, &token, sizeof token);
//!     tw_finalize();
//!     return 0;
//! }
//! ```
//!
//! Built with `cc -I crates/capi/include ring.c -L target/release
//! -lthreadwire` and run with `threadwire run -n 4 -- ./ring` (with
//! `LD_LIBRARY_PATH=target/release`, or an rpath); docs/CAPI.md has more.
//!
//! # How it maps onto the Rust API
//!
//! | C | Rust |
//! |---|---|
//! | `tw_init` / `tw_finalize` | [`threadwire::init`](tw::init) (the endpoint kept for the thread) / dropping thread 0's endpoint |
//! | `tw_address`, `TW_ANY`, `TW_ANY_TAG` | `Address`; `Source::{Thread, Node, Any}`, `TagMatch::Any` |
//! | `tw_fiber_spawn`, `tw_os_thread_spawn`, `tw_thread_join` | `Node::try_spawn`, `Node::try_spawn_os`, `ThreadHandle::join` |
//! | `tw_thread_attach` / `tw_thread_detach` | `Node::endpoint` / dropping it |
//! | `tw_send`, `tw_recv`, `tw_recv_message` | `Endpoint::send`, `recv_into`, `recv` |
//! | `tw_isend`, `tw_irecv`, `tw_wait`, `tw_test`, `tw_request_free` | `isend`, `irecv`, `Request::wait`, `test`, drop |
//! | `tw_probe`, `tw_iprobe` | `probe`, `iprobe` |
//! | `tw_packer_*`, `tw_pack_*`, `tw_send_packed` | `Packer` (`Encoding::{Portable, Raw, ReceiverMakesRight}`) |
//! | `tw_unpacker_*`, `tw_unpack_*` | `Unpacker` |
//! | `tw_group_*` | `Group::{world, world_threads, new, split, dup, rank, size, address}` |
//! | `tw_barrier`, `tw_bcast`, `tw_allreduce`, `tw_reduce`, `tw_allgather`, `tw_gather`, `tw_scatter` | the `Group` collectives of the same names, `TW_SUM`… = `Op` |
//! | `tw_am_register`, `tw_am_handler` | `Node::register_inline` / `register_fiber`, `Node::handler` |
//! | `tw_am_send`, `tw_am_request`, `tw_am_check`, `tw_am_reply` | `Endpoint::am_send`, `am_request`, `am_check`, `ActiveMessage::reply` |
//! | `tw_notify`, `tw_on_peer_lost` | `Endpoint::notify` (detached), `Node::on_peer_lost` |
//! | `tw_export`, `tw_spawn_remote`, `tw_remote_join` | `Node::export`, `Endpoint::spawn_remote`, `RemoteHandle::join` (the `int` result as 4 bytes) |
//! | `tw_dsm_init`, `tw_dsm_malloc`, `tw_dsm_barrier`, `tw_dsm_lock` / `tw_dsm_unlock`, `tw_dsm_stats` | `threadwire_dsm`: `Dsm::new` (kept for the process), `alloc_homed` (`TW_DSM_ROUND_ROBIN`… = `Homes`), `barrier`, `lock` (the `LockGuard` kept for the caller until unlock), `stats`; `include/parmacs.h` has the PARMACS macros over them |
//!
//! Where the Rust API takes or gives owned buffers, the C API copies from
//! or into the caller's memory: `tw_isend` and `tw_am_send` copy the bytes
//! before returning; `tw_irecv` and `tw_am_request` write the caller's
//! buffer when the request completes. Messages that should not be copied
//! come back as a `tw_message` the library owns.
//!
//! # Errors
//!
//! Every function (but `tw_strerror` and `tw_last_error`) returns an
//! `int`: `TW_SUCCESS` (0) or a negative `TwError`,
//! each documented in the header; `tw_strerror(code)` names it and
//! `tw_last_error()` says what failed, for the calling thread (or fiber).
//! No Rust panic crosses into C: every exported body runs in
//! `catch_unwind`, and a panic is `TW_ERR_PANIC` (`tw_debug_panic` checks
//! it). NULL pointers, lengths that do not fit, misaligned buffers,
//! unknown datatypes, operations and kinds are `TW_ERR_INVALID`, never
//! undefined behaviour. A C handler that returns non-zero fails as a
//! panicking Rust handler does: the requester gets
//! `TW_ERR_HANDLER_FAILED`, and the node runs on.
//!
//! # Ownership
//!
//! 1. Handles (`tw_thread`, `tw_message`, `tw_request`, `tw_packer`,
//!    `tw_unpacker`, `tw_group`, `tw_handler`, `tw_remote`) are boxed Rust
//!    objects.
//!    The caller owns each from the call that makes it until the call that
//!    takes it: its `*_free`, or `tw_thread_join`, `tw_remote_join`, `tw_wait`, a completing
//!    `tw_test`, `tw_send_packed`, `tw_unpacker_new` (which takes the
//!    message). Those take a pointer to the handle and set it to NULL; a
//!    `*_free` of a NULL handle does nothing.
//! 2. Memory passed in (`data`, `buf`, lists, strings) stays the
//!    caller's; the library reads or writes it during the call only, but
//!    for the buffers of `tw_irecv` and `tw_am_request`, written at
//!    completion.
//! 3. Memory given out (`tw_message_data`, `tw_am_data`, `tw_strerror`,
//!    `tw_last_error`) stays the library's, valid as each function says.
//! 4. A handle freed twice, or used after it was freed, cannot be checked:
//!    that is the caller's to avoid.
//! 5. Shared memory from `tw_dsm_malloc` is the job's: never freed, valid
//!    until the process exits; a lock from `tw_dsm_lock` is the caller's
//!    (thread or fiber) until its `tw_dsm_unlock`, or until it ends.
//!
//! # Threads
//!
//! 1. Calls act for the calling thread's endpoint: thread 0 after
//!    `tw_init`, a spawned fiber or OS thread in its body, a fiber handler
//!    during its call, a C thread between `tw_thread_attach` and
//!    `tw_thread_detach`. Other threads get `TW_ERR_NO_ENDPOINT` from
//!    calls that need one; `tw_node_id`, `tw_node_count`, spawning and
//!    registering need only `tw_init`.
//! 2. Fibers share their worker's OS thread: the library tells them apart
//!    (`context.rs`), so each has its own endpoint and last error.
//! 3. Groups and requests belong to the thread (or fiber) that made them;
//!    another gets `TW_ERR_WRONG_THREAD`. Packers, unpackers, messages
//!    and handler handles may move between threads, one user at a time.
//! 4. Inline handlers and `tw_on_peer_lost` callbacks run on whichever
//!    thread drives progress and have no endpoint.
//! 5. A fiber that blocks in the kernel (`sleep`, `read`) holds up the
//!    other fibers of its worker: such code belongs on an OS thread.
//! 6. C functions the library calls (thread bodies, handlers, entry
//!    points, callbacks) must return normally: a `longjmp` or a C++
//!    exception out of one would cross Rust frames, which is undefined.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod am;
mod context;
mod dsm;
mod error;
mod group;
mod notify;
mod p2p;
mod pack;
mod remote_spawn;
mod request;
mod startup;
mod types;
