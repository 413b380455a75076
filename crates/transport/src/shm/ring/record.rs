//! Where a record's header and bytes sit in its slots, and the word-wise
//! copies in and out of them.
//!
//! Record bytes fill the first slot after its sequence word and header,
//! then each continuation slot after its sequence word. Those offsets, and
//! the slot size, are multiples of 8, so record byte `i` lies in a word at
//! byte `i % 8` wherever it is.

use super::{Ring, HEADER_LEN, SEQ_LEN};
use std::mem::MaybeUninit;

/// Record byte 0 lies at this offset of the first slot.
const FIRST_DATA_AT: usize = SEQ_LEN + HEADER_LEN;

/// A validated record header.
pub(super) struct Header {
    pub(super) len: usize,
    pub(super) count: u64,
    pub(super) kind: u32,
}

/// Producer step 3: writes the header and the concatenated `parts` (`len`
/// bytes, `count` slots) into the slots reserved at `first`.
pub(super) fn write(ring: &Ring, first: u64, count: u64, len: usize, kind: u32, parts: &[&[u8]]) {
    let slot = ring.geometry.slot_at(first);
    ring.memory
        .store_data(slot + SEQ_LEN, len as u64 | count << 32);
    ring.memory.store_data(slot + SEQ_LEN + 8, u64::from(kind));
    let mut writer = Writer {
        ring,
        pos: first,
        at: slot + FIRST_DATA_AT,
        end: slot + ring.geometry.slot_size,
        word: [0; 8],
        fill: 0,
    };
    for part in parts {
        writer.put(part);
    }
    writer.finish();
}

/// Consumer step 2: reads the header of the record at `first` and checks
/// it against the geometry.
pub(super) fn read_header(ring: &Ring, first: u64) -> Result<Header, &'static str> {
    let slot = ring.geometry.slot_at(first);
    let sizes = ring.memory.load_data(slot + SEQ_LEN);
    let kind = ring.memory.load_data(slot + SEQ_LEN + 8);
    let len = sizes as u32 as usize;
    let count = sizes >> 32;
    if kind >> 32 != 0 {
        return Err("reserved header bits are set");
    }
    if len > ring.geometry.max_record_len {
        return Err("record length exceeds the maximum");
    }
    // Also bounds the count to 1..=slots / 2, as `len` is within the maximum.
    if count != ring.geometry.slots_for(len) {
        return Err("record slot count does not match its length");
    }
    Ok(Header {
        len,
        count,
        kind: kind as u32,
    })
}

/// Consumer step 3: copies bytes `offset..offset + dst.len()` of the
/// record at `first` into `dst`, which may be uninitialized: every byte of
/// it is written. The caller has checked the range against the validated
/// length.
pub(super) fn read(ring: &Ring, first: u64, offset: usize, mut dst: &mut [MaybeUninit<u8>]) {
    let slot_size = ring.geometry.slot_size;
    let in_first = slot_size - FIRST_DATA_AT;
    let (mut pos, mut in_slot) = if offset < in_first {
        (first, FIRST_DATA_AT + offset)
    } else {
        let rest = offset - in_first;
        let per_slot = slot_size - SEQ_LEN;
        (
            first.wrapping_add(1 + (rest / per_slot) as u64),
            SEQ_LEN + rest % per_slot,
        )
    };
    while !dst.is_empty() {
        let n = dst.len().min(slot_size - in_slot);
        let (now, rest) = dst.split_at_mut(n);
        load_bytes(ring, ring.geometry.slot_at(pos) + in_slot, now);
        dst = rest;
        pos = pos.wrapping_add(1);
        in_slot = SEQ_LEN;
    }
}

/// Record words `0..N` (bytes `0..8 * N`) of the record at `first`, if
/// they lie in its first slot: one load each, for short records. Bytes
/// past the record's end are whatever the slot holds.
#[inline]
pub(super) fn first_words<const N: usize>(ring: &Ring, first: u64) -> Option<[u64; N]> {
    if FIRST_DATA_AT + 8 * N > ring.geometry.slot_size {
        return None;
    }
    let at = ring.geometry.slot_at(first) + FIRST_DATA_AT;
    Some(std::array::from_fn(|i| ring.memory.load_data(at + 8 * i)))
}

/// Copies `dst.len()` bytes from `at` on, all inside one slot.
fn load_bytes(ring: &Ring, mut at: usize, mut dst: &mut [MaybeUninit<u8>]) {
    let skip = at % 8;
    if skip != 0 {
        let word = ring.memory.load_data(at - skip).to_ne_bytes();
        let n = dst.len().min(8 - skip);
        let (now, rest) = dst.split_at_mut(n);
        put(now, &word[skip..skip + n]);
        dst = rest;
        at += n;
    }
    let mut words = dst.chunks_exact_mut(8);
    for chunk in &mut words {
        put(chunk, &ring.memory.load_data(at).to_ne_bytes());
        at += 8;
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let word = ring.memory.load_data(at).to_ne_bytes();
        put(tail, &word[..tail.len()]);
    }
}

/// Writes `src` into `dst`, of the same length.
#[inline]
fn put(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    // SAFETY: both are `dst.len()` bytes long, and a `&mut` slice cannot
    // overlap the ring word copied out into `src`.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<u8>(), dst.len())
    };
}

/// Gathers bytes into whole words and stores them slot after slot.
struct Writer<'a> {
    ring: &'a Ring,
    pos: u64,
    at: usize,
    end: usize,
    word: [u8; 8],
    fill: usize,
}

impl Writer<'_> {
    fn put(&mut self, mut bytes: &[u8]) {
        if self.fill > 0 {
            let n = bytes.len().min(8 - self.fill);
            self.word[self.fill..self.fill + n].copy_from_slice(&bytes[..n]);
            self.fill += n;
            bytes = &bytes[n..];
            if self.fill < 8 {
                return;
            }
            self.store(u64::from_ne_bytes(self.word));
            self.fill = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for chunk in &mut words {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.store(u64::from_ne_bytes(word));
        }
        let tail = words.remainder();
        self.word[..tail.len()].copy_from_slice(tail);
        self.fill = tail.len();
    }

    /// Stores the last, partial word, zero-padded: the record's slots are
    /// this producer's, padding included.
    fn finish(mut self) {
        if self.fill > 0 {
            self.word[self.fill..].fill(0);
            self.store(u64::from_ne_bytes(self.word));
        }
    }

    #[inline]
    fn store(&mut self, word: u64) {
        self.ring.memory.store_data(self.at, word);
        self.at += 8;
        if self.at == self.end {
            self.pos = self.pos.wrapping_add(1);
            let slot = self.ring.geometry.slot_at(self.pos);
            self.at = slot + SEQ_LEN;
            self.end = slot + self.ring.geometry.slot_size;
        }
    }
}
