use super::*;
use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Zeroed, 64-aligned heap memory standing in for a mapping.
struct Heap {
    base: *mut u8,
    layout: Layout,
}

impl Heap {
    fn new(len: usize) -> Heap {
        let layout = Layout::from_size_align(len, 64).unwrap();
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(!base.is_null());
        Heap { base, layout }
    }

    fn memory(&self) -> RingMemory {
        // SAFETY: allocated above with 64-byte alignment, freed only when the
        // `Heap` drops, after the rings of each test; accessed only by them.
        unsafe { RingMemory::from_raw(self.base, self.layout.size()) }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.base, self.layout) }
    }
}

#[test]
fn geometry() {
    assert_eq!(required_len(8, 64).unwrap(), 256 + 512);
    assert!(required_len(6, 64).is_err());
    assert!(required_len(8, 96).is_err());
    assert!(required_len(1, 64).is_err());
    let g = Geometry::new(8, 64, 768).unwrap();
    assert_eq!(g.max_record_len, 4 * 56 - 16);
    assert_eq!(g.slots_for(0), 1);
    assert_eq!(g.slots_for(40), 1);
    assert_eq!(g.slots_for(41), 2);
    assert_eq!(g.slots_for(96), 2);
    assert_eq!(g.slots_for(97), 3);
    assert_eq!(g.slot_at(9), 256 + 64);
}

#[test]
fn create_takes_the_largest_power_of_two_that_fits() {
    let heap = Heap::new(256 + 7 * 64);
    let ring = Ring::create(heap.memory(), 64, 1).unwrap();
    assert_eq!(ring.slots(), 4);
    assert!(Ring::create(heap.memory(), 1024, 1).is_err());
}

#[test]
fn attach_checks_identity_and_geometry() {
    let heap = Heap::new(required_len(16, 128).unwrap());
    assert!(Ring::attach(heap.memory(), 5).is_err(), "no ring yet");
    Ring::create(heap.memory(), 128, 5).unwrap();
    let ring = Ring::attach(heap.memory(), 5).unwrap();
    assert_eq!((ring.slots(), ring.slot_size(), ring.tag()), (16, 128, 5));
    assert!(Ring::attach(heap.memory(), 6).is_err());
    ring.memory.atomic(SLOTS_AT).store(32, Ordering::Relaxed);
    assert!(
        Ring::attach(heap.memory(), 5).is_err(),
        "more slots than fit"
    );
}

#[test]
fn records_wrap_around_and_keep_their_bytes() {
    let heap = Heap::new(required_len(8, 64).unwrap());
    let ring = Ring::create(heap.memory(), 64, 0).unwrap();
    let mut consumer = Consumer::new(Ring::attach(heap.memory(), 0).unwrap());
    let mut out = Vec::new();
    for round in 0..200usize {
        let len = round % (ring.max_record_len() + 1);
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + round) as u8).collect();
        let split = len / 3;
        let publish = ring.try_send(round as u32, &[&bytes[..split], &[], &bytes[split..]]);
        assert_eq!(
            publish,
            Ok(Publish {
                wake_consumer: false
            })
        );
        assert_eq!(consumer.try_recv(&mut out), Ok(Some(round as u32)));
        assert_eq!(out, bytes);
        assert_eq!(consumer.try_recv(&mut out), Ok(None));
    }
}

#[test]
fn full_and_too_large_write_nothing() {
    let heap = Heap::new(required_len(4, 64).unwrap());
    let ring = Ring::create(heap.memory(), 64, 0).unwrap();
    let max = ring.max_record_len();
    let big = vec![1; max + 1];
    assert_eq!(
        ring.try_send(0, &[&big]),
        Err(SendError::TooLarge { len: max + 1, max })
    );
    assert!(ring.try_send(1, &[&big[..max]]).is_ok());
    assert!(ring.try_send(2, &[&big[..41]]).is_ok());
    assert_eq!(ring.try_send(3, &[&[]]), Err(SendError::Full));
    let mut consumer = Consumer::new(Ring::attach(heap.memory(), 0).unwrap());
    let mut out = Vec::new();
    assert_eq!(consumer.try_recv(&mut out), Ok(Some(1)));
    assert_eq!(out.len(), max);
    assert!(ring.try_send(3, &[&[]]).is_ok());
    assert_eq!(consumer.try_recv(&mut out), Ok(Some(2)));
    assert_eq!(consumer.try_recv(&mut out), Ok(Some(3)));
    assert!(out.is_empty());
}

