//! A lock-free ring of variable-length records in memory shared by two
//! processes: any number of producer threads in one, one consumer in the
//! other.
//!
//! # Layout
//!
//! The memory holds no pointers, only positions and offsets, so that each
//! process may map it at its own address. All words are native-endian (both
//! processes run on one host).
//!
//! ```text
//! offset 0    identity (written once by the creator, magic last):
//!               magic u64 | version u64 | tag u64 | slots u64 | slot_size u64
//! offset 64   tail      u64   next position to reserve   (producers)
//! offset 128  head      u64   next position to consume   (consumer)
//! offset 192  sleeping  u32   consumer asleep or about to (a futex word)
//! offset 200  wanted    u64   a producer waits for free slots
//! offset 256  slots × slot_size bytes; the slot of position p is p % slots:
//!               seq u64 | data…
//!             the first slot of a record carries its header after seq:
//!               len u32 | slot count u32 | kind u32 | 0 u32 | data…
//! ```
//!
//! Each hot word has a cache line of its own. `slots` is a power of two,
//! `slot_size` a multiple of 64 ([`DEFAULT_SLOT_SIZE`]); a record takes
//! the fewest slots that hold its header and bytes, at most `slots / 2`
//! (so that a producer never waits for a consumer to free half the ring).
//!
//! # Flow control
//!
//! Positions count slots from 0 and never wrap in practice (u64). A slot's
//! `seq` word says which lap it is in: for position `p`, `seq == p + 1`
//! means the record of `p` is published; `p + 1 - slots` (the previous
//! lap's record, read and released) or, in the first lap, 0 (the memory
//! as created: a ring is laid out over zeroed memory and its slots are not
//! written until used, so pages are touched only as traffic needs them)
//! mean not yet. Only producers write `seq`; the consumer releases slots
//! through `head` alone, so it never writes a slot's cache line.
//!
//! A producer sending a record of `k` slots ([`Ring::try_send`]):
//!
//! 1. Loads `head` (Acquire), then `tail`: in this order `tail` is not
//!    behind `head`, as the consumer read the records before `head` after
//!    their producers had moved `tail` past them. The `head` loaded is a
//!    process-local copy of the shared word, refreshed only when the copy
//!    says the ring is full (the shared word is a cache miss per record).
//!    If fewer than `k` slots are free (`slots - (tail - head)`, or
//!    `tail - head > slots` because `head` is stale or garbage) it returns
//!    [`SendError::Full`] having written nothing: the caller retries later.
//! 2. Moves `tail` from `t` to `t + k` (compare-exchange, retrying from 1
//!    when another producer moved it first). Positions `t..t + k` are now
//!    its alone: no other producer holds them, and the consumer released
//!    them before storing the `head` loaded in 1, which makes the
//!    consumer's reads of them happen before this producer's writes.
//! 3. Writes the header and the bytes into the slots, wrapping at the end.
//! 4. Publishes: stores `seq = p + 1` in the continuation slots, then in the
//!    first slot with Release, which publishes the whole record.
//! 5. Issues a SeqCst fence and loads `sleeping`; if it is set, tells the
//!    caller to ring the consumer's doorbell ([`Publish::wake_consumer`]).
//!    Producers never write `sleeping`: the consumer is its only writer.
//!
//! The consumer ([`Consumer`]), keeping `h`, its own copy of `head`:
//!
//! 1. Loads the `seq` of `h`'s slot (Acquire). `h + 1 - slots`, or 0 in
//!    the first lap: nothing to read (or the first record is still being
//!    written).
//!    Anything but those and `h + 1`: corrupt.
//! 2. Validates the header (slot count in `1..=slots / 2`, length within
//!    the maximum and needing exactly that many slots) and the `seq` of the
//!    continuation slots (`p + 1`); anything else is corrupt.
//! 3. Copies the bytes out.
//! 4. Releases the slots by advancing `h`; then, for a batch of records
//!    at once, stores `head = h` (Release) — at the latest before it looks
//!    at `wanted` or sleeps, so a producer waiting for space always hears
//!    of it.
//!
//! Records are read in reservation order: a producer stalled between steps
//! 2 and 4 holds back the records reserved after it.
//!
//! # Sleeping
//!
//! 1. A consumer that found nothing calls [`Consumer::prepare_to_sleep`]:
//!    it stores `sleeping = 1` (SeqCst), issues a SeqCst fence and loads the
//!    `seq` of `h`'s slot again. If a record arrived it clears the flag and
//!    returns false: receive instead of sleeping.
//! 2. Otherwise the consumer sleeps until its doorbell rings.
//! 3. Producers run their step 5. Both sides store, fence, then load, so at
//!    least one sees the other's store: either the consumer's re-check sees
//!    the record, or the producer sees the flag and rings. No wake-up is
//!    lost. Every producer that publishes while the flag is set rings, so a
//!    burst may ring the doorbell several times before the consumer runs
//!    (an eventfd counts them into one wake-up).
//! 4. Woken, the consumer calls [`Consumer::woke`], which clears the flag,
//!    and receives until the ring is empty.
//!
//! # Waiting for space
//!
//! A producer that found the ring full and keeps the record in a backlog
//! of its own needs to hear when the consumer frees slots:
//!
//! 1. The producer stores `wanted = 1` ([`Ring::want_space`], SeqCst),
//!    issues a SeqCst fence and tries to send again (which loads `head`).
//! 2. The consumer, after releasing slots (its step 4 stores `head`),
//!    issues a SeqCst fence and loads `wanted`
//!    ([`Consumer::space_wanted`]); if set, it clears it and rings the
//!    producer's doorbell.
//! 3. As for sleeping, both sides store, fence, then load: either the
//!    producer's retry sees the freed slots or the consumer sees the flag.
//!    A flag left set after a successful retry costs one spurious doorbell.
//!
//! # A hostile peer
//!
//! Every byte read from the memory may have been written by a faulty or
//! malicious process. The geometry is validated once and kept in process
//! memory; every offset is computed from it and a masked position, every
//! access is an atomic word operation ([`RingMemory`]), and every value read
//! is checked before use: garbage yields [`RecvError::Corrupt`] and the
//! caller closes the channel — never a panic, an out-of-bounds access or
//! undefined behaviour. A consumer that scribbles over `head` can only
//! harm itself: its producers see a full ring, or overwrite records it has
//! not read (relaxed atomic stores, so still no undefined behaviour).

