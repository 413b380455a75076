//! Typed messages: a packer writes numbers, arrays and strings in a
//! portable (or native) encoding; an unpacker reads them back in order.

use crate::context::with_endpoint;
use crate::error::{call, Error, Result, TwError};
use crate::p2p::tw_message;
use crate::types::{
    destination, handle, non_null, send_tag, slice, slice_mut, string, take_handle, tw_address,
    tw_datatype, with_datatype, write_out,
};
use std::ffi::{c_char, c_int, c_void};
use threadwire_wire::{Encoding, Packer, Payload, Scalar, UnpackError, Unpacker};

/// Big-endian, readable on any machine (PVM's `PvmDataDefault`).
pub const TW_ENCODING_PORTABLE: c_int = 0;
/// The sender's bytes as they are: only between machines of one byte
/// order (PVM's `PvmDataRaw`).
pub const TW_ENCODING_RAW: c_int = 1;
/// The sender's bytes tagged with its byte order; the receiver converts
/// only if its own differs.
pub const TW_ENCODING_NATIVE: c_int = 2;

/// A message being packed, until `tw_send_packed` or `tw_packer_free`.
#[allow(non_camel_case_types)]
pub struct tw_packer {
    packer: Packer,
}

/// A received message being unpacked, until `tw_unpacker_free`.
#[allow(non_camel_case_types)]
pub struct tw_unpacker {
    unpacker: Unpacker,
    /// A string or bytes item read that did not fit the caller's buffer:
    /// still the next item.
    pending: Option<Pending>,
}

enum Pending {
    String(String),
    Bytes(Vec<u8>),
}

/// Starts a packed message in `encoding` (`TW_ENCODING_PORTABLE`,
/// `TW_ENCODING_RAW`, `TW_ENCODING_NATIVE`); `*packer` is its handle.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL, unknown encoding).
///
/// # Safety
///
/// `packer` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_packer_new(encoding: c_int, packer: *mut *mut tw_packer) -> c_int {
    call(|| {
        let encoding = match encoding {
            TW_ENCODING_PORTABLE => Encoding::Portable,
            TW_ENCODING_RAW => Encoding::Raw,
            TW_ENCODING_NATIVE => Encoding::ReceiverMakesRight,
            other => return Err(Error::invalid(format!("unknown encoding {other}"))),
        };
        let p = Box::into_raw(Box::new(tw_packer {
            packer: Packer::new(encoding),
        }));
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(packer, "packer", p) }.inspect_err(|_| {
            // SAFETY: just made by `Box::into_raw` and not given out.
            drop(unsafe { Box::from_raw(p) })
        })
    })
}

/// Frees a packer without sending; `*packer` becomes NULL (a NULL `*packer`
/// is a no-op).
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `packer` is NULL or points to NULL or a live packer handle.
#[no_mangle]
pub unsafe extern "C" fn tw_packer_free(packer: *mut *mut tw_packer) -> c_int {
    // SAFETY: as the caller promises.
    call(|| unsafe { take_handle(packer, "packer") }.map(drop))
}

/// # Safety
///
/// `packer` is NULL or a live packer handle.
unsafe fn pack_scalar<T: Scalar>(packer: *mut tw_packer, value: T) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        unsafe { handle(packer, "packer") }?.packer.pack(value);
        Ok(())
    })
}

/// Packs one `uint8_t`.
///
/// Context: any thread; a packer is used by one thread at a time (as are
/// unpackers). Errors: `TW_ERR_INVALID` (NULL packer).
///
/// # Safety
///
/// `packer` is NULL or a live packer handle (as for every `tw_pack_*`).
#[no_mangle]
pub unsafe extern "C" fn tw_pack_uint8(packer: *mut tw_packer, value: u8) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `int8_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_int8(packer: *mut tw_packer, value: i8) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `uint16_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_uint16(packer: *mut tw_packer, value: u16) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `int16_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_int16(packer: *mut tw_packer, value: i16) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `uint32_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_uint32(packer: *mut tw_packer, value: u32) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `int32_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_int32(packer: *mut tw_packer, value: i32) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `uint64_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_uint64(packer: *mut tw_packer, value: u64) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `int64_t`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_int64(packer: *mut tw_packer, value: i64) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `float`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_float(packer: *mut tw_packer, value: f32) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}
/// Packs one `double`.
///
/// # Safety
///
/// As `tw_pack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_double(packer: *mut tw_packer, value: f64) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { pack_scalar(packer, value) }
}

