//! A peer may write anything into the memory of a shared-memory ring:
//! whatever its slots and control block hold, the consumer reads records
//! no longer than the ring's maximum, nothing, or `Corrupt` — never a
//! panic, an out-of-bounds access or a hang — and a producer attaching to
//! the same memory sends or is refused.
//!
//! Input: byte 0 picks the geometry, the rest overwrites the ring's memory
//! from an offset chosen by byte 1 (the control block or the slots).
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire_transport::shm::ring::{required_len, Consumer, RecvError, Ring, RingMemory};

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let Some((&at, bytes)) = rest.split_first() else {
        return;
    };
    let slots = 2usize << (shape & 3);
    let slot_size = 64usize << ((shape >> 2) & 1);
    let len = required_len(slots, slot_size).expect("a valid geometry");
    let mut lines = vec![Line([0; 64]); len.div_ceil(64)];
    let base = lines.as_mut_ptr().cast::<u8>();
    // SAFETY: `lines` is 64-aligned, `len` bytes long, outlives every ring
    // made below (they drop at the end of this closure, before it), and is
    // written directly only while no ring exists.
    let memory = || unsafe { RingMemory::from_raw(base, len) };
    {
        let ring = Ring::create(memory(), slot_size, 3).expect("a fresh ring");
        let _ = ring.try_send(1, &[b"a record before the scribbling"]);
    }
    let from = (at as usize * 8) % len;
    let end = len.min(from + bytes.len());
    // SAFETY: no ring of this memory exists now; `from..end` lies inside it.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(from), end - from) };
    let Ok(ring) = Ring::attach(memory(), 3) else {
        return;
    };
    let max = ring.max_record_len();
    let mut consumer = Consumer::new(ring);
    let mut out = Vec::new();
    for _ in 0..2 * slots + 2 {
        match consumer.try_recv(&mut out) {
            Ok(Some(_)) => assert!(out.len() <= max),
            Ok(None) | Err(RecvError::Corrupt(_)) => break,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    if let Ok(producer) = Ring::attach(memory(), 3) {
        let _ = producer.try_send(2, &[&bytes[..bytes.len().min(max)]]);
    }
    drop(consumer);
    drop(lines);
});
