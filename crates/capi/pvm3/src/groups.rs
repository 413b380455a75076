//! PVM's group library on threadwire's named groups, with no group server.
//!
//! As PVM's group library does, its calls fail without printing, whatever
//! `PvmAutoErr` says: they set `pvm_errno` and return the code.
//!
//! Membership (`pvm_joingroup`, `pvm_lvgroup`, `pvm_gsize`, `pvm_getinst`,
//! `pvm_gettid`) is threadwire's: each name lives on a node chosen by
//! hashing it, replicated on the next (`threadwire::group::named`). The
//! operations that move data are messages between the members, in a
//! context of their own (`GROUP_CONTEXT`), so they never match a
//! program's receives:
//!
//! 1. `pvm_barrier(group, count)`: each caller sends *arrived* to the
//!    member holding instance 0, the coordinator; the coordinator, once it
//!    has called too and `count` have arrived (`-1`: the group's size),
//!    sends *go* to each. So instance 0 must be among the callers.
//! 2. `pvm_freezegroup(group, size)`: a barrier of `size`, after which
//!    every caller keeps the members' tids and serves the group's lookups
//!    from them, as PVM's members cache a static group.
//! 3. `pvm_bcast(group, tag)`: the active send buffer to every member but
//!    the caller, in the caller's context, one `pvm_mcast`.
//! 4. `pvm_reduce`, `pvm_gather`: every member but the root sends its
//!    items, tagged with the call's `msgtag`, to the root, which combines
//!    them with the function (for reduce) or places them by instance (for
//!    gather). `pvm_scatter`: the root sends each member its slice.

use crate::buffer::{Buffer, Kind};
use crate::consts::*;
use crate::messages::{receive_in, send_error};
use crate::task::{self, Wait};
use crate::{call_quietly, put, text, tid};
use std::ffi::{c_char, c_int, c_void};
use threadwire::GroupError;

/// The context of the group library's own messages.
const GROUP_CONTEXT: c_int = i32::MIN + 0x4750;
/// Tags of the barrier's messages, mixed with the group's name.
const ARRIVED: u32 = 0x1000_0000;
const GO: u32 = 0x2000_0000;

/// A PVM reduce function: `x = x op y` for `num` items of `datatype`.
type ReduceFn = unsafe extern "C" fn(*mut c_int, *mut c_void, *mut c_void, *mut c_int, *mut c_int);

fn group_error(e: GroupError) -> c_int {
    match e {
        GroupError::AlreadyMember { .. } => PVM_DUP_GROUP,
        GroupError::UnknownName(_) => PVM_NO_GROUP,
        GroupError::NotMember(_) => PVM_NOT_IN_GROUP,
        GroupError::NoSuchInstance { .. } => PVM_NO_INST,
        GroupError::NameTooLong(_) => PVM_BAD_PARAM,
        _ => PVM_SYS_ERR,
    }
}

/// # Safety
///
/// `name` is NULL or a string.
unsafe fn group_name<'a>(name: *const c_char) -> Result<&'a str, c_int> {
    // SAFETY: the caller vouches for the string.
    match unsafe { text(name) } {
        Ok("") | Err(_) => Err(PVM_NULL_GROUP),
        Ok(n) => Ok(n),
    }
}

/// The tag of a barrier message of `name`.
fn barrier_tag(base: u32, name: &str) -> c_int {
    let hash = name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    (base | (hash & 0x0fff_ffff)) as c_int
}

/// The tid of `instance` of `name`: from the frozen cache, else asked.
fn tid_of(name: &str, instance: u32) -> Result<c_int, c_int> {
    task::with(|t| {
        if let Some(tids) = t.frozen.get(name) {
            return tids.get(instance as usize).copied().ok_or(PVM_NO_INST);
        }
        let a = t.ep.group_address(name, instance).map_err(group_error)?;
        tid::of(a).ok_or(PVM_NO_INST)
    })
}

