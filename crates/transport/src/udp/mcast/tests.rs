//! The multicast protocol over a simulated network — loss of data and
//! control, reordering, duplication, forgery, a silent receiver, a late
//! join — with simulated time; and the channel on real sockets in a
//! network namespace of its own.

use super::super::tests::Rng;
use super::*;
use crate::Frame;
use std::time::{Duration, Instant};
use threadwire_wire::{Format, FrameHeader};

const SECRET: [u8; 32] = [0x3c; 32];
const JOB: u64 = 99;
const MAX_FRAME: u64 = 1 << 20;

fn session(node: u32) -> [u8; 16] {
    let mut s = [0xa5; 16];
    s[..4].copy_from_slice(&node.to_le_bytes());
    s
}

/// Frame `i` of a test stream, `len` payload bytes that tell its number.
fn frame(i: u32, len: usize) -> Vec<u8> {
    let header = FrameHeader::data(i, 0, i, Format::OPAQUE, len as u64);
    let mut bytes = compact(&header);
    bytes.extend((0..len).map(|k| (i as usize * 31 + k) as u8));
    bytes
}

/// `header` as the streams carry it.
fn compact(header: &FrameHeader) -> Vec<u8> {
    let mut out = [0u8; super::super::frame_header::MAX_LEN];
    let len = super::super::frame_header::encode(header, &mut out);
    out[..len].to_vec()
}

fn encoded(f: &Frame) -> Vec<u8> {
    let mut bytes = compact(&f.header);
    bytes.extend_from_slice(&f.payload);
    bytes
}

#[derive(Clone, Copy)]
struct Impairments {
    /// Each copy of a datagram, and each control message, lost with
    /// this chance.
    loss: f64,
    control_loss: f64,
    duplicate: f64,
    delay: Duration,
    /// Up to this much more delay at random: reordering.
    jitter: Duration,
}

impl Default for Impairments {
    fn default() -> Impairments {
        Impairments {
            loss: 0.0,
            control_loss: 0.0,
            duplicate: 0.0,
            delay: Duration::from_micros(30),
            jitter: Duration::ZERO,
        }
    }
}

enum Message {
    Datagram(Vec<u8>),
    Control(u32, Control),
}

type Filter = Box<dyn FnMut(&[u8]) -> bool>;

/// Endpoints on a simulated LAN: node 0 sends, the others receive.
struct Net {
    nodes: Vec<Endpoint>,
    start: Instant,
    now: Instant,
    wire: Vec<(Instant, usize, Message)>,
    rng: Rng,
    imp: Impairments,
    /// Frames each node received, with their sender.
    got: Vec<Vec<(u32, Vec<u8>)>>,
    /// Copies of data datagrams lost on the way to a receiver.
    lost_copies: u64,
    /// Datagrams from node 0 that every receiver loses (a loss before
    /// the switch), if this says so.
    drop_for_all: Option<Filter>,
    /// Nodes that send no control messages.
    mute: Vec<bool>,
    /// Nodes that hear nothing.
    offline: Vec<bool>,
    /// (time, node) of receivers node 0 found lost.
    lost: Vec<(Duration, u32)>,
}

impl Net {
    fn new(n: usize, config: McastConfig, imp: Impairments, seed: u64) -> Net {
        let start = Instant::now();
        Net {
            nodes: (0..n as u32)
                .map(|i| Endpoint::new(i, SECRET, JOB, session(i), config.clone(), start))
                .collect(),
            start,
            now: start,
            wire: Vec::new(),
            rng: Rng(seed),
            imp,
            got: vec![Vec::new(); n],
            lost_copies: 0,
            drop_for_all: None,
            mute: vec![false; n],
            offline: vec![false; n],
            lost: Vec::new(),
        }
    }

    fn delay(&mut self) -> Duration {
        let jitter = self.imp.jitter.as_nanos() as u64;
        let extra = match jitter {
            0 => 0,
            j => self.rng.next() % j,
        };
        self.imp.delay + Duration::from_nanos(extra)
    }

