//! Any bytes as what a process manager (or, for a PMI server, a process)
//! sends: cut into lines and parsed, a typed failure, never a panic; a
//! command that parses and can be written parses back to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use threadwire_wire::pmi::{LineFramer, PmiCommand, MAX_LINE};

fuzz_target!(|data: &[u8]| {
    let mut framer = LineFramer::new();
    framer.push(data);
    while let Some(Ok(line)) = framer.next_line() {
        assert!(line.len() < MAX_LINE);
        if let Ok(command) = PmiCommand::parse(&line) {
            if let Ok(bytes) = command.encode() {
                assert_eq!(PmiCommand::parse(&bytes).as_ref(), Ok(&command));
            }
        }
    }
    let _ = PmiCommand::parse(data);
});
