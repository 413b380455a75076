//! Payloads: the bytes a message carries, and the format byte that says how
//! to read them.
//!
//! A [`Payload`] is either *opaque* (bytes the runtime never looks into) or
//! *packed* by a [`Packer`] in one of four [`Encoding`]s. Its
//! [`Format`] travels in every frame header as one byte.
//!
//! Inside a node a payload is a list of segments rather than one buffer, so
//! that an in-place vector can ride along without being copied: the item
//! header sits in a byte segment and the caller's `Vec<T>` is the next
//! segment, owned as it is. [`Payload::segments`] hands those pieces to a
//! vectored write when the payload leaves the node; on the far side it
//! arrives as one buffer through [`Payload::from_wire`].

use smallvec::SmallVec;
use std::any::Any;
use std::fmt;

use crate::bytes::FrameBytes;
use crate::pack::{Packer, Scalar, UnpackError, Unpacker};

/// Byte order of typed data in a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Least significant byte first (x86-64, AArch64 as usually configured).
    Little,
    /// Most significant byte first; the order [`Encoding::Portable`] always uses.
    Big,
}

impl ByteOrder {
    /// The byte order of the machine this code runs on.
    #[cfg(target_endian = "little")]
    pub const NATIVE: ByteOrder = ByteOrder::Little;
    /// The byte order of the machine this code runs on.
    #[cfg(target_endian = "big")]
    pub const NATIVE: ByteOrder = ByteOrder::Big;

    /// The other byte order: what a machine of the opposite endianness uses.
    pub const fn opposite(self) -> ByteOrder {
        match self {
            ByteOrder::Little => ByteOrder::Big,
            ByteOrder::Big => ByteOrder::Little,
        }
    }
}

/// How a payload's typed items are laid out.
///
/// The item layout itself (type codes, counts) is the same for all four; they
/// differ in the byte order of the values and in who pays for conversion. See
/// the item layout table in the module docs of `src/pack.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The sender's native bytes, no conversion. Cheapest, but only correct
    /// between machines of the same byte order: unpacking data tagged with a
    /// foreign byte order is refused with
    /// [`UnpackError::ForeignByteOrder`].
    Raw,
    /// XDR-style: always big-endian, so it works between any two machines at
    /// the price of a byte swap on each little-endian end.
    Portable,
    /// Like [`Raw`](Encoding::Raw), but [`Packer::pack_vec`] takes ownership
    /// of the caller's `Vec<T>` instead of copying it; when the payload stays
    /// on the node, [`Unpacker::unpack_vec`] hands that very `Vec` back.
    InPlace,
    /// The sender's native bytes, tagged with its byte order; the receiver
    /// converts only when its own order differs, so like machines never swap.
    ReceiverMakesRight,
}

impl Encoding {
    /// Every encoding, in the order of their format-byte values.
    pub const ALL: [Encoding; 4] = [
        Encoding::Raw,
        Encoding::Portable,
        Encoding::InPlace,
        Encoding::ReceiverMakesRight,
    ];

    /// The value of bits 0..=2 of the format byte; 0 is reserved for opaque.
    const fn code(self) -> u8 {
        match self {
            Encoding::Raw => 1,
            Encoding::Portable => 2,
            Encoding::InPlace => 3,
            Encoding::ReceiverMakesRight => 4,
        }
    }
}

/// The format byte carried in every frame header: whether the payload is
/// packed, in which encoding, and the byte order of its typed data.
///
/// | bits | meaning |
/// |---|---|
/// | 0..=2 | encoding: 0 opaque, 1 raw, 2 portable, 3 in-place, 4 receiver-makes-right; 5..=7 are invalid |
/// | 3..=6 | reserved, always 0 |
/// | 7 | byte order of the typed data: 0 little-endian, 1 big-endian |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Format {
    /// How the payload was packed; `None` for opaque bytes.
    pub encoding: Option<Encoding>,
    /// Byte order of the typed data (element counts included).
    pub order: ByteOrder,
}

impl Format {
    /// Opaque bytes in native order: what [`Payload::from_vec`] produces.
    pub const OPAQUE: Format = Format {
        encoding: None,
        order: ByteOrder::NATIVE,
    };

    const ENCODING_MASK: u8 = 0b0000_0111;
    const RESERVED_MASK: u8 = 0b0111_1000;
    const BIG_ENDIAN_BIT: u8 = 0b1000_0000;

    /// The byte written into frame headers (layout in the table above).
    pub fn to_byte(self) -> u8 {
        let encoding = self.encoding.map_or(0, Encoding::code);
        match self.order {
            ByteOrder::Little => encoding,
            ByteOrder::Big => encoding | Self::BIG_ENDIAN_BIT,
        }
    }

