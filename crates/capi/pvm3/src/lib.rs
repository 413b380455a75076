//! threadwire's `libpvm3.so.3`: PVM 3.4's C library on threadwire, so that
//! PVM programs — sources or binaries — run unchanged, with no daemon in
//! the path.
//!
//! ```sh
//! cargo build --release -p threadwire-pvm3 -p threadwire-gpvm3 -p threadwire-cli
//! target/release/threadwire pvm -- /usr/bin/hello.pvm
//! ```
//!
//! `threadwire pvm` starts the program as node 0 of a job with this
//! library first on `LD_LIBRARY_PATH` under PVM's sonames; the program's
//! own `libpvm3.so.3` is never loaded. What maps onto what:
//!
//! | PVM | threadwire |
//! |---|---|
//! | a task | a thread endpoint: each OS thread that calls PVM is a task of its own ([`task`], rule 1) |
//! | a tid | an address `(node, thread)` ([`tid`]) |
//! | `pvm_spawn` of a program | new nodes joining the running job ([`spawn`]) |
//! | a message | one threadwire message, PVM's tag, context and packed body inside ([`buffer`]) |
//! | `pvm_recv` and friends | the task's mailbox, matched here by source, tag and context ([`task`]) |
//! | the virtual machine's hosts | the job's host table (`threadwire vm`) |
//! | `pvm_notify` | threadwire's notifications |
//! | the group library | threadwire's named groups, with no group server |
//!
//! Every call catches panics (a bug of ours returns `PvmSysErr`, never
//! unwinds into C), sets `pvm_errno`, and, as PVM does by default
//! (`PvmAutoErr`), prints a failed call's error on stderr. docs/PVM.md
//! lists the calls, the examples that run, and where semantics differ.

#![allow(clippy::missing_safety_doc)]

mod buffer;
mod consts;
mod groups;
mod machine;
mod mailbox;
mod messages;
mod packf;
mod spawn;
mod task;
mod threads;
mod tid;

use consts::*;
use std::ffi::{c_char, c_int, CStr};
use std::panic::AssertUnwindSafe;

/// PVM's global error number: the code of the last failed call.
#[no_mangle]
pub static mut pvm_errno: c_int = 0;

/// Runs one PVM call named `name`: its value, or its error code after
/// setting `pvm_errno` and, with `PvmAutoErr` on, printing the error as
/// PVM does (`libpvm [t40001]: pvm_send(): Bad parameter`).
fn call(name: &str, f: impl FnOnce() -> Result<i32, i32>) -> i32 {
    call_as(name, true, f)
}

/// [`call`] for a call whose failure PVM returns without printing
/// (`pvm_parent`'s `PvmNoParent`), whatever `PvmAutoErr` says.
fn call_quietly(name: &str, f: impl FnOnce() -> Result<i32, i32>) -> i32 {
    call_as(name, false, f)
}

fn call_as(name: &str, prints: bool, f: impl FnOnce() -> Result<i32, i32>) -> i32 {
    let result = std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        eprintln!("libpvm (threadwire): {name}() failed inside the library; it returns PvmSysErr");
        Err(PVM_SYS_ERR)
    });
    match result {
        Ok(v) => v,
        Err(code) => {
            // SAFETY: a plain store to PVM's global, which PVM programs
            // read without synchronization as they always have.
            unsafe { *std::ptr::addr_of_mut!(pvm_errno) = code };
            if prints && auto_err() {
                report(name, error_text(code));
            }
            code
        }
    }
}

/// Whether failed calls print their error (`PvmAutoErr`).
fn auto_err() -> bool {
    !task::enrolled() || task::with(|t| Ok(t.option(OPT_AUTO_ERR) != 0)).unwrap_or(true)
}

/// Prints `libpvm [tTID]: NAME(): TEXT`, as PVM's `lpvmerr` does.
fn report(name: &str, text: &str) {
    let who = match task::enrolled() {
        true => task::with(|t| Ok(format!("t{:x}", t.tid))).unwrap_or_default(),
        false => format!("pid{}", std::process::id()),
    };
    eprintln!("libpvm [{who}]: {name}(): {text}");
}

/// A C string argument, or `PvmBadParam` for NULL or bytes that are not
/// text.
///
/// # Safety
///
/// `s` is NULL or points to a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char) -> Result<&'a str, i32> {
    if s.is_null() {
        return Err(PVM_BAD_PARAM);
    }
    // SAFETY: the caller vouches for a NUL-terminated string.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| PVM_BAD_PARAM)
}

/// Stores `value` where `out` points, if it is not NULL.
///
/// # Safety
///
/// `out` is NULL or valid for a write.
unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: the caller vouches for `out`.
        unsafe { out.write(value) };
    }
}

/// A call this library does not provide: it says so, naming the call,
/// and returns `PvmNotImpl`, never a silent wrong answer.
fn not_implemented(name: &str) -> i32 {
    call(name, || {
        eprintln!(
            "libpvm (threadwire): {name}() is not implemented by threadwire's libpvm3 (docs/PVM.md)"
        );
        Err(PVM_NOT_IMPL)
    })
}
