//! The shared-memory ring under real threads, between two processes, and
//! over memory scribbled on by a hostile peer.
#![cfg(not(loom))]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use threadwire_transport::shm::region::Region;
use threadwire_transport::shm::ring::{
    required_len, Consumer, Publish, RecvError, Ring, RingMemory, SendError, DEFAULT_SLOT_SIZE,
};

const PAGE: usize = 4096;

/// A `MAP_SHARED` mapping of anonymous memory between two inaccessible
/// guard pages with the ring's bytes ending at the second, so
/// that a read past either end faults.
struct Mapping {
    base: *mut u8,
    map_len: usize,
    ring_at: usize,
    len: usize,
}

// SAFETY: the mapping is plain memory, accessed through `RingMemory` only.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn guarded(len: usize) -> Mapping {
        let inner = len.div_ceil(PAGE) * PAGE;
        let map_len = inner + 2 * PAGE;
        // SAFETY: a fresh anonymous mapping.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_NONE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the pages between the guards, inside the mapping above.
        let rc = unsafe {
            libc::mprotect(
                base.cast::<u8>().add(PAGE).cast(),
                inner,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        assert_eq!(rc, 0);
        assert_eq!(len & 63, 0);
        Mapping {
            base: base.cast(),
            map_len,
            ring_at: PAGE + inner - len,
            len,
        }
    }

    fn memory(&self) -> RingMemory {
        // SAFETY: the mapping is 64-aligned at `ring_at` (page-aligned base,
        // `ring_at` a multiple of 64), `len` bytes, lives until `self` drops
        // after every ring of the test, and is touched in this process only
        // through rings and the atomic `scribble`.
        unsafe { RingMemory::from_raw(self.base.add(self.ring_at), self.len) }
    }

    /// The 8-byte word at `offset` of the ring's bytes.
    fn peek(&self, offset: usize) -> u64 {
        self.word(offset).load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stores `value` in the 8-byte word at `offset` of the ring's bytes.
    fn scribble(&self, offset: usize, value: u64) {
        self.word(offset)
            .store(value, std::sync::atomic::Ordering::Relaxed);
    }

    fn word(&self, offset: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(offset & 7 == 0 && offset + 8 <= self.len);
        // SAFETY: an aligned word inside the mapping, accessed atomically
        // (or, for the sleeping flag, not concurrently with a 4-byte access).
        unsafe { &*self.base.add(self.ring_at + offset).cast() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps what `of_fd` or `guarded` mapped.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

/// xorshift64*: reproducible test input without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Producer `producer`'s record `seq`: its numbers, then the pattern's
/// bytes in the returned range, of a length from 0 to about 3 KiB.
fn record_body(producer: u32, seq: u32) -> std::ops::Range<usize> {
    let mut rng = Rng(u64::from(seq) << 32 | u64::from(producer) | 1 << 63);
    let len = rng.below(3 * 1024 - 8);
    let at = rng.below(PATTERN_LEN - len);
    at..at + len
}

const PATTERN_LEN: usize = 8192;

fn pattern() -> Vec<u8> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..PATTERN_LEN).map(|_| rng.next() as u8).collect()
}

/// Sends `count` records as `producer`, retrying while the ring is full,
/// calling `ring_doorbell` when the consumer sleeps.
fn produce(ring: &Ring, producer: u32, count: u32, ring_doorbell: impl Fn()) {
    let pattern = pattern();
    for seq in 0..count {
        let mut head = producer.to_le_bytes().to_vec();
        head.extend_from_slice(&seq.to_le_bytes());
        let body = &pattern[record_body(producer, seq)];
        let split = body.len() / 2;
        loop {
            match ring.try_send(producer, &[&head, &body[..split], &body[split..]]) {
                Ok(Publish { wake_consumer }) => {
                    if wake_consumer {
                        ring_doorbell();
                    }
                    break;
                }
                Err(SendError::Full) => std::thread::yield_now(),
                Err(e) => panic!("send: {e}"),
            }
        }
    }
}

/// Receives `producers × count` records, checking bytes and per-producer
/// order; sleeps through `sleep` (which returns false on a timeout) when
/// the ring is empty.
fn consume(consumer: &mut Consumer, producers: u32, count: u32, sleep: impl Fn() -> bool) {
    let pattern = pattern();
    let mut next = vec![0u32; producers as usize];
    let mut out = Vec::new();
    let mut left = producers as u64 * count as u64;
    while left > 0 {
        match consumer.try_recv(&mut out).expect("receive") {
            Some(kind) => {
                let producer = u32::from_le_bytes(out[..4].try_into().unwrap());
                let seq = u32::from_le_bytes(out[4..8].try_into().unwrap());
                assert_eq!(kind, producer);
                assert_eq!(
                    seq, next[producer as usize],
                    "producer {producer} out of order"
                );
                let body = &pattern[record_body(producer, seq)];
                assert!(out[8..] == *body, "record {producer}/{seq} garbled");
                next[producer as usize] += 1;
                left -= 1;
            }
            None => {
                if consumer.prepare_to_sleep() {
                    assert!(sleep(), "no doorbell for 10 s: a lost wake-up");
                    consumer.woke();
                }
            }
        }
    }
    assert_eq!(consumer.try_recv(&mut out), Ok(None));
}

/// A doorbell between threads of one process.
#[derive(Default)]
struct Doorbell {
    rung: Mutex<bool>,
    bell: Condvar,
}

impl Doorbell {
    fn ring(&self) {
        *self.rung.lock().unwrap() = true;
        self.bell.notify_one();
    }

    fn wait(&self) -> bool {
        let rung = self.rung.lock().unwrap();
        let (mut rung, timeout) = self
            .bell
            .wait_timeout_while(rung, Duration::from_secs(10), |rung| !*rung)
            .unwrap();
        *rung = false;
        !timeout.timed_out()
    }
}

#[test]
fn four_producer_threads_one_consumer() {
    const PRODUCERS: u32 = 4;
    const COUNT: u32 = 100_000;
    let mapping = Mapping::guarded(required_len(1024, DEFAULT_SLOT_SIZE).unwrap());
    let ring = Ring::create(mapping.memory(), DEFAULT_SLOT_SIZE, 11).unwrap();
    let mut consumer = Consumer::new(Ring::attach(mapping.memory(), 11).unwrap());
    let doorbell = Doorbell::default();
    std::thread::scope(|s| {
        for producer in 0..PRODUCERS {
            let (ring, doorbell) = (&ring, &doorbell);
            s.spawn(move || produce(ring, producer, COUNT, || doorbell.ring()));
        }
        consume(&mut consumer, PRODUCERS, COUNT, || doorbell.wait());
    });
}

const CHILD_FD: &str = "TW_SHM_RING_TEST_FD";
const CHILD_DOORBELL: &str = "TW_SHM_RING_TEST_DOORBELL";
const CHILD_LEN: &str = "TW_SHM_RING_TEST_LEN";
const CROSS_PRODUCERS: u32 = 2;
const CROSS_COUNT: u32 = 50_000;
const CROSS_TAG: u64 = 0x5eed;

/// The ring over a whole region.
fn region_memory(region: &Region) -> RingMemory {
    // SAFETY: a page-aligned shared mapping of `len` bytes that outlives
    // every ring of the test, touched only through rings.
    unsafe { RingMemory::from_raw(region.as_ptr(), region.len()) }
}

#[test]
fn producers_in_another_process() {
    let len = required_len(256, DEFAULT_SLOT_SIZE).unwrap();
    // The child opens the region as a peer node does: through
    // /proc/<our pid>/fd/<fd>.
    let region = Region::create("tw-ring-test", len).unwrap();
    // SAFETY: plain syscall; the result is checked and owned below.
    let doorbell = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    assert!(doorbell >= 0);
    // SAFETY: a fresh descriptor this test owns.
    let doorbell = unsafe { OwnedFd::from_raw_fd(doorbell) };

    let mut consumer =
        Consumer::new(Ring::create(region_memory(&region), DEFAULT_SLOT_SIZE, CROSS_TAG).unwrap());

    let inherited = doorbell.as_raw_fd();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "child_producers",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env(CHILD_FD, region.raw_fd().unwrap().to_string())
        .env(CHILD_DOORBELL, inherited.to_string())
        .env(CHILD_LEN, len.to_string())
        .stdout(Stdio::piped());
    // SAFETY: the closure only calls fcntl, which is async-signal-safe.
    unsafe {
        child.pre_exec(move || {
            if libc::fcntl(inherited, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = child.spawn().unwrap();

    let bell = doorbell.as_raw_fd();
    consume(&mut consumer, CROSS_PRODUCERS, CROSS_COUNT, || {
        let mut poll = libc::pollfd {
            fd: bell,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, 10_000) };
        let mut count = 0u64;
        // SAFETY: reads 8 bytes into `count` (EAGAIN if already drained).
        unsafe { libc::read(bell, (&mut count as *mut u64).cast(), 8) };
        ready == 1
    });
    let child = child.wait_with_output().unwrap();
    let output = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success(), "child: {}\n{output}", child.status);
    assert!(
        output.contains("1 passed"),
        "the child ran no test:\n{output}"
    );
}

/// The child of `producers_in_another_process`: opens its parent's region
/// (mapped at its own address), attaches to the ring and sends from two
/// threads.
#[test]
#[ignore = "run by producers_in_another_process as its child"]
fn child_producers() {
    let Ok(fd) = std::env::var(CHILD_FD) else {
        return;
    };
    let fd: RawFd = fd.parse().unwrap();
    let bell: RawFd = std::env::var(CHILD_DOORBELL).unwrap().parse().unwrap();
    let len: usize = std::env::var(CHILD_LEN).unwrap().parse().unwrap();
    let region = Region::open_peer(std::os::unix::process::parent_id(), fd, len).unwrap();
    let ring = Ring::attach(region_memory(&region), CROSS_TAG).unwrap();
    std::thread::scope(|s| {
        for producer in 0..CROSS_PRODUCERS {
            let ring = &ring;
            s.spawn(move || {
                produce(ring, producer, CROSS_COUNT, || {
                    let one = 1u64;
                    // SAFETY: writes 8 bytes from `one` to the eventfd.
                    let n = unsafe { libc::write(bell, (&one as *const u64).cast(), 8) };
                    assert_eq!(n, 8);
                })
            });
        }
    });
}

/// Receives whatever is there, reading records in random pieces: every
/// outcome must be a record, nothing, or `Corrupt` (reported as `true`).
fn drain_hostile(consumer: &mut Consumer, rng: &mut Rng) -> bool {
    let mut out = Vec::new();
    for _ in 0..2 * consumer.ring().slots() {
        if consumer.prepare_to_sleep() {
            consumer.woke();
        }
        let outcome = if rng.below(2) == 0 {
            consumer
                .try_recv(&mut out)
                .map(|kind| kind.map(|_| out.len()))
        } else {
            let seed = rng.next();
            consumer.try_recv_with(|record| {
                let mut rng = Rng(seed | 1);
                let offset = rng.below(record.len() + 1);
                let mut dst = vec![0; rng.below(record.len() - offset + 1)];
                record.read(offset, &mut dst);
                record.len()
            })
        };
        match outcome {
            Ok(Some(len)) => assert!(len <= consumer.ring().max_record_len()),
            Ok(None) => return false,
            Err(RecvError::Corrupt(_)) => return true,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    false
}

#[test]
fn scribbled_memory_is_corrupt_never_a_crash() {
    const TRIALS: u32 = 20_000;
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut corrupt = 0;
    for trial in 0..TRIALS {
        let slots = 2 << rng.below(4);
        let slot_size = 64 << rng.below(2);
        let mapping = Mapping::guarded(required_len(slots, slot_size).unwrap());
        let ring = Ring::create(mapping.memory(), slot_size, 3).unwrap();
        let mut consumer = Consumer::new(Ring::attach(mapping.memory(), 3).unwrap());
        // Move the positions on by a few laps, leaving some records in.
        let body = vec![0xa5; ring.max_record_len()];
        let mut out = Vec::new();
        for _ in 0..rng.below(4 * slots) {
            let len = rng.below(body.len() + 1);
            let _ = ring.try_send(trial, &[&body[..len]]);
            if rng.below(3) != 0 {
                let _ = consumer.try_recv(&mut out).unwrap();
            }
        }

        let words = mapping.len / 8;
        let control_words = 256 / 8;
        match rng.below(3) {
            // Random words anywhere, the control block included.
            0 => {
                for _ in 0..1 + rng.below(8) {
                    mapping.scribble(8 * rng.below(words), rng.next());
                }
            }
            // A run of random words over the slots.
            1 => {
                let from = control_words + rng.below(words - control_words);
                for word in from..words.min(from + rng.below(64)) {
                    mapping.scribble(8 * word, rng.next());
                }
            }
            // The next slot published, with a random header.
            _ => {
                let head = mapping.peek(128);
                let first = 256 + (head as usize % slots) * slot_size;
                mapping.scribble(first, head + 1);
                let (len, count) = (rng.next() % 4096, rng.next() % (slots as u64 + 2));
                mapping.scribble(first + 8, len | count << 32);
                mapping.scribble(first + 16, (rng.next() % 2) << 40 | 7);
            }
        }

        corrupt += u32::from(drain_hostile(&mut consumer, &mut rng));
        match ring.try_send(1, &[&body[..rng.below(body.len() + 1)]]) {
            Ok(_) | Err(SendError::Full) => {}
            Err(e) => panic!("unexpected {e}"),
        }
        // A consumer and producer attaching to the scribbled memory.
        mapping.scribble(8 * rng.below(words), rng.next());
        if let Ok(attached) = Ring::attach(mapping.memory(), 3) {
            let _ = attached.try_send(0, &[&body[..rng.below(body.len() + 1)]]);
            drain_hostile(&mut Consumer::new(attached), &mut rng);
        }
    }
    assert!(
        corrupt > TRIALS / 10,
        "only {corrupt} trials found corruption"
    );
}