    /// Parses a format byte received from the network.
    ///
    /// # Errors
    ///
    /// [`FormatError::ReservedBits`] if any of bits 3..=6 is set,
    /// [`FormatError::UnknownEncoding`] if bits 0..=2 hold 5, 6 or 7.
    pub fn from_byte(byte: u8) -> Result<Format, FormatError> {
        if byte & Self::RESERVED_MASK != 0 {
            return Err(FormatError::ReservedBits { byte });
        }
        let encoding = match byte & Self::ENCODING_MASK {
            0 => None,
            1 => Some(Encoding::Raw),
            2 => Some(Encoding::Portable),
            3 => Some(Encoding::InPlace),
            4 => Some(Encoding::ReceiverMakesRight),
            value => return Err(FormatError::UnknownEncoding { byte, value }),
        };
        let order = if byte & Self::BIG_ENDIAN_BIT != 0 {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        Ok(Format { encoding, order })
    }
}

/// Why a format byte from the network was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// One of the reserved bits 3..=6 is set; a newer peer, or corruption.
    #[error("format byte {byte:#04x} sets reserved bits")]
    ReservedBits {
        /// The byte as received.
        byte: u8,
    },
    /// Bits 0..=2 name no known encoding.
    #[error("format byte {byte:#04x} names unknown encoding {value}")]
    UnknownEncoding {
        /// The byte as received.
        byte: u8,
        /// The value of bits 0..=2.
        value: u8,
    },
}

/// Typed data a payload owns without having copied it: the caller's `Vec<T>`
/// handed over by [`Packer::pack_vec`] under [`Encoding::InPlace`].
///
/// `Sync` as well as `Send` so that a finished payload can be shared by
/// reference, e.g. by threads that write the same broadcast to several peers.
pub(crate) trait OwnedData: Send + Sync {
    /// The data's native-order bytes.
    fn as_bytes(&self) -> &[u8];
    /// Lets the unpacker recover the concrete `Vec<T>` by downcasting.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Scalar> OwnedData for Vec<T> {
    fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Bytes a payload refers to without owning them ([`Payload::borrowed`]),
/// and what to call once nothing refers to them any more
/// ([`Payload::borrowed_until`]).
struct Borrowed {
    ptr: *const u8,
    len: usize,
    /// Set when the payload is dropped without having been delivered
    /// ([`Payload::mark_undelivered`]).
    undelivered: bool,
    released: std::sync::Mutex<Option<Released>>,
}

/// What a borrowed payload calls when it is gone: with `true` when it was
/// delivered (or simply dropped), `false` when a channel discarded it
/// unwritten.
pub type Released = Box<dyn FnOnce(bool) + Send>;

impl Drop for Borrowed {
    fn drop(&mut self) {
        let released = self
            .released
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(released) = released {
            released(!self.undelivered);
        }
    }
}

// SAFETY: read-only bytes that `Payload::borrowed`'s caller keeps valid and
// unchanged for the payload's life, from any thread.
unsafe impl Send for Borrowed {}
// SAFETY: as above; nothing writes through the pointer.
unsafe impl Sync for Borrowed {}

impl OwnedData for Borrowed {
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: valid and unchanged for the payload's life
        // (`Payload::borrowed`'s contract).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// One contiguous piece of a payload.
pub(crate) enum Segment {
    /// Bytes built by a packer or received from the network.
    Bytes(Vec<u8>),
    /// A caller's vector, kept as it was handed over.
    Owned(Box<dyn OwnedData>),
    /// Short bytes in place ([`FrameBytes`], never a vector): a short
    /// message built from a slice or received needs no allocation.
    Short(FrameBytes),
}

impl Segment {
    /// The segment's bytes, whatever owns them.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Segment::Bytes(bytes) => bytes,
            Segment::Owned(data) => data.as_bytes(),
            Segment::Short(bytes) => bytes,
        }
    }
}

/// What a message carries: opaque bytes, or typed items packed by a
/// [`Packer`], together with their [`Format`].
///
/// Building one from a `Vec<u8>` never copies; building one from a borrowed
/// slice or string does.
///
/// ```
/// use threadwire_wire::{Format, Payload};
///
/// let payload = Payload::from("hello");
/// assert_eq!(payload.format(), Format::OPAQUE);
/// assert_eq!(payload.into_vec(), b"hello");
/// ```
pub struct Payload {
    format: Format,
    /// Never holds an empty segment, so that a single `Bytes` segment means
    /// the payload is contiguous and `into_vec` can hand it out as it is.
    /// Inline when one: a received or `Vec`-built payload (every message
    /// between nodes) needs no second allocation.
    segments: SmallVec<[Segment; 1]>,
    /// Sum of the segments' lengths, kept because frame headers ask for it
    /// on every send.
    len: usize,
}

