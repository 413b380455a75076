//! The channel's two ends in one process: the setup steps, every record
//! kind, back-pressure, doorbells and corrupt memory.

use super::super::doorbell::Doorbell;
use super::super::region::Region;
use super::super::setup::{self, Pair, Setup};
use super::*;
use crate::Frame;

/// Both ends through the real setup steps; `scribble` gets a second
/// mapping of the region for tests that corrupt it.
fn pair_with(config: ShmConfig, scribble: Option<&mut Option<Region>>) -> (ShmChannel, ShmChannel) {
    pair_ringing(
        config,
        scribble,
        [Doorbell::new(|| {}), Doorbell::new(|| {})],
    )
}

/// As [`pair_with`], the first channel ringing `bells[0]`, the second
/// `bells[1]`.
fn pair_ringing(
    config: ShmConfig,
    scribble: Option<&mut Option<Region>>,
    bells: [Doorbell; 2],
) -> (ShmChannel, ShmChannel) {
    let [bell_one, bell_zero] = bells;
    let (creator, b) = (
        Pair {
            job_id: 42,
            me: 1,
            peer: 0,
        },
        Pair {
            job_id: 42,
            me: 0,
            peer: 1,
        },
    );
    let (offering, offer) = setup::offer(creator, &config).unwrap();
    let Setup::Offer(o) = &offer else {
        panic!("an offer")
    };
    let (h, p) = offer.encode();
    assert_eq!(Setup::decode(&h, &p).unwrap(), offer);
    if let Some(slot) = scribble {
        *slot = Some(o.open_again());
    }
    let (attached, accept) = setup::attach(b, o, &config).unwrap();
    let Setup::Accept(a) = &accept else {
        panic!("an accept")
    };
    let (one, ready) = offering.complete(a, bell_one).unwrap();
    let Setup::Ready { can_read } = ready else {
        panic!("ready")
    };
    let zero = attached.complete(can_read, bell_zero).unwrap();
    (one, zero)
}

fn pair(config: ShmConfig) -> (ShmChannel, ShmChannel) {
    pair_with(config, None)
}

fn data(source: u32, tag: u32, len: usize) -> (FrameHeader, Payload) {
    let bytes: Vec<u8> = (0..len).map(|i| (i as u32 ^ tag) as u8).collect();
    (
        FrameHeader::data(source, 0, tag, threadwire_wire::Format::OPAQUE, len as u64),
        Payload::from_vec(bytes),
    )
}

fn check(frame: &Frame, tag: u32) {
    assert_eq!(frame.header.tag, tag);
    assert_eq!(frame.payload.len() as u64, frame.header.len);
    for (i, b) in frame.payload.iter().enumerate() {
        assert_eq!(*b, (i as u32 ^ tag) as u8, "byte {i} of tag {tag}");
    }
}

fn receive_all(ch: &ShmChannel, frames: &mut Vec<Frame>) -> Received {
    let mut total = Received::default();
    loop {
        let r = ch.receive_records(|f| frames.push(f)).unwrap();
        total.doorbell |= r.doorbell;
        if !r.more {
            return total;
        }
    }
}

#[test]
fn frames_of_every_size_arrive_in_order_both_ways() {
    for cma in [true, false] {
        let config = ShmConfig {
            cma,
            ..ShmConfig::small_for_tests()
        };
        let (a, b) = pair(config);
        assert_eq!(a.uses_cross_memory(), cma);
        // 24 and 25: either side of the short frames read word by word.
        let sizes = [0, 1, 7, 8, 24, 25, 100, 1000, 2047, 2048, 5000, 20_000];
        let mut got = Vec::new();
        for (tag, &len) in sizes.iter().enumerate() {
            let (h, p) = data(3, tag as u32, len);
            let _ = a.send(&h, p);
            // Keep the small ring moving, as the engine would.
            while a.queued_bytes() > 0 {
                let _ = a.flush();
                let _ = receive_all(&b, &mut got);
                let _ = receive_all(&a, &mut Vec::new());
            }
            let _ = receive_all(&b, &mut got);
        }
        let tags: Vec<u32> = got.iter().map(|f| f.header.tag).collect();
        assert_eq!(got.len(), sizes.len(), "cma {cma}: {tags:?}");
        for (tag, f) in got.iter().enumerate() {
            check(f, tag as u32);
        }
        let (h, p) = data(1, 9, 10);
        let _ = b.send(&h, p);
        let mut back = Vec::new();
        let _ = receive_all(&a, &mut back);
        check(&back[0], 9);
    }
}

#[test]
fn a_full_ring_queues_in_order_and_asks_for_the_doorbell() {
    let (a, b) = pair(ShmConfig::small_for_tests());
    let mut queued = false;
    for tag in 0..200 {
        let (h, p) = data(0, tag, 200);
        queued |= a.send_frame(&h, p).queued;
    }
    assert!(queued, "200 frames of 200 B overflow a 64-slot ring");
    assert!(a.queued_bytes() > 0);
    let mut got = Vec::new();
    let r = receive_all(&b, &mut got);
    assert!(r.doorbell, "the producer asked to hear of free space");
    while a.queued_bytes() > 0 {
        let _ = a.flush();
        let _ = receive_all(&b, &mut got);
    }
    assert_eq!(got.len(), 200);
    for (tag, f) in got.iter().enumerate() {
        check(f, tag as u32);
    }
}