/// The members' tids by instance (absent instances left out).
fn members(name: &str) -> Result<Vec<(u32, c_int)>, c_int> {
    task::with(|t| {
        if let Some(tids) = t.frozen.get(name) {
            return Ok(tids
                .iter()
                .enumerate()
                .map(|(i, &x)| (i as u32, x))
                .collect());
        }
        let m = t.ep.group_members(name).map_err(group_error)?;
        Ok(m.into_iter()
            .filter_map(|(i, a)| Some((i, tid::of(a)?)))
            .collect())
    })
}

/// Sends `count` items of `kind` at `ptr` to `to` in the group context.
///
/// # Safety
///
/// `ptr` holds the items.
unsafe fn send_items(
    to: c_int,
    tag: c_int,
    kind: Kind,
    ptr: *const u8,
    count: c_int,
) -> Result<(), c_int> {
    let mut b = Buffer::new(DATA_RAW).expect("a known encoding");
    // SAFETY: the caller vouches for the items.
    unsafe { b.pack(kind, ptr, count, 1) }?;
    let address = tid::address(to).ok_or(PVM_BAD_PARAM)?;
    task::with(|t| {
        let ep = &t.ep;
        b.with_message(GROUP_CONTEXT, |m| ep.send(address, tag as u32, m))
            .map_err(send_error)
    })
}

/// Receives a group-context message of `tag` from `from` (or anyone):
/// its sender and bytes unpacked as `count` items of `kind` into `out`.
fn receive_items(
    from: c_int,
    tag: c_int,
    kind: Kind,
    out: &mut [u8],
    count: c_int,
) -> Result<c_int, c_int> {
    let id = receive_in(Some(GROUP_CONTEXT), from, tag, Wait::Forever)?;
    task::with(|t| {
        let b = t.buffer(id)?;
        let src = b.src;
        // SAFETY: `out` has room for `count` items of `kind`.
        let got = unsafe { b.unpack(kind, out.as_mut_ptr(), count, 1) };
        let _ = t.free(id);
        got.map(|()| src)
    })
}

