//! The shared-memory channel: two rings in one region, one per direction.
//!
//! # Records
//!
//! Every frame travels as one or more ring records; the record kind says
//! how:
//!
//! | kind | record bytes | used for |
//! |---|---|---|
//! | `FRAME` | frame header, payload | frames up to the chunk size |
//! | `RTS` | frame header, cookie u64, count u64, (address u64, length u64) × count | larger frames when the peer may read this process (rendezvous) |
//! | `FIN` | cookie u64 | the receiver has read a rendezvous frame |
//! | `FIRST` | frame header, the payload's first bytes | larger frames without cross-memory attach |
//! | `MORE` | source thread u32, 0 u32, the payload's next bytes | the following chunks |
//!
//! Sending threads share the ring, so the chunks of frames from different
//! threads interleave; the receiver reassembles them per source thread
//! (one thread's frames are sent one after the other, so at most one of
//! its frames is in flight). Frames of at least [`ShmConfig::cma_min`]
//! bytes go by rendezvous where the peer may read this process, in chunks
//! otherwise.
//!
//! # Rendezvous
//!
//! 1. The sender keeps the payload (its bytes stay where they are) under a
//!    fresh cookie and sends `RTS` with the addresses of its segments.
//! 2. The receiving engine reads them with one `process_vm_readv` straight
//!    into the message's buffer and delivers the frame.
//! 3. It sends `FIN` with the cookie back through its own ring; the
//!    sender's engine drops the payload. Until then the payload counts in
//!    [`ShmChannel::queued_bytes`], so an orderly goodbye waits for it.
//!
//! # Back-pressure
//!
//! A frame that does not fit waits, with everything sent after it, in an
//! in-order backlog that [`ShmChannel::flush`] and [`ShmChannel::receive`]
//! (the progress engine) and later sends move on. Before relying on the
//! consumer's doorbell the backlog asks for it (the ring's
//! waiting-for-space steps).
//!
//! # Doorbell
//!
//! Sends, flushes and receives find out whether the peer must be woken
//! (it sleeps, or waits for space this side freed) and ring the channel's
//! [`Doorbell`] themselves; internally they report it in [`Progress`] and
//! [`Received`], which the unit tests inspect.

use super::cma;
use super::doorbell::Doorbell;
use super::region::Region;
use super::ring::{Consumer, Record, Ring, RingMemory, SendError as RingSendError};
use super::setup::Pair;
use crate::SendOutcome;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use threadwire_wire::{FrameHeader, Payload, HEADER_LEN};

const FRAME: u32 = 1;
const RTS: u32 = 2;
const FIN: u32 = 3;
const FIRST: u32 = 4;
const MORE: u32 = 5;

/// Segments an `RTS` may name; a payload in more pieces goes in chunks.
const MAX_RTS_SEGMENTS: usize = 64;
/// Records read per [`ShmChannel::receive`] before yielding to the engine's
/// other channels.
const RECEIVE_BUDGET: usize = 256;

/// The channel's sizes and choices.
#[derive(Clone, Debug)]
pub struct ShmConfig {
    /// Slots per ring (a power of two).
    pub ring_slots: usize,
    /// Bytes per slot (a multiple of 64).
    pub slot_size: usize,
    /// Use cross-memory attach where the kernel allows it.
    pub cma: bool,
    /// Frames of at least this many payload bytes go by rendezvous.
    pub cma_min: usize,
    /// Record size for frames sent in chunks.
    pub chunk: usize,
    /// Largest frame accepted from the peer.
    pub max_frame: u64,
}

impl ShmConfig {
    /// The defaults: 2 MiB rings of 256-byte slots, frames up to 64 KiB
    /// in one record, larger ones in 64 KiB chunks, and from 512 KiB by
    /// rendezvous. Measured with `threadwire bench pingpong --paths shm`
    /// (docs/PERFORMANCE-STUDIES.md): chunks through the ring pipeline the two
    /// copies on two cores and beat one cross-memory copy up to 256 KiB
    /// (9.0 against 5.7 GB/s there); from 1 MiB the frame no longer fits
    /// the ring with room to spare and one copy wins (8.3 against 3.6 GB/s).
    pub fn new(max_frame: u64) -> ShmConfig {
        ShmConfig {
            ring_slots: 8192,
            slot_size: super::ring::DEFAULT_SLOT_SIZE,
            cma: true,
            cma_min: 512 * 1024,
            chunk: 64 * 1024,
            max_frame,
        }
    }

    #[cfg(test)]
    pub(crate) fn small_for_tests() -> ShmConfig {
        ShmConfig {
            ring_slots: 64,
            chunk: 1024,
            cma_min: 2048,
            ..ShmConfig::new(1 << 24)
        }
    }
}

