//! Addresses, statuses, wildcards, datatypes and operations, and the
//! checked reading of C pointers.

use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, CStr};

/// A thread of the job: `(node, thread)`, printed `n2.t5`.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct tw_address {
    /// The node (process), 0..node count.
    pub node: u32,
    /// The thread within the node; thread 0 is the one that called `tw_init`.
    pub thread: u32,
}

/// What is known of a message: sender, tag and length in bytes.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct tw_status {
    /// The sending thread.
    pub source: tw_address,
    /// The message's tag.
    pub tag: u32,
    /// The message's length in bytes (for `TW_ERR_TRUNCATED`, its real
    /// length, not what was written).
    pub len: usize,
}

/// A wildcard for either field of a source address: `{node, TW_ANY}` is
/// any thread of that node, `{TW_ANY, TW_ANY}` anyone.
pub const TW_ANY: u32 = u32::MAX;
/// Any tag, in receives and probes; not a tag a message may carry.
pub const TW_ANY_TAG: u32 = u32::MAX;

/// A datatype of packed arrays and collectives (`TW_INT32`, ...).
#[allow(non_camel_case_types)]
pub type tw_datatype = c_int;
/// `uint8_t`.
pub const TW_UINT8: tw_datatype = 1;
/// `int8_t`.
pub const TW_INT8: tw_datatype = 2;
/// `uint16_t`.
pub const TW_UINT16: tw_datatype = 3;
/// `int16_t`.
pub const TW_INT16: tw_datatype = 4;
/// `uint32_t`.
pub const TW_UINT32: tw_datatype = 5;
/// `int32_t` (C's `int` on every platform threadwire runs on).
pub const TW_INT32: tw_datatype = 6;
/// `uint64_t`.
pub const TW_UINT64: tw_datatype = 7;
/// `int64_t` (C's `long` on LP64).
pub const TW_INT64: tw_datatype = 8;
/// `float`.
pub const TW_FLOAT: tw_datatype = 9;
/// `double`.
pub const TW_DOUBLE: tw_datatype = 10;

/// A built-in reduction (`TW_SUM`, ...).
#[allow(non_camel_case_types)]
pub type tw_op = c_int;
/// Sum (integers wrap).
pub const TW_SUM: tw_op = 1;
/// Product (integers wrap).
pub const TW_PROD: tw_op = 2;
/// Minimum.
pub const TW_MIN: tw_op = 3;
/// Maximum.
pub const TW_MAX: tw_op = 4;
/// Bitwise and (integers only).
pub const TW_BAND: tw_op = 5;
/// Bitwise or (integers only).
pub const TW_BOR: tw_op = 6;
/// Bitwise exclusive or (integers only).
pub const TW_BXOR: tw_op = 7;
/// Logical and: 1 if both are non-zero, else 0.
pub const TW_LAND: tw_op = 8;
/// Logical or.
pub const TW_LOR: tw_op = 9;
/// Logical exclusive or.
pub const TW_LXOR: tw_op = 10;

/// Runs `$body` with `$T` the Rust type of datatype `$dt`.
macro_rules! with_datatype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::types::TW_UINT8 => {
                type $T = u8;
                $body
            }
            $crate::types::TW_INT8 => {
                type $T = i8;
                $body
            }
            $crate::types::TW_UINT16 => {
                type $T = u16;
                $body
            }
            $crate::types::TW_INT16 => {
                type $T = i16;
                $body
            }
            $crate::types::TW_UINT32 => {
                type $T = u32;
                $body
            }
            $crate::types::TW_INT32 => {
                type $T = i32;
                $body
            }
            $crate::types::TW_UINT64 => {
                type $T = u64;
                $body
            }
            $crate::types::TW_INT64 => {
                type $T = i64;
                $body
            }
            $crate::types::TW_FLOAT => {
                type $T = f32;
                $body
            }
            $crate::types::TW_DOUBLE => {
                type $T = f64;
                $body
            }
            other => Err($crate::error::Error::invalid(format!(
                "unknown datatype {other}"
            ))),
        }
    };
}
pub(crate) use with_datatype;