/// Step 1.
fn barrier(name: &str, count: c_int) -> Result<(), c_int> {
    let me = task::with(|t| {
        t.ep.group_instance(name, t.ep.address())
            .map_err(group_error)
    })?;
    let coordinator = tid_of(name, 0)?;
    let (arrived, go) = (barrier_tag(ARRIVED, name), barrier_tag(GO, name));
    if me != 0 {
        // SAFETY: no items.
        unsafe { send_items(coordinator, arrived, Kind::Int, std::ptr::null(), 0) }?;
        receive_items(coordinator, go, Kind::Int, &mut [], 0)?;
        return Ok(());
    }
    let count = match count {
        -1 => task::with(|t| t.ep.group_size(name).map_err(group_error))? as c_int,
        c if c < 1 => return Err(PVM_BAD_PARAM),
        c => c,
    };
    let mut waiting = Vec::new();
    while (waiting.len() as c_int) < count - 1 {
        waiting.push(receive_items(-1, arrived, Kind::Int, &mut [], 0)?);
    }
    for member in waiting {
        // SAFETY: no items.
        unsafe { send_items(member, go, Kind::Int, std::ptr::null(), 0) }?;
    }
    Ok(())
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_joingroup(name: *const c_char) -> c_int {
    call_quietly("pvm_joingroup", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        task::with(|t| {
            t.ep.join_group(name)
                .map(|i| i as c_int)
                .map_err(group_error)
        })
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_lvgroup(name: *const c_char) -> c_int {
    call_quietly("pvm_lvgroup", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        task::with(|t| {
            t.frozen.remove(name);
            t.ep.leave_group(name).map(|()| 0).map_err(group_error)
        })
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_gsize(name: *const c_char) -> c_int {
    call_quietly("pvm_gsize", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        task::with(|t| match t.frozen.get(name) {
            Some(tids) => Ok(tids.len() as c_int),
            None => {
                t.ep.group_size(name)
                    .map(|n| n as c_int)
                    .map_err(group_error)
            }
        })
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_getinst(name: *const c_char, of: c_int) -> c_int {
    call_quietly("pvm_getinst", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        let a = tid::address(of).ok_or(PVM_BAD_PARAM)?;
        task::with(|t| {
            if let Some(tids) = t.frozen.get(name) {
                return tids
                    .iter()
                    .position(|&x| x == of)
                    .map(|i| i as c_int)
                    .ok_or(PVM_NOT_IN_GROUP);
            }
            t.ep.group_instance(name, a)
                .map(|i| i as c_int)
                .map_err(group_error)
        })
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_gettid(name: *const c_char, instance: c_int) -> c_int {
    call_quietly("pvm_gettid", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        if instance < 0 {
            return Err(PVM_BAD_PARAM);
        }
        tid_of(name, instance as u32)
    })
}

/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_barrier(name: *const c_char, count: c_int) -> c_int {
    call_quietly("pvm_barrier", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        barrier(name, count).map(|()| 0)
    })
}

/// Step 2.
///
/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_freezegroup(name: *const c_char, size: c_int) -> c_int {
    call_quietly("pvm_freezegroup", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        barrier(name, size)?;
        let members = members(name)?;
        task::with(|t| {
            let tids = members.iter().map(|&(_, x)| x).collect();
            t.frozen.insert(name.to_string(), tids);
            Ok(0)
        })
    })
}

/// Step 3.
///
/// # Safety
///
/// `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_bcast(name: *const c_char, tag: c_int) -> c_int {
    call_quietly("pvm_bcast", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        if tag < 0 {
            return Err(PVM_BAD_PARAM);
        }
        let members = members(name)?;
        task::with(|t| {
            let me = t.tid;
            let to: Vec<_> = members
                .iter()
                .filter(|&&(_, x)| x != me)
                .filter_map(|&(_, x)| tid::address(x))
                .collect();
            let ctx = t.ctx;
            let (ep, buffer) = t.sender()?;
            match buffer.with_message(ctx, |m| ep.mcast(&to, tag as u32, m.to_vec())) {
                Ok(()) | Err(threadwire::McastError::PeerLost { .. }) => Ok(0),
                Err(_) => Err(PVM_SYS_ERR),
            }
        })
    })
}

/// The kind, items-per-element and bytes of `count` elements of `datatype`.
fn layout(datatype: c_int, count: c_int) -> Result<(Kind, c_int, usize), c_int> {
    let (kind, per) = Kind::of_datatype(datatype).ok_or(PVM_BAD_PARAM)?;
    if count < 0 {
        return Err(PVM_BAD_PARAM);
    }
    let items = count.checked_mul(per as c_int).ok_or(PVM_OVERFLOW)?;
    Ok((kind, items, items as usize * kind.width()))
}

/// Step 4: reduce.
///
/// # Safety
///
/// `data` holds `count` elements of `datatype`; `func` is a PVM reduce
/// function; `name` is a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_reduce(
    func: Option<ReduceFn>,
    data: *mut c_void,
    count: c_int,
    datatype: c_int,
    tag: c_int,
    name: *const c_char,
    root: c_int,
) -> c_int {
    call_quietly("pvm_reduce", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        let func = func.ok_or(PVM_BAD_PARAM)?;
        let (kind, items, bytes) = layout(datatype, count)?;
        if tag < 0 || root < 0 || (data.is_null() && count > 0) {
            return Err(PVM_BAD_PARAM);
        }
        let root_tid = tid_of(name, root as u32)?;
        let me = task::with(|t| Ok(t.tid))?;
        if me != root_tid {
            // SAFETY: `data` holds the elements.
            return unsafe { send_items(root_tid, tag, kind, data.cast(), items) }.map(|()| 0);
        }
        let others = members(name)?.len().saturating_sub(1);
        let mut incoming = vec![0u8; bytes.max(1)];
        for _ in 0..others {
            receive_items(-1, tag, kind, &mut incoming, items)?;
            let (mut dt, mut n, mut info) = (datatype, count, 0);
            // SAFETY: both buffers hold `count` elements of `datatype`, as
            // the function expects; it is the program's own.
            unsafe {
                func(
                    &mut dt,
                    data,
                    incoming.as_mut_ptr().cast(),
                    &mut n,
                    &mut info,
                )
            };
            if info < 0 {
                return Err(info);
            }
        }
        Ok(0)
    })
}

/// Step 4: gather.
///
/// # Safety
///
/// `data` holds `count` elements; at the root, `result` has room for
/// `count` times the group's size.
#[no_mangle]
pub unsafe extern "C" fn pvm_gather(
    result: *mut c_void,
    data: *mut c_void,
    count: c_int,
    datatype: c_int,
    tag: c_int,
    name: *const c_char,
    root: c_int,
) -> c_int {
    call_quietly("pvm_gather", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        let (kind, items, bytes) = layout(datatype, count)?;
        if tag < 0 || root < 0 {
            return Err(PVM_BAD_PARAM);
        }
        let root_tid = tid_of(name, root as u32)?;
        let me = task::with(|t| Ok(t.tid))?;
        if me != root_tid {
            // SAFETY: `data` holds the elements.
            return unsafe { send_items(root_tid, tag, kind, data.cast(), items) }.map(|()| 0);
        }
        if result.is_null() {
            return Err(PVM_BAD_PARAM);
        }
        let members = members(name)?;
        let instance_of = |x: c_int| members.iter().find(|m| m.1 == x).map(|m| m.0 as usize);
        let mine = instance_of(me).ok_or(PVM_NOT_IN_GROUP)?;
        // SAFETY: the caller vouches for `data`, and for room in `result`
        // for every instance's slice.
        unsafe {
            std::ptr::copy(
                data.cast::<u8>(),
                result.cast::<u8>().add(mine * bytes),
                bytes,
            )
        };
        let mut incoming = vec![0u8; bytes];
        for _ in 1..members.len() {
            let from = receive_items(-1, tag, kind, &mut incoming, items)?;
            let at = instance_of(from).ok_or(PVM_NOT_IN_GROUP)?;
            // SAFETY: as above.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    incoming.as_ptr(),
                    result.cast::<u8>().add(at * bytes),
                    bytes,
                )
            };
        }
        Ok(0)
    })
}