/// Packs an array of `count` elements of `datatype` at `data` as one item
/// (its length travels with it).
///
/// Errors: `TW_ERR_INVALID` (NULL, unknown datatype, misaligned `data`).
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// `packer` is NULL or a live packer handle; `data` is NULL or valid for
/// reads of `count` elements.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_array(
    packer: *mut tw_packer,
    datatype: tw_datatype,
    data: *const c_void,
    count: usize,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let p = unsafe { handle(packer, "packer") }?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let values = unsafe { slice(data.cast::<T>(), count, "data") }?;
            p.packer.pack_slice(values);
            Ok(())
        })
    })
}

/// Packs a NUL-terminated UTF-8 string (without its NUL).
///
/// Errors: `TW_ERR_INVALID` (NULL, not UTF-8).
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// `packer` is NULL or a live packer handle; `text` is NULL or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_string(packer: *mut tw_packer, text: *const c_char) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let p = unsafe { handle(packer, "packer") }?;
        // SAFETY: NULL or NUL-terminated, as the caller promises.
        p.packer.pack_str(unsafe { string(text, "text") }?);
        Ok(())
    })
}

/// Packs `len` untyped bytes as one item.
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// `packer` is NULL or a live packer handle; `data` is NULL or valid for
/// reads of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tw_pack_bytes(
    packer: *mut tw_packer,
    data: *const c_void,
    len: usize,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let p = unsafe { handle(packer, "packer") }?;
        // SAFETY: NULL or valid for `len` bytes, as the caller promises.
        p.packer
            .pack_bytes(unsafe { slice(data.cast::<u8>(), len, "data") }?);
        Ok(())
    })
}

/// Sends the packed message to `to` with `tag` and frees the packer
/// (`*packer` becomes NULL), whether or not the send succeeds; only an
/// invalid `to` or `tag` (`TW_ERR_INVALID`) leaves it to the caller.
///
/// Context: a thread with an endpoint. Errors: as `tw_send`.
///
/// # Safety
///
/// `packer` is NULL or points to NULL or a live packer handle.
#[no_mangle]
pub unsafe extern "C" fn tw_send_packed(
    to: tw_address,
    tag: u32,
    packer: *mut *mut tw_packer,
) -> c_int {
    call(|| {
        let (to, tag) = (destination(to)?, send_tag(tag)?);
        // SAFETY: as the caller promises.
        let p = unsafe { take_handle(packer, "packer") }?
            .ok_or_else(|| Error::invalid("*packer is NULL"))?;
        let payload = p.packer.finish();
        with_endpoint(|ep| Ok(ep.send(to, tag, payload)?))
    })
}

/// Starts reading a received message's items; takes the message
/// (`*message` becomes NULL, freed with the unpacker).
///
/// Errors: `TW_ERR_INVALID` (NULL), `TW_ERR_UNPACK` (the message is
/// opaque bytes, not packed; it is then left to the caller).
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// `message` is NULL or points to NULL or a live message handle;
/// `unpacker` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_unpacker_new(
    message: *mut *mut tw_message,
    unpacker: *mut *mut tw_unpacker,
) -> c_int {
    call(|| {
        non_null(unpacker, "unpacker")?;
        non_null(message, "message")?;
        // SAFETY: non-NULL and valid, as the caller promises.
        let m = unsafe { handle(message.read(), "*message") }?;
        if m.format.encoding.is_none() {
            return Err(UnpackError::NotPacked.into());
        }
        // SAFETY: as the caller promises; given up by it.
        let m = unsafe { take_handle(message, "message") }?.expect("checked non-NULL");
        let u = Payload::from_wire(m.format, m.bytes).unpack()?;
        let u = Box::into_raw(Box::new(tw_unpacker {
            unpacker: u,
            pending: None,
        }));
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { unpacker.write(u) };
        Ok(())
    })
}