pub(crate) fn op(op: tw_op) -> Result<tw::Op> {
    Ok(match op {
        TW_SUM => tw::Op::Sum,
        TW_PROD => tw::Op::Product,
        TW_MIN => tw::Op::Min,
        TW_MAX => tw::Op::Max,
        TW_BAND => tw::Op::BitAnd,
        TW_BOR => tw::Op::BitOr,
        TW_BXOR => tw::Op::BitXor,
        TW_LAND => tw::Op::LogicalAnd,
        TW_LOR => tw::Op::LogicalOr,
        TW_LXOR => tw::Op::LogicalXor,
        other => return Err(Error::invalid(format!("unknown operation {other}"))),
    })
}

impl From<tw::Address> for tw_address {
    fn from(a: tw::Address) -> tw_address {
        tw_address {
            node: a.node,
            thread: a.thread,
        }
    }
}

impl From<tw::Status> for tw_status {
    fn from(s: tw::Status) -> tw_status {
        tw_status {
            source: s.source.into(),
            tag: s.tag,
            len: s.len,
        }
    }
}

/// A destination: wildcards are invalid.
pub(crate) fn destination(a: tw_address) -> Result<tw::Address> {
    match a.node == TW_ANY || a.thread == TW_ANY {
        true => Err(Error::invalid(format!(
            "destination {}.{}: a wildcard names no thread",
            a.node, a.thread
        ))),
        false => Ok(tw::Address::new(a.node, a.thread)),
    }
}

/// A source to receive from: an address, `{node, TW_ANY}` or `{TW_ANY, TW_ANY}`.
pub(crate) fn source(a: tw_address) -> Result<tw::Source> {
    match (a.node, a.thread) {
        (TW_ANY, TW_ANY) => Ok(tw::ANY_SOURCE),
        (TW_ANY, _) => Err(Error::invalid(
            "source {TW_ANY, thread}: a thread needs its node",
        )),
        (node, TW_ANY) => Ok(tw::Source::Node(node)),
        (node, thread) => Ok(tw::Source::Thread(tw::Address::new(node, thread))),
    }
}

pub(crate) fn tag_match(tag: u32) -> tw::TagMatch {
    match tag {
        TW_ANY_TAG => tw::ANY_TAG,
        t => tw::TagMatch::Is(t),
    }
}

/// A tag a message may carry.
pub(crate) fn send_tag(tag: u32) -> Result<u32> {
    match tag {
        TW_ANY_TAG => Err(Error::invalid(
            "TW_ANY_TAG is for receives, not a tag to send",
        )),
        t => Ok(t),
    }
}

/// Writes `value` through `out` if it is not NULL (optional outputs).
///
/// # Safety
///
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn write_opt<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, and valid for a write as the caller promises.
        unsafe { out.write(value) }
    }
}

/// Writes `value` through `out`, which must not be NULL.
///
/// # Safety
///
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, what: &str, value: T) -> Result<()> {
    if out.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, and valid for a write as the caller promises.
    unsafe { out.write(value) };
    Ok(())
}

/// Checks an output pointer before the work that will fill it.
pub(crate) fn non_null<T>(p: *const T, what: &str) -> Result<()> {
    match p.is_null() {
        true => Err(Error::invalid(format!("{what} is NULL"))),
        false => Ok(()),
    }
}

fn check_region<T>(p: *const T, len: usize, what: &str) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    if p.is_null() {
        return Err(Error::invalid(format!(
            "{what} is NULL with a length of {len}"
        )));
    }
    if !p.is_aligned() {
        return Err(Error::invalid(format!(
            "{what} is not aligned for its datatype ({} bytes)",
            std::mem::align_of::<T>()
        )));
    }
    match len.checked_mul(std::mem::size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(()),
        _ => Err(Error::invalid(format!(
            "{what}: a length of {len} elements does not fit in memory"
        ))),
    }
}