mod consumer;
mod memory;
mod record;

pub use consumer::{Consumer, Record};
pub use memory::RingMemory;

use crate::loom::{fence, AtomicU32, AtomicU64, Ordering};

/// The default slot size: a frame header and a small payload in one slot.
pub const DEFAULT_SLOT_SIZE: usize = 256;

const MAGIC: u64 = u64::from_be_bytes(*b"tw-ring\0");
const VERSION: u64 = 2;

const MAGIC_AT: usize = 0;
const VERSION_AT: usize = 8;
const TAG_AT: usize = 16;
const SLOTS_AT: usize = 24;
const SLOT_SIZE_AT: usize = 32;
const TAIL_AT: usize = 64;
const HEAD_AT: usize = 128;
const SLEEPING_AT: usize = 192;
const WANTED_AT: usize = 200;
const CONTROL_LEN: usize = 256;

/// The sequence word at the start of every slot.
const SEQ_LEN: usize = 8;
/// The record header after the first slot's sequence word.
const HEADER_LEN: usize = 16;

const CACHE_LINE: usize = 64;
const MAX_SLOT_SIZE: usize = 1 << 20;
const MAX_SLOTS: u64 = 1 << 32;

/// A slot as the consumer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// Still the previous lap's record (or, in the first lap, never used).
    Empty,
    /// The record of this position.
    Published,
    /// Neither: no correct producer wrote this.
    Garbage,
}

