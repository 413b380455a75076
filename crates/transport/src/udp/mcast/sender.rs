//! The sending half of a node's multicast stream, without I/O: its
//! receivers, what they acknowledged, repairs, heartbeats, congestion
//! window and pacing (steps 3–8 of the module docs).

use super::super::connection::slice_of;
use super::super::packet::TAG_LEN;
use super::super::ranges::RangeSet;
use super::super::recovery::{NewReno, Rtt, GRANULARITY};
use super::control::Control;
use super::packet::{self, Header, Kind, HEADER_LEN};
use super::{McastConfig, McastStats};
use hmac::Hmac;
use sha2::Sha256;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

/// The longest quiet between heartbeats (step 6).
const MAX_HEARTBEAT: Duration = Duration::from_millis(50);
/// Datagrams pacing lets leave at once (RFC 9002 7.7's burst), at least.
const BURST: usize = 10;

/// One receiver of this stream.
#[derive(Clone, Copy, Debug)]
struct Member {
    /// The offset it joined at.
    from: u64,
    /// Its in-order offset, as last acknowledged.
    acked: u64,
    /// When it last advanced, or fell behind from having everything.
    since: Instant,
}

pub(super) struct Sender {
    me: u32,
    session: [u8; 16],
    key: Hmac<Sha256>,
    config: McastConfig,
    /// The stream from `base` (the lowest unstable byte) to its end.
    stream: VecDeque<u8>,
    base: u64,
    /// Bytes below this were sent.
    next_send: u64,
    members: BTreeMap<u32, Member>,
    /// Ranges asked for again, not yet multicast.
    repair: RangeSet,
    /// Ranges repaired lately, oldest first (step 5's suppression).
    repaired: VecDeque<(Range<u64>, Instant)>,
    /// (end offset, time) of new-data datagrams, for round-trip samples.
    send_times: VecDeque<(u64, Instant)>,
    rtt: Rtt,
    sampled: bool,
    cc: NewReno,
    /// Pacing credit in bytes, as of `paced_at`.
    credit: f64,
    paced_at: Instant,
    /// When pacing next lets a datagram wait for it leave.
    paced_until: Option<Instant>,
    /// The socket refused a datagram (a full send buffer): data waits
    /// until then (step 4).
    blocked_until: Option<Instant>,
    last_sent: Instant,
    heartbeat_every: Duration,
    heartbeat_due: bool,
    controls: Vec<(u32, Control)>,
    pub(super) stats: McastStats,
}

impl Sender {
    pub(super) fn new(
        me: u32,
        secret: &[u8; 32],
        job: u64,
        session: [u8; 16],
        config: McastConfig,
        now: Instant,
    ) -> Sender {
        Sender {
            me,
            key: packet::key(secret, job, me, &session),
            session,
            stream: VecDeque::new(),
            base: 0,
            next_send: 0,
            members: BTreeMap::new(),
            repair: RangeSet::default(),
            repaired: VecDeque::new(),
            send_times: VecDeque::new(),
            rtt: Rtt::default(),
            sampled: false,
            cc: NewReno::new(config.max_datagram),
            credit: (BURST * config.max_datagram) as f64,
            paced_at: now,
            paced_until: None,
            blocked_until: None,
            last_sent: now,
            heartbeat_every: config.heartbeat,
            heartbeat_due: false,
            controls: Vec::new(),
            stats: McastStats::default(),
            config,
        }
    }

    fn end(&self) -> u64 {
        self.base + self.stream.len() as u64
    }

    /// Appends `bytes` to the stream; with no receiver, nobody needs them.
    pub(super) fn write(&mut self, bytes: &[u8]) {
        if self.members.is_empty() {
            self.base += bytes.len() as u64;
            self.next_send = self.base;
            return;
        }
        self.stream.extend(bytes);
    }

    /// Unsent and unstable bytes held.
    pub(super) fn held(&self) -> usize {
        self.stream.len()
    }

    pub(super) fn is_receiver(&self, node: u32) -> bool {
        self.members.contains_key(&node)
    }

