//! Reading typed items back out of a payload, under the rules for untrusted
//! bytes listed in the `pack` module docs.

use std::fmt;
use std::mem::size_of;

use super::scalar::{swap_all, Scalar};
use super::{item_name, UnpackError, BYTES_CODE, COUNT_LEN, SLICE_FLAG, STRING_CODE};
use crate::payload::{ByteOrder, Encoding, Format, Payload, Segment};

/// Reads the items of a packed [`Payload`] in the order they were packed.
///
/// Each read checks the item's code first, so reading a `u32` where an `f32`
/// was packed is an [`UnpackError::TypeMismatch`], not garbage. A failed read
/// consumes nothing.
///
/// ```
/// use threadwire_wire::{Encoding, Packer, UnpackError};
///
/// let mut packer = Packer::new(Encoding::ReceiverMakesRight);
/// packer.pack_slice(&[1i32, 2, 3]);
/// let mut unpacker = packer.finish().unpack().unwrap();
///
/// let mut wrong = [0i32; 2];
/// assert_eq!(
///     unpacker.unpack_into(&mut wrong),
///     Err(UnpackError::LengthMismatch { expected: 2, found: 3 })
/// );
/// let mut right = [0i32; 3];
/// unpacker.unpack_into(&mut right).unwrap();
/// assert_eq!(right, [1, 2, 3]);
/// ```
pub struct Unpacker {
    format: Format,
    /// The payload's segments; an in-place vector handed back to the caller
    /// leaves an empty `Vec` in its segment, behind the cursor.
    segments: Vec<Segment>,
    cursor: Cursor,
}

/// A read position. Kept `Copy` so that a failed read can put it back.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    /// Index of the segment being read. Never points at a fully read segment
    /// unless it is past the last one, so "at the start of an in-place
    /// segment" is simply `offset == 0`.
    segment: usize,
    /// Bytes already read from that segment.
    offset: usize,
    /// Bytes left in the whole payload.
    remaining: usize,
}

impl Unpacker {
    /// Starts reading `payload` from its first item.
    ///
    /// # Errors
    ///
    /// [`UnpackError::NotPacked`] for an opaque payload;
    /// [`UnpackError::ForeignByteOrder`] for `Raw` or `InPlace` data tagged
    /// with the other byte order, which these encodings do not convert.
    pub fn new(payload: Payload) -> Result<Unpacker, UnpackError> {
        let format = payload.format();
        match format.encoding {
            None => return Err(UnpackError::NotPacked),
            Some(Encoding::Raw | Encoding::InPlace) if format.order != ByteOrder::NATIVE => {
                return Err(UnpackError::ForeignByteOrder {
                    found: format.order,
                })
            }
            // Portable is converted by the order its format names, like
            // ReceiverMakesRight: the tag, not the encoding, is the truth
            // about the bytes, and a packer always tags Portable big-endian.
            Some(_) => {}
        }
        let remaining = payload.len();
        let (format, segments) = payload.into_segments();
        Ok(Unpacker {
            format,
            segments,
            cursor: Cursor {
                segment: 0,
                offset: 0,
                remaining,
            },
        })
    }

    /// Reads one number.
    ///
    /// # Errors
    ///
    /// [`TypeMismatch`](UnpackError::TypeMismatch) or
    /// [`UnknownCode`](UnpackError::UnknownCode) if the next item is not a
    /// `T`; [`Truncated`](UnpackError::Truncated) if the payload ends early.
    pub fn unpack<T: Scalar>(&mut self) -> Result<T, UnpackError> {
        self.attempt(|unpacker| {
            unpacker.take_code(T::CODE, T::NAME)?;
            let mut value = T::zeroed();
            unpacker.read_exact(bytemuck::bytes_of_mut(&mut value))?;
            Ok(if unpacker.is_foreign() {
                value.swap_byte_order()
            } else {
                value
            })
        })
    }

    /// Reads a slice of numbers into a new vector. If the payload was packed
    /// in place on this node, this is the packer's own vector, not a copy.
    ///
    /// # Errors
    ///
    /// [`TypeMismatch`](UnpackError::TypeMismatch) or
    /// [`UnknownCode`](UnpackError::UnknownCode) if the next item is not a
    /// slice of `T`; [`Truncated`](UnpackError::Truncated) if its count
    /// promises more than the payload holds (checked before allocating);
    /// [`TooLong`](UnpackError::TooLong) if it could not fit in memory.
    pub fn unpack_vec<T: Scalar>(&mut self) -> Result<Vec<T>, UnpackError> {
        self.attempt(|unpacker| {
            let count = unpacker.take_header(SLICE_FLAG | T::CODE, T::SLICE_NAME)?;
            let len = unpacker.check_body::<T>(count)?;
            if let Some(values) = unpacker.take_owned::<T>(len) {
                return Ok(values);
            }
            let mut values = vec![T::zeroed(); count];
            unpacker.read_elements(&mut values)?;
            Ok(values)
        })
    }