/// Why a shared-memory channel stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShmError {
    /// The ring holds something no correct peer writes.
    #[error("shared-memory ring corrupt: {0}")]
    Corrupt(String),
    /// Reading a rendezvous frame from the peer's memory failed.
    #[error("cross-memory read from the peer failed: {0}")]
    CrossMemory(io::Error),
}

/// What a send or flush left to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use = "ring the peer's doorbell when `doorbell` is set"]
pub(crate) struct Progress {
    /// Something waits in the backlog.
    pub queued: bool,
    /// The peer sleeps (or waits for space to send): ring its doorbell.
    pub doorbell: bool,
}

struct Outgoing {
    header: [u8; HEADER_LEN],
    source: u32,
    payload: Payload,
    /// Payload bytes already in the ring (chunked frames).
    sent: usize,
    started: bool,
    fin: Option<u64>,
    /// What the backlog counts for it.
    queued_as: usize,
}

impl Outgoing {
    fn frame(header: &FrameHeader, payload: Payload) -> Outgoing {
        Outgoing {
            header: header.encode(),
            source: header.source_thread,
            queued_as: HEADER_LEN + payload.len(),
            payload,
            sent: 0,
            started: false,
            fin: None,
        }
    }

    fn fin(cookie: u64) -> Outgoing {
        Outgoing {
            header: [0; HEADER_LEN],
            source: 0,
            payload: Payload::from_vec(Vec::new()),
            sent: 0,
            started: false,
            fin: Some(cookie),
            queued_as: 8,
        }
    }
}

/// A frame being reassembled from chunks.
struct Partial {
    header: FrameHeader,
    payload: Vec<u8>,
}

struct Receiver {
    consumer: Consumer,
    partials: HashMap<u32, Partial>,
}

/// One node's end of a shared-memory channel: sends from any thread,
/// receives from the progress engine.
pub struct ShmChannel {
    tx: Ring,
    rx: Mutex<Receiver>,
    backlog: Mutex<VecDeque<Outgoing>>,
    backlog_bytes: AtomicUsize,
    rendezvous: Mutex<HashMap<u64, Payload>>,
    rendezvous_bytes: AtomicUsize,
    /// When the last rendezvous frame was sent ([`clock_ns`]).
    last_rendezvous: AtomicU64,
    next_cookie: AtomicU64,
    /// The peer may read this process's memory: large frames by rendezvous.
    peer_reads: bool,
    peer_pid: u32,
    config: ShmConfig,
    doorbell: Doorbell,
    /// Last: the rings point into it.
    _region: Region,
}

impl std::fmt::Debug for ShmChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmChannel")
            .field("peer_pid", &self.peer_pid)
            .field("rendezvous", &self.peer_reads)
            .finish_non_exhaustive()
    }
}

impl ShmChannel {
    /// `side` 0 (the creator) sends on the region's first ring, side 1 on
    /// its second.
    pub(super) fn new(
        region: Region,
        side: usize,
        pair: Pair,
        peer_pid: u32,
        peer_reads: bool,
        config: ShmConfig,
        doorbell: Doorbell,
    ) -> io::Result<ShmChannel> {
        let half = region.len() / 2;
        let ring = |i: usize, from: u32, to: u32| {
            // SAFETY: as in `setup::offer`: a 64-aligned half of a mapping
            // this channel owns and drops last.
            let memory = unsafe { RingMemory::from_raw(region.as_ptr().add(i * half), half) };
            Ring::attach(memory, super::setup::ring_tag(pair.job_id, from, to))
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
        };
        let tx = ring(side, pair.me, pair.peer)?;
        let rx = ring(1 - side, pair.peer, pair.me)?;
        let largest = tx.max_record_len();
        let chunk = config.chunk.min(largest).max(HEADER_LEN + 64);
        Ok(ShmChannel {
            tx,
            rx: Mutex::new(Receiver {
                consumer: Consumer::new(rx),
                partials: HashMap::new(),
            }),
            backlog: Mutex::new(VecDeque::new()),
            backlog_bytes: AtomicUsize::new(0),
            rendezvous: Mutex::new(HashMap::new()),
            rendezvous_bytes: AtomicUsize::new(0),
            last_rendezvous: AtomicU64::new(0),
            next_cookie: AtomicU64::new(1),
            peer_reads: peer_reads && config.cma,
            peer_pid,
            config: ShmConfig { chunk, ..config },
            doorbell,
            _region: region,
        })
    }

    /// Whether large frames go by cross-memory attach (else in chunks).
    pub fn uses_cross_memory(&self) -> bool {
        self.peer_reads
    }

