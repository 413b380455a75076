//! Buffers, packing, sending and receiving: PVM's message calls.

use crate::buffer::{Buffer, Kind};
use crate::consts::*;
use crate::task::{self, Step, Wait};
use crate::{call, put, tid};
use std::ffi::{c_char, c_int, c_void};
use std::time::{Duration, Instant};

/// `struct pvmminfo`.
#[repr(C)]
pub struct MessageInfo {
    len: c_int,
    ctx: c_int,
    tag: c_int,
    wid: c_int,
    enc: c_int,
    crc: c_int,
    src: c_int,
    dst: c_int,
}

#[no_mangle]
pub extern "C" fn pvm_mkbuf(encoding: c_int) -> c_int {
    call("pvm_mkbuf", || {
        let b = Buffer::new(encoding).ok_or(PVM_BAD_PARAM)?;
        task::with(|t| Ok(t.insert(b)))
    })
}

#[no_mangle]
pub extern "C" fn pvm_initsend(encoding: c_int) -> c_int {
    call("pvm_initsend", || {
        let b = Buffer::new(encoding).ok_or(PVM_BAD_PARAM)?;
        task::with(|t| {
            if t.sbuf != 0 {
                let _ = t.free(t.sbuf);
            }
            t.sbuf = t.insert(b);
            Ok(t.sbuf)
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_freebuf(id: c_int) -> c_int {
    call("pvm_freebuf", || task::with(|t| t.free(id).map(|()| 0)))
}

#[no_mangle]
pub extern "C" fn pvm_setsbuf(id: c_int) -> c_int {
    call("pvm_setsbuf", || {
        task::with(|t| {
            if id != 0 {
                t.buffer(id)?;
            }
            Ok(std::mem::replace(&mut t.sbuf, id))
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_setrbuf(id: c_int) -> c_int {
    call("pvm_setrbuf", || {
        task::with(|t| {
            if id != 0 {
                t.buffer(id)?;
            }
            Ok(std::mem::replace(&mut t.rbuf, id))
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_getsbuf() -> c_int {
    call("pvm_getsbuf", || task::with(|t| Ok(t.sbuf)))
}

#[no_mangle]
pub extern "C" fn pvm_getrbuf() -> c_int {
    call("pvm_getrbuf", || task::with(|t| Ok(t.rbuf)))
}

/// # Safety
///
/// Each out-pointer is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvm_bufinfo(
    id: c_int,
    bytes: *mut c_int,
    tag: *mut c_int,
    src: *mut c_int,
) -> c_int {
    call("pvm_bufinfo", || {
        task::with(|t| {
            let b = t.buffer(id)?;
            // SAFETY: the caller vouches for the out-pointers.
            unsafe {
                put(bytes, b.len() as c_int);
                put(tag, b.tag);
                put(src, b.src);
            }
            Ok(0)
        })
    })
}

/// # Safety
///
/// `info` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvm_getminfo(id: c_int, info: *mut MessageInfo) -> c_int {
    call("pvm_getminfo", || {
        if info.is_null() {
            return Err(PVM_BAD_PARAM);
        }
        task::with(|t| {
            let me = t.tid;
            let b = t.buffer(id)?;
            let m = MessageInfo {
                len: b.len() as c_int,
                ctx: b.ctx,
                tag: b.tag,
                wid: 0,
                enc: b.encoding(),
                crc: 0,
                src: b.src,
                dst: me,
            };
            // SAFETY: checked non-NULL; the caller vouches for it.
            unsafe { info.write(m) };
            Ok(0)
        })
    })
}

/// # Safety
///
/// `info` is NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn pvm_setminfo(id: c_int, info: *mut MessageInfo) -> c_int {
    call("pvm_setminfo", || {
        if info.is_null() {
            return Err(PVM_BAD_PARAM);
        }
        // SAFETY: checked non-NULL; the caller vouches for it.
        let m = unsafe { info.read() };
        task::with(|t| {
            let b = t.buffer(id)?;
            (b.ctx, b.tag, b.src) = (m.ctx, m.tag, m.src);
            Ok(0)
        })
    })
}

/// Packs into the active send buffer.
///
/// # Safety
///
/// As [`Buffer::pack`].
unsafe fn pack(name: &str, kind: Kind, ptr: *const c_void, count: c_int, stride: c_int) -> c_int {
    call(name, || {
        task::with(|t| {
            let b = t.send_buffer()?;
            // SAFETY: the caller vouches for the elements.
            unsafe { b.pack(kind, ptr.cast(), count, stride) }.map(|()| 0)
        })
    })
}

/// Unpacks from the active receive buffer.
///
/// # Safety
///
/// As [`Buffer::unpack`].
unsafe fn unpack(name: &str, kind: Kind, ptr: *mut c_void, count: c_int, stride: c_int) -> c_int {
    call(name, || {
        task::with(|t| {
            let b = t.recv_buffer()?;
            // SAFETY: the caller vouches for the elements.
            unsafe { b.unpack(kind, ptr.cast(), count, stride) }.map(|()| 0)
        })
    })
}

macro_rules! pack_calls {
    ($($pk:ident $upk:ident $t:ty, $kind:ident, $per:expr;)*) => {$(
        /// # Safety
        ///
        /// `ptr` holds `count` elements `stride` apart.
        #[no_mangle]
        pub unsafe extern "C" fn $pk(ptr: *const $t, count: c_int, stride: c_int) -> c_int {
            let (count, stride) = (count.saturating_mul($per), stride.saturating_mul($per));
            // SAFETY: the caller vouches for the elements; a complex
            // element is `$per` reals, contiguous.
            unsafe { pack_items(stringify!($pk), Kind::$kind, ptr.cast(), count, stride, $per) }
        }

        /// # Safety
        ///
        /// `ptr` has room for `count` elements `stride` apart.
        #[no_mangle]
        pub unsafe extern "C" fn $upk(ptr: *mut $t, count: c_int, stride: c_int) -> c_int {
            let (count, stride) = (count.saturating_mul($per), stride.saturating_mul($per));
            // SAFETY: as above.
            unsafe { unpack_items(stringify!($upk), Kind::$kind, ptr.cast(), count, stride, $per) }
        }
    )*};
}

/// Packs `count` reals as complex numbers of `per` reals each when
/// `per` is 2 (the stride counts whole numbers), else plain elements.
///
/// # Safety
///
/// As [`pack`].
unsafe fn pack_items(
    name: &str,
    kind: Kind,
    ptr: *const c_void,
    count: c_int,
    stride: c_int,
    per: c_int,
) -> c_int {
    if per == 1 || stride == per {
        // SAFETY: contiguous (or plainly strided) elements.
        return unsafe { pack(name, kind, ptr, count, if per == 1 { stride } else { 1 }) };
    }
    // Strided complex numbers: each number's two reals, one call each.
    let width = kind.width();
    for i in 0..(count / per).max(0) as usize {
        // SAFETY: number `i` starts `i * stride` reals in.
        let at = unsafe { ptr.cast::<u8>().add(i * stride as usize * width) };
        // SAFETY: as above.
        let rc = unsafe { pack(name, kind, at.cast(), per, 1) };
        if rc < 0 {
            return rc;
        }
    }
    0
}

/// The unpacking twin of [`pack_items`].
///
/// # Safety
///
/// As [`unpack`].
unsafe fn unpack_items(
    name: &str,
    kind: Kind,
    ptr: *mut c_void,
    count: c_int,
    stride: c_int,
    per: c_int,
) -> c_int {
    if per == 1 || stride == per {
        // SAFETY: contiguous (or plainly strided) elements.
        return unsafe { unpack(name, kind, ptr, count, if per == 1 { stride } else { 1 }) };
    }
    let width = kind.width();
    for i in 0..(count / per).max(0) as usize {
        // SAFETY: number `i` starts `i * stride` reals in.
        let at = unsafe { ptr.cast::<u8>().add(i * stride as usize * width) };
        // SAFETY: as above.
        let rc = unsafe { unpack(name, kind, at.cast(), per, 1) };
        if rc < 0 {
            return rc;
        }
    }
    0
}

pack_calls! {
    pvm_pkbyte pvm_upkbyte c_char, Byte, 1;
    pvm_pkshort pvm_upkshort i16, Short, 1;
    pvm_pkushort pvm_upkushort u16, Short, 1;
    pvm_pkint pvm_upkint c_int, Int, 1;
    pvm_pkuint pvm_upkuint u32, Int, 1;
    pvm_pklong pvm_upklong i64, Long, 1;
    pvm_pkulong pvm_upkulong u64, Long, 1;
    pvm_pkfloat pvm_upkfloat f32, Float, 1;
    pvm_pkdouble pvm_upkdouble f64, Double, 1;
    pvm_pkcplx pvm_upkcplx f32, Float, 2;
    pvm_pkdcplx pvm_upkdcplx f64, Double, 2;
}

/// # Safety
///
/// `s` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pvm_pkstr(s: *const c_char) -> c_int {
    call("pvm_pkstr", || {
        if s.is_null() {
            return Err(PVM_BAD_PARAM);
        }
        // SAFETY: the caller vouches for a NUL-terminated string.
        let bytes = unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes();
        task::with(|t| t.send_buffer()?.pack_str(bytes).map(|()| 0))
    })
}

/// # Safety
///
/// `s` has room for the string and its NUL (PVM cannot check this).
#[no_mangle]
pub unsafe extern "C" fn pvm_upkstr(s: *mut c_char) -> c_int {
    call("pvm_upkstr", || {
        if s.is_null() {
            return Err(PVM_BAD_PARAM);
        }
        task::with(|t| {
            let bytes = t.recv_buffer()?.unpack_str()?;
            // SAFETY: the caller vouches for room (PVM's contract).
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), s.cast(), bytes.len());
                s.add(bytes.len()).write(0);
            }
            Ok(0)
        })
    })
}

/// Sends the active send buffer's message to `to` with `tag`.
fn send_to(t: &mut task::Task, to: c_int, tag: c_int) -> Result<c_int, c_int> {
    let address = tid::address(to).ok_or(PVM_BAD_PARAM)?;
    if tag < 0 {
        return Err(PVM_BAD_PARAM);
    }
    if address.node >= t.node().nodes() {
        return Err(PVM_BAD_PARAM);
    }
    let ctx = t.ctx;
    let (ep, buffer) = t.sender()?;
    buffer
        .with_message(ctx, |bytes| ep.send(address, tag as u32, bytes))
        .map_err(send_error)?;
    Ok(0)
}

pub(crate) fn send_error(e: threadwire::SendError) -> c_int {
    match e {
        threadwire::SendError::PeerLost { .. } => PVM_NO_TASK,
        _ => PVM_SYS_ERR,
    }
}

#[no_mangle]
pub extern "C" fn pvm_send(to: c_int, tag: c_int) -> c_int {
    call("pvm_send", || task::with(|t| send_to(t, to, tag)))
}

/// # Safety
///
/// `tids` holds `count` tids.
#[no_mangle]
pub unsafe extern "C" fn pvm_mcast(tids: *const c_int, count: c_int, tag: c_int) -> c_int {
    call("pvm_mcast", || {
        if count < 0 || tag < 0 || (tids.is_null() && count > 0) {
            return Err(PVM_BAD_PARAM);
        }
        let tids = match count {
            0 => &[][..],
            // SAFETY: the caller vouches for `count` tids.
            n => unsafe { std::slice::from_raw_parts(tids, n as usize) },
        };
        task::with(|t| {
            let mut to = Vec::with_capacity(tids.len());
            for &tid in tids {
                let a = tid::address(tid).ok_or(PVM_BAD_PARAM)?;
                // As PVM: the sender never gets its own multicast.
                if tid != t.tid {
                    to.push(a);
                }
            }
            let ctx = t.ctx;
            let (ep, buffer) = t.sender()?;
            match buffer.with_message(ctx, |bytes| ep.mcast(&to, tag as u32, bytes.to_vec())) {
                Ok(()) => Ok(0),
                Err(threadwire::McastError::NoSuchEndpoint { .. }) => Err(PVM_BAD_PARAM),
                // Those that are gone miss it, as under PVM.
                Err(threadwire::McastError::PeerLost { .. }) => Ok(0),
                Err(_) => Err(PVM_SYS_ERR),
            }
        })
    })
}

/// # Safety
///
/// `ptr` holds `count` items of `datatype`.
#[no_mangle]
pub unsafe extern "C" fn pvm_psend(
    to: c_int,
    tag: c_int,
    ptr: *const c_void,
    count: c_int,
    datatype: c_int,
) -> c_int {
    call("pvm_psend", || {
        let (kind, per) = Kind::of_datatype(datatype).ok_or(PVM_BAD_PARAM)?;
        let mut b = Buffer::new(DATA_RAW).expect("a known encoding");
        // SAFETY: the caller vouches for the items.
        unsafe { b.pack(kind, ptr.cast(), count.saturating_mul(per as c_int), 1) }?;
        task::with(|t| {
            let address = tid::address(to).ok_or(PVM_BAD_PARAM)?;
            if tag < 0 || address.node >= t.node().nodes() {
                return Err(PVM_BAD_PARAM);
            }
            let bytes = b.encode(t.ctx);
            t.ep.send(address, tag as u32, bytes).map_err(send_error)?;
            Ok(0)
        })
    })
}

/// Receives as `pvm_recv` (`Wait::Forever`), `pvm_nrecv` (`Not`) or
/// `pvm_trecv` (`Until`): the new active receive buffer's id, or 0 for
/// none. Message handlers run here, outside the task's borrow.
fn receive(src: c_int, tag: c_int, wait: Wait) -> Result<c_int, c_int> {
    receive_in(None, src, tag, wait)
}

/// [`receive`] in context `ctx` (the task's when `None`).
pub(crate) fn receive_in(
    ctx: Option<c_int>,
    src: c_int,
    tag: c_int,
    wait: Wait,
) -> Result<c_int, c_int> {
    if src == 0 || src < -1 || tag < -1 {
        return Err(PVM_BAD_PARAM);
    }
    loop {
        match task::with(|t| t.receive_step(ctx, src, tag, wait))? {
            Step::Found(id) => return Ok(id),
            Step::Nothing => return Ok(0),
            Step::Again => {}
            Step::Handle(f, id) => run_handler(f, id)?,
        }
    }
}

/// Calls a message handler with its message as the active receive
/// buffer, then frees it and restores the buffer before.
fn run_handler(f: extern "C" fn(c_int) -> c_int, id: c_int) -> Result<(), c_int> {
    let before = task::with(|t| Ok(std::mem::replace(&mut t.rbuf, id)))?;
    f(id);
    task::with(|t| {
        let _ = t.free(id);
        if t.buffer(before).is_ok() {
            t.rbuf = before;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn pvm_recv(src: c_int, tag: c_int) -> c_int {
    call("pvm_recv", || receive(src, tag, Wait::Forever))
}

#[no_mangle]
pub extern "C" fn pvm_nrecv(src: c_int, tag: c_int) -> c_int {
    call("pvm_nrecv", || receive(src, tag, Wait::Not))
}

/// # Safety
///
/// `timeout` is NULL (wait forever) or points to a `struct timeval`.
#[no_mangle]
pub unsafe extern "C" fn pvm_trecv(src: c_int, tag: c_int, timeout: *const libc::timeval) -> c_int {
    call("pvm_trecv", || {
        if timeout.is_null() {
            return receive(src, tag, Wait::Forever);
        }
        // SAFETY: non-NULL; the caller vouches for it.
        let tv = unsafe { timeout.read() };
        if tv.tv_sec < 0 || tv.tv_usec < 0 {
            return Err(PVM_BAD_PARAM);
        }
        let d = Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64);
        match d.is_zero() {
            true => receive(src, tag, Wait::Not),
            false => receive(src, tag, Wait::Until(Instant::now() + d)),
        }
    })
}

#[no_mangle]
pub extern "C" fn pvm_probe(src: c_int, tag: c_int) -> c_int {
    call("pvm_probe", || {
        if src == 0 || src < -1 || tag < -1 {
            return Err(PVM_BAD_PARAM);
        }
        loop {
            // Pull what has arrived without waiting, then look.
            let step = task::with(|t| {
                if let Some(id) = t.peek_match(src, tag) {
                    return Ok(Some(id));
                }
                match t.pull_one(src)? {
                    true => Ok(None),
                    false => Ok(Some(0)),
                }
            })?;
            if let Some(id) = step {
                return Ok(id);
            }
        }
    })
}

/// # Safety
///
/// `ptr` has room for `count` items of `datatype`; each out-pointer is
/// NULL or valid for a write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn pvm_precv(
    src: c_int,
    tag: c_int,
    ptr: *mut c_void,
    count: c_int,
    datatype: c_int,
    rsrc: *mut c_int,
    rtag: *mut c_int,
    rlen: *mut c_int,
) -> c_int {
    call("pvm_precv", || {
        let (kind, per) = Kind::of_datatype(datatype).ok_or(PVM_BAD_PARAM)?;
        if count < 0 {
            return Err(PVM_BAD_PARAM);
        }
        let id = receive(src, tag, Wait::Forever)?;
        task::with(|t| {
            let b = t.buffer(id)?;
            let have = (b.len() / kind.width() / per) as c_int;
            let n = have.min(count).saturating_mul(per as c_int);
            // SAFETY: the caller vouches for room for `count` items.
            let got = unsafe { b.unpack(kind, ptr.cast(), n, 1) };
            // SAFETY: the caller vouches for the out-pointers.
            unsafe {
                put(rsrc, b.src);
                put(rtag, b.tag);
                put(rlen, have);
            }
            let _ = t.free(id);
            got.map(|()| 0)
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_addmhf(
    src: c_int,
    tag: c_int,
    ctx: c_int,
    f: Option<extern "C" fn(c_int) -> c_int>,
) -> c_int {
    call("pvm_addmhf", || {
        let f = f.ok_or(PVM_BAD_PARAM)?;
        task::with(|t| Ok(t.add_handler(src, tag, ctx, f)))
    })
}

#[no_mangle]
pub extern "C" fn pvm_delmhf(id: c_int) -> c_int {
    call("pvm_delmhf", || {
        task::with(|t| {
            let before = t.handlers.len();
            t.handlers.retain(|h| h.id != id);
            match t.handlers.len() < before {
                true => Ok(0),
                false => Err(PVM_BAD_PARAM),
            }
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_newcontext() -> c_int {
    call("pvm_newcontext", || task::with(|t| t.new_context()))
}

#[no_mangle]
pub extern "C" fn pvm_setcontext(ctx: c_int) -> c_int {
    call("pvm_setcontext", || {
        task::with(|t| Ok(std::mem::replace(&mut t.ctx, ctx)))
    })
}

#[no_mangle]
pub extern "C" fn pvm_getcontext() -> c_int {
    call("pvm_getcontext", || task::with(|t| Ok(t.ctx)))
}

#[no_mangle]
pub extern "C" fn pvm_freecontext(ctx: c_int) -> c_int {
    call("pvm_freecontext", || match ctx {
        ..=0 => Err(PVM_BAD_PARAM),
        _ => Ok(0),
    })
}
