//! The shared memory's messages from a broken or hostile peer: diffs,
//! batches of diffs, write notices, versions, barrier arrivals and
//! releases, lock grants. No input may panic a decoder, and a diff the
//! checker accepts must apply.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    threadwire_dsm::fuzzing::decode_everything(data);
});