    /// Reads a slice of numbers into `out`, which must have exactly the
    /// item's element count.
    ///
    /// # Errors
    ///
    /// As [`unpack_vec`](Unpacker::unpack_vec), and
    /// [`LengthMismatch`](UnpackError::LengthMismatch) if `out.len()` is not
    /// the item's count; `out` is untouched on any error.
    pub fn unpack_into<T: Scalar>(&mut self, out: &mut [T]) -> Result<(), UnpackError> {
        self.attempt(|unpacker| {
            let count = unpacker.take_header(SLICE_FLAG | T::CODE, T::SLICE_NAME)?;
            if count != out.len() {
                return Err(UnpackError::LengthMismatch {
                    expected: out.len(),
                    found: count,
                });
            }
            unpacker.read_elements(out)
        })
    }

    /// Reads a UTF-8 string.
    ///
    /// # Errors
    ///
    /// [`InvalidUtf8`](UnpackError::InvalidUtf8) if its bytes are not UTF-8;
    /// otherwise as [`unpack_bytes`](Unpacker::unpack_bytes).
    pub fn unpack_string(&mut self) -> Result<String, UnpackError> {
        self.attempt(|unpacker| {
            let bytes = unpacker.read_byte_item(STRING_CODE, "string")?;
            String::from_utf8(bytes).map_err(|_| UnpackError::InvalidUtf8)
        })
    }

    /// Reads an untyped byte string.
    ///
    /// # Errors
    ///
    /// [`TypeMismatch`](UnpackError::TypeMismatch) or
    /// [`UnknownCode`](UnpackError::UnknownCode) if the next item is not a
    /// byte string; [`Truncated`](UnpackError::Truncated) if the payload
    /// ends early.
    pub fn unpack_bytes(&mut self) -> Result<Vec<u8>, UnpackError> {
        self.attempt(|unpacker| unpacker.read_byte_item(BYTES_CODE, "bytes"))
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.cursor.remaining
    }

    /// Whether every item has been read.
    pub fn is_done(&self) -> bool {
        self.cursor.remaining == 0
    }

    /// Whether values must be byte-swapped: the payload's order is not ours.
    fn is_foreign(&self) -> bool {
        self.format.order != ByteOrder::NATIVE
    }