/// Slot count and size, validated once and never re-read from the memory.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    slots: u64,
    slot_size: usize,
    max_record_len: usize,
}

impl Geometry {
    fn new(slots: u64, slot_size: usize, memory_len: usize) -> Result<Geometry, SetupError> {
        let bad = |what| {
            Err(SetupError {
                kind: SetupErrorKind::Geometry(what),
            })
        };
        if slot_size < CACHE_LINE || slot_size & (CACHE_LINE - 1) != 0 || slot_size > MAX_SLOT_SIZE
        {
            return bad("slot size is not a multiple of 64 between 64 B and 1 MiB");
        }
        if !slots.is_power_of_two() || !(2..=MAX_SLOTS).contains(&slots) {
            return bad("slot count is not a power of two between 2 and 2^32");
        }
        match required_len_checked(slots, slot_size) {
            Some(needed) if needed <= memory_len => {}
            _ => return bad("the memory is too small for the slots"),
        }
        let max_record_len =
            ((slots / 2) as usize * (slot_size - SEQ_LEN) - HEADER_LEN).min(u32::MAX as usize);
        Ok(Geometry {
            slots,
            slot_size,
            max_record_len,
        })
    }

    /// The offset of the slot holding position `pos`.
    #[inline]
    fn slot_at(&self, pos: u64) -> usize {
        CONTROL_LEN + (pos & (self.slots - 1)) as usize * self.slot_size
    }

    /// The number of slots a record of `len` bytes takes.
    #[inline]
    fn slots_for(&self, len: usize) -> u64 {
        (len + HEADER_LEN).div_ceil(self.slot_size - SEQ_LEN) as u64
    }
}

fn required_len_checked(slots: u64, slot_size: usize) -> Option<usize> {
    usize::try_from(slots)
        .ok()?
        .checked_mul(slot_size)?
        .checked_add(CONTROL_LEN)
}

/// The bytes of memory a ring of `slots` slots of `slot_size` bytes needs.
pub fn required_len(slots: usize, slot_size: usize) -> Result<usize, SetupError> {
    let needed = required_len_checked(slots as u64, slot_size).ok_or(SetupError {
        kind: SetupErrorKind::Geometry("the size overflows"),
    })?;
    Geometry::new(slots as u64, slot_size, needed)?;
    Ok(needed)
}

/// Why a ring could not be created in, or attached to, some memory.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct SetupError {
    kind: SetupErrorKind,
}

#[derive(Debug, thiserror::Error)]
enum SetupErrorKind {
    #[error("invalid ring geometry: {0}")]
    Geometry(&'static str),
    #[error("the memory holds no ring (bad magic number)")]
    NotARing,
    #[error("ring version {0}, expected {VERSION}")]
    Version(u64),
    #[error("the ring belongs to another job or channel (tag {found:#x}, expected {expected:#x})")]
    Tag { found: u64, expected: u64 },
}

/// Why a record was not sent. The caller keeps the record's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// Not enough free slots now: retry once the consumer has read.
    #[error("ring full")]
    Full,
    /// The record can never fit ([`Ring::max_record_len`]).
    #[error("record of {len} bytes exceeds the ring's maximum of {max}")]
    TooLarge {
        /// The record's length.
        len: usize,
        /// The ring's maximum.
        max: usize,
    },
}

/// Why nothing can be received: the memory holds something no correct
/// producer writes. The caller closes the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// What was found, for the log.
    #[error("ring corrupt: {0}")]
    Corrupt(&'static str),
}

/// The outcome of a successful send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "the consumer may be asleep: ring its doorbell when `wake_consumer` is set"]
pub struct Publish {
    /// The consumer is asleep (or going to sleep) and this producer must
    /// ring its doorbell.
    pub wake_consumer: bool,
}