    /// Fills `buffer` from the peer's memory at `segments` (address,
    /// length) with one `process_vm_readv`: the runtime's rendezvous pull.
    /// Fails if the peer's memory cannot be read or holds fewer bytes.
    pub fn pull(&self, segments: &[(u64, u64)], buffer: &mut [u8]) -> io::Result<()> {
        pull(self.peer_pid, segments, buffer)
    }

    /// Sends one frame: into the ring if it fits now, else into the
    /// backlog behind everything queued before it, and rings the doorbell
    /// if the peer needs it. Never blocks and never fails (a dead peer
    /// shows on the TCP connection).
    #[inline]
    pub fn send(&self, header: &FrameHeader, payload: Payload) -> SendOutcome {
        let progress = self.send_frame(header, payload);
        self.ring_if(progress.doorbell);
        match progress.queued {
            true => SendOutcome::Queued,
            false => SendOutcome::Written,
        }
    }

    /// [`send`](Self::send) without the doorbell: what it calls for.
    pub(crate) fn send_frame(&self, header: &FrameHeader, payload: Payload) -> Progress {
        self.enqueue(Outgoing::frame(header, payload))
    }

    fn ring_if(&self, doorbell: bool) {
        if doorbell {
            self.doorbell.ring();
        }
    }

    fn enqueue(&self, mut out: Outgoing) -> Progress {
        let mut doorbell = false;
        if self.backlog_bytes.load(Ordering::Acquire) == 0 {
            let (done, bell) = self.push(&mut out);
            if done {
                return Progress {
                    queued: false,
                    doorbell: bell,
                };
            }
            doorbell = bell;
        }
        let mut backlog = lock(&self.backlog);
        self.backlog_bytes
            .fetch_add(out.queued_as, Ordering::AcqRel);
        backlog.push_back(out);
        let p = self.drain(&mut backlog);
        Progress {
            queued: p.queued,
            doorbell: doorbell || p.doorbell,
        }
    }

    /// Moves the backlog into the ring as far as it fits, ringing the
    /// doorbell if the peer needs it; `true` when nothing is left queued.
    pub fn flush(&self) -> bool {
        let progress = self.flush_backlog();
        self.ring_if(progress.doorbell);
        !progress.queued
    }

    /// [`flush`](Self::flush) without the doorbell: what it calls for.
    pub(crate) fn flush_backlog(&self) -> Progress {
        if self.backlog_bytes.load(Ordering::Acquire) == 0 {
            return Progress::default();
        }
        self.drain(&mut lock(&self.backlog))
    }

    /// Bytes not yet handed over: the backlog, and rendezvous frames the
    /// peer has not read yet.
    pub fn queued_bytes(&self) -> usize {
        self.backlog_bytes.load(Ordering::Acquire) + self.rendezvous_bytes.load(Ordering::Acquire)
    }

    /// Whether the peer has rendezvous frames of this side to read, the
    /// last sent less than [`COPY_WINDOW`] ago (a peer that does not read
    /// for longer is busy elsewhere, not copying).
    pub fn reading_our_memory(&self) -> bool {
        self.rendezvous_bytes.load(Ordering::Relaxed) > 0
            && clock_ns().saturating_sub(self.last_rendezvous.load(Ordering::Relaxed))
                < COPY_WINDOW.as_nanos() as u64
    }

    fn drain(&self, backlog: &mut VecDeque<Outgoing>) -> Progress {
        let mut doorbell = false;
        while let Some(front) = backlog.front_mut() {
            let (mut done, bell) = self.push(front);
            doorbell |= bell;
            if !done {
                // Waiting-for-space step 1, then the retry.
                self.tx.want_space();
                let (again, bell) = self.push(front);
                doorbell |= bell;
                done = again;
            }
            if !done {
                return Progress {
                    queued: true,
                    doorbell,
                };
            }
            let out = backlog.pop_front().expect("front exists");
            self.backlog_bytes
                .fetch_sub(out.queued_as, Ordering::AcqRel);
        }
        Progress {
            queued: false,
            doorbell,
        }
    }

