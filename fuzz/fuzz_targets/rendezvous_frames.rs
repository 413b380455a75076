//! Any bytes as the payload of a rendezvous frame (`Rts`, `Cts`, `Fin`,
//! `Credit`), as a node's router reads them from a peer: a typed error,
//! never a panic; what decodes re-encodes to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire::rendezvous_codec::{
    decode_credit, decode_cts, decode_fin, decode_rts, encode_credit, encode_cts, encode_fin,
    encode_rts, Fetch,
};
use threadwire::Payload;

fuzz_target!(|data: &[u8]| {
    let format = Payload::from_vec(Vec::new()).format();
    if let Ok(a) = decode_rts(data.to_vec(), format, 1 << 30) {
        let mut again = encode_rts(a.len, a.send_id, &a.fetch);
        if let Fetch::Inline(bytes) = &a.fetch {
            assert_eq!(bytes.len(), a.len);
            again.extend_from_slice(bytes);
        }
        assert_eq!(again, data);
    }
    if let Ok((send, recv, want, returns)) = decode_cts(data) {
        assert_eq!(encode_cts(send, recv, want as usize, returns), data);
    }
    if let Ok((send, returns)) = decode_fin(data) {
        assert_eq!(encode_fin(send, returns), data);
    }
    if let Ok(returns) = decode_credit(data) {
        assert_eq!(encode_credit(returns), data);
    }
});