    /// Everything node `i` has to send now.
    fn serve(&mut self, i: usize) {
        if self.nodes[i].timeout().is_some_and(|t| t <= self.now) {
            for node in self.nodes[i].on_timeout(self.now) {
                self.lost.push((self.now - self.start, node));
            }
        }
        for (to, control) in self.nodes[i].poll_control(self.now) {
            if self.mute[i] || self.rng.chance(self.imp.control_loss) {
                continue;
            }
            let at = self.now + self.delay();
            self.wire
                .push((at, to as usize, Message::Control(i as u32, control)));
        }
        let mut buf = [0u8; 1472];
        while let Some(len) = self.nodes[i].poll_transmit(self.now, &mut buf) {
            let d = &buf[..len];
            let for_none = self.drop_for_all.as_mut().is_some_and(|f| f(d));
            for j in (0..self.nodes.len()).filter(|&j| j != i) {
                if for_none || self.rng.chance(self.imp.loss) {
                    self.lost_copies += u64::from(d[3] == 1);
                    continue;
                }
                let copies = 1 + usize::from(self.rng.chance(self.imp.duplicate));
                for _ in 0..copies {
                    let at = self.now + self.delay();
                    self.wire.push((at, j, Message::Datagram(d.to_vec())));
                }
            }
        }
        let mut frames = Vec::new();
        self.nodes[i]
            .read_frames(MAX_FRAME, &mut frames)
            .expect("well-formed frames");
        self.got[i].extend(frames.iter().map(|(from, f)| (*from, encoded(f))));
    }

    /// Delivers what is due and serves every node; `false` when nothing
    /// will ever happen again.
    fn step(&mut self) -> bool {
        let next_wire = self.wire.iter().map(|w| w.0).min();
        let next_timer = self.nodes.iter().filter_map(Endpoint::timeout).min();
        let Some(next) = [next_wire, next_timer].into_iter().flatten().min() else {
            return false;
        };
        self.now = self.now.max(next);
        let now = self.now;
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.wire)
            .into_iter()
            .partition(|w| w.0 <= now);
        self.wire = rest;
        for (_, to, message) in due {
            if self.offline[to] {
                continue;
            }
            match message {
                Message::Datagram(d) => self.nodes[to].on_datagram(now, &d),
                Message::Control(from, c) => self.nodes[to].on_control(now, from, c),
            }
        }
        for i in 0..self.nodes.len() {
            self.serve(i);
        }
        true
    }

    /// Steps until `done` or `limit` of simulated time passed.
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Net) -> bool) -> bool {
        let end = self.now + limit;
        while !done(self) {
            if self.now > end || !self.step() {
                return done(self);
            }
        }
        true
    }

    /// Node 0 announces until every other node joined its stream.
    fn join_all(&mut self) {
        let n = self.nodes.len() as u32;
        for _ in 0..100 {
            if (1..n).all(|r| self.offline[r as usize] || self.nodes[0].is_receiver(r)) {
                // Wait for the `Joined` answers too.
                let t = self.now + Duration::from_millis(30);
                self.run_until(Duration::from_millis(30), |net| net.now >= t);
                return;
            }
            self.nodes[0].announce();
            self.serve(0);
            let t = self.now + Duration::from_millis(11);
            self.run_until(Duration::from_millis(11), |net| net.now >= t);
        }
        panic!("receivers never joined");
    }

    fn write(&mut self, bytes: &[u8]) {
        self.nodes[0].write(bytes);
        self.serve(0);
    }

    /// Node 0 writes `frames`: the stream a receiver should get.
    fn write_all(&mut self, frames: &[Vec<u8>]) -> Vec<(u32, Vec<u8>)> {
        for f in frames {
            self.write(f);
        }
        stream_of(frames)
    }

    /// Whether nodes `receivers` have `frames` frames each.
    fn have(&self, receivers: std::ops::Range<usize>, frames: usize) -> bool {
        self.got[receivers].iter().all(|g| g.len() == frames)
    }
}

/// Frames of mixed sizes, 8 bytes to 200 KB, about `total` bytes in all.
fn mixed_frames(rng: &mut Rng, total: usize) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut sum = 0;
    while sum < total {
        let len = match rng.next() % 20 {
            0 => 8 + (rng.next() % 200_000) as usize,
            1..=4 => 8 + (rng.next() % 20_000) as usize,
            _ => 8 + (rng.next() % 1500) as usize,
        };
        let f = frame(frames.len() as u32, len);
        sum += f.len();
        frames.push(f);
    }
    frames
}

fn stream_of(frames: &[Vec<u8>]) -> Vec<(u32, Vec<u8>)> {
    frames.iter().map(|f| (0, f.clone())).collect()
}