    pub(super) fn receivers(&self) -> Vec<u32> {
        self.members.keys().copied().collect()
    }

    pub(super) fn take_controls(&mut self, out: &mut Vec<(u32, Control)>) {
        out.append(&mut self.controls);
    }

    /// A heartbeat at once (step 6: a hello).
    pub(super) fn announce(&mut self) {
        self.heartbeat_due = true;
    }

    fn min_acked(&self) -> Option<u64> {
        self.members.values().map(|m| m.acked).min()
    }

    /// Frees what every receiver holds (step 7).
    fn release(&mut self) {
        let stable = self.min_acked().unwrap_or(self.end());
        if stable > self.base {
            let n = ((stable - self.base) as usize).min(self.stream.len());
            self.stream.drain(..n);
            self.base = stable;
        }
        self.next_send = self.next_send.max(self.base);
        self.repair.remove(0..self.base);
        while self
            .send_times
            .front()
            .is_some_and(|&(end, _)| end <= self.base)
        {
            self.send_times.pop_front();
        }
        self.cc.in_flight = self.next_send
            - self
                .min_acked()
                .unwrap_or(self.next_send)
                .min(self.next_send);
    }

    /// Step 3: `node` receives from the stream's end on.
    pub(super) fn on_join(&mut self, now: Instant, node: u32) {
        let end = self.end();
        let member = *self.members.entry(node).or_insert(Member {
            from: end,
            acked: end,
            since: now,
        });
        self.controls.push((
            node,
            Control::Joined {
                from: member.from,
                session: self.session,
            },
        ));
        self.release();
    }

    pub(super) fn remove(&mut self, node: u32) {
        if self.members.remove(&node).is_some() {
            self.release();
        }
    }

    pub(super) fn on_ack(&mut self, now: Instant, node: u32, offset: u64) {
        let old_min = self.min_acked();
        let Some(m) = self.members.get_mut(&node) else {
            return;
        };
        if offset <= m.acked || offset > self.next_send {
            return;
        }
        let previous = m.acked;
        m.acked = offset;
        m.since = now;
        // The latest datagram this acknowledgement is the first of the
        // receiver's to cover.
        let sample = self
            .send_times
            .iter()
            .rev()
            .find(|&&(end, _)| end <= offset)
            .filter(|&&(end, _)| end > previous);
        if let Some(&(_, sent)) = sample {
            self.rtt.sample(now.saturating_duration_since(sent));
            self.sampled = true;
        }
        let new_min = self.min_acked();
        if let (Some(old), Some(new)) = (old_min, new_min) {
            if new > old {
                // RFC 9002 7.8: a window the sender does not fill (a
                // broadcast's tail, the idle time between broadcasts)
                // does not grow, or the next broadcast would leave at a
                // window's rate the link never carried.
                let window = self.cc.window;
                let limited = self.cc.in_flight < window / 2;
                self.cc.on_acked(new, (new - old) as usize);
                if limited {
                    self.cc.window = self.cc.window.min(window);
                }
                self.heartbeat_every = self.config.heartbeat;
            }
        }
        self.release();
    }

    /// Step 4: the socket refused the datagram of data `r` (its send
    /// buffer is full: the link is slower than the window): the data goes
    /// again after a timer's tick, first of all, without waiting for a
    /// receiver to miss it and without a congestion signal — the buffer,
    /// not the network, was full.
    pub(super) fn refused(&mut self, now: Instant, r: Range<u64>) {
        let r = r.start.max(self.base)..r.end.min(self.next_send);
        if !r.is_empty() {
            self.repair.insert(r);
        }
        self.blocked_until = Some(now + GRANULARITY);
    }

