//! Whatever a stranger sends to a node's listening port, the acceptor's
//! side of the handshake ends in a typed error or waits for more — it never
//! panics, never accepts without the proof of the secret, and never reads
//! more than a hello and a proof.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::{self, Read, Write};
use std::time::Duration;
use threadwire_transport::handshake::{AcceptProgress, Acceptor, Credentials};

/// A stream that yields the input in pieces and then would block.
struct Stranger<'a> {
    input: &'a [u8],
    piece: usize,
    read: usize,
    written: Vec<u8>,
}

impl Read for Stranger<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.input.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.piece).min(self.input.len());
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input = &self.input[n..];
        self.read += n;
        Ok(n)
    }
}

impl Write for Stranger<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, input)) = data.split_first() else {
        return;
    };
    let creds = Credentials {
        job_id: u64::from_le_bytes(*b"fuzzjob!"),
        secret: [7; 32],
    };
    let mut acceptor = Acceptor::new(creds, 0, Duration::from_secs(5));
    let mut stranger = Stranger {
        input,
        piece: 1 + piece as usize % 64,
        read: 0,
        written: Vec::new(),
    };
    for _ in 0..input.len() + 2 {
        match acceptor.advance(&mut stranger) {
            Ok(AcceptProgress::Pending) if stranger.input.is_empty() => break,
            Ok(AcceptProgress::Pending) => {}
            Ok(AcceptProgress::Done(node) | AcceptProgress::Busy(node)) => {
                panic!("a stranger without the secret was proven as n{node}")
            }
            Err(_) => break,
        }
    }
    assert!(stranger.read <= 56 + 32, "read {} bytes", stranger.read);
});