#[test]
fn eight_receivers_get_every_frame_through_loss_reordering_and_duplication() {
    let imp = Impairments {
        loss: 0.05,
        control_loss: 0.05,
        duplicate: 0.02,
        delay: Duration::from_micros(30),
        jitter: Duration::from_micros(60),
    };
    let mut net = Net::new(9, McastConfig::default(), imp, 0x1234_5678);
    net.join_all();
    let frames = mixed_frames(&mut Rng(77), 2_000_000);
    let want = net.write_all(&frames);
    let complete = net.run_until(Duration::from_secs(20), |net| {
        net.have(1..net.nodes.len(), want.len())
    });
    let lengths: Vec<usize> = net.got.iter().map(Vec::len).collect();
    assert!(
        complete,
        "frames received per node {lengths:?} of {}",
        want.len()
    );
    for (r, got) in net.got.iter().enumerate().skip(1) {
        assert!(*got == want, "receiver n{r} got other frames");
    }
    // Stability: once every acknowledgement is in, the sender holds nothing.
    let stable = net.run_until(Duration::from_secs(5), |net| {
        net.nodes[0].queued_bytes() == 0
    });
    assert!(
        stable,
        "sender still holds {} bytes",
        net.nodes[0].queued_bytes()
    );
    let s = net.nodes[0].stats();
    let lost_copies = net.lost_copies;
    eprintln!("sender {s:?}; copies of data datagrams lost {lost_copies}");
    assert!(s.repairs > 0, "5% loss needs repairs");
    assert!(
        s.repairs < lost_copies,
        "{} repairs for {lost_copies} lost copies: no suppression",
        s.repairs
    );
    assert!(net.lost.is_empty(), "no receiver is lost: {:?}", net.lost);
    let duplicates: u64 = net.nodes[1..].iter().map(|n| n.stats().duplicates).sum();
    assert!(duplicates > 0, "duplicated datagrams are counted");
}

#[test]
fn a_datagram_all_receivers_lost_is_repaired_once() {
    let mut net = Net::new(9, McastConfig::default(), Impairments::default(), 5);
    net.join_all();
    // The fifth data datagram dies before the switch: every receiver
    // misses it.
    let mut data_seen = 0;
    net.drop_for_all = Some(Box::new(move |d: &[u8]| {
        data_seen += u32::from(d[3] == 1);
        d[3] == 1 && data_seen == 5
    }));
    let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(i, 700)).collect();
    let want = net.write_all(&frames);
    let done = net.run_until(Duration::from_secs(2), |net| {
        net.have(1..net.nodes.len(), want.len())
    });
    assert!(done);
    assert!(net.got[1..].iter().all(|g| *g == want));
    let s = net.nodes[0].stats();
    assert_eq!(net.lost_copies, 8, "the one datagram, to each receiver");
    assert_eq!(s.repairs, 1, "{s:?}");
    assert!(s.suppressed >= 1, "the other receivers' NAKs: {s:?}");
}

#[test]
fn a_receiver_that_stops_acknowledging_is_lost_and_the_others_complete() {
    let config = McastConfig {
        lost_after: Duration::from_millis(300),
        ..McastConfig::default()
    };
    let mut net = Net::new(4, config, Impairments::default(), 9);
    net.join_all();
    net.mute[3] = true;
    let muted_at = net.now - net.start;
    let frames: Vec<Vec<u8>> = (0..200).map(|i| frame(i, 3000)).collect();
    let want = net.write_all(&frames);
    let done = net.run_until(Duration::from_secs(5), |net| {
        net.have(1..3, want.len()) && !net.lost.is_empty() && net.nodes[0].queued_bytes() == 0
    });
    assert!(
        done,
        "lost {:?}, held {}",
        net.lost,
        net.nodes[0].queued_bytes()
    );
    assert_eq!(net.got[1], want);
    assert_eq!(net.got[2], want);
    assert_eq!(net.lost.len(), 1);
    let (at, node) = net.lost[0];
    assert_eq!(node, 3);
    assert!(
        at >= muted_at + Duration::from_millis(300),
        "lost after {at:?}"
    );
    assert_eq!(net.nodes[0].receivers(), vec![1, 2]);
    assert_eq!(net.nodes[0].stats().lost_receivers, 1);
}

#[test]
fn a_late_joiner_gets_the_stream_from_its_join_on() {
    let mut net = Net::new(3, McastConfig::default(), Impairments::default(), 11);
    net.offline[2] = true;
    net.join_all();
    let early: Vec<Vec<u8>> = (0..5).map(|i| frame(i, 5000)).collect();
    for f in &early {
        net.write(f);
    }
    net.run_until(Duration::from_secs(1), |net| net.got[1].len() == 5);
    net.offline[2] = false;
    // Frame 5 makes node 2 ask to join; it joins after it.
    net.write(&frame(5, 100));
    net.run_until(Duration::from_secs(1), |net| net.nodes[0].is_receiver(2));
    let t = net.now + Duration::from_millis(5);
    net.run_until(Duration::from_millis(5), |net| net.now >= t);
    let late: Vec<Vec<u8>> = (6..10).map(|i| frame(i, 2000)).collect();
    for f in &late {
        net.write(f);
    }
    net.run_until(Duration::from_secs(1), |net| {
        net.got[1].len() == 10 && net.got[2].len() == 4
    });
    let all: Vec<Vec<u8>> = early
        .iter()
        .chain([&frame(5, 100)])
        .chain(&late)
        .cloned()
        .collect();
    assert_eq!(net.got[1], stream_of(&all));
    assert_eq!(net.got[2], stream_of(&late));
}

