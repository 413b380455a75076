//! The memory a ring lives in, and the only code that touches it.
//!
//! Every access is an atomic operation on an aligned 8-byte word (or the
//! 4-byte sleeping flag): the peer process may write anything at any time,
//! and an atomic access of a word it scribbles over yields some value, never
//! undefined behaviour. Record bytes go through relaxed word accesses
//! ([`RingMemory::load_data`], [`RingMemory::store_data`]); the slot
//! sequence words order them.
//!
//! Under `--cfg loom` the memory is a heap block of loom atomics for the
//! control and sequence words and loom cells for the record words, so that
//! a model checks both the protocol's orderings and that no record word is
//! ever read while it is being written.

#[cfg(not(loom))]
use crate::loom::Ordering;
use crate::loom::{AtomicU32, AtomicU64};

/// Memory for a ring: a raw mapping shared with another process or, under
/// loom, a heap block. Cloning makes another handle to the same memory.
#[derive(Clone)]
pub struct RingMemory {
    #[cfg(not(loom))]
    base: std::ptr::NonNull<u8>,
    #[cfg(not(loom))]
    len: usize,
    #[cfg(loom)]
    heap: crate::loom::Arc<HeapMemory>,
}

// SAFETY: the memory is only accessed through atomic operations (the
// contract of `from_raw`), so handles may be used from any thread.
#[cfg(not(loom))]
unsafe impl Send for RingMemory {}
// SAFETY: as for `Send`.
#[cfg(not(loom))]
unsafe impl Sync for RingMemory {}

impl std::fmt::Debug for RingMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingMemory")
            .field("size", &self.size())
            .finish()
    }
}

#[cfg(not(loom))]
impl RingMemory {
    /// Memory for a ring at `base`, `len` bytes.
    ///
    /// # Safety
    ///
    /// - `base` is aligned to 64 bytes and `base..base + len` is readable
    ///   and writable (typically an `mmap` of a memfd with `MAP_SHARED`);
    /// - it stays mapped as long as this handle, its clones and the rings
    ///   made from them exist;
    /// - in this process nothing else accesses it while they exist, except
    ///   through atomic operations of the same width on the same words.
    ///   Other processes may write anything at any time: the ring treats
    ///   every byte it reads as hostile.
    pub unsafe fn from_raw(base: *mut u8, len: usize) -> RingMemory {
        let base = std::ptr::NonNull::new(base).expect("ring memory at a null address");
        assert_eq!(
            base.as_ptr() as usize % 64,
            0,
            "ring memory not aligned to 64 bytes"
        );
        RingMemory { base, len }
    }

    /// The length in bytes.
    pub fn size(&self) -> usize {
        self.len
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(
            offset & 7 == 0 && offset + 8 <= self.len,
            "word {offset} out of bounds"
        );
        // SAFETY: callers compute `offset` from validated geometry (8-aligned,
        // inside the memory; see `Geometry`), the base is 64-aligned, and the
        // contract of `from_raw` keeps the word mapped and accessed only
        // atomically in this process.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// The 8-byte control or sequence word at `offset`.
    pub(super) fn atomic(&self, offset: usize) -> &AtomicU64 {
        self.word(offset)
    }

    /// The 4-byte word at `offset` (the sleeping flag, usable as a futex).
    pub(super) fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset & 7 == 0 && offset + 8 <= self.len);
        // SAFETY: as in `word`; an `AtomicU32` at an 8-aligned offset is
        // aligned.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    /// Reads the record word at `offset`.
    #[inline]
    pub(super) fn load_data(&self, offset: usize) -> u64 {
        self.word(offset).load(Ordering::Relaxed)
    }

    /// Writes the record word at `offset`.
    #[inline]
    pub(super) fn store_data(&self, offset: usize, value: u64) {
        self.word(offset).store(value, Ordering::Relaxed)
    }
}

/// A heap block standing in for a mapping under loom: the same offsets,
/// loom atomics for the control and sequence words, loom cells for record
/// words (so that loom reports a record word read while being written).
#[cfg(loom)]
struct HeapMemory {
    atomics: Box<[AtomicU64]>,
    sleeping: AtomicU32,
    data: Box<[crate::loom::UnsafeCell<u64>]>,
}

// SAFETY: record words are loom cells whose every access loom checks for
// races; the rest are atomics.
#[cfg(loom)]
unsafe impl Sync for HeapMemory {}
// SAFETY: as for `Sync`.
#[cfg(loom)]
unsafe impl Send for HeapMemory {}

#[cfg(loom)]
impl RingMemory {
    /// A zeroed heap block of `len` bytes standing in for a mapping.
    pub fn in_heap(len: usize) -> RingMemory {
        let words = len / 8;
        let heap = HeapMemory {
            atomics: (0..words).map(|_| AtomicU64::new(0)).collect(),
            sleeping: AtomicU32::new(0),
            data: (0..words)
                .map(|_| crate::loom::UnsafeCell::new(0))
                .collect(),
        };
        RingMemory {
            heap: crate::loom::Arc::new(heap),
        }
    }

    /// The length in bytes.
    pub fn size(&self) -> usize {
        self.heap.atomics.len() * 8
    }

    pub(super) fn atomic(&self, offset: usize) -> &AtomicU64 {
        &self.heap.atomics[offset / 8]
    }

    pub(super) fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert_eq!(
            offset,
            super::SLEEPING_AT,
            "only the sleeping flag is a 4-byte word"
        );
        &self.heap.sleeping
    }

    pub(super) fn load_data(&self, offset: usize) -> u64 {
        // SAFETY: loom checks that no write to this cell races with the read.
        self.heap.data[offset / 8].with(|p| unsafe { *p })
    }

    pub(super) fn store_data(&self, offset: usize, value: u64) {
        // SAFETY: loom checks that no other access races with the write.
        self.heap.data[offset / 8].with_mut(|p| unsafe { *p = value })
    }
}
