//! The protocol over a simulated network: loss, reordering, duplication,
//! forgery and a silent peer, with simulated time.

use super::*;
use std::time::{Duration, Instant};

/// xorshift: fixed seeds, so a failure replays.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
}

#[derive(Clone, Copy)]
struct Impairments {
    loss: f64,
    duplicate: f64,
    /// One-way delay, and up to this much more at random (reordering).
    delay: Duration,
    jitter: Duration,
    /// Datagrams from n1 to n0 all lost, from this time on.
    silence_after: Option<Duration>,
}

impl Default for Impairments {
    fn default() -> Impairments {
        Impairments {
            loss: 0.0,
            duplicate: 0.0,
            delay: Duration::from_micros(50),
            jitter: Duration::ZERO,
            silence_after: None,
        }
    }
}

fn keys() -> (Keys, Keys) {
    let secret = [0x5a; 32];
    let (na, nb) = ([1; 32], [2; 32]);
    (
        Keys::derive(&secret, 77, 0, 1, &na, &nb),
        Keys::derive(&secret, 77, 1, 0, &nb, &na),
    )
}

struct Sim {
    conns: [Connection; 2],
    start: Instant,
    now: Instant,
    /// (delivery time, destination, datagram)
    wire: Vec<(Instant, usize, Vec<u8>)>,
    rng: Rng,
    imp: Impairments,
    /// Every datagram n0 ever sent, for replays.
    sent_by_0: Vec<Vec<u8>>,
    received: [Vec<u8>; 2],
    /// The most bytes n1 held for its reader at once.
    peak_held_1: u64,
}

impl Sim {
    fn new(imp: Impairments, config: Config, seed: u64) -> Sim {
        let start = Instant::now();
        let (a, b) = keys();
        Sim {
            conns: [
                Connection::new(0, 1, a, config.clone(), start),
                Connection::new(1, 0, b, config, start),
            ],
            start,
            now: start,
            wire: Vec::new(),
            rng: Rng(seed),
            imp,
            sent_by_0: Vec::new(),
            received: [Vec::new(), Vec::new()],
            peak_held_1: 0,
        }
    }

    fn transmit(&mut self, from: usize) {
        let mut buf = [0u8; 1472];
        while let Some(len) = self.conns[from].poll_transmit(self.now, &mut buf) {
            let d = buf[..len].to_vec();
            if from == 0 {
                self.sent_by_0.push(d.clone());
            }
            let silenced = from == 1
                && self
                    .imp
                    .silence_after
                    .is_some_and(|t| self.now >= self.start + t);
            if silenced || self.rng.chance(self.imp.loss) {
                continue;
            }
            let copies = 1 + usize::from(self.rng.chance(self.imp.duplicate));
            for _ in 0..copies {
                let jitter = match self.imp.jitter.as_nanos() as u64 {
                    0 => 0,
                    j => self.rng.next() % j,
                };
                let at = self.now + self.imp.delay + Duration::from_nanos(jitter);
                self.wire.push((at, 1 - from, d.clone()));
            }
        }
    }

    /// One step: deliver what is due, read, fire timers, send; then
    /// advance time to the next event. `false` when nothing remains.
    fn step(&mut self, read_1: bool) -> bool {
        let now = self.now;
        let mut due: Vec<(Instant, usize, Vec<u8>)> = Vec::new();
        self.wire.retain(|(at, to, d)| {
            if *at <= now {
                due.push((*at, *to, d.clone()));
                false
            } else {
                true
            }
        });
        due.sort_by_key(|(at, _, _)| *at);
        for (_, to, d) in due {
            self.conns[to]
                .on_datagram(now, &d)
                .or_else(|e| match e {
                    PacketError::Duplicate(_) => Ok(()),
                    e => Err(e),
                })
                .expect("a datagram of the pair");
        }
        let held = self.conns[1].held();
        self.peak_held_1 = self.peak_held_1.max(held);
        for side in 0..2 {
            if side == 0 || read_1 {
                self.conns[side].read(&mut self.received[side]);
            }
            if self.conns[side].timeout().is_some_and(|t| t <= now) {
                self.conns[side].on_timeout(now);
            }
            self.transmit(side);
        }
        let next_wire = self.wire.iter().map(|(at, _, _)| *at).min();
        let next_timer = self.conns.iter().filter_map(Connection::timeout).min();
        match next_wire.into_iter().chain(next_timer).min() {
            Some(t) => {
                self.now = t.max(now + Duration::from_micros(1));
                true
            }
            None => false,
        }
    }
}

fn stream(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt) ^ (i >> 11) as u8)
        .collect()
}