    /// Runs one item's read; on failure, rewinds to where it started.
    fn attempt<R>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<R, UnpackError>,
    ) -> Result<R, UnpackError> {
        let start = self.cursor;
        let result = read(self);
        if result.is_err() {
            self.cursor = start;
        }
        result
    }

    /// Consumes the code byte if it is `code`; `expected` names the item
    /// for the error otherwise.
    fn take_code(&mut self, code: u8, expected: &'static str) -> Result<(), UnpackError> {
        let mut byte = [0u8];
        self.read_exact(&mut byte)?;
        let [found] = byte;
        if found == code {
            return Ok(());
        }
        Err(match item_name(found) {
            Some(found) => UnpackError::TypeMismatch { expected, found },
            None => UnpackError::UnknownCode {
                expected,
                code: found,
            },
        })
    }

    /// Consumes a code and an element count; returns the count.
    fn take_header(&mut self, code: u8, expected: &'static str) -> Result<usize, UnpackError> {
        self.take_code(code, expected)?;
        let mut bytes = [0u8; COUNT_LEN];
        self.read_exact(&mut bytes)?;
        let count = match self.format.order {
            ByteOrder::Little => u32::from_le_bytes(bytes),
            ByteOrder::Big => u32::from_be_bytes(bytes),
        };
        usize::try_from(count).map_err(|_| UnpackError::TooLong {
            count: count.into(),
        })
    }

    /// The byte length of `count` elements of `T`, if the payload holds them.
    fn check_body<T: Scalar>(&self, count: usize) -> Result<usize, UnpackError> {
        let needed = count
            .checked_mul(size_of::<T>())
            .ok_or(UnpackError::TooLong {
                count: count as u64,
            })?;
        if needed > self.cursor.remaining {
            return Err(UnpackError::Truncated {
                needed,
                available: self.cursor.remaining,
            });
        }
        Ok(needed)
    }

    fn read_byte_item(&mut self, code: u8, expected: &'static str) -> Result<Vec<u8>, UnpackError> {
        let count = self.take_header(code, expected)?;
        self.check_body::<u8>(count)?;
        let mut bytes = vec![0u8; count];
        self.read_exact(&mut bytes)?;
        Ok(bytes)
    }

    /// Fills `out` with the next `out.len()` elements, in native order.
    fn read_elements<T: Scalar>(&mut self, out: &mut [T]) -> Result<(), UnpackError> {
        self.read_exact(bytemuck::cast_slice_mut(out))?;
        if self.is_foreign() {
            swap_all(out);
        }
        Ok(())
    }

    /// If the cursor stands at the start of an in-place segment holding a
    /// `Vec<T>` of exactly `len` bytes, takes that vector and steps past it.
    fn take_owned<T: Scalar>(&mut self, len: usize) -> Option<Vec<T>> {
        if self.cursor.offset != 0 || len == 0 {
            return None;
        }
        let Some(Segment::Owned(data)) = self.segments.get_mut(self.cursor.segment) else {
            return None;
        };
        let values = data.as_any_mut().downcast_mut::<Vec<T>>()?;
        if size_of::<T>() * values.len() != len {
            return None;
        }
        // In-place data is native by construction (`new` refuses foreign
        // raw and in-place payloads), so it needs no swap.
        let values = std::mem::take(values);
        self.cursor.segment += 1;
        self.cursor.remaining -= len;
        Some(values)
    }

    /// Copies the next `out.len()` bytes into `out`, across segments.
    fn read_exact(&mut self, out: &mut [u8]) -> Result<(), UnpackError> {
        if out.len() > self.cursor.remaining {
            return Err(UnpackError::Truncated {
                needed: out.len(),
                available: self.cursor.remaining,
            });
        }
        let mut filled = 0;
        while filled < out.len() {
            let segment = self.segments[self.cursor.segment].as_bytes();
            let available = &segment[self.cursor.offset..];
            let n = available.len().min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&available[..n]);
            filled += n;
            self.cursor.offset += n;
            if self.cursor.offset == segment.len() {
                self.cursor.segment += 1;
                self.cursor.offset = 0;
            }
        }
        self.cursor.remaining -= out.len();
        Ok(())
    }
}

impl fmt::Debug for Unpacker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unpacker")
            .field("format", &self.format)
            .field("remaining", &self.cursor.remaining)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::Packer;

    #[test]
    fn failed_read_consumes_nothing() {
        let mut packer = Packer::new(Encoding::Raw);
        packer.pack(5u32);
        let mut unpacker = packer.finish().unpack().unwrap();
        let before = unpacker.remaining();
        assert!(matches!(
            unpacker.unpack::<f32>(),
            Err(UnpackError::TypeMismatch {
                expected: "f32",
                found: "u32"
            })
        ));
        assert_eq!(unpacker.remaining(), before);
        assert_eq!(unpacker.unpack::<u32>(), Ok(5));
        assert!(unpacker.is_done());
    }

    #[test]
    fn reads_cross_segment_boundaries() {
        // The cursor walks Bytes → Owned → Bytes; reading the in-place item
        // with unpack_into forces the copying path through the Owned segment.
        let mut packer = Packer::new(Encoding::InPlace);
        packer.pack(1u8).pack_vec(vec![10u16, 20, 30]).pack(2u8);
        let mut unpacker = packer.finish().unpack().unwrap();
        assert_eq!(unpacker.unpack::<u8>(), Ok(1));
        let mut out = [0u16; 3];
        unpacker.unpack_into(&mut out).unwrap();
        assert_eq!(out, [10, 20, 30]);
        assert_eq!(unpacker.unpack::<u8>(), Ok(2));
        assert!(unpacker.is_done());
    }

    #[test]
    fn owned_vector_of_another_type_is_copied_not_taken() {
        // Only reachable through a packer bug, but the downcast must not be
        // trusted blindly: the header says [u32], the segment holds Vec<i32>.
        let header = {
            let mut bytes = vec![SLICE_FLAG | u32::CODE];
            bytes.extend_from_slice(&2u32.to_ne_bytes());
            bytes
        };
        let segments = vec![
            Segment::Bytes(header),
            Segment::Owned(Box::new(vec![7i32, 8])),
        ];
        let format = Format {
            encoding: Some(Encoding::InPlace),
            order: ByteOrder::NATIVE,
        };
        let payload = Payload::from_segments(format, segments);
        let mut unpacker = payload.unpack().unwrap();
        assert_eq!(unpacker.unpack_vec::<u32>(), Ok(vec![7, 8]));
        assert!(unpacker.is_done());
    }
}
