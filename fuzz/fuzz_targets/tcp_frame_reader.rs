//! Whatever bytes arrive on an authenticated TCP connection, the channel's
//! frame reader hands on whole frames no larger than its limit and ends
//! with a typed error or end of stream — never a panic, and never an
//! allocation a header's length field alone asks for beyond the limit.
//!
//! The bytes go through a real loopback connection, as they would from a
//! broken peer.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use threadwire_transport::{ReadOutcome, TcpChannel};

const MAX_FRAME: u64 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let mut writer = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    let (reader, _) = listener.accept().expect("accept");
    // Fits in the socket buffers: the whole input is there before reading.
    writer.write_all(&data[..data.len().min(1 << 16)]).unwrap();
    writer.shutdown(Shutdown::Write).unwrap();
    let channel = TcpChannel::new(reader, MAX_FRAME).expect("a channel");
    let mut frames = 0usize;
    for _ in 0..64 {
        let outcome = channel.receive(|frame| {
            assert!(frame.payload.len() as u64 <= MAX_FRAME);
            assert_eq!(frame.payload.len() as u64, frame.header.len);
            frames += 1;
        });
        match outcome {
            Ok(ReadOutcome::More | ReadOutcome::Drained | ReadOutcome::Empty) => {}
            Err(_) => return,
        }
    }
    panic!("no end of stream after 64 reads ({frames} frames)");
});