/// Writes `len` bytes each way in pieces of up to 5000, runs until both
/// sides have everything, checks it; returns the simulation.
fn transfer(imp: Impairments, len: usize, seed: u64) -> Sim {
    let mut sim = Sim::new(imp, Config::default(), seed);
    let (a, b) = (stream(len, 1), stream(len / 3, 2));
    for piece in a.chunks(5000) {
        sim.conns[0].write(piece);
    }
    for piece in b.chunks(5000) {
        sim.conns[1].write(piece);
    }
    let mut steps = 0u64;
    while sim.received[1].len() < a.len() || sim.received[0].len() < b.len() {
        assert!(
            sim.step(true),
            "stalled with {} of {} bytes",
            sim.received[1].len(),
            a.len()
        );
        steps += 1;
        assert!(steps < 5_000_000, "no end");
        assert!(
            !sim.conns[0].is_lost() && !sim.conns[1].is_lost(),
            "taken for lost"
        );
    }
    // Let the last acknowledgements land.
    for _ in 0..10_000 {
        if sim.conns.iter().all(|c| c.unacknowledged() == 0) {
            break;
        }
        sim.step(true);
    }
    assert_eq!(sim.received[1], a, "n0's stream at n1");
    assert_eq!(sim.received[0], b, "n1's stream at n0");
    assert!(
        sim.conns.iter().all(|c| c.unacknowledged() == 0),
        "all acknowledged"
    );
    sim
}

#[test]
fn a_clean_path_delivers_without_loss() {
    let sim = transfer(Impairments::default(), 2 << 20, 1);
    let s = sim.conns[0].stats();
    assert_eq!(
        (s.lost, s.duplicates, s.forged, s.refused),
        (0, 0, 0, 0),
        "{s:?}"
    );
}

#[test]
fn one_and_ten_percent_loss_are_repaired() {
    for (loss, seed) in [(0.01, 2), (0.10, 3), (0.10, 4)] {
        let imp = Impairments {
            loss,
            ..Impairments::default()
        };
        let sim = transfer(imp, 1 << 20, seed);
        assert!(sim.conns[0].stats().lost > 0, "{loss}: something was lost");
    }
}

#[test]
fn reordering_and_duplication_are_absorbed() {
    let imp = Impairments {
        duplicate: 0.05,
        jitter: Duration::from_micros(400),
        loss: 0.02,
        ..Impairments::default()
    };
    let sim = transfer(imp, 1 << 20, 5);
    assert!(sim.conns[1].stats().duplicates > 0);
}

#[test]
fn forged_replayed_and_foreign_datagrams_are_refused_and_counted() {
    let mut sim = Sim::new(Impairments::default(), Config::default(), 6);
    let mut data = stream(200_000, 3);
    sim.conns[0].write(&data);
    while sim.received[1].len() < data.len() {
        assert!(sim.step(true));
    }
    let now = sim.now;
    let mut rng = Rng(99);
    let mut refused = 0;
    let recorded = sim.sent_by_0.clone();
    for real in &recorded {
        // A replay of what n0 sent.
        assert!(matches!(
            sim.conns[1].on_datagram(now, real),
            Err(PacketError::Duplicate(_))
        ));
        // The same with one bit flipped.
        let mut bad = real.clone();
        let i = rng.next() as usize % bad.len();
        bad[i] ^= 1 << (rng.next() % 8);
        assert!(sim.conns[1].on_datagram(now, &bad).is_err());
        // Garbage of any length.
        let garbage: Vec<u8> = (0..rng.next() % 1500).map(|_| rng.next() as u8).collect();
        assert!(sim.conns[1].on_datagram(now, &garbage).is_err());
        refused += 3;
    }
    let s = *sim.conns[1].stats();
    assert_eq!(s.duplicates + s.forged + s.refused, refused, "{s:?}");
    assert!(s.forged > 0 && s.duplicates > 0 && s.refused > 0, "{s:?}");
    // The pair goes on.
    let more = stream(100_000, 9);
    sim.conns[0].write(&more);
    data.extend_from_slice(&more);
    while sim.received[1].len() < data.len() {
        assert!(sim.step(true));
    }
    assert_eq!(sim.received[1], data);
    // A session of other nonces refuses n0's datagrams: its key differs.
    let secret = [0x5a; 32];
    let other = Keys::derive(&secret, 77, 1, 0, &[9; 32], &[1; 32]);
    let mut stranger = Connection::new(1, 0, other, Config::default(), sim.now);
    let last = sim.sent_by_0.last().expect("a datagram");
    assert_eq!(
        stranger.on_datagram(sim.now, last),
        Err(PacketError::Forged)
    );
}

