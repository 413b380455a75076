//! Any bytes as a named-group request (read by a name's home) or reply
//! (read by the requester): a typed error, never a panic; a request that
//! decodes re-encodes to the same bytes, and a reply likewise; as a
//! message between a home and its backup (an update, an acknowledgement,
//! a snapshot of names), a typed error or a message that round-trips.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire::group::named::protocol::{
    check_replica_bytes, decode_reply, decode_request, encode_reply, encode_request,
};

fuzz_target!(|data: &[u8]| {
    if let Ok((op, name)) = decode_request(data) {
        assert_eq!(encode_request(op, name), data);
    }
    if let Ok(reply) = decode_reply(data) {
        assert_eq!(encode_reply(&reply), data);
    }
    check_replica_bytes(data);
});
