//! Any multicast frame payload and announced count: a list of strictly
//! increasing threads within the payload, or a typed error — never a panic,
//! never an allocation beyond the payload's size; a list that decodes
//! re-encodes to the same trailer.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire_wire::mcast::{decode_list, encode_list, THREAD_BYTES};

fuzz_target!(|data: &[u8]| {
    let Some((count, payload)) = data.split_first_chunk::<4>() else {
        return;
    };
    if let Ok((data_len, threads)) = decode_list(payload, u32::from_le_bytes(*count)) {
        assert_eq!(data_len + threads.len() * THREAD_BYTES, payload.len());
        assert_eq!(encode_list(&threads), &payload[data_len..]);
    }
});