/// A ring in shared memory, as seen by one process: producers send through
/// `&Ring` from any number of threads; the consumer wraps it in a
/// [`Consumer`].
#[derive(Debug)]
pub struct Ring {
    memory: RingMemory,
    geometry: Geometry,
    tag: u64,
    /// The last `head` a producer of this process loaded (step 1).
    seen_head: SeenHead,
}

/// A process-local copy of the consumer's `head`, on a cache line of its
/// own: the shared word is written by the consumer on every record, so
/// loading it is a cache miss on the sender's critical path. A stale copy
/// is conservative (it shows less free space), so producers load the
/// shared word only when the copy says the ring is full. It is stored
/// with Release and loaded with Acquire, so a producer that uses another
/// thread's copy still happens after the consumer released those slots.
#[derive(Debug, Default)]
#[repr(align(64))]
struct SeenHead(AtomicU64);

impl Ring {
    /// Lays out a new, empty ring over `memory`, which must be zeroed (a
    /// fresh memfd or anonymous mapping is), with as many slots of
    /// `slot_size` bytes as fit (a power of two; see [`required_len`]).
    /// `tag` names the job and channel; [`Ring::attach`] checks it.
    pub fn create(memory: RingMemory, slot_size: usize, tag: u64) -> Result<Ring, SetupError> {
        let fit = memory.size().saturating_sub(CONTROL_LEN) / slot_size.max(1);
        let slots = if fit == 0 { 0 } else { 1u64 << fit.ilog2() };
        let geometry = Geometry::new(slots, slot_size, memory.size())?;
        let ring = Ring {
            memory,
            geometry,
            tag,
            seen_head: SeenHead::default(),
        };
        let word = |at| ring.memory.atomic(at);
        word(MAGIC_AT).store(0, Ordering::Relaxed);
        word(VERSION_AT).store(VERSION, Ordering::Relaxed);
        word(TAG_AT).store(tag, Ordering::Relaxed);
        word(SLOTS_AT).store(slots, Ordering::Relaxed);
        word(SLOT_SIZE_AT).store(slot_size as u64, Ordering::Relaxed);
        word(TAIL_AT).store(0, Ordering::Relaxed);
        word(HEAD_AT).store(0, Ordering::Relaxed);
        ring.sleeping().store(0, Ordering::Relaxed);
        word(WANTED_AT).store(0, Ordering::Relaxed);
        // The slots are left as they are: zero, which is "not yet" for
        // the first lap. Writing them would touch every page of every
        // ring at setup (measured: 480 MiB of page faults for 16 nodes).
        // Publishes the words above to an attacher that loads it (Acquire).
        word(MAGIC_AT).store(MAGIC, Ordering::Release);
        Ok(ring)
    }