/// Step 4: scatter.
///
/// # Safety
///
/// `result` has room for `count` elements; at the root, `data` holds
/// `count` times the group's size.
#[no_mangle]
pub unsafe extern "C" fn pvm_scatter(
    result: *mut c_void,
    data: *mut c_void,
    count: c_int,
    datatype: c_int,
    tag: c_int,
    name: *const c_char,
    root: c_int,
) -> c_int {
    call_quietly("pvm_scatter", || {
        // SAFETY: the caller vouches for the string.
        let name = unsafe { group_name(name) }?;
        let (kind, items, bytes) = layout(datatype, count)?;
        if tag < 0 || root < 0 || (result.is_null() && count > 0) {
            return Err(PVM_BAD_PARAM);
        }
        let root_tid = tid_of(name, root as u32)?;
        let me = task::with(|t| Ok(t.tid))?;
        if me != root_tid {
            // SAFETY: `result` has room for `count` elements.
            let out = unsafe { std::slice::from_raw_parts_mut(result.cast::<u8>(), bytes) };
            return receive_items(root_tid, tag, kind, out, items).map(|_| 0);
        }
        if data.is_null() {
            return Err(PVM_BAD_PARAM);
        }
        for (instance, member) in members(name)? {
            // SAFETY: `data` holds every instance's slice.
            let slice = unsafe { data.cast::<u8>().add(instance as usize * bytes) };
            match member == me {
                // SAFETY: as above, and `result` has room for one slice.
                true => unsafe { std::ptr::copy(slice, result.cast(), bytes) },
                // SAFETY: as above.
                false => unsafe { send_items(member, tag, kind, slice, items) }?,
            }
        }
        Ok(0)
    })
}