impl Payload {
    /// Opaque bytes, taken without copying.
    pub fn from_vec(bytes: Vec<u8>) -> Payload {
        Payload::from_wire(Format::OPAQUE, bytes)
    }

    /// A payload as received from the network: the format byte from the
    /// frame header (see [`Format::from_byte`]) and the bytes that followed.
    /// The bytes may be a vector (taken over) or [`FrameBytes`] (short
    /// ones stay in place, with no allocation).
    pub fn from_wire(format: Format, bytes: impl Into<FrameBytes>) -> Payload {
        let bytes = bytes.into();
        let len = bytes.len();
        let segments = if len == 0 {
            SmallVec::new()
        } else if bytes.is_inline() {
            smallvec::smallvec![Segment::Short(bytes)]
        } else {
            smallvec::smallvec![Segment::Bytes(bytes.into_vec())]
        };
        Payload {
            format,
            segments,
            len,
        }
    }

    pub(crate) fn from_segments(format: Format, mut segments: Vec<Segment>) -> Payload {
        segments.retain(|segment| !segment.as_bytes().is_empty());
        let len = segments.iter().map(|s| s.as_bytes().len()).sum();
        Payload {
            format,
            segments: SmallVec::from_vec(segments),
            len,
        }
    }

    /// Opaque bytes the payload refers to instead of copying them: for a
    /// runtime that sends them and waits until nothing reads them any more.
    ///
    /// # Safety
    ///
    /// `bytes` must stay valid and unchanged until the payload and every
    /// slice of its [`segments`](Self::segments) are gone.
    pub unsafe fn borrowed(bytes: &[u8]) -> Payload {
        // SAFETY: the caller's contract, passed on.
        unsafe { Payload::borrowed_until(bytes, Box::new(|_| {})) }
    }

    /// [`borrowed`](Self::borrowed), calling `released` when the payload
    /// is gone (dropped wherever it went: written out, queued and then
    /// discarded, or given back), so that the owner of the bytes can wait
    /// for that. `released` learns whether the bytes were delivered: it
    /// gets `false` when the payload was
    /// [marked undelivered](Self::mark_undelivered) before it was dropped.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU8, Ordering};
    /// use std::sync::Arc;
    /// use threadwire_wire::Payload;
    ///
    /// let bytes = vec![7u8; 64];
    /// let seen = Arc::new(AtomicU8::new(0));
    /// let on_release = seen.clone();
    /// // SAFETY: `bytes` outlives the payload, dropped below.
    /// let mut payload = unsafe {
    ///     Payload::borrowed_until(&bytes, Box::new(move |delivered| {
    ///         on_release.store(1 + delivered as u8, Ordering::SeqCst)
    ///     }))
    /// };
    /// payload.mark_undelivered();
    /// drop(payload);
    /// assert_eq!(seen.load(Ordering::SeqCst), 1); // released, not delivered
    /// ```
    ///
    /// # Safety
    ///
    /// As for [`borrowed`](Self::borrowed): `bytes` must stay valid and
    /// unchanged until `released` has been called.
    pub unsafe fn borrowed_until(bytes: &[u8], released: Released) -> Payload {
        let segment = Segment::Owned(Box::new(Borrowed {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            undelivered: false,
            released: std::sync::Mutex::new(Some(released)),
        }));
        Payload::from_segments(Format::OPAQUE, vec![segment])
    }

    /// Marks the payload as not delivered, for a channel about to drop it
    /// unwritten (its connection closed): the owner of borrowed bytes
    /// ([`borrowed_until`](Self::borrowed_until)) learns that they never
    /// left. Does nothing to bytes the payload owns.
    pub fn mark_undelivered(&mut self) {
        for segment in &mut self.segments {
            if let Segment::Owned(data) = segment {
                if let Some(borrowed) = data.as_any_mut().downcast_mut::<Borrowed>() {
                    borrowed.undelivered = true;
                }
            }
        }
    }