/// A sender (node 0) and a receiver (node 1) joined directly, and one
/// datagram of frame 0.
fn joined_pair() -> (Endpoint, Endpoint, Vec<u8>, Instant) {
    let now = Instant::now();
    let mut a = Endpoint::new(0, SECRET, JOB, session(0), McastConfig::default(), now);
    let mut b = Endpoint::new(1, SECRET, JOB, session(1), McastConfig::default(), now);
    a.on_control(now, 1, Control::Join);
    for (to, c) in a.poll_control(now) {
        assert_eq!(to, 1);
        b.on_control(now, 0, c);
    }
    a.write(&frame(0, 100));
    let mut buf = [0u8; 1472];
    let len = a.poll_transmit(now, &mut buf).expect("a datagram");
    (a, b, buf[..len].to_vec(), now)
}

#[test]
fn forged_foreign_malformed_and_replayed_datagrams_are_dropped_and_counted() {
    let (_a, mut b, d, now) = joined_pair();
    let mut frames = Vec::new();
    let mut forged = d.clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    b.on_datagram(now, &forged);
    let mut altered = d.clone();
    altered[40] ^= 0x80;
    b.on_datagram(now, &altered);
    assert_eq!(b.stats().forged, 2);
    // Another session of the same sender (a restarted node, or a replay
    // from an old run), properly sealed with that session's key.
    let other = seal_datagram(&SECRET, JOB, 0, &[9; 16], false, 0, 50, &[1; 50]);
    b.on_datagram(now, &other);
    // Another job's key.
    let wrong_job = seal_datagram(&SECRET, JOB + 1, 0, &session(0), false, 0, 50, &[1; 50]);
    b.on_datagram(now, &wrong_job);
    assert_eq!(b.stats().forged, 3);
    let refused = b.stats().refused;
    assert_eq!(refused, 1);
    for bad in [&d[..0], &d[..10], &d[..47], &[0xff; 60][..]] {
        b.on_datagram(now, bad);
    }
    // Data beyond the end it claims.
    let mut beyond = d.clone();
    beyond[24..32].copy_from_slice(&1u64.to_le_bytes());
    b.on_datagram(now, &beyond);
    assert_eq!(b.stats().refused, refused + 5);
    let mut rng = Rng(3);
    for len in 0..300 {
        let g: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        b.on_datagram(now, &g);
    }
    b.read_frames(MAX_FRAME, &mut frames).unwrap();
    assert!(frames.is_empty(), "nothing delivered from bad datagrams");
    // The real one, then its replays.
    for _ in 0..3 {
        b.on_datagram(now, &d);
    }
    b.read_frames(MAX_FRAME, &mut frames).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(encoded(&frames[0].1), frame(0, 100));
    assert_eq!(b.stats().duplicates, 2);
    assert_eq!(b.stats().received, 1);
    b.on_datagram(now, &d);
    b.read_frames(MAX_FRAME, &mut frames).unwrap();
    assert_eq!(frames.len(), 1, "a replay is never delivered again");
}

#[test]
fn a_datagram_of_an_unknown_sender_asks_to_join_at_most_every_10_ms() {
    let (mut a, _b, _, now) = joined_pair();
    let hb = seal_datagram(&SECRET, JOB, 7, &session(7), true, 0, 0, &[]);
    for us in [0, 100, 9_000] {
        a.on_datagram(now + Duration::from_micros(us), &hb);
    }
    a.on_datagram(now + Duration::from_millis(11), &hb);
    let joins: Vec<_> = a
        .poll_control(now + Duration::from_millis(11))
        .into_iter()
        .filter(|c| *c == (7, Control::Join))
        .collect();
    assert_eq!(joins.len(), 2);
    // Its own looped-back datagrams are ignored.
    let own = seal_datagram(&SECRET, JOB, 0, &session(0), true, 0, 0, &[]);
    let before = a.stats();
    a.on_datagram(now, &own);
    assert_eq!(a.stats(), before);
}