/// Applies `op` to `num` items of `datatype`: `x[i] = op(x[i], y[i])`.
///
/// # Safety
///
/// `x` and `y` hold `*num` items of `*datatype`.
unsafe fn combine(
    name: &str,
    datatype: *mut c_int,
    x: *mut c_void,
    y: *mut c_void,
    num: *mut c_int,
    info: *mut c_int,
    op: Op,
) {
    if datatype.is_null() || num.is_null() || x.is_null() || y.is_null() {
        // SAFETY: `info` is NULL or valid.
        unsafe { put(info, PVM_BAD_PARAM) };
        return;
    }
    // SAFETY: checked non-NULL; the caller vouches for them.
    let (datatype, n) = unsafe { (*datatype, (*num).max(0) as usize) };
    macro_rules! apply {
        ($t:ty) => {{
            // SAFETY: the caller vouches for `n` items in each.
            let (x, y) = unsafe {
                (
                    std::slice::from_raw_parts_mut(x.cast::<$t>(), n),
                    std::slice::from_raw_parts(y.cast::<$t>(), n),
                )
            };
            for (a, b) in x.iter_mut().zip(y) {
                *a = match op {
                    Op::Max => {
                        if *b > *a {
                            *b
                        } else {
                            *a
                        }
                    }
                    Op::Min => {
                        if *b < *a {
                            *b
                        } else {
                            *a
                        }
                    }
                    Op::Sum => *a + *b,
                    Op::Product => *a * *b,
                };
            }
        }};
    }
    macro_rules! complex {
        ($t:ty) => {{
            // SAFETY: the caller vouches for `n` complex items in each.
            let (x, y) = unsafe {
                (
                    std::slice::from_raw_parts_mut(x.cast::<[$t; 2]>(), n),
                    std::slice::from_raw_parts(y.cast::<[$t; 2]>(), n),
                )
            };
            for (a, b) in x.iter_mut().zip(y) {
                *a = match op {
                    Op::Sum => [a[0] + b[0], a[1] + b[1]],
                    _ => [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]],
                };
            }
        }};
    }
    let code = match (datatype, op) {
        (PVM_SHORT, _) => {
            apply!(i16);
            0
        }
        (PVM_USHORT, _) => {
            apply!(u16);
            0
        }
        (PVM_INT, _) => {
            apply!(i32);
            0
        }
        (PVM_UINT, _) => {
            apply!(u32);
            0
        }
        (PVM_LONG, _) => {
            apply!(i64);
            0
        }
        (PVM_ULONG, _) => {
            apply!(u64);
            0
        }
        (PVM_FLOAT, _) => {
            apply!(f32);
            0
        }
        (PVM_DOUBLE, _) => {
            apply!(f64);
            0
        }
        (PVM_CPLX, Op::Sum | Op::Product) => {
            complex!(f32);
            0
        }
        (PVM_DCPLX, Op::Sum | Op::Product) => {
            complex!(f64);
            0
        }
        _ => {
            eprintln!("libpvm (threadwire): {name}: data type {datatype} cannot be combined");
            PVM_BAD_PARAM
        }
    };
    // SAFETY: `info` is NULL or valid.
    unsafe { put(info, code) };
}

#[derive(Clone, Copy)]
enum Op {
    Max,
    Min,
    Sum,
    Product,
}

macro_rules! reduce_functions {
    ($($name:ident $op:ident;)*) => {$(
        /// PVM's predefined reduce function of its name.
        ///
        /// # Safety
        ///
        /// `x` and `y` hold `*num` items of `*datatype`.
        #[no_mangle]
        #[allow(non_snake_case)]
        pub unsafe extern "C" fn $name(datatype: *mut c_int, x: *mut c_void, y: *mut c_void, num: *mut c_int, info: *mut c_int) {
            // SAFETY: the caller vouches for the items.
            unsafe { combine(stringify!($name), datatype, x, y, num, info, Op::$op) }
        }
    )*};
}

reduce_functions! {
    PvmMax Max;
    PvmMin Min;
    PvmSum Sum;
    PvmProduct Product;
}
