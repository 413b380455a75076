//! Any payload, tagged with any format byte, unpacks to values or typed
//! errors, never a panic or an allocation its length does not justify.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire_wire::{Format, Payload, Unpacker};

fuzz_target!(|data: &[u8]| {
    let Some((&format, rest)) = data.split_first() else { return };
    let Ok(format) = Format::from_byte(format) else { return };
    let Ok(mut u) = Unpacker::new(Payload::from_wire(format, rest.to_vec())) else { return };
    for step in 0.. {
        let ok = match step % 4 {
            0 => u.unpack::<u32>().is_ok(),
            1 => u.unpack_vec::<f64>().is_ok(),
            2 => u.unpack_string().is_ok(),
            _ => u.unpack_bytes().is_ok(),
        };
        if !ok || u.is_done() {
            break;
        }
    }
});
