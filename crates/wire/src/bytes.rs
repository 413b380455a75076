//! Short bytes kept in place: the payload of a received frame, or a short
//! segment of a payload, without an allocation of its own.
//!
//! Most messages between threads are a few words (a sequence number, a
//! reduction's 8 bytes, a control answer). A vector for each costs an
//! allocation where it is read and a free where it is consumed, often on
//! another thread, where the allocator's per-thread caches miss: measured
//! on the 8-byte message rate, 251 of the receiver's 1,982 instructions per
//! message were `malloc` and `free` (PERFORMANCE-STUDIES.md, "Short
//! payloads in place"). [`FrameBytes`] holds up to [`INLINE_LEN`] bytes in
//! itself and anything longer in a vector, taken over without a copy.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// The most bytes a [`FrameBytes`] holds in itself.
pub const INLINE_LEN: usize = 24;

/// Bytes up to [`INLINE_LEN`] in place, longer ones in a vector.
///
/// ```
/// use threadwire_wire::FrameBytes;
///
/// let short = FrameBytes::copy_from(&7u64.to_le_bytes());
/// assert_eq!(&short[..], &7u64.to_le_bytes());
/// let long = FrameBytes::from(vec![1u8; 100]); // taken over, not copied
/// assert_eq!(long.len(), 100);
/// assert_eq!(short.into_vec(), 7u64.to_le_bytes());
/// ```
#[derive(Clone)]
pub struct FrameBytes(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE_LEN] },
    Heap(Vec<u8>),
}

impl FrameBytes {
    /// No bytes.
    pub const fn new() -> FrameBytes {
        FrameBytes(Repr::Inline {
            len: 0,
            bytes: [0; INLINE_LEN],
        })
    }

    /// A copy of `bytes`: in place when short, else in a new vector
    /// (copied once, not zeroed first).
    pub fn copy_from(bytes: &[u8]) -> FrameBytes {
        FrameBytes::short(bytes.len(), |dst| dst.copy_from_slice(bytes))
            .unwrap_or_else(|| FrameBytes(Repr::Heap(bytes.to_vec())))
    }

    /// The first `len` bytes of `words` (native order), in place; `None`
    /// if `len` is over [`INLINE_LEN`].
    #[inline]
    pub fn from_words(len: usize, words: [u64; INLINE_LEN / 8]) -> Option<FrameBytes> {
        if len > INLINE_LEN {
            return None;
        }
        let mut bytes = [0; INLINE_LEN];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        Some(FrameBytes(Repr::Inline {
            len: len as u8,
            bytes,
        }))
    }

    /// `len` bytes in place, written by `fill` into a zeroed buffer of
    /// that length; `None` (and `fill` not called) if `len` is over
    /// [`INLINE_LEN`].
    #[inline]
    pub fn short(len: usize, fill: impl FnOnce(&mut [u8])) -> Option<FrameBytes> {
        if len > INLINE_LEN {
            return None;
        }
        let mut bytes = [0; INLINE_LEN];
        fill(&mut bytes[..len]);
        Some(FrameBytes(Repr::Inline {
            len: len as u8,
            bytes,
        }))
    }

    /// Keeps the first `len` bytes (all of them if there are fewer).
    pub fn truncate(&mut self, len: usize) {
        match &mut self.0 {
            Repr::Inline { len: have, .. } => *have = (*have).min(len.min(INLINE_LEN) as u8),
            Repr::Heap(v) => v.truncate(len),
        }
    }

    /// Whether the bytes are held in place (no allocation).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// The bytes in a vector: the one held, or a new one for bytes in place.
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Inline { len, bytes } => bytes[..len as usize].to_vec(),
            Repr::Heap(v) => v,
        }
    }
}

impl Default for FrameBytes {
    fn default() -> FrameBytes {
        FrameBytes::new()
    }
}

impl From<Vec<u8>> for FrameBytes {
    /// Takes the vector over, whatever its length (no copy).
    fn from(v: Vec<u8>) -> FrameBytes {
        FrameBytes(Repr::Heap(v))
    }
}

impl From<FrameBytes> for Vec<u8> {
    fn from(b: FrameBytes) -> Vec<u8> {
        b.into_vec()
    }
}

impl Deref for FrameBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Heap(v) => v,
        }
    }
}

impl DerefMut for FrameBytes {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Inline { len, bytes } => &mut bytes[..*len as usize],
            Repr::Heap(v) => v,
        }
    }
}

impl AsRef<[u8]> for FrameBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for FrameBytes {
    fn eq(&self, other: &FrameBytes) -> bool {
        **self == **other
    }
}

impl Eq for FrameBytes {}

impl PartialEq<[u8]> for FrameBytes {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for FrameBytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for FrameBytes {
    fn eq(&self, other: &[u8; N]) -> bool {
        **self == other[..]
    }
}

impl fmt::Debug for FrameBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_bytes_stay_in_place_and_long_ones_are_taken_over() {
        for len in [0, 1, 8, INLINE_LEN] {
            let data: Vec<u8> = (0..len as u8).collect();
            let b = FrameBytes::copy_from(&data);
            assert!(b.is_inline(), "{len} bytes");
            assert_eq!(b, data);
            assert_eq!(b.into_vec(), data);
        }
        let long = vec![3u8; INLINE_LEN + 1];
        let ptr = long.as_ptr();
        let b = FrameBytes::from(long);
        assert!(!b.is_inline());
        let back = b.into_vec();
        assert_eq!(back.as_ptr(), ptr, "no copy");
        assert!(!FrameBytes::copy_from(&[0; INLINE_LEN + 1]).is_inline());
    }

    #[test]
    fn from_words_takes_the_first_bytes() {
        let words = [
            u64::from_ne_bytes(*b"abcdefgh"),
            u64::from_ne_bytes(*b"ijklmnop"),
            0,
        ];
        assert_eq!(FrameBytes::from_words(10, words).unwrap(), *b"abcdefghij");
        assert_eq!(FrameBytes::from_words(0, words).unwrap().len(), 0);
        assert!(FrameBytes::from_words(INLINE_LEN + 1, words).is_none());
    }

    #[test]
    fn short_writes_exactly_the_length() {
        let b = FrameBytes::short(5, |d| d.copy_from_slice(b"hello")).unwrap();
        assert_eq!(&b[..], b"hello");
        assert!(FrameBytes::short(INLINE_LEN + 1, |_| unreachable!()).is_none());
        let mut b = FrameBytes::copy_from(&[9u8; 40]);
        assert_eq!(b, vec![9u8; 40]);
        b.truncate(3);
        assert_eq!(b, [9u8; 3]);
        let mut short = FrameBytes::copy_from(b"hello");
        short.truncate(9);
        assert_eq!(short, *b"hello");
        short.truncate(2);
        assert_eq!(short, *b"he");
    }
}