    /// Attaches to a ring another process created in `memory`, checking
    /// its magic number, version, `tag` and geometry against the memory's
    /// size.
    pub fn attach(memory: RingMemory, tag: u64) -> Result<Ring, SetupError> {
        let word = |at| memory.atomic(at);
        let fail = |kind| Err(SetupError { kind });
        if memory.size() < CONTROL_LEN {
            return fail(SetupErrorKind::Geometry(
                "the memory is too small for the slots",
            ));
        }
        if word(MAGIC_AT).load(Ordering::Acquire) != MAGIC {
            return fail(SetupErrorKind::NotARing);
        }
        let version = word(VERSION_AT).load(Ordering::Relaxed);
        if version != VERSION {
            return fail(SetupErrorKind::Version(version));
        }
        let found = word(TAG_AT).load(Ordering::Relaxed);
        if found != tag {
            return fail(SetupErrorKind::Tag {
                found,
                expected: tag,
            });
        }
        let slots = word(SLOTS_AT).load(Ordering::Relaxed);
        let slot_size =
            usize::try_from(word(SLOT_SIZE_AT).load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        let geometry = Geometry::new(slots, slot_size, memory.size())?;
        let seen_head = SeenHead(AtomicU64::new(word(HEAD_AT).load(Ordering::Acquire)));
        Ok(Ring {
            memory,
            geometry,
            tag,
            seen_head,
        })
    }

    /// The number of slots.
    pub fn slots(&self) -> usize {
        self.geometry.slots as usize
    }

    /// The size of a slot in bytes.
    pub fn slot_size(&self) -> usize {
        self.geometry.slot_size
    }

    /// The longest record the ring takes, in bytes.
    pub fn max_record_len(&self) -> usize {
        self.geometry.max_record_len
    }

    /// The tag the ring was created with.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// Sends one record: `kind` and the concatenation of `parts`. Never
    /// blocks; see the module docs, steps 1–5.
    pub fn try_send(&self, kind: u32, parts: &[&[u8]]) -> Result<Publish, SendError> {
        let len = parts.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
        let max = self.geometry.max_record_len;
        if len > max {
            return Err(SendError::TooLarge { len, max });
        }
        let count = self.geometry.slots_for(len);
        let first = self.reserve(count)?;
        record::write(self, first, count, len, kind, parts);
        for pos in (1..count).map(|j| first.wrapping_add(j)) {
            self.seq(pos).store(pos.wrapping_add(1), Ordering::Relaxed);
        }
        self.seq(first)
            .store(first.wrapping_add(1), Ordering::Release);

        fence(Ordering::SeqCst);
        let wake_consumer = self.sleeping().load(Ordering::Relaxed) != 0;
        Ok(Publish { wake_consumer })
    }

    /// Waiting-for-space step 1: asks the consumer to ring this side's
    /// doorbell once it frees slots. Call it after a [`SendError::Full`],
    /// then try to send again before relying on the doorbell.
    pub fn want_space(&self) {
        self.memory.atomic(WANTED_AT).store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Steps 1–2: reserves `count` consecutive positions, returning the
    /// first.
    fn reserve(&self, count: u64) -> Result<u64, SendError> {
        let tail = self.memory.atomic(TAIL_AT);
        let slots = self.geometry.slots;
        loop {
            // Head first: the consumer stored it after reading records
            // reserved before, so the tail loaded next is not behind it.
            let mut consumed = self.seen_head.0.load(Ordering::Acquire);
            let mut first = tail.load(Ordering::Relaxed);
            let mut used = first.wrapping_sub(consumed);
            if used > slots || slots - used < count {
                // The copy says full (or is older than the tail): look at
                // the shared word.
                consumed = self.memory.atomic(HEAD_AT).load(Ordering::Acquire);
                self.seen_head.0.store(consumed, Ordering::Release);
                first = tail.load(Ordering::Relaxed);
                used = first.wrapping_sub(consumed);
            }
            // More than `slots` in use: `consumed` is stale (the ring
            // turned over between the loads) or garbage; both are "retry".
            if used > slots || slots - used < count {
                return Err(SendError::Full);
            }
            let reserved = first.wrapping_add(count);
            if tail
                .compare_exchange_weak(first, reserved, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(first);
            }
        }
    }

    /// What the consumer finds at position `pos` (consumer step 1).
    #[inline]
    fn slot_state(&self, pos: u64) -> SlotState {
        let seq = self.seq(pos).load(Ordering::Acquire);
        if seq == pos.wrapping_add(1) {
            SlotState::Published
        } else if seq == pos.wrapping_add(1).wrapping_sub(self.geometry.slots)
            || (seq == 0 && pos < self.geometry.slots)
        {
            SlotState::Empty
        } else {
            SlotState::Garbage
        }
    }

    /// The sequence word of the slot holding position `pos`.
    #[inline]
    fn seq(&self, pos: u64) -> &AtomicU64 {
        self.memory.atomic(self.geometry.slot_at(pos))
    }

    #[inline]
    fn sleeping(&self) -> &AtomicU32 {
        self.memory.atomic_u32(SLEEPING_AT)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