    /// Puts as much of `out` into the ring as fits: `(finished, doorbell)`.
    fn push(&self, out: &mut Outgoing) -> (bool, bool) {
        let mut doorbell = false;
        let mut publish = |kind: u32, parts: &[&[u8]]| match self.tx.try_send(kind, parts) {
            Ok(p) => {
                doorbell |= p.wake_consumer;
                true
            }
            Err(RingSendError::Full) => false,
            Err(e @ RingSendError::TooLarge { .. }) => {
                unreachable!("records are sized below the ring's maximum: {e}")
            }
        };
        if let Some(cookie) = out.fin {
            let done = publish(FIN, &[&cookie.to_le_bytes()]);
            return (done, doorbell);
        }
        let len = out.payload.len();
        if !out.started && HEADER_LEN + len <= self.config.chunk {
            let done = with_parts(&out.header, &out.payload, 0, len, |parts| {
                publish(FRAME, parts)
            });
            return (done, doorbell);
        }
        if !out.started
            && self.peer_reads
            && len >= self.config.cma_min
            && out.payload.segments().count() <= MAX_RTS_SEGMENTS
        {
            let done = self.send_rts(out, &mut publish);
            return (done, doorbell);
        }
        loop {
            if out.started && out.sent == len {
                return (true, doorbell);
            }
            let done = if !out.started {
                let end = (self.config.chunk - HEADER_LEN).min(len);
                with_parts(&out.header, &out.payload, 0, end, |parts| {
                    publish(FIRST, parts)
                })
                .then_some(end)
            } else {
                let end = (out.sent + self.config.chunk - 8).min(len);
                let mut prefix = [0u8; 8];
                prefix[..4].copy_from_slice(&out.source.to_le_bytes());
                with_parts(&prefix, &out.payload, out.sent, end, |parts| {
                    publish(MORE, parts)
                })
                .then_some(end)
            };
            match done {
                Some(end) => {
                    out.started = true;
                    out.sent = end;
                }
                None => return (false, doorbell),
            }
        }
    }

    /// Rendezvous step 1.
    fn send_rts(
        &self,
        out: &mut Outgoing,
        publish: &mut impl FnMut(u32, &[&[u8]]) -> bool,
    ) -> bool {
        let cookie = self.next_cookie.fetch_add(1, Ordering::Relaxed);
        let mut rts = Vec::with_capacity(HEADER_LEN + 16 + 16 * MAX_RTS_SEGMENTS);
        rts.extend_from_slice(&out.header);
        rts.extend_from_slice(&cookie.to_le_bytes());
        let segments: Vec<&[u8]> = out.payload.segments().collect();
        rts.extend_from_slice(&(segments.len() as u64).to_le_bytes());
        for s in &segments {
            rts.extend_from_slice(&(s.as_ptr() as u64).to_le_bytes());
            rts.extend_from_slice(&(s.len() as u64).to_le_bytes());
        }
        let bytes = out.payload.len();
        // Registered first: the peer may read and answer before `publish`
        // returns. The bytes stay put when the payload moves.
        let payload = std::mem::replace(&mut out.payload, Payload::from_vec(Vec::new()));
        self.rendezvous_bytes.fetch_add(bytes, Ordering::AcqRel);
        lock(&self.rendezvous).insert(cookie, payload);
        if publish(RTS, &[&rts]) {
            self.last_rendezvous.store(clock_ns(), Ordering::Relaxed);
            return true;
        }
        out.payload = lock(&self.rendezvous)
            .remove(&cookie)
            .expect("nobody answers an unsent cookie");
        self.rendezvous_bytes.fetch_sub(bytes, Ordering::AcqRel);
        false
    }
}

/// Calls `f` with the header (or prefix) and the payload's bytes
/// `from..to` as a list of slices, without allocating for the common
/// payload of a few segments.
fn with_parts<'a, R>(
    head: &'a [u8],
    payload: &'a Payload,
    from: usize,
    to: usize,
    f: impl FnOnce(&[&[u8]]) -> R,
) -> R {
    const STACK: usize = 8;
    let mut stack: [&'a [u8]; STACK] = [&[]; STACK];
    let mut heap: Vec<&'a [u8]> = Vec::new();
    let mut n = 0;
    let mut push = |part: &'a [u8]| {
        if n < STACK {
            stack[n] = part;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(part);
        }
        n += 1;
    };
    push(head);
    let mut at = 0;
    for seg in payload.segments() {
        let (start, end) = (at, at + seg.len());
        at = end;
        if end <= from || start >= to {
            continue;
        }
        let lo = from.max(start) - start;
        let hi = to.min(end) - start;
        push(&seg[lo..hi]);
    }
    if n <= STACK {
        f(&stack[..n])
    } else {
        f(&heap)
    }
}

/// How long after sending a rendezvous frame the peer counts as copying it
/// (16 MiB take about 2–3 ms here).
pub const COPY_WINDOW: std::time::Duration = std::time::Duration::from_millis(10);

/// Nanoseconds on a process-wide monotonic clock.
fn clock_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

mod receive;
/// Fills `buffer` from `segments` (address, length) of process `pid`'s
/// memory by cross-memory copy; an error unless every byte came. For the
/// nodes of a host that read each other without a channel between them
/// (the collectives' host stage).
pub fn pull(pid: u32, segments: &[(u64, u64)], buffer: &mut [u8]) -> io::Result<()> {
    let n = cma::read_into(pid, segments, buffer)?;
    if n != buffer.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read {n} of {} bytes from the peer", buffer.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
use receive::Received;

#[cfg(test)]
mod tests;
