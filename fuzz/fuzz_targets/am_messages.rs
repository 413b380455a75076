//! Any bytes as an active message's answer or report, as a large active
//! message's announcement (`AmRts`), and as a remote spawn's request, as
//! a node reads them from a peer: a typed failure or `None`, never a
//! panic; what decodes re-encodes to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire::am_codec::{
    decode, decode_large, decode_request, encode_large, encode_request, Failed, Status,
};
use threadwire::Payload;

fuzz_target!(|data: &[u8]| {
    match decode(Payload::from_vec(data.to_vec())) {
        Ok(answer) => {
            let mut again = answer.into_vec();
            again.extend_from_slice(&Status::Answer.encode(0, ""));
            assert_eq!(again, data);
        }
        Err(Failed { status, id, text }) => {
            if !text.starts_with("malformed answer") {
                let text_bytes = &data[..data.len() - 9];
                match std::str::from_utf8(text_bytes) {
                    Ok(_) => assert_eq!(status.encode(id, &text), data),
                    // Lossy text: only the status round-trips.
                    Err(_) => assert_eq!(data.last().copied(), Some(status as u8)),
                }
            }
        }
    }
    let format = Payload::from_vec(Vec::new()).format();
    if let Ok((a, target)) = decode_large(data.to_vec(), format, 1 << 30) {
        assert!(target != Some(u32::MAX));
        assert_eq!(encode_large(a.len, a.send_id, &a.fetch, target), data);
    }
    if let Some((args, name, tag, placement)) = decode_request(data.to_vec()) {
        let mut again = args;
        again.extend_from_slice(&encode_request(&name, name.len() as u16, tag, placement));
        assert_eq!(again, data);
    }
});
