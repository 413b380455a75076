//! Datagrams as a UDP connection receives them: any bytes, and frames of
//! any content sealed with the pair's key (what a peer that knows the job
//! secret could send), interleaved with the connection's own sending,
//! reading and timers: a typed refusal or acceptance, never a panic, and
//! never more held than the flow-control window allows.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};
use threadwire_transport::udp::{seal_datagram, Config, Connection, Keys};

fuzz_target!(|data: &[u8]| {
    let secret = [3u8; 32];
    let (na, nb) = ([1u8; 32], [2u8; 32]);
    let peer = Keys::derive(&secret, 5, 0, 1, &na, &nb);
    let mine = Keys::derive(&secret, 5, 1, 0, &nb, &na);
    let start = Instant::now();
    let config = Config {
        window: 4096,
        ..Config::default()
    };
    let mut conn = Connection::new(1, 0, mine, config, start);
    conn.write(&[7u8; 3000]);
    let mut now = start;
    let mut buf = [0u8; 1472];
    let mut read = Vec::new();
    let mut rest = data;
    while rest.len() >= 4 {
        let (op, number, len) = (rest[0], u16::from_le_bytes([rest[1], rest[2]]), rest[3]);
        let take = (len as usize).min(rest.len() - 4);
        let body = &rest[4..4 + take];
        rest = &rest[4 + take..];
        let _ = match op % 4 {
            0 => conn.on_datagram(now, body),
            _ => conn.on_datagram(now, &seal_datagram(&peer, 0, u64::from(number), body)),
        };
        now += Duration::from_micros(u64::from(op) * 37);
        if conn.timeout().is_some_and(|t| t <= now) {
            conn.on_timeout(now);
        }
        while conn.poll_transmit(now, &mut buf).is_some() {}
        if op % 3 == 0 {
            conn.read(&mut read);
        }
        assert!(read.len() <= 4096 + 4096 * 64, "read beyond any window");
    }
});