/// Frees an unpacker and its message; `*unpacker` becomes NULL (a NULL
/// `*unpacker` is a no-op).
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `unpacker` is NULL or points to NULL or a live unpacker handle.
#[no_mangle]
pub unsafe extern "C" fn tw_unpacker_free(unpacker: *mut *mut tw_unpacker) -> c_int {
    // SAFETY: as the caller promises.
    call(|| unsafe { take_handle(unpacker, "unpacker") }.map(drop))
}

fn no_pending(u: &tw_unpacker) -> Result<()> {
    match u.pending {
        Some(_) => Err(Error::new(
            TwError::TW_ERR_UNPACK,
            "the next item is a string or bytes (read earlier into a buffer too small)",
        )),
        None => Ok(()),
    }
}

/// # Safety
///
/// `unpacker` is NULL or a live unpacker handle; `out` NULL or valid for a
/// write.
unsafe fn unpack_scalar<T: Scalar>(unpacker: *mut tw_unpacker, out: *mut T) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let u = unsafe { handle(unpacker, "unpacker") }?;
        non_null(out, "out")?;
        no_pending(u)?;
        let v = u.unpacker.unpack::<T>()?;
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { out.write(v) };
        Ok(())
    })
}

/// Unpacks one `uint8_t` into `*out`. A failed read (another type next,
/// the end) returns `TW_ERR_UNPACK` and consumes nothing.
///
/// Context: any thread, one at a time per unpacker. Errors:
/// `TW_ERR_INVALID` (NULL), `TW_ERR_UNPACK`.
///
/// # Safety
///
/// `unpacker` is NULL or a live unpacker handle; `out` is NULL or valid for
/// a write (as for every `tw_unpack_*`).
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_uint8(unpacker: *mut tw_unpacker, out: *mut u8) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `int8_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_int8(unpacker: *mut tw_unpacker, out: *mut i8) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `uint16_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_uint16(unpacker: *mut tw_unpacker, out: *mut u16) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `int16_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_int16(unpacker: *mut tw_unpacker, out: *mut i16) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `uint32_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_uint32(unpacker: *mut tw_unpacker, out: *mut u32) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `int32_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_int32(unpacker: *mut tw_unpacker, out: *mut i32) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `uint64_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_uint64(unpacker: *mut tw_unpacker, out: *mut u64) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `int64_t`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_int64(unpacker: *mut tw_unpacker, out: *mut i64) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `float`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_float(unpacker: *mut tw_unpacker, out: *mut f32) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}
/// Unpacks one `double`.
///
/// # Safety
///
/// As `tw_unpack_uint8`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_double(unpacker: *mut tw_unpacker, out: *mut f64) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { unpack_scalar(unpacker, out) }
}

/// Unpacks an array item of `datatype` into `out`, which holds `capacity`
/// elements; `*count` gets the item's element count. An item longer than
/// `capacity` is not read: `TW_ERR_TRUNCATED`, `*count` its length (so
/// `out` NULL with `capacity` 0 asks for the length). Another type next:
/// `TW_ERR_UNPACK`, nothing read.
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// `unpacker` is NULL or a live unpacker handle; `out` is NULL or valid for
/// writes of `capacity` elements; `count` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_array(
    unpacker: *mut tw_unpacker,
    datatype: tw_datatype,
    out: *mut c_void,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let u = unsafe { handle(unpacker, "unpacker") }?;
        non_null(count, "count")?;
        no_pending(u)?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `capacity` elements, as the caller promises.
            let out = unsafe { slice_mut(out.cast::<T>(), capacity, "out") }?;
            // A read of the wrong length consumes nothing and says the
            // item's length (`Unpacker`, rule 4).
            let n = match u.unpacker.unpack_into(out) {
                Ok(()) => capacity,
                Err(UnpackError::LengthMismatch { found, .. }) if found < capacity => {
                    u.unpacker.unpack_into(&mut out[..found])?;
                    found
                }
                Err(UnpackError::LengthMismatch { found, .. }) => {
                    // SAFETY: checked non-NULL; valid as the caller promises.
                    unsafe { count.write(found) };
                    return Err(Error::new(
                        TwError::TW_ERR_TRUNCATED,
                        format!("array of {found} elements, the buffer holds {capacity}; nothing read"),
                    ));
                }
                Err(e) => return Err(e.into()),
            };
            // SAFETY: checked non-NULL; valid as the caller promises.
            unsafe { count.write(n) };
            Ok(())
        })
    })
}