#[test]
fn a_slow_reader_holds_at_most_its_window() {
    let config = Config {
        window: 64 * 1024,
        ..Config::default()
    };
    let mut sim = Sim::new(Impairments::default(), config, 7);
    let data = stream(1 << 20, 4);
    sim.conns[0].write(&data);
    let mut steps = 0u64;
    while sim.received[1].len() < data.len() {
        // n1 reads once in every 50 steps.
        steps += 1;
        sim.step(steps.is_multiple_of(50));
        assert!(steps < 5_000_000, "no end");
    }
    assert_eq!(sim.received[1], data);
    assert!(sim.peak_held_1 <= 64 * 1024, "held {}", sim.peak_held_1);
}

#[test]
fn a_silent_peer_is_lost_after_the_timeout() {
    let imp = Impairments {
        silence_after: Some(Duration::from_millis(5)),
        ..Impairments::default()
    };
    let config = Config {
        lost_after: Duration::from_millis(300),
        ..Config::default()
    };
    let mut sim = Sim::new(imp, config, 8);
    let mut written = false;
    while !sim.conns[0].is_lost() {
        if !written && sim.now >= sim.start + Duration::from_millis(6) {
            sim.conns[0].write(&stream(1 << 20, 5));
            written = true;
        }
        if !written {
            // Keep the pair talking until n1 falls silent.
            sim.conns[0].write(b"ping");
        }
        if !sim.step(true) {
            break;
        }
        assert!(
            sim.now < sim.start + Duration::from_secs(2),
            "not lost in time"
        );
    }
    assert!(sim.conns[0].is_lost(), "{}", sim.conns[0].state());
    let waited = sim.now - sim.start;
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(sim.conns[0].stats().probes > 0);
}

/// Two channels on real loopback sockets: frames of every size both ways,
/// sent in runs and read in runs.
#[test]
fn channels_on_real_sockets_carry_frames() {
    let (runs, reads, received) = carry_frames_on_real_sockets(false);
    assert!(runs > 1);
    assert!(
        (reads as u64) < received,
        "{reads} reads for {received} datagrams"
    );
}

/// A kernel that refuses segmentation (`SO_NO_CHECK` on the sending
/// socket makes it refuse `UDP_SEGMENT` with `EINVAL`): the channel falls
/// back to one datagram a call and carries everything.
#[test]
fn a_refused_run_falls_back_to_one_datagram_a_call() {
    let (runs, _, _) = carry_frames_on_real_sockets(true);
    assert_eq!(runs, 1);
}

/// Sends frames of every size from a channel to another on loopback:
/// the sender's datagrams in a run at the end, the receiver's reads and
/// datagrams accepted.
fn carry_frames_on_real_sockets(refuse_runs: bool) -> (usize, usize, u64) {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::sync::Arc;
    use threadwire_wire::{Format, FrameHeader, Payload};
    let sockets: Vec<Arc<UdpSocket>> = (0..2)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_nonblocking(true).unwrap();
            super::enable_receive_runs(&s);
            Arc::new(s)
        })
        .collect();
    if refuse_runs {
        let on: libc::c_int = 1;
        // SAFETY: `on` is a live int of the size passed.
        let r = unsafe {
            libc::setsockopt(
                sockets[0].as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_NO_CHECK,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
    }
    let (ka, kb) = keys();
    let addr = |i: usize| sockets[i].local_addr().unwrap();
    let a = UdpChannel::new(
        sockets[0].clone(),
        addr(1),
        (0, 1),
        ka,
        Config::default(),
        1 << 30,
    );
    let b = UdpChannel::new(
        sockets[1].clone(),
        addr(0),
        (1, 0),
        kb,
        Config::default(),
        1 << 30,
    );
    let sizes = [0usize, 1, 1000, 1500, 70_000, 3 << 20];
    for (i, &n) in sizes.iter().enumerate() {
        let h = FrameHeader::data(1, 2, i as u32, Format::OPAQUE, n as u64);
        a.send(&h, Payload::from_vec(stream(n, i as u8)))
            .map_err(|(e, _)| e)
            .unwrap();
    }
    let mut got = Vec::new();
    let mut reads = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < sizes.len() {
        assert!(
            Instant::now() < deadline,
            "{} of {} frames",
            got.len(),
            sizes.len()
        );
        for (me, other, sock) in [(&b, 0u32, 1usize), (&a, 1, 0)] {
            let n = receive_datagrams(&sockets[sock], 64, |from, d| {
                assert_eq!(from, other);
                let _ = me.on_datagram(d);
            })
            .unwrap();
            if sock == 1 {
                reads += n;
            }
        }
        b.receive(|f| got.push(f)).unwrap();
        a.receive(|_| {}).unwrap();
        let now = Instant::now();
        for c in [&a, &b] {
            if c.timeout().is_some_and(|t| t <= now) {
                c.on_timeout(now).unwrap();
            }
        }
    }
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f.header.tag, i as u32);
        assert_eq!(f.payload, stream(sizes[i], i as u8), "frame {i}");
    }
    (a.run_length(), reads, b.stats().received)
}