/// `len` elements at `p` (NULL allowed when `len` is 0).
///
/// # Safety
///
/// `p` is NULL or valid for reads of `len` elements for `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    check_region(p, len, what)?;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: non-NULL, aligned, not too long (checked), and valid for
    // reads of `len` elements as the caller promises.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// `len` writable elements at `p` (NULL allowed when `len` is 0).
///
/// # Safety
///
/// `p` is NULL or valid for reads and writes of `len` elements for `'a`,
/// and not otherwise accessed meanwhile.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, len: usize, what: &str) -> Result<&'a mut [T]> {
    check_region(p, len, what)?;
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: as `slice`, and exclusive as the caller promises.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
///
/// `p` is NULL or a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn string<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    non_null(p, what)?;
    // SAFETY: non-NULL and NUL-terminated as the caller promises.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

/// The object behind a handle.
///
/// # Safety
///
/// `p` is NULL or a live handle of type `T` made by this library, not
/// used by another thread meanwhile.
pub(crate) unsafe fn handle<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    non_null(p, what)?;
    // SAFETY: a live handle, boxed by this library, as the caller promises.
    Ok(unsafe { &mut *p })
}

/// Takes the handle `*slot` back (its box) and sets `*slot` to NULL;
/// `None` when `*slot` is NULL.
///
/// # Safety
///
/// `slot` is NULL or valid for reads and writes, and `*slot` is NULL or a
/// live handle made by this library with `Box::into_raw`.
pub(crate) unsafe fn take_handle<T>(slot: *mut *mut T, what: &str) -> Result<Option<Box<T>>> {
    non_null(slot, what)?;
    // SAFETY: non-NULL and valid as the caller promises.
    let p = unsafe { slot.read() };
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: as above; the handle is given up by the caller.
    unsafe { slot.write(std::ptr::null_mut()) };
    // SAFETY: made by `Box::into_raw` and live, as the caller promises.
    Ok(Some(unsafe { Box::from_raw(p) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_take_wildcards_destinations_do_not() {
        let any = tw_address {
            node: TW_ANY,
            thread: TW_ANY,
        };
        assert_eq!(source(any).unwrap(), tw::ANY_SOURCE);
        let node = tw_address {
            node: 2,
            thread: TW_ANY,
        };
        assert_eq!(source(node).unwrap(), tw::Source::Node(2));
        let thread = tw_address { node: 2, thread: 5 };
        assert_eq!(
            source(thread).unwrap(),
            tw::Source::Thread(tw::Address::new(2, 5))
        );
        assert!(source(tw_address {
            node: TW_ANY,
            thread: 5
        })
        .is_err());
        assert!(destination(any).is_err() && destination(node).is_err());
        assert_eq!(destination(thread).unwrap(), tw::Address::new(2, 5));
        assert!(send_tag(TW_ANY_TAG).is_err());
        assert_eq!(tag_match(TW_ANY_TAG), tw::ANY_TAG);
    }

    #[test]
    fn regions_are_checked_before_use() {
        let words = [0u64; 4];
        // SAFETY: each pointer is NULL, or valid for the length given, or
        // refused by the check before any read.
        unsafe {
            assert!(slice::<u64>(std::ptr::null(), 0, "p").unwrap().is_empty());
            assert!(slice::<u64>(std::ptr::null(), 1, "p").is_err());
            assert_eq!(slice(words.as_ptr(), 4, "p").unwrap().len(), 4);
            let misaligned = words.as_ptr().cast::<u8>().add(1).cast::<u64>();
            assert!(slice(misaligned, 1, "p").is_err());
            assert!(slice(words.as_ptr(), usize::MAX / 4, "p").is_err());
        }
    }
}