/// Unpacks a string item into `buf` (`capacity` bytes) with a NUL;
/// `*len` gets its length without the NUL. A string that does not fit
/// (`len + 1 > capacity`) is not consumed: `TW_ERR_TRUNCATED`, `*len` its
/// length, and the next call gets it (`buf` NULL with `capacity` 0 asks
/// for the length).
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// `unpacker` is NULL or a live unpacker handle; `buf` is NULL or valid for
/// writes of `capacity` bytes; `len` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_string(
    unpacker: *mut tw_unpacker,
    buf: *mut c_char,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: forwarded from the caller.
    call(|| unsafe { unpack_sized(unpacker, buf.cast(), capacity, len, true) })
}

/// Unpacks a bytes item (`tw_pack_bytes`) into `buf` (`capacity` bytes);
/// `*len` gets its length. One that does not fit is not consumed:
/// `TW_ERR_TRUNCATED`, `*len` its length, and the next call gets it.
///
/// Context: any thread, one at a time per handle.
///
/// # Safety
///
/// As `tw_unpack_string`.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_bytes(
    unpacker: *mut tw_unpacker,
    buf: *mut c_void,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: forwarded from the caller.
    call(|| unsafe { unpack_sized(unpacker, buf.cast(), capacity, len, false) })
}

/// A string (with a NUL after it) or bytes item into `buf`, kept for the
/// next call when it does not fit.
///
/// # Safety
///
/// As `tw_unpack_string`.
unsafe fn unpack_sized(
    unpacker: *mut tw_unpacker,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
    is_string: bool,
) -> Result<()> {
    // SAFETY: NULL or a live handle, as the caller promises.
    let u = unsafe { handle(unpacker, "unpacker") }?;
    non_null(len, "len")?;
    // SAFETY: NULL or valid for `capacity` bytes, as the caller promises.
    let buf = unsafe { slice_mut(buf, capacity, "buf") }?;
    let item = match (u.pending.take(), is_string) {
        (Some(Pending::String(t)), true) => Pending::String(t),
        (Some(Pending::Bytes(b)), false) => Pending::Bytes(b),
        (Some(other), _) => {
            u.pending = Some(other);
            return no_pending(u);
        }
        (None, true) => Pending::String(u.unpacker.unpack_string()?),
        (None, false) => Pending::Bytes(u.unpacker.unpack_bytes()?),
    };
    let (bytes, needed) = match &item {
        Pending::String(t) => (t.as_bytes(), t.len() + 1),
        Pending::Bytes(b) => (&b[..], b.len()),
    };
    // SAFETY: checked non-NULL; valid as the caller promises.
    unsafe { len.write(bytes.len()) };
    if needed > capacity {
        u.pending = Some(item);
        return Err(Error::new(
            TwError::TW_ERR_TRUNCATED,
            format!("an item of {needed} bytes does not fit {capacity}; nothing read"),
        ));
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    if is_string {
        buf[bytes.len()] = 0;
    }
    Ok(())
}

/// Bytes of the message not yet unpacked into `*remaining`.
///
/// Context: any thread. Errors: `TW_ERR_INVALID` (NULL).
///
/// # Safety
///
/// `unpacker` is NULL or a live unpacker handle; `remaining` is NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_unpack_remaining(
    unpacker: *mut tw_unpacker,
    remaining: *mut usize,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let u = unsafe { handle(unpacker, "unpacker") }?;
        let n = u.unpacker.remaining()
            + match &u.pending {
                Some(Pending::String(t)) => t.len(),
                Some(Pending::Bytes(b)) => b.len(),
                None => 0,
            };
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(remaining, "remaining", n) }
    })
}
