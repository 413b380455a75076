//! PVM's message mailbox (`pvm_putinfo`, `pvm_recvinfo`, `pvm_delinfo`,
//! `pvm_getmboxinfo`): named entries of PVM messages that any task can
//! read, kept on one of the job's founding nodes, as pvmd kept them.
//!
//! The calls fail without printing, whatever `PvmAutoErr` says, as
//! PVM's do (`rme` shows it: its refused `pvm_delinfo` prints nothing).
//!
//! # Protocol
//!
//! 1. A name's home is the founding node `FNV-1a(name) % founders` (a
//!    founding node ends last, `task` rule 4, so entries outlive the
//!    program at the command line). Every node serves the active message
//!    [`MAILBOX`], in a fiber, on its own store.
//! 2. A task sends its home a request — the operation, the name, an index,
//!    the flags, its tid, and for a put the message's bytes — and waits for
//!    the answer: a code (an index, or a PVM error), and for a read the
//!    entry's owner and bytes.
//! 3. A put may only replace an entry its owner made, or one made
//!    `PvmMboxOverWritable` (otherwise `PvmExists`, or `PvmDenied` for a
//!    direct index); likewise a delete and a read-and-delete. A
//!    multi-instance put takes the lowest free index; a direct index
//!    (`PvmMboxDirectIndex`) names one.
//! 4. A read with `PvmMboxWaitForInfo` that finds nothing leaves the
//!    reader's address with the name; the next put to the name sends each
//!    such reader an empty message tagged [`WAKE`], and the reader asks
//!    again.
//! 5. When a node leaves the job, its tasks' entries go, but those made
//!    `PvmMboxPersistent`, which stay with owner 0; a task's `pvm_exit`
//!    does the same for its own entries at the homes it put to.

use crate::buffer::Buffer;
use crate::consts::*;
use crate::task::{self, NOTIFY_TAG};
use crate::{call_quietly, text, tid};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, CString};
use std::sync::{Mutex, OnceLock};
use threadwire::{Address, Endpoint, Node, Packer, Payload, Unpacker};

/// The active message every node serves its mailbox store with.
pub const MAILBOX: &str = "threadwire.pvm.mailbox";
/// The tag of a waiting reader's wake-up (step 4).
pub const WAKE: u32 = NOTIFY_TAG | 0x7fff_ffff;

const PUT: u32 = 1;
const GET: u32 = 2;
const DELETE: u32 = 3;
const LIST: u32 = 4;
const RELEASE: u32 = 5;
/// A read that found nothing and left its reader waiting (step 4).
const WAITING: i32 = i32::MIN;

/// `struct pvmmboxinfo`.
#[repr(C)]
pub struct MailboxInfo {
    name: *const c_char,
    entries: c_int,
    indices: *const c_int,
    owners: *const c_int,
    flags: *const c_int,
}

/// A class as listed: its name, and its entries' indices, owners and flags.
type ClassRow = (String, Vec<i32>, Vec<i32>, Vec<i32>);

/// What `pvm_getmboxinfo` returned last, kept alive until its next call.
#[derive(Default)]
pub struct Listing {
    table: Vec<MailboxInfo>,
    names: Vec<CString>,
    columns: Vec<Vec<c_int>>,
}

