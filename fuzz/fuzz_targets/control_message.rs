//! Any bytes on a control connection (launcher to node, node to launcher)
//! read as messages, `Bye`, or a typed error — never a panic, and never an
//! allocation beyond the control limit; a message that decodes re-encodes
//! to one that decodes to the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire::control::{read_control, write_control};

fuzz_target!(|data: &[u8]| {
    let mut stream = data;
    for _ in 0..16 {
        match read_control(&mut stream) {
            Ok(Some(message)) => {
                let mut again = Vec::new();
                write_control(&mut again, &message).expect("writing to a Vec");
                let back = read_control(&again[..]).expect("a message re-encoded");
                assert_eq!(back, Some(message));
            }
            Ok(None) | Err(_) => break,
        }
    }
});