#[test]
#[allow(clippy::single_range_in_vec_init)] // a NAK's list of one range
fn out_of_window_data_is_dropped_and_counted() {
    let config = McastConfig {
        window: 4096,
        ..McastConfig::default()
    };
    let now = Instant::now();
    let mut b = Endpoint::new(1, SECRET, JOB, session(1), config, now);
    b.on_control(
        now,
        0,
        Control::Joined {
            from: 0,
            session: session(0),
        },
    );
    let d = seal_datagram(&SECRET, JOB, 0, &session(0), false, 5000, 6000, &[1; 1000]);
    b.on_datagram(now, &d);
    assert_eq!(b.stats().beyond_window, 1);
    // The gap below it is asked for, within the window only.
    let later = now + Duration::from_millis(1);
    let naks: Vec<_> = b.poll_control(later);
    assert_eq!(
        naks,
        vec![(
            0,
            Control::Nak {
                ranges: vec![0..4096]
            }
        )]
    );
}

#[test]
fn control_round_trips() {
    let cases = [
        Control::Join,
        Control::Joined {
            from: 1 << 40,
            session: [7; 16],
        },
        Control::Ack { offset: 12345 },
        Control::Nak {
            ranges: (0..32).map(|i| i * 10..i * 10 + 5).collect(),
        },
    ];
    for c in cases {
        assert_eq!(Control::decode(&c.encode()), Ok(c));
    }
}

#[test]
#[allow(clippy::single_range_in_vec_init)] // a NAK's list of one range
fn hostile_control_bytes_are_refused() {
    let nak = |ranges: Vec<std::ops::Range<u64>>| Control::Nak { ranges }.encode();
    assert_eq!(
        Control::decode(&nak((0..33).map(|i| i..i + 1).collect())),
        Err(ControlError::RangeCount(33))
    );
    assert_eq!(
        Control::decode(&nak(vec![])),
        Err(ControlError::RangeCount(0))
    );
    assert_eq!(
        Control::decode(&nak(vec![1..2, 5..5])),
        Err(ControlError::EmptyRange { start: 5, end: 5 })
    );
    let mut backwards = nak(vec![9..10]);
    backwards[2..10].copy_from_slice(&20u64.to_le_bytes());
    assert_eq!(
        Control::decode(&backwards),
        Err(ControlError::EmptyRange { start: 20, end: 10 })
    );
    assert_eq!(Control::decode(&[]), Err(ControlError::Empty));
    assert_eq!(Control::decode(&[99]), Err(ControlError::Unknown(99)));
    assert!(matches!(
        Control::decode(&[4]),
        Err(ControlError::Length { .. })
    ));
    let joined = Control::Joined {
        from: 3,
        session: [1; 16],
    }
    .encode();
    for cut in 0..joined.len() {
        assert!(Control::decode(&joined[..cut]).is_err(), "cut at {cut}");
    }
    let mut long = Control::Ack { offset: 1 }.encode();
    long.push(0);
    assert!(matches!(
        Control::decode(&long),
        Err(ControlError::Length { .. })
    ));
    let mut rng = Rng(17);
    for len in 0..400 {
        let g: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if let Ok(c) = Control::decode(&g) {
            assert_eq!(c.encode(), g, "decoding is exact");
        }
    }
}

#[test]
fn groups_are_scoped_and_spread() {
    let groups: std::collections::BTreeSet<_> = (0..1000).map(group_for).collect();
    assert!(groups.len() > 990, "collisions: {}", 1000 - groups.len());
    for g in &groups {
        assert_eq!(g.ip().octets()[..2], [239, 255]);
        assert!((40000..=59999).contains(&g.port()));
    }
}

#[test]
#[allow(clippy::single_range_in_vec_init)] // a NAK's list of one range
fn offsets_at_the_end_of_the_number_space_do_not_overflow() {
    let now = Instant::now();
    let mut b = Endpoint::new(1, SECRET, JOB, session(1), McastConfig::default(), now);
    let from = u64::MAX - 100;
    b.on_control(
        now,
        0,
        Control::Joined {
            from,
            session: session(0),
        },
    );
    let d = seal_datagram(
        &SECRET,
        JOB,
        0,
        &session(0),
        false,
        from + 50,
        u64::MAX,
        &[1; 50],
    );
    b.on_datagram(now, &d);
    let hb = seal_datagram(&SECRET, JOB, 0, &session(0), true, 0, u64::MAX, &[]);
    b.on_datagram(now, &hb);
    let later = now + Duration::from_millis(5);
    b.on_timeout(later);
    let controls = b.poll_control(later);
    let nak = Control::Nak {
        ranges: vec![from..from + 50],
    };
    assert!(controls.contains(&(0, nak)), "{controls:?}");
}

#[test]
fn the_channel_is_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<McastChannel>();
}

mod socket;
