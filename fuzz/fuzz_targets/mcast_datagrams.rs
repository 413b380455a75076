//! Datagrams and control messages as a multicast endpoint receives them:
//! any bytes, datagrams of any offset, end and data sealed with a joined
//! sender's key (what a node that knows the job secret could send), and
//! any control bytes, interleaved with the endpoint's own sending, frame
//! reading and timers: a count or a typed refusal, never a panic; control
//! bytes that decode re-encode to themselves.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};
use threadwire_transport::udp::mcast::{seal_datagram, Control, Endpoint, McastConfig};

fuzz_target!(|data: &[u8]| {
    let secret = [3u8; 32];
    let (job, peer_session) = (5, [8u8; 16]);
    let start = Instant::now();
    let config = McastConfig {
        window: 4096,
        ..McastConfig::default()
    };
    let mut me = Endpoint::new(1, secret, job, [1; 16], config, start);
    me.on_control(start, 0, Control::Join);
    me.on_control(
        start,
        0,
        Control::Joined {
            from: 0,
            session: peer_session,
        },
    );
    me.write(&[7u8; 3000]);
    let mut now = start;
    let mut buf = [0u8; 1472];
    let mut frames = Vec::new();
    let mut rest = data;
    while rest.len() >= 6 {
        let (op, offset, len) = (
            rest[0],
            u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]),
            rest[5],
        );
        let take = (len as usize).min(rest.len() - 6);
        let body = &rest[6..6 + take];
        rest = &rest[6 + take..];
        let offset = u64::from(offset);
        match op % 5 {
            0 => me.on_datagram(now, body),
            1 => {
                let end = offset + body.len() as u64 + u64::from(op);
                me.on_datagram(
                    now,
                    &seal_datagram(&secret, job, 0, &peer_session, false, offset, end, body),
                );
            }
            2 => me.on_datagram(
                now,
                &seal_datagram(&secret, job, 0, &peer_session, true, 0, offset, &[]),
            ),
            3 => {
                if let Ok(c) = Control::decode(body) {
                    assert_eq!(c.encode(), body);
                    me.on_control(now, 0, c);
                }
            }
            _ => me.write(body),
        }
        now += Duration::from_micros(u64::from(op) * 37);
        if me.timeout().is_some_and(|t| t <= now) {
            me.on_timeout(now);
        }
        me.poll_control(now);
        while me.poll_transmit(now, &mut buf).is_some() {}
        if me.read_frames(1 << 16, &mut frames).is_err() {
            return;
        }
        frames.clear();
    }
});