    /// Appends `bytes` as one more segment, without copying what is there
    /// (a multicast frame's list of threads goes after the data this way).
    pub fn push_bytes(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.len += bytes.len();
            self.segments.push(Segment::Bytes(bytes));
        }
    }

    pub(crate) fn into_segments(self) -> (Format, Vec<Segment>) {
        (self.format, self.segments.into_vec())
    }

    /// How the payload is to be read; goes into the frame header.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Length in bytes, as it will be on the wire.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the payload has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The payload's bytes as one or more non-empty slices, in order, for a
    /// vectored write. Concatenated they equal [`to_vec`](Payload::to_vec).
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> {
        self.segments.iter().map(Segment::as_bytes)
    }

    /// The payload's bytes in one vector. Does not copy when the payload is a
    /// single byte buffer (anything opaque or received from the network);
    /// copies to join the segments of a packed in-place payload.
    pub fn into_vec(mut self) -> Vec<u8> {
        if let [Segment::Bytes(_)] = self.segments.as_slice() {
            if let Some(Segment::Bytes(bytes)) = self.segments.pop() {
                return bytes;
            }
        }
        self.to_vec()
    }

    /// Copies the payload's first bytes into `buf`, as many as fit: the
    /// number copied.
    #[inline]
    pub fn copy_to(&self, buf: &mut [u8]) -> usize {
        if let [one] = self.segments.as_slice() {
            let bytes = one.as_bytes();
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            return n;
        }
        let mut at = 0;
        for segment in self.segments() {
            let n = segment.len().min(buf.len() - at);
            buf[at..at + n].copy_from_slice(&segment[..n]);
            at += n;
        }
        at
    }

    /// A copy of the payload's bytes in one vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len);
        for segment in self.segments() {
            bytes.extend_from_slice(segment);
        }
        bytes
    }

    /// Starts reading typed items; the same as [`Unpacker::new`].
    ///
    /// # Errors
    ///
    /// [`UnpackError::NotPacked`] for an opaque payload,
    /// [`UnpackError::ForeignByteOrder`] for raw or in-place data from a
    /// machine of the other byte order.
    pub fn unpack(self) -> Result<Unpacker, UnpackError> {
        Unpacker::new(self)
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The bytes can be megabytes; what a reader of a log wants is the shape.
        f.debug_struct("Payload")
            .field("format", &self.format)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Payload {
        Payload::from_vec(bytes)
    }
}

impl From<&[u8]> for Payload {
    /// A copy; short bytes ([`INLINE_LEN`](crate::INLINE_LEN) at most) are
    /// held in place, with no allocation.
    fn from(bytes: &[u8]) -> Payload {
        Payload::from_wire(Format::OPAQUE, FrameBytes::copy_from(bytes))
    }
}

impl From<&Vec<u8>> for Payload {
    fn from(bytes: &Vec<u8>) -> Payload {
        Payload::from_vec(bytes.clone())
    }
}

impl From<&str> for Payload {
    fn from(text: &str) -> Payload {
        Payload::from_vec(text.as_bytes().to_vec())
    }
}

impl From<String> for Payload {
    fn from(text: String) -> Payload {
        Payload::from_vec(text.into_bytes())
    }
}

impl From<Packer> for Payload {
    fn from(packer: Packer) -> Payload {
        packer.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_byte_round_trips_every_format() {
        let encodings = std::iter::once(None).chain(Encoding::ALL.map(Some));
        for encoding in encodings {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let format = Format { encoding, order };
                assert_eq!(Format::from_byte(format.to_byte()), Ok(format));
            }
        }
    }

    #[test]
    fn format_byte_values_are_the_documented_ones() {
        let raw_big = Format {
            encoding: Some(Encoding::Raw),
            order: ByteOrder::Big,
        };
        assert_eq!(raw_big.to_byte(), 0x81);
        let rmr_little = Format {
            encoding: Some(Encoding::ReceiverMakesRight),
            order: ByteOrder::Little,
        };
        assert_eq!(rmr_little.to_byte(), 0x04);
    }

    #[test]
    fn payload_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Payload>();
    }

    #[test]
    fn into_vec_of_a_single_buffer_does_not_copy() {
        let bytes = vec![1u8, 2, 3];
        let pointer = bytes.as_ptr();
        let out = Payload::from_vec(bytes).into_vec();
        assert_eq!(out.as_ptr(), pointer);
    }

    #[test]
    fn copy_to_copies_what_fits() {
        let mut p = Payload::from(&b"abc"[..]);
        p.push_bytes(b"defgh".to_vec());
        let mut buf = [0u8; 6];
        assert_eq!(p.copy_to(&mut buf), 6);
        assert_eq!(&buf, b"abcdef");
        let mut big = [0u8; 10];
        assert_eq!(Payload::from(&b"xy"[..]).copy_to(&mut big), 2);
        assert_eq!(&big[..3], b"xy\0");
    }

    #[test]
    fn empty_payload_has_no_segments() {
        let payload = Payload::from_vec(Vec::new());
        assert!(payload.is_empty());
        assert_eq!(payload.segments().count(), 0);
        assert!(payload.into_vec().is_empty());
    }

    #[test]
    fn debug_shows_shape_not_bytes() {
        let text = format!("{:?}", Payload::from("secret"));
        assert!(text.contains("len: 6"), "{text}");
        assert!(!text.contains("115"), "{text}");
    }
}
