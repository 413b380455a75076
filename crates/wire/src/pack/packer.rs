//! Writing typed items into a payload.

use std::fmt;

use super::scalar::Scalar;
use super::{count_bytes, BYTES_CODE, SLICE_FLAG, STRING_CODE};
use crate::payload::{ByteOrder, Encoding, Format, Payload, Segment};

/// Builds a packed [`Payload`] item by item.
///
/// Methods chain: `packer.pack(1u32).pack_str("x")`. Each item is written in
/// the layout of the `src/pack.rs` module docs, in the byte order its encoding
/// prescribes.
///
/// ```
/// use threadwire_wire::{Encoding, Packer};
///
/// let grid = vec![0.0f64; 1024];
/// let pointer = grid.as_ptr();
///
/// let mut packer = Packer::new(Encoding::InPlace);
/// packer.pack(32u32).pack_vec(grid); // moved, not copied
///
/// let mut unpacker = packer.finish().unpack().unwrap();
/// assert_eq!(unpacker.unpack::<u32>().unwrap(), 32);
/// let grid = unpacker.unpack_vec::<f64>().unwrap();
/// assert_eq!(grid.as_ptr(), pointer);
/// ```
pub struct Packer {
    encoding: Encoding,
    /// Order of values and counts: big-endian for `Portable`, native otherwise.
    order: ByteOrder,
    /// Segments already closed: bytes before an in-place vector, and the vector.
    segments: Vec<Segment>,
    /// Bytes being appended to; becomes a segment when an in-place vector
    /// follows or the packer finishes.
    current: Vec<u8>,
    /// Total length of `segments`.
    closed_len: usize,
}

impl Packer {
    /// A packer writing items in `encoding`.
    pub fn new(encoding: Encoding) -> Packer {
        Packer::with_capacity(encoding, 0)
    }

    /// A packer that reserves `bytes` up front, for callers that know
    /// roughly how large the payload will be.
    pub fn with_capacity(encoding: Encoding, bytes: usize) -> Packer {
        let order = match encoding {
            Encoding::Portable => ByteOrder::Big,
            Encoding::Raw | Encoding::InPlace | Encoding::ReceiverMakesRight => ByteOrder::NATIVE,
        };
        Packer {
            encoding,
            order,
            segments: Vec::new(),
            current: Vec::with_capacity(bytes),
            closed_len: 0,
        }
    }

    /// The encoding this packer writes.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Appends one number.
    pub fn pack<T: Scalar>(&mut self, value: T) -> &mut Self {
        self.current.push(T::CODE);
        self.put_elements(std::slice::from_ref(&value));
        self
    }

    /// Appends a slice of numbers, copying them.
    ///
    /// # Panics
    ///
    /// If the slice has more than `u32::MAX` elements.
    pub fn pack_slice<T: Scalar>(&mut self, values: &[T]) -> &mut Self {
        self.put_header(SLICE_FLAG | T::CODE, values.len());
        self.put_elements(values);
        self
    }

    /// Appends a vector of numbers. Under [`Encoding::InPlace`] the vector
    /// itself becomes part of the payload, with no copy, and a receiver on
    /// the same node gets it back from
    /// [`Unpacker::unpack_vec`](crate::Unpacker::unpack_vec); under the other
    /// encodings this is [`pack_slice`](Packer::pack_slice).
    ///
    /// # Panics
    ///
    /// If the vector has more than `u32::MAX` elements.
    pub fn pack_vec<T: Scalar>(&mut self, values: Vec<T>) -> &mut Self {
        // An empty vector has no heap buffer worth keeping.
        if self.encoding != Encoding::InPlace || values.is_empty() {
            return self.pack_slice(&values);
        }
        self.put_header(SLICE_FLAG | T::CODE, values.len());
        self.close_current();
        self.closed_len += std::mem::size_of_val(values.as_slice());
        self.segments.push(Segment::Owned(Box::new(values)));
        self
    }

    /// Appends a UTF-8 string.
    ///
    /// # Panics
    ///
    /// If the string is longer than `u32::MAX` bytes.
    pub fn pack_str(&mut self, text: &str) -> &mut Self {
        self.put_header(STRING_CODE, text.len());
        self.current.extend_from_slice(text.as_bytes());
        self
    }

    /// Appends an untyped byte string.
    ///
    /// # Panics
    ///
    /// If it is longer than `u32::MAX` bytes.
    pub fn pack_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        self.put_header(BYTES_CODE, bytes.len());
        self.current.extend_from_slice(bytes);
        self
    }

    /// Bytes packed so far.
    pub fn len(&self) -> usize {
        self.closed_len + self.current.len()
    }

    /// Whether nothing has been packed yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The packed payload, tagged with this packer's encoding and byte order.
    pub fn finish(mut self) -> Payload {
        self.close_current();
        let format = Format {
            encoding: Some(self.encoding),
            order: self.order,
        };
        Payload::from_segments(format, self.segments)
    }

    fn put_header(&mut self, code: u8, count: usize) {
        // Four billion elements is 4 GiB of bytes or more: far past any frame
        // a peer accepts, so a caller reaching it has a bug, not bad input.
        let count = u32::try_from(count).expect("item longer than u32::MAX elements");
        self.current.push(code);
        self.current
            .extend_from_slice(&count_bytes(count, self.order));
    }

    fn put_elements<T: Scalar>(&mut self, values: &[T]) {
        if self.order == ByteOrder::NATIVE || std::mem::size_of::<T>() == 1 {
            self.current.extend_from_slice(bytemuck::cast_slice(values));
        } else {
            self.current.reserve(std::mem::size_of_val(values));
            for value in values {
                self.current
                    .extend_from_slice(bytemuck::bytes_of(&value.swap_byte_order()));
            }
        }
    }

    fn close_current(&mut self) {
        if !self.current.is_empty() {
            let bytes = std::mem::take(&mut self.current);
            self.closed_len += bytes.len();
            self.segments.push(Segment::Bytes(bytes));
        }
    }
}

impl fmt::Debug for Packer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packer")
            .field("encoding", &self.encoding)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_vector_is_its_own_segment() {
        let mut packer = Packer::new(Encoding::InPlace);
        packer.pack(1u8).pack_vec(vec![7u32; 3]).pack(2u8);
        assert_eq!(packer.len(), 2 + 5 + 12 + 2);
        let payload = packer.finish();
        let lengths: Vec<usize> = payload.segments().map(<[u8]>::len).collect();
        assert_eq!(lengths, [2 + 5, 12, 2]);
    }

    #[test]
    fn raw_and_in_place_write_the_same_bytes() {
        let mut raw = Packer::new(Encoding::Raw);
        let mut in_place = Packer::new(Encoding::InPlace);
        raw.pack(3i16).pack_vec(vec![1.0f32, 2.0]).pack_str("z");
        in_place
            .pack(3i16)
            .pack_vec(vec![1.0f32, 2.0])
            .pack_str("z");
        assert_eq!(raw.finish().into_vec(), in_place.finish().into_vec());
    }

    #[test]
    fn portable_is_big_endian() {
        let mut packer = Packer::new(Encoding::Portable);
        packer.pack(0x0102_0304u32);
        let payload = packer.finish();
        assert_eq!(payload.format().order, ByteOrder::Big);
        assert_eq!(payload.into_vec(), [5, 1, 2, 3, 4]);
    }

    #[test]
    fn empty_packer_finishes_to_empty_payload() {
        let packer = Packer::new(Encoding::Raw);
        assert!(packer.is_empty());
        let payload = packer.finish();
        assert!(payload.is_empty());
        assert_eq!(payload.format().encoding, Some(Encoding::Raw));
    }
}