    /// Step 5: multicasts the ranges asked for, unless repaired lately.
    pub(super) fn on_nak(&mut self, now: Instant, node: u32, ranges: &[Range<u64>]) {
        if !self.members.contains_key(&node) {
            return;
        }
        let suppress = match self.sampled {
            true => self.config.repair_suppress.max(self.rtt.smoothed),
            false => self.config.repair_suppress,
        };
        while self
            .repaired
            .front()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) >= suppress)
        {
            self.repaired.pop_front();
        }
        let mut covered = self.repair.clone();
        for (r, _) in &self.repaired {
            covered.insert(r.clone());
        }
        let mut signalled = false;
        for r in ranges {
            let r = r.start.max(self.base)..r.end.min(self.next_send);
            if r.is_empty() {
                continue;
            }
            let gaps = covered.gaps_in(r);
            if gaps.is_empty() {
                // Already on its way: repaired lately, or refused by the
                // socket and waiting for its tick — no news of loss.
                self.stats.suppressed += 1;
                continue;
            }
            if !signalled {
                self.cc.on_lost(gaps[0].start, 0, self.next_send);
                signalled = true;
            }
            for g in gaps {
                self.repair.insert(g);
            }
        }
    }

    /// Bytes per second: 1.25 windows per smoothed round trip (step 4).
    fn pacing_rate(&self) -> f64 {
        let window = self.cc.window.min(self.config.window) as f64;
        let rtt = self.rtt.smoothed.as_secs_f64().max(1e-6);
        window * 1.25 / rtt
    }

    /// Whether pacing lets `len` bytes leave at `now`; if not, when.
    fn pace(&mut self, now: Instant, len: usize) -> bool {
        let rate = self.pacing_rate();
        // The engine's timers count whole milliseconds (`GRANULARITY`): a
        // smaller cap would hold the rate below the pacing rate.
        let cap = ((BURST * self.config.max_datagram) as f64).max(rate * GRANULARITY.as_secs_f64());
        let elapsed = now.saturating_duration_since(self.paced_at).as_secs_f64();
        self.credit = (self.credit + elapsed * rate).min(cap);
        self.paced_at = now;
        if self.credit >= len as f64 {
            self.credit -= len as f64;
            self.paced_until = None;
            return true;
        }
        // Rounded up, so that the credit is there by then.
        let wait = (len as f64 - self.credit) / rate;
        self.paced_until = Some(now + Duration::from_nanos(wait.mul_add(1e9, 1.0).ceil() as u64));
        false
    }

    /// The next datagram into `buf`: repairs, then new data, then a
    /// heartbeat; `None` when nothing may leave now.
    pub(super) fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.paced_until = None;
        let max = self.config.max_datagram.min(buf.len());
        let room = (max - HEADER_LEN - TAG_LEN) as u64;
        let unsent = self.end() - self.next_send;
        let blocked = self.blocked_until.is_some_and(|t| now < t);
        if blocked {
            // Step 4: the socket's buffer was full a moment ago.
        } else if let Some(r) = self.repair.first() {
            let r = r.start..r.end.min(r.start + room);
            if self.pace(now, HEADER_LEN + (r.end - r.start) as usize) {
                self.repair.remove(r.clone());
                self.repaired.push_back((r.clone(), now));
                self.stats.repairs += 1;
                return Some(self.data(now, r, buf));
            }
        } else if unsent > 0 && !self.members.is_empty() {
            let len = unsent.min(room);
            let fits = self.cc.in_flight + len <= self.cc.window.min(self.config.window);
            if fits && self.pace(now, HEADER_LEN + len as usize) {
                let r = self.next_send..self.next_send + len;
                for m in self.members.values_mut() {
                    if m.acked == self.next_send {
                        m.since = now;
                    }
                }
                self.next_send = r.end;
                self.cc.on_sent(len as usize);
                self.send_times.push_back((r.end, now));
                self.heartbeat_every = self.config.heartbeat;
                self.stats.sent += 1;
                return Some(self.data(now, r, buf));
            }
        }
        // Heartbeats are not paced: they are few, and tiny.
        if self.heartbeat_due {
            self.heartbeat_due = false;
            self.last_sent = now;
            self.stats.heartbeats += 1;
            let header = self.header(Kind::Heartbeat, self.next_send);
            return Some(packet::seal(&mut buf[..max], &header, &[], &self.key));
        }
        None
    }

    fn header(&self, kind: Kind, offset: u64) -> Header {
        Header {
            kind,
            sender: self.me,
            session: packet::prefix(&self.session),
            offset,
            end: self.next_send,
        }
    }

    fn data(&mut self, now: Instant, r: Range<u64>, buf: &mut [u8]) -> usize {
        self.last_sent = now;
        let (a, b) = self.stream.as_slices();
        let piece = slice_of(
            a,
            b,
            (r.start - self.base) as usize,
            (r.end - r.start) as usize,
        );
        let header = self.header(Kind::Data, r.start);
        packet::seal(buf, &header, &piece, &self.key)
    }

    /// Whether data was sent that not every receiver acknowledged.
    fn unstable(&self) -> bool {
        self.min_acked().is_some_and(|m| m < self.next_send)
    }

    /// Whether data or repairs wait only for pacing or a refused send's
    /// tick, not for the window: they leave soon and carry the stream's
    /// end, so a heartbeat would only take their link time (step 6). On
    /// 10 Mbit/s a paced datagram leaves every 1.2 ms, and a heartbeat had
    /// gone between every two.
    fn about_to_send(&self) -> bool {
        let window = self.cc.window.min(self.config.window);
        !self.repair.is_empty()
            || (self.end() > self.next_send
                && self.cc.in_flight + self.config.max_datagram as u64 <= window)
    }

    /// Whether a heartbeat is due for the unstable tail (step 6).
    fn tail_heartbeat(&self) -> bool {
        self.unstable() && !self.about_to_send()
    }

    pub(super) fn timeout(&self) -> Option<Instant> {
        let heartbeat =
            (self.tail_heartbeat() || self.heartbeat_due).then(|| match self.heartbeat_due {
                true => self.last_sent,
                false => self.last_sent + self.heartbeat_every,
            });
        let lost = self
            .members
            .values()
            .filter(|m| m.acked < self.next_send)
            .map(|m| m.since + self.config.lost_after)
            .min();
        let waiting = !self.repair.is_empty() || self.end() > self.next_send;
        let paced = self.paced_until.filter(|_| waiting);
        let blocked = self.blocked_until.filter(|_| waiting);
        [heartbeat, lost, paced, blocked]
            .into_iter()
            .flatten()
            .min()
    }

    /// Fires heartbeats and finds lost receivers (steps 6 and 8).
    pub(super) fn on_timeout(&mut self, now: Instant) -> Vec<u32> {
        if self.tail_heartbeat() && now >= self.last_sent + self.heartbeat_every {
            self.heartbeat_due = true;
            self.heartbeat_every = (self.heartbeat_every * 2).min(MAX_HEARTBEAT);
        }
        let next_send = self.next_send;
        let lost_after = self.config.lost_after;
        let lost: Vec<u32> = self
            .members
            .iter()
            .filter(|(_, m)| m.acked < next_send && now >= m.since + lost_after)
            .map(|(&n, _)| n)
            .collect();
        for n in &lost {
            tracing::debug!(
                "mcast n{}: receiver n{n} lost at offset {}",
                self.me,
                self.members[n].acked
            );
            self.members.remove(n);
            self.stats.lost_receivers += 1;
        }
        if !lost.is_empty() {
            self.release();
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_spreads_a_window_over_the_round_trip() {
        let now = Instant::now();
        let config = McastConfig {
            window: 100_000,
            ..McastConfig::default()
        };
        let mut sender = Sender::new(0, &[1; 32], 2, [3; 16], config, now);
        sender.on_join(now, 1);
        sender.cc.window = 1 << 30;
        sender.rtt.smoothed = Duration::from_millis(10);
        sender.write(&[0; 200_000]);
        let mut buf = [0u8; 1472];
        let mut burst = 0;
        while sender.poll_transmit(now, &mut buf).is_some() {
            burst += 1;
        }
        assert_eq!(burst, BURST, "the burst allowed at once");
        // 1.25 × 100 kB per 10 ms: 12.5 kB per ms.
        let mut paced = 0;
        for tick in 1..=50 {
            let at = now + Duration::from_micros(100 * tick);
            while let Some(len) = sender.poll_transmit(at, &mut buf) {
                paced += len - TAG_LEN;
            }
            assert!(
                sender.timeout().is_some(),
                "a pacing wake-up while data waits"
            );
        }
        assert!((60_000..=64_000).contains(&paced), "{paced} bytes in 5 ms");
    }

    #[test]
    fn a_refused_datagram_goes_again_after_a_tick_without_a_congestion_signal() {
        let now = Instant::now();
        let mut sender = Sender::new(0, &[1; 32], 2, [3; 16], McastConfig::default(), now);
        sender.on_join(now, 1);
        sender.write(&[7; 5000]);
        let mut buf = [0u8; 1472];
        let len = sender
            .poll_transmit(now, &mut buf)
            .expect("a first datagram");
        let h = Header::read(&buf[..len]).expect("our own header");
        let window = sender.cc.window;
        sender.refused(
            now,
            h.offset..h.offset + (len - HEADER_LEN - TAG_LEN) as u64,
        );
        assert!(
            sender.poll_transmit(now, &mut buf).is_none(),
            "blocked for a tick"
        );
        let due = sender.timeout().expect("a wake-up to send again");
        assert!(due <= now + GRANULARITY);
        let again = sender
            .poll_transmit(due, &mut buf)
            .expect("the refused data first");
        assert_eq!(
            Header::read(&buf[..again]).expect("header").offset,
            h.offset
        );
        assert_eq!(sender.cc.window, window, "a full buffer is no loss");
        assert_eq!(sender.stats.repairs, 1);
    }

    #[test]
    fn a_nak_for_refused_data_waiting_for_its_tick_is_no_loss() {
        let now = Instant::now();
        let mut sender = Sender::new(0, &[1; 32], 2, [3; 16], McastConfig::default(), now);
        sender.on_join(now, 1);
        sender.write(&[7; 5000]);
        let mut buf = [0u8; 1472];
        let first = sender.poll_transmit(now, &mut buf).expect("a datagram");
        let second = sender.poll_transmit(now, &mut buf).expect("a second");
        let h = Header::read(&buf[..second]).expect("our own header");
        let piece = h.offset..h.offset + (second - HEADER_LEN - TAG_LEN) as u64;
        sender.refused(now, piece.clone());
        let window = sender.cc.window;
        // The receiver saw the first datagram's end and asks for the rest.
        let asked = (first - HEADER_LEN - TAG_LEN) as u64..piece.end;
        sender.on_nak(now + Duration::from_micros(300), 1, &[asked]);
        assert_eq!(sender.cc.window, window, "no halving");
        assert_eq!(sender.stats.suppressed, 1);
    }

    #[test]
    fn no_heartbeat_while_paced_data_waits() {
        let now = Instant::now();
        let mut sender = Sender::new(0, &[1; 32], 2, [3; 16], McastConfig::default(), now);
        sender.on_join(now, 1);
        // 10 Mbit/s: a datagram every 1.2 ms, longer than the heartbeat's 1 ms.
        sender.rtt.smoothed = Duration::from_millis(100);
        sender.cc.window = 100_000;
        sender.write(&[0; 200_000]);
        let mut buf = [0u8; 1472];
        let mut at = now;
        // 60 datagrams: below the window, so only pacing holds them.
        while sender.stats.sent < 60 {
            while sender.poll_transmit(at, &mut buf).is_some() {}
            let due = sender.timeout().expect("pacing wakes the sender");
            assert!(due > at, "a wake-up in the future");
            sender.on_timeout(due);
            at = due;
        }
        assert!(
            at - now > Duration::from_millis(50),
            "paced over {:?}",
            at - now
        );
        assert_eq!(sender.stats.heartbeats, 0, "the data carries the end");
    }
}
