//! The consumer's side of the ring: receiving records and the sleeping
//! handshake (module docs of [`super`], consumer steps and sleeping steps).

use super::{record, RecvError, Ring, SlotState};
use crate::loom::{fence, Ordering};

/// The one consumer of a ring. Receiving takes `&mut self`, so one
/// `Consumer` reads at a time; the protocol also needs at most one
/// `Consumer` per ring across both processes, which the caller ensures.
#[derive(Debug)]
pub struct Consumer {
    ring: Ring,
    /// The next position to read. The consumer is the only writer of the
    /// shared `head`, so it trusts this copy and only ever stores the word.
    head: u64,
    /// The value last stored in the shared `head`.
    published: u64,
}

/// A complete record, readable until the closure given to
/// [`Consumer::try_recv_with`] returns; its slots are released afterwards.
#[derive(Debug)]
pub struct Record<'a> {
    ring: &'a Ring,
    first: u64,
    len: usize,
    kind: u32,
}

impl Consumer {
    /// Becomes the consumer of `ring`, reading from its current `head`.
    pub fn new(ring: Ring) -> Consumer {
        let head = ring.memory.atomic(super::HEAD_AT).load(Ordering::Acquire);
        Consumer {
            ring,
            head,
            published: head,
        }
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Receives the next record into `out` (replacing its contents) and
    /// returns its kind, or `None` if the next record is not there yet.
    /// Publishes `head` at once (unlike [`try_recv_with`](Self::try_recv_with)).
    pub fn try_recv(&mut self, out: &mut Vec<u8>) -> Result<Option<u32>, RecvError> {
        let kind = self.try_recv_with(|record| {
            out.clear();
            out.resize(record.len(), 0);
            record.read(0, out);
            record.kind()
        });
        self.publish_head();
        kind
    }

    /// Hands the next record to `f` and releases its slots when `f`
    /// returns; `None` if the next record is not there yet. Lets the caller
    /// read a frame header first and copy the payload straight to its
    /// destination. The slots are released, but the shared `head` that
    /// tells producers so is stored only by [`publish_head`](Self::publish_head)
    /// (consumer step 4), so that a batch of records costs one store to
    /// the line producers read.
    pub fn try_recv_with<R>(
        &mut self,
        f: impl FnOnce(&Record<'_>) -> R,
    ) -> Result<Option<R>, RecvError> {
        let ring = &self.ring;
        let first = self.head;
        match ring.slot_state(first) {
            SlotState::Empty => return Ok(None),
            SlotState::Published => {}
            SlotState::Garbage => return Err(RecvError::Corrupt("slot sequence word out of step")),
        }
        let header = record::read_header(ring, first).map_err(RecvError::Corrupt)?;
        let positions = (0..header.count).map(|j| first.wrapping_add(j));
        for pos in positions.clone().skip(1) {
            if ring.seq(pos).load(Ordering::Relaxed) != pos.wrapping_add(1) {
                return Err(RecvError::Corrupt("continuation slot not published"));
            }
        }
        let out = f(&Record {
            ring,
            first,
            len: header.len,
            kind: header.kind,
        });
        // The slots are released by `head` alone (step 4): storing to them
        // here would pull their cache lines away from the producer, and
        // this thread's next locked instruction would wait for that.
        drop(positions);
        self.head = first.wrapping_add(header.count);
        Ok(Some(out))
    }

    /// Consumer step 4's last part: tells producers of the slots released
    /// since the last call. Also done by [`space_wanted`](Self::space_wanted)
    /// and [`prepare_to_sleep`](Self::prepare_to_sleep).
    pub fn publish_head(&mut self) {
        if self.head != self.published {
            self.ring
                .memory
                .atomic(super::HEAD_AT)
                .store(self.head, Ordering::Release);
            self.published = self.head;
        }
    }

    /// Sleeping step 1: announces that the consumer is about to sleep and
    /// checks again for a record. `true`: sleep until the doorbell rings
    /// (then call [`Consumer::woke`]); `false`: something arrived (a record
    /// or garbage), receive instead.
    pub fn prepare_to_sleep(&mut self) -> bool {
        self.publish_head();
        let sleeping = self.ring.sleeping();
        sleeping.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.ring.slot_state(self.head) != SlotState::Empty {
            sleeping.store(0, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Waiting-for-space step 2, after receiving: whether a producer asked
    /// to hear of freed slots (the flag is cleared); if so, ring the
    /// producer's doorbell.
    pub fn space_wanted(&mut self) -> bool {
        self.publish_head();
        fence(Ordering::SeqCst);
        let wanted = self.ring.memory.atomic(super::WANTED_AT);
        wanted.load(Ordering::Relaxed) != 0 && wanted.swap(0, Ordering::Relaxed) != 0
    }

    /// Sleeping step 4: the consumer is awake (doorbell or not); producers
    /// stop ringing.
    pub fn woke(&self) {
        self.ring.sleeping().store(0, Ordering::Relaxed);
    }
}

impl Record<'_> {
    /// The kind the producer gave.
    pub fn kind(&self) -> u32 {
        self.kind
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the record has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies bytes `offset..offset + dst.len()` of the record into `dst`.
    ///
    /// # Panics
    ///
    /// If the range is not within the record.
    pub fn read(&self, offset: usize, dst: &mut [u8]) {
        // SAFETY: initialized bytes seen as possibly uninitialized ones;
        // `read_uninit` writes only initialized bytes into them.
        let dst = unsafe { &mut *(dst as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
        self.read_uninit(offset, dst);
    }

    /// [`read`](Self::read) into memory that may be uninitialized (a
    /// vector's spare capacity): every byte of `dst` is written.
    ///
    /// # Panics
    ///
    /// If the range is not within the record.
    fn read_uninit(&self, offset: usize, dst: &mut [std::mem::MaybeUninit<u8>]) {
        assert!(
            offset <= self.len && dst.len() <= self.len - offset,
            "range {offset}+{} outside a record of {} bytes",
            dst.len(),
            self.len
        );
        record::read(self.ring, self.first, offset, dst);
    }

    /// The record's first `N` words (bytes `0..8 * N`, native order) when
    /// they lie in its first slot, each read in one load: a short record
    /// without the general copy's walk. Bytes past the record's end
    /// ([`len`](Self::len)) are whatever the slot holds; `None` if the
    /// words reach past the first slot.
    #[inline]
    pub fn first_words<const N: usize>(&self) -> Option<[u64; N]> {
        record::first_words(self.ring, self.first)
    }

    /// Bytes `offset..offset + len` of the record in a new vector, copied
    /// once (not zeroed first).
    ///
    /// # Panics
    ///
    /// If the range is not within the record.
    pub fn to_vec(&self, offset: usize, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        self.append_to(offset, len, &mut v);
        v
    }

    /// Appends bytes `offset..offset + len` of the record to `v`, copied
    /// once into its spare capacity (not zeroed first).
    ///
    /// # Panics
    ///
    /// If the range is not within the record.
    pub fn append_to(&self, offset: usize, len: usize, v: &mut Vec<u8>) {
        v.reserve(len);
        let have = v.len();
        self.read_uninit(offset, &mut v.spare_capacity_mut()[..len]);
        // SAFETY: `read_uninit` wrote all `len` bytes after the first `have`.
        unsafe { v.set_len(have + len) };
    }
}
