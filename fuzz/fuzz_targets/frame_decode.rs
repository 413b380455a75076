//! Any 32 bytes decode to a header or a typed error, never a panic, and a
//! header that decodes re-encodes to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire_wire::{FrameHeader, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER_LEN {
        return;
    }
    let raw: &[u8; HEADER_LEN] = data[..HEADER_LEN].try_into().unwrap();
    if let Ok(h) = FrameHeader::decode(raw, 1 << 30) {
        assert_eq!(&h.encode(), raw);
    }
});
