//! Tasks as threads (the thesis' thread-based PVM): a program exports
//! entry points by name (`threadwire_pvm_export`, `include/threadwire_pvm.h`),
//! and `pvm_spawn` of such a name starts threads instead of processes.
//!
//! 1. An export is kept in this process's list and exported on the node
//!    as a threadwire entry point (`Node::export`) as soon as the node
//!    exists: at once, or when the process's first task starts it.
//! 2. `pvm_spawn` of an exported name starts each task with
//!    `Endpoint::spawn_remote_os` on the spawner's node: an OS thread,
//!    since a C entry point may block in the kernel. The arguments travel
//!    with the spawner's tid and the argument strings.
//! 3. The new thread's endpoint becomes its task (`task::adopt`), whose
//!    parent is the spawner; it runs `entry(argc, argv)` with `argv[0]`
//!    the name, and the task ends when the entry returns.

use crate::consts::*;
use crate::task::{self, Task};
use crate::{call, text, tid};
use std::ffi::{c_char, c_int, CString};
use std::sync::Mutex;
use threadwire::{Encoding, Endpoint, Node, Packer, Payload};

/// A C entry point: `void entry(int argc, char **argv)`.
type Entry = unsafe extern "C" fn(c_int, *mut *mut c_char);

/// Step 1: the exported names of this process.
static EXPORTS: Mutex<Vec<(String, Entry)>> = Mutex::new(Vec::new());

fn exports() -> std::sync::MutexGuard<'static, Vec<(String, Entry)>> {
    EXPORTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Step 1, when the node starts: exports every name kept so far.
pub fn export_all(node: &Node) {
    for (name, entry) in exports().iter() {
        let _ = export_on(node, name, *entry);
    }
}

fn export_on(node: &Node, name: &str, entry: Entry) -> Result<(), c_int> {
    let name_kept = name.to_string();
    node.export(name, move |ep: &Endpoint, args: Payload| {
        run(ep, args, &name_kept, entry);
        Vec::new()
    })
    .map_err(|_| PVM_EXISTS)
}

/// Whether `name` is an exported entry point of this process.
pub fn is_exported(name: &str) -> bool {
    exports().iter().any(|(n, _)| n == name)
}

/// Step 2: starts `count` threads running `name`; their tids.
pub fn spawn(t: &Task, name: &str, args: &[String], count: u32) -> Result<Vec<c_int>, c_int> {
    let packed = || {
        let mut p = Packer::new(Encoding::Portable);
        p.pack(t.tid).pack(args.len() as u32);
        for a in args {
            p.pack_str(a);
        }
        p.finish()
    };
    let node = t.ep.address().node;
    (0..count)
        .map(|_| {
            let handle =
                t.ep.spawn_remote_os(node, name, packed())
                    .map_err(|_| PVM_OUT_OF_RES)?;
            tid::of(handle.address()).ok_or(PVM_OUT_OF_RES)
        })
        .collect()
}

/// Step 3, on the new thread.
fn run(ep: &Endpoint, args: Payload, name: &str, entry: Entry) {
    let mut words = Vec::new();
    let mut parent = PVM_NO_PARENT;
    if let Ok(mut u) = args.unpack() {
        parent = u.unpack::<i32>().unwrap_or(PVM_NO_PARENT);
        let n = u.unpack::<u32>().unwrap_or(0);
        for _ in 0..n {
            match u.unpack_string() {
                Ok(s) => words.push(s),
                Err(_) => break,
            }
        }
    }
    if task::adopt(ep.handle(), parent).is_err() {
        return;
    }
    let strings: Vec<CString> = std::iter::once(name.to_string())
        .chain(words)
        .map(|s| CString::new(s).unwrap_or_default())
        .collect();
    let mut argv: Vec<*mut c_char> = strings.iter().map(|s| s.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: the program exported `entry` with this signature; argv holds
    // argc strings and a NULL, alive until it returns.
    unsafe { entry(strings.len() as c_int, argv.as_mut_ptr()) };
    task::exit();
}

/// # Safety
///
/// `name` is a string; `entry` is a function of the declared signature.
#[no_mangle]
pub unsafe extern "C" fn threadwire_pvm_export(name: *const c_char, entry: Option<Entry>) -> c_int {
    call("threadwire_pvm_export", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { text(name) }?;
        let entry = entry.ok_or(PVM_BAD_PARAM)?;
        let mut list = exports();
        if list.iter().any(|(n, _)| n == name) {
            return Err(PVM_EXISTS);
        }
        list.push((name.to_string(), entry));
        drop(list);
        if let Some(node) = task::node() {
            export_on(&node, name, entry)?;
        }
        Ok(0)
    })
}