#[test]
fn a_sleeping_consumer_is_rung_once_something_arrives() {
    let (a, b) = pair(ShmConfig::small_for_tests());
    assert!(b.prepare_to_sleep());
    let (h, p) = data(0, 1, 8);
    assert!(a.send_frame(&h, p).doorbell);
    b.woke();
    let (h, p) = data(0, 2, 8);
    assert!(!a.send_frame(&h, p).doorbell);
    let mut got = Vec::new();
    let _ = receive_all(&b, &mut got);
    assert_eq!(got.len(), 2);
    let (h, p) = data(0, 3, 8);
    let _ = a.send(&h, p);
    assert!(!b.prepare_to_sleep(), "a record waits: no sleeping");
}

#[test]
fn the_channel_rings_its_own_doorbell() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    let rung = Arc::new(AtomicUsize::new(0));
    let counter = rung.clone();
    let bell = Doorbell::new(move || {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let (a, b) = pair_ringing(
        ShmConfig::small_for_tests(),
        None,
        [bell, Doorbell::new(|| {})],
    );
    assert!(b.prepare_to_sleep());
    let (h, p) = data(0, 1, 8);
    assert_eq!(a.send(&h, p), crate::SendOutcome::Written);
    assert_eq!(rung.load(Ordering::Relaxed), 1, "the sleeper was woken");
    b.woke();
    let (h, p) = data(0, 2, 8);
    let _ = a.send(&h, p);
    assert_eq!(rung.load(Ordering::Relaxed), 1, "an awake peer is not");
    let mut got = 0;
    while b.receive(|_| got += 1).unwrap() != crate::ReadOutcome::Empty {}
    assert_eq!(got, 2);
}

#[test]
fn chunks_from_many_threads_interleave_and_reassemble() {
    let config = ShmConfig {
        cma: false,
        ..ShmConfig::small_for_tests()
    };
    let (a, b) = pair(config);
    let got = std::sync::Mutex::new(Vec::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let a = &a;
            s.spawn(move || {
                for i in 0..20u32 {
                    let (h, p) = data(t, t * 100 + i, 3000 + 10 * i as usize);
                    let _ = a.send(&h, p);
                    let _ = a.flush();
                }
            });
        }
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = a.flush();
                let _ = receive_all(&b, &mut got.lock().unwrap());
                std::thread::yield_now();
            }
        });
        while got.lock().unwrap().len() < 80 {
            let _ = a.flush();
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let got = got.into_inner().unwrap();
    for t in 0..4u32 {
        let tags: Vec<u32> = got
            .iter()
            .filter(|f| f.header.source_thread == t)
            .map(|f| f.header.tag)
            .collect();
        assert_eq!(tags, (0..20).map(|i| t * 100 + i).collect::<Vec<_>>());
    }
    for f in &got {
        check(f, f.header.tag);
    }
}

#[test]
fn rendezvous_payloads_are_held_until_the_receiver_has_read_them() {
    let (a, b) = pair(ShmConfig::small_for_tests());
    let (h, p) = data(0, 5, 100_000);
    let _ = a.send(&h, p);
    assert_eq!(a.queued_bytes(), 100_000, "held for the peer to read");
    let mut got = Vec::new();
    let _ = receive_all(&b, &mut got);
    check(&got[0], 5);
    assert_eq!(a.queued_bytes(), 100_000, "the answer is not read yet");
    let _ = receive_all(&a, &mut Vec::new());
    assert_eq!(a.queued_bytes(), 0);
}

#[test]
fn corrupt_memory_is_an_error_never_a_panic() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut errors = 0;
    for trial in 0..300 {
        let mut second = None;
        let (a, b) = pair_with(ShmConfig::small_for_tests(), Some(&mut second));
        let second = second.unwrap();
        for (tag, len) in [0, 8, 24, 300, 1200].into_iter().enumerate() {
            let (h, p) = data(0, tag as u32, len);
            let _ = a.send(&h, p);
        }
        // Scribble over a few words of the ring `b` reads (the region's
        // first half: creator to attacher).
        let half = second.len() / 2;
        for _ in 0..1 + trial % 4 {
            let at = (next() as usize % (half / 8)) * 8;
            // SAFETY: an 8-aligned offset inside a live mapping; the ring
            // treats this memory as hostile and reads it atomically.
            unsafe { (second.as_ptr().add(at) as *mut u64).write_volatile(next()) };
        }
        let result = (0..10).try_for_each(|_| b.receive(|_| {}).map(|_| ()));
        if let Err(e) = result {
            errors += 1;
            assert!(e.to_string().contains("corrupt") || e.to_string().contains("cross-memory"));
        }
    }
    assert!(errors > 0, "some scribbles must be detected");
}

#[test]
fn a_ring_of_another_job_is_declined() {
    let config = ShmConfig::small_for_tests();
    let (_offering, offer) = setup::offer(
        Pair {
            job_id: 1,
            me: 1,
            peer: 0,
        },
        &config,
    )
    .unwrap();
    let Setup::Offer(o) = &offer else {
        panic!("an offer")
    };
    let why = setup::attach(
        Pair {
            job_id: 2,
            me: 0,
            peer: 1,
        },
        o,
        &config,
    )
    .unwrap_err()
    .to_string();
    assert!(why.contains("another job"), "{why}");
}
