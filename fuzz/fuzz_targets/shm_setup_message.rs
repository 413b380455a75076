//! Any shared-memory set-up frame a peer sends (offer, accept, decline,
//! ready: the first bytes a 32-byte header, the rest its payload) decodes
//! to a message or a typed error, never a panic; a message that decodes
//! re-encodes to one that decodes alike.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire_transport::shm::setup::Setup;
use threadwire_wire::{FrameHeader, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER_LEN {
        return;
    }
    let (raw, payload) = data.split_at(HEADER_LEN);
    let raw: &[u8; HEADER_LEN] = raw.try_into().unwrap();
    let Ok(header) = FrameHeader::decode(raw, 1 << 20) else {
        return;
    };
    if let Ok(message) = Setup::decode(&header, payload) {
        let (h, p) = message.encode();
        let again = Setup::decode(&h, &p).expect("a message re-encoded");
        assert_eq!(format!("{again:?}"), format!("{message:?}"));
    }
});