#[test]
fn partial_reads() {
    let heap = Heap::new(required_len(16, 64).unwrap());
    let ring = Ring::create(heap.memory(), 64, 0).unwrap();
    let bytes: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let _ = ring.try_send(9, &[&bytes]).unwrap();
    let mut consumer = Consumer::new(Ring::attach(heap.memory(), 0).unwrap());
    let got = consumer.try_recv_with(|record| {
        let mut pieces = Vec::new();
        for (offset, len) in [(0, 0), (3, 50), (37, 100), (299, 1), (150, 150)] {
            let mut dst = vec![0; len];
            record.read(offset, &mut dst);
            pieces.push((offset, dst));
        }
        pieces
    });
    for (offset, dst) in got.unwrap().unwrap() {
        assert_eq!(dst, bytes[offset..offset + dst.len()]);
    }
}

#[test]
fn sleeping_handshake() {
    let heap = Heap::new(required_len(4, 64).unwrap());
    let ring = Ring::create(heap.memory(), 64, 0).unwrap();
    let mut consumer = Consumer::new(Ring::attach(heap.memory(), 0).unwrap());
    let wake = |wake_consumer| Ok(Publish { wake_consumer });
    assert!(consumer.prepare_to_sleep());
    assert_eq!(ring.try_send(0, &[b"a"]), wake(true));
    assert_eq!(ring.try_send(0, &[b"b"]), wake(true));
    consumer.woke();
    assert_eq!(ring.try_send(0, &[b"c"]), wake(false));
    assert!(!consumer.prepare_to_sleep(), "records are waiting");
    assert_eq!(ring.try_send(0, &[b"d"]), wake(false));
    let mut out = Vec::new();
    while consumer.try_recv(&mut out).unwrap().is_some() {}
    assert!(consumer.prepare_to_sleep());
}

#[test]
fn bad_sequence_and_header_are_corrupt() {
    let heap = Heap::new(required_len(8, 64).unwrap());
    let ring = Ring::create(heap.memory(), 64, 0).unwrap();
    let mut consumer = Consumer::new(Ring::attach(heap.memory(), 0).unwrap());
    let mut out = Vec::new();
    ring.seq(0).store(7, Ordering::Relaxed);
    assert!(matches!(
        consumer.try_recv(&mut out),
        Err(RecvError::Corrupt(_))
    ));
    ring.seq(0).store(0, Ordering::Relaxed);
    let _ = ring.try_send(0, &[&[0; 100]]).unwrap();
    ring.memory.store_data(CONTROL_LEN + SEQ_LEN, 100 | 5 << 32);
    assert!(matches!(
        consumer.try_recv(&mut out),
        Err(RecvError::Corrupt(_))
    ));
    ring.memory.store_data(CONTROL_LEN + SEQ_LEN, 100 | 3 << 32);
    ring.seq(2).store(0, Ordering::Relaxed);
    assert!(matches!(
        consumer.try_recv(&mut out),
        Err(RecvError::Corrupt(_))
    ));
    ring.seq(2).store(3, Ordering::Relaxed);
    assert_eq!(consumer.try_recv(&mut out), Ok(Some(0)));
    // A garbage `head` harms only its consumer: producers go on with their
    // own copy until that says full, then see a full ring.
    ring.memory.atomic(HEAD_AT).store(100, Ordering::Relaxed);
    let sent = (0..=8)
        .take_while(|_| ring.try_send(0, &[]).is_ok())
        .count();
    assert!(sent < 8, "no more than the free slots");
    assert_eq!(ring.try_send(0, &[]), Err(SendError::Full));
}