struct Entry {
    owner: i32,
    flags: i32,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Class {
    entries: BTreeMap<i32, Entry>,
    waiting: Vec<Address>,
}

/// This node's store: the names homed here.
fn store() -> &'static Mutex<HashMap<String, Class>> {
    static STORE: OnceLock<Mutex<HashMap<String, Class>>> = OnceLock::new();
    STORE.get_or_init(Default::default)
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<String, Class>> {
    store().lock().unwrap_or_else(|e| e.into_inner())
}

/// Step 1: serves this node's store, and forgets the entries of nodes
/// that leave (step 5).
pub fn serve(node: &Node) {
    let _ = node.register_fiber(MAILBOX, |ep, am| {
        let answer = answer(ep, am.source(), am.take_payload());
        let _ = am.reply(answer);
    });
    node.on_peer_lost(|lost| {
        release(|owner| tid::address(owner).is_some_and(|a| a.node == lost.node))
    });
}

/// Step 5: drops the entries whose owner `gone` names, keeping the
/// persistent ones with owner 0.
fn release(gone: impl Fn(i32) -> bool) {
    let mut store = lock();
    for class in store.values_mut() {
        class
            .entries
            .retain(|_, e| !gone(e.owner) || e.flags & MBOX_PERSISTENT != 0);
        for e in class.entries.values_mut() {
            if gone(e.owner) {
                e.owner = 0;
            }
        }
    }
    store.retain(|_, c| !c.entries.is_empty() || !c.waiting.is_empty());
}

/// A request's fields (step 2).
struct Request {
    op: u32,
    name: String,
    index: i32,
    flags: i32,
    from: i32,
    bytes: Vec<u8>,
}

fn encode(r: &Request) -> Payload {
    let mut p = Packer::new(threadwire::Encoding::Portable);
    p.pack(r.op)
        .pack_str(&r.name)
        .pack(r.index)
        .pack(r.flags)
        .pack(r.from)
        .pack_bytes(&r.bytes);
    p.finish()
}

fn decode(payload: Payload) -> Option<Request> {
    let mut u = payload.unpack().ok()?;
    Some(Request {
        op: u.unpack().ok()?,
        name: u.unpack_string().ok()?,
        index: u.unpack().ok()?,
        flags: u.unpack().ok()?,
        from: u.unpack().ok()?,
        bytes: u.unpack_bytes().ok()?,
    })
}

/// The home's answer to a request (steps 2–4): a code, an owner and
/// bytes, then, for a listing, its classes.
fn answer(ep: &Endpoint, source: Address, request: Payload) -> Payload {
    let mut listing = Packer::new(threadwire::Encoding::Portable);
    let (code, owner, body) = match decode(request) {
        Some(r) => apply(ep, source, r, &mut listing),
        None => (PVM_BAD_MSG, 0, Vec::new()),
    };
    let mut p = Packer::new(threadwire::Encoding::Portable);
    p.pack(code).pack(owner).pack_bytes(&body);
    // The listing's items follow the answer's, in the same packed form.
    let mut answer = p.finish();
    answer.push_bytes(listing.finish().into_vec());
    answer
}

/// A put's direct index (`PvmMboxDirectIndex`), if it names one.
fn direct_index(flags: i32) -> Option<i32> {
    match (flags >> 10) & ((1 << 21) - 1) {
        0 => None,
        i => Some(i),
    }
}

fn apply(ep: &Endpoint, source: Address, r: Request, listing: &mut Packer) -> (i32, i32, Vec<u8>) {
    let mut store = lock();
    match r.op {
        PUT => {
            let class = store.entry(r.name).or_default();
            let multi = r.flags & MBOX_MULTI_INSTANCE != 0;
            let index = match direct_index(r.flags) {
                Some(i) => i,
                None if multi => (0..).find(|i| !class.entries.contains_key(i)).unwrap_or(0),
                None => 0,
            };
            if let Some(e) = class.entries.get(&index) {
                let may = e.owner == r.from || e.flags & MBOX_OVERWRITABLE != 0;
                match (may, direct_index(r.flags)) {
                    (true, _) => {}
                    (false, None) => return (PVM_EXISTS, 0, Vec::new()),
                    (false, Some(_)) => return (PVM_DENIED, 0, Vec::new()),
                }
            }
            let flags = r.flags & (MBOX_PERSISTENT | MBOX_MULTI_INSTANCE | MBOX_OVERWRITABLE);
            class.entries.insert(
                index,
                Entry {
                    owner: r.from,
                    flags,
                    bytes: r.bytes,
                },
            );
            // Step 4: whoever waits for this name asks again.
            for reader in class.waiting.drain(..) {
                let _ = ep.send(reader, WAKE, Vec::new());
            }
            (index, 0, Vec::new())
        }
        GET => {
            let Some(class) = store.get_mut(&r.name) else {
                return waiting_or_not_found(&mut store, r, source);
            };
            let found = match r.flags & MBOX_FIRST_AVAIL != 0 {
                true => class
                    .entries
                    .range(r.index.max(0)..)
                    .next()
                    .map(|(&i, _)| i),
                false => class.entries.contains_key(&r.index).then_some(r.index),
            };
            let Some(index) = found else {
                return waiting_or_not_found(&mut store, r, source);
            };
            let e = &class.entries[&index];
            if r.flags & MBOX_READ_AND_DELETE != 0 {
                if e.owner != r.from && e.flags & MBOX_OVERWRITABLE == 0 {
                    return (PVM_DENIED, 0, Vec::new());
                }
                let e = class.entries.remove(&index).expect("found above");
                return (index, e.owner, e.bytes);
            }
            (index, e.owner, e.bytes.clone())
        }
        DELETE => {
            let Some(class) = store.get_mut(&r.name) else {
                return (PVM_NOT_FOUND, 0, Vec::new());
            };
            match class.entries.get(&r.index) {
                None => (PVM_NOT_FOUND, 0, Vec::new()),
                Some(e) if e.owner != r.from && e.flags & MBOX_OVERWRITABLE == 0 => {
                    (PVM_DENIED, 0, Vec::new())
                }
                Some(_) => {
                    class.entries.remove(&r.index);
                    (0, 0, Vec::new())
                }
            }
        }
        LIST => {
            let p = listing;
            let classes: Vec<_> = store
                .iter()
                .filter(|(n, c)| !c.entries.is_empty() && glob(&r.name, n))
                .collect();
            p.pack(classes.len() as u32);
            for (name, class) in classes {
                p.pack_str(name);
                let column = |f: &dyn Fn(i32, &Entry) -> i32| -> Vec<i32> {
                    class.entries.iter().map(|(&i, e)| f(i, e)).collect()
                };
                p.pack_slice(&column(&|i, _| i));
                p.pack_slice(&column(&|_, e| e.owner));
                p.pack_slice(&column(&|_, e| e.flags));
            }
            (0, 0, Vec::new())
        }
        RELEASE => {
            drop(store);
            release(|owner| owner == r.from);
            (0, 0, Vec::new())
        }
        _ => (PVM_BAD_PARAM, 0, Vec::new()),
    }
}

fn waiting_or_not_found(
    store: &mut HashMap<String, Class>,
    r: Request,
    source: Address,
) -> (i32, i32, Vec<u8>) {
    if r.flags & MBOX_WAIT_FOR_INFO == 0 {
        return (PVM_NOT_FOUND, 0, Vec::new());
    }
    store.entry(r.name).or_default().waiting.push(source);
    (WAITING, 0, Vec::new())
}

/// Whether `name` matches the shell pattern `pattern` (`*` and `?`).
fn glob(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The founding node that is `name`'s home (step 1).
fn home(name: &str) -> u32 {
    threadwire::group::named::home_of(name, task::founders())
}

/// Step 2: sends `r` to `home` and returns its answer: code, owner,
/// bytes, and the rest (a listing's classes) to read.
fn ask(t: &mut task::Task, home: u32, r: &Request) -> Result<(i32, i32, Vec<u8>, Unpacker), i32> {
    let handler = t.node().handler(MAILBOX).map_err(|_| PVM_SYS_ERR)?;
    let reply =
        t.ep.am_request(home, &handler, encode(r))
            .wait()
            .map_err(|_| PVM_SYS_ERR)?;
    let mut u = reply.unpack().map_err(|_| PVM_SYS_ERR)?;
    let code = u.unpack::<i32>().map_err(|_| PVM_SYS_ERR)?;
    let owner = u.unpack::<i32>().map_err(|_| PVM_SYS_ERR)?;
    let bytes = u.unpack_bytes().map_err(|_| PVM_SYS_ERR)?;
    Ok((code, owner, bytes, u))
}

/// Step 5 at `pvm_exit`: the task's entries go from the homes it put to.
pub fn release_own(t: &mut task::Task) {
    let homes: Vec<u32> = t.mailbox_homes.drain().collect();
    for home in homes {
        let r = Request {
            op: RELEASE,
            name: String::new(),
            index: 0,
            flags: 0,
            from: t.tid,
            bytes: Vec::new(),
        };
        let _ = ask(t, home, &r);
    }
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_putinfo(name: *const c_char, buf: c_int, flags: c_int) -> c_int {
    call_quietly("pvm_putinfo", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { text(name) }?.to_string();
        task::with(|t| {
            let ctx = t.ctx;
            let bytes = t.buffer(buf)?.encode(ctx);
            let home = home(&name);
            let r = Request {
                op: PUT,
                name,
                index: 0,
                flags,
                from: t.tid,
                bytes,
            };
            let (code, ..) = ask(t, home, &r)?;
            if code >= 0 {
                t.mailbox_homes.insert(home);
            }
            match code < 0 {
                true => Err(code),
                false => Ok(code),
            }
        })
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_recvinfo(name: *const c_char, index: c_int, flags: c_int) -> c_int {
    call_quietly("pvm_recvinfo", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { text(name) }?.to_string();
        if index < 0 {
            return Err(PVM_BAD_PARAM);
        }
        let home = home(&name);
        loop {
            let found = task::with(|t| {
                let r = Request {
                    op: GET,
                    name: name.clone(),
                    index,
                    flags,
                    from: t.tid,
                    bytes: Vec::new(),
                };
                let (code, owner, bytes, _) = ask(t, home, &r)?;
                match code {
                    WAITING => {
                        // Step 4: until a put to the name wakes us.
                        t.ep.recv(threadwire::ANY_SOURCE, WAKE)
                            .map_err(|_| PVM_SYS_ERR)?;
                        Ok(None)
                    }
                    c if c < 0 => Err(c),
                    _ => {
                        let mut b = Buffer::decode(bytes, owner, 0);
                        b.src = owner;
                        let id = t.insert(b);
                        t.make_rbuf(id);
                        Ok(Some(id))
                    }
                }
            })?;
            if let Some(id) = found {
                return Ok(id);
            }
        }
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_delinfo(name: *const c_char, index: c_int, _flags: c_int) -> c_int {
    call_quietly("pvm_delinfo", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { text(name) }?.to_string();
        if index < 0 {
            return Err(PVM_BAD_PARAM);
        }
        let home = home(&name);
        task::with(|t| {
            let r = Request {
                op: DELETE,
                name,
                index,
                flags: 0,
                from: t.tid,
                bytes: Vec::new(),
            };
            match ask(t, home, &r)?.0 {
                c if c < 0 => Err(c),
                _ => Ok(0),
            }
        })
    })
}

/// # Safety
///
/// `pattern` is a string; the out-pointers are NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvm_getmboxinfo(
    pattern: *const c_char,
    count: *mut c_int,
    classes: *mut *const MailboxInfo,
) -> c_int {
    call_quietly("pvm_getmboxinfo", || {
        // SAFETY: the caller vouches for the string.
        let pattern = unsafe { text(pattern) }?.to_string();
        let founders = 0..task::founders();
        task::with(|t| {
            let mut listing = Listing::default();
            let mut rows: Vec<ClassRow> = Vec::new();
            for node in founders {
                let r = Request {
                    op: LIST,
                    name: pattern.clone(),
                    index: 0,
                    flags: 0,
                    from: t.tid,
                    bytes: Vec::new(),
                };
                let (.., mut u) = ask(t, node, &r)?;
                let n = u.unpack::<u32>().map_err(|_| PVM_SYS_ERR)?;
                for _ in 0..n {
                    let name = u.unpack_string().map_err(|_| PVM_SYS_ERR)?;
                    let indices = u.unpack_vec::<i32>().map_err(|_| PVM_SYS_ERR)?;
                    let owners = u.unpack_vec::<i32>().map_err(|_| PVM_SYS_ERR)?;
                    let flags = u.unpack_vec::<i32>().map_err(|_| PVM_SYS_ERR)?;
                    rows.push((name, indices, owners, flags));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, indices, owners, flags) in rows {
                listing.names.push(CString::new(name).unwrap_or_default());
                listing.columns.extend([indices, owners, flags]);
            }
            for (i, name) in listing.names.iter().enumerate() {
                let c = &listing.columns[i * 3..i * 3 + 3];
                listing.table.push(MailboxInfo {
                    name: name.as_ptr(),
                    entries: c[0].len() as c_int,
                    indices: c[0].as_ptr(),
                    owners: c[1].as_ptr(),
                    flags: c[2].as_ptr(),
                });
            }
            t.kept_mailbox = listing;
            // SAFETY: the caller vouches for the out-pointers; the table
            // stays in the task until its next `pvm_getmboxinfo`.
            unsafe {
                crate::put(count, t.kept_mailbox.table.len() as c_int);
                crate::put(classes, t.kept_mailbox.table.as_ptr());
            }
            Ok(0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_the_shell_does() {
        assert!(glob("*", "anything"));
        assert!(glob("task?_*", "task0_service"));
        assert!(!glob("task?_*", "task10_service"));
        assert!(glob("", ""));
        assert!(!glob("a", ""));
    }

    #[test]
    fn requests_round_trip_and_garbage_is_refused() {
        let r = Request {
            op: PUT,
            name: "svc".into(),
            index: 3,
            flags: 9,
            from: 0x40001,
            bytes: vec![1, 2],
        };
        let d = decode(encode(&r)).unwrap();
        assert_eq!(
            (d.op, d.name.as_str(), d.index, d.flags, d.from, d.bytes),
            (PUT, "svc", 3, 9, 0x40001, vec![1, 2])
        );
        assert!(decode(Payload::from_vec(vec![0xff; 7])).is_none());
        assert_eq!(direct_index(5 << 10), Some(5));
        assert_eq!(direct_index(MBOX_OVERWRITABLE), None);
    }
}
