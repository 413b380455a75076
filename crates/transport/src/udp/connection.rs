//! One pair's reliable byte stream over datagrams, without I/O: the
//! caller feeds it datagrams and time, and sends what it produces
//! (the steps are in the module docs of `udp`).

use super::packet::{self, AckFrame, FrameRef, Header, Keys, PacketError, Writer};
use super::ranges::RangeSet;
use super::recovery::{NewReno, Rtt, PACKET_THRESHOLD};
use super::UdpStats;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

/// How a connection is sized and when it gives up.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest datagram, tag included: the path MTU less IP and UDP
    /// headers (1472 on Ethernet's 1500).
    pub max_datagram: usize,
    /// Bytes the peer may send beyond what this side has read (flow
    /// control, step 6): the most memory a peer's stream can hold here.
    pub window: u64,
    /// With data unacknowledged, how long without a datagram from the
    /// peer before it is taken for lost (step 8).
    pub lost_after: Duration,
    /// Datagrams sent in one system call at most (`batch`), where the
    /// kernel allows.
    pub run: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_datagram: 1472,
            window: 1 << 20,
            lost_after: Duration::from_secs(5),
            run: 16,
        }
    }
}

/// How long an acknowledgement owed may wait for a datagram to ride on
/// (step 3): a request's answer usually carries it. The engine's timers
/// count whole milliseconds.
const ACK_DELAY: Duration = Duration::from_millis(1);

/// Ack-eliciting packets received that make an acknowledgement due at
/// once, even from a side that answers (step 3).
const MAX_UNACKED: u32 = 8;

/// Received packet numbers kept as ranges, at most this many; older
/// ones fall below the floor and are refused as duplicates (their data, if
/// it was never acknowledged, is sent again in a newer packet).
const MAX_RECEIVED_RANGES: usize = 64;

struct Sent {
    time: Instant,
    bytes: usize,
    ranges: Vec<Range<u64>>,
}

/// A pair's reliable, ordered byte stream over datagrams.
pub struct Connection {
    me: u32,
    peer: u32,
    keys: Keys,
    config: Config,
    // Sending (steps 2–5).
    next_number: u64,
    /// Bytes from offset `send_base` on, unacknowledged or unsent.
    send_buf: VecDeque<u8>,
    send_base: u64,
    /// Offsets acknowledged above `send_base`.
    acked: RangeSet,
    /// Offsets to send, first or again.
    pending: RangeSet,
    /// The peer's receive limit (step 6).
    peer_max_data: u64,
    sent: BTreeMap<u64, Sent>,
    largest_acked: Option<u64>,
    rtt: Rtt,
    cc: NewReno,
    loss_time: Option<Instant>,
    pto_count: u32,
    last_ack_eliciting: Option<Instant>,
    probe_due: bool,
    // Receiving (steps 1, 6, 7).
    received: RangeSet,
    number_floor: u64,
    /// An acknowledgement must go with the next datagram (step 3).
    ack_due: bool,
    /// Ack-eliciting packets received since the last acknowledgement.
    unacked_eliciting: u32,
    /// Whether this side sent an ack-eliciting packet since the first of
    /// those: it answers, so its next datagram will carry the
    /// acknowledgement (step 3).
    answered: bool,
    /// When an acknowledgement owed goes alone, if no datagram carries it
    /// sooner (step 3).
    ack_deadline: Option<Instant>,
    largest_received: Option<u64>,
    /// Stream offsets received (the delivered prefix included).
    stream_received: RangeSet,
    segments: BTreeMap<u64, Vec<u8>>,
    delivered: u64,
    /// Bytes received in order: those not yet read, and what the reader
    /// left in it ([`read_with`](Connection::read_with)).
    readable: Vec<u8>,
    consumed: u64,
    advertised: u64,
    last_heard: Instant,
    lost: bool,
    stats: UdpStats,
}

impl Connection {
    /// Node `me`'s side of its connection with `peer`, under `keys`.
    pub fn new(me: u32, peer: u32, keys: Keys, config: Config, now: Instant) -> Connection {
        let window = config.window;
        Connection {
            me,
            peer,
            keys,
            cc: NewReno::new(config.max_datagram),
            config,
            next_number: 0,
            send_buf: VecDeque::new(),
            send_base: 0,
            acked: RangeSet::default(),
            pending: RangeSet::default(),
            peer_max_data: window,
            sent: BTreeMap::new(),
            largest_acked: None,
            rtt: Rtt::default(),
            loss_time: None,
            pto_count: 0,
            last_ack_eliciting: None,
            probe_due: false,
            received: RangeSet::default(),
            number_floor: 0,
            ack_due: false,
            unacked_eliciting: 0,
            answered: false,
            ack_deadline: None,
            largest_received: None,
            stream_received: RangeSet::default(),
            segments: BTreeMap::new(),
            delivered: 0,
            readable: Vec::new(),
            consumed: 0,
            advertised: window,
            last_heard: now,
            lost: false,
            stats: UdpStats::default(),
        }
    }

    /// Appends `bytes` to the stream (step 2). Memory is the caller's to
    /// bound: what is written stays until the peer acknowledges it.
    pub fn write(&mut self, bytes: &[u8]) {
        let end = self.write_end();
        self.send_buf.extend(bytes);
        self.pending.insert(end..end + bytes.len() as u64);
    }

    fn write_end(&self) -> u64 {
        self.send_base + self.send_buf.len() as u64
    }

    /// Bytes written and not yet acknowledged.
    pub fn unacknowledged(&self) -> usize {
        self.send_buf.len()
    }

    /// Moves the bytes received in order into `out` (step 7).
    pub fn read(&mut self, out: &mut Vec<u8>) -> usize {
        self.read_with(|readable| {
            out.extend_from_slice(readable);
            readable.clear();
        })
    }

    /// Reads in place: `reader` gets the bytes received in order, after
    /// what it left there at its last call, and takes from the front what
    /// it will; all of them count as read (flow control, step 6), so a
    /// reader may keep a part of the stream (an incomplete frame) without
    /// a copy. Returns how many bytes arrived since the last read.
    pub(super) fn read_with(&mut self, reader: impl FnOnce(&mut Vec<u8>)) -> usize {
        let n = self.delivered - self.consumed;
        self.consumed = self.delivered;
        reader(&mut self.readable);
        // Step 6: a window update once half the window was read since the
        // last limit was sent.
        if self.limit() - self.advertised >= self.config.window / 2 {
            self.ack_due = true;
        }
        n as usize
    }

    #[cfg(test)]
    pub(super) fn state(&self) -> String {
        format!(
            "pending {:?} sent {} peer_max {} base {} buf {} cc {:?} lost {}",
            self.pending.first(),
            self.sent.len(),
            self.peer_max_data,
            self.send_base,
            self.send_buf.len(),
            self.cc,
            self.lost
        )
    }

    /// Bytes received and not yet read: in order, and out of order.
    #[cfg(test)]
    pub(super) fn held(&self) -> u64 {
        self.readable.len() as u64 + self.segments.values().map(|s| s.len() as u64).sum::<u64>()
    }

    fn limit(&self) -> u64 {
        self.consumed + self.config.window
    }

    /// Asks the peer for an acknowledgement (a `PING` unless data goes
    /// anyway): a keep-alive, which tells the peer this side lives and
    /// brings back word that the peer does.
    pub fn ping(&mut self) {
        self.probe_due = true;
    }

    /// How long since the peer was last heard from (a datagram accepted).
    pub fn quiet(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last_heard)
    }

    /// Whether the peer is taken for lost (step 8).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Counters of datagrams and their fates.
    pub fn stats(&self) -> &UdpStats {
        &self.stats
    }

    /// Takes one datagram from the peer (step 1): checked, then its
    /// frames applied. A refused datagram changes nothing but the
    /// counters, and says why.
    pub fn on_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), PacketError> {
        let outcome = self.accept(now, datagram);
        match &outcome {
            Ok(()) => self.stats.received += 1,
            Err(PacketError::Duplicate(_)) => self.stats.duplicates += 1,
            Err(PacketError::Forged) => self.stats.forged += 1,
            Err(_) => self.stats.refused += 1,
        }
        outcome
    }

    fn accept(&mut self, now: Instant, datagram: &[u8]) -> Result<(), PacketError> {
        let (h, header_len) = Header::read(datagram)?;
        if h.from != self.peer {
            return Err(PacketError::Foreign);
        }
        let body = packet::open(datagram, header_len, &self.keys.recv)?;
        if h.number < self.number_floor || self.received.contains(h.number) {
            // An authentic replay, or the network's duplicate: acknowledge
            // again, as the first acknowledgement may have been lost.
            self.ack_due = true;
            return Err(PacketError::Duplicate(h.number));
        }
        // Validate every frame before applying any.
        let frames: Vec<FrameRef<'_>> = packet::frames(body).collect::<Result<_, _>>()?;
        self.received.insert(h.number..h.number + 1);
        while self.received.len() > MAX_RECEIVED_RANGES {
            if let Some(oldest) = self.received.first() {
                self.number_floor = oldest.end;
                self.received.remove(oldest);
            }
        }
        self.last_heard = now;
        let in_order = self.largest_received.is_none_or(|l| h.number == l + 1);
        self.largest_received = Some(self.largest_received.map_or(h.number, |l| l.max(h.number)));
        let mut eliciting = false;
        for frame in frames {
            match frame {
                FrameRef::Stream { offset, data } => {
                    eliciting = true;
                    self.on_stream(offset, data)?;
                }
                FrameRef::Ack(ack) => self.on_ack(now, &ack)?,
                FrameRef::Ping => eliciting = true,
            }
        }
        if eliciting {
            // Step 3: at once for a gap, for the second packet unless
            // this side answers (its answer carries it), for the
            // MAX_UNACKED-th in any case; else with the next datagram
            // that carries data after the second, or alone after the
            // delay.
            if self.unacked_eliciting == 0 {
                self.answered = false;
            }
            self.unacked_eliciting += 1;
            if !in_order
                || self.unacked_eliciting >= MAX_UNACKED
                || (self.unacked_eliciting >= 2 && !self.answered)
            {
                self.ack_due = true;
            }
            self.ack_deadline.get_or_insert(now + ACK_DELAY);
        }
        Ok(())
    }

    /// Step 7: a piece of the peer's stream.
    fn on_stream(&mut self, offset: u64, data: &[u8]) -> Result<(), PacketError> {
        let end = offset + data.len() as u64;
        if end > self.limit() {
            return Err(PacketError::Malformed(
                "stream data beyond the flow-control limit",
            ));
        }
        for gap in self.stream_received.gaps_in(offset..end) {
            let piece = &data[(gap.start - offset) as usize..(gap.end - offset) as usize];
            if gap.start == self.delivered {
                // In order: straight to the reader, not through `segments`.
                self.readable.extend_from_slice(piece);
                self.delivered = gap.end;
            } else {
                self.segments.insert(gap.start, piece.to_vec());
            }
            while let Some(piece) = self.segments.remove(&self.delivered) {
                self.delivered += piece.len() as u64;
                self.readable.extend_from_slice(&piece);
            }
        }
        self.stream_received.insert(offset..end);
        Ok(())
    }

    /// Steps 3 and 4: an acknowledgement.
    fn on_ack(&mut self, now: Instant, ack: &AckFrame) -> Result<(), PacketError> {
        let largest = *ack.ranges[0].end();
        if largest >= self.next_number {
            return Err(PacketError::Malformed("acknowledges a packet never sent"));
        }
        if let Some(max) = ack.max_data {
            self.peer_max_data = self.peer_max_data.max(max);
        }
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
        let mut newly = Vec::new();
        for r in &ack.ranges {
            let numbers: Vec<u64> = self.sent.range(r.clone()).map(|(&n, _)| n).collect();
            for n in numbers {
                if let Some(s) = self.sent.remove(&n) {
                    newly.push((n, s));
                }
            }
        }
        if newly.is_empty() {
            return Ok(());
        }
        if let Some((n, s)) = newly.iter().max_by_key(|(n, _)| *n) {
            if *n == largest {
                self.rtt.sample(now.saturating_duration_since(s.time));
            }
        }
        for (n, s) in newly {
            self.cc.on_acked(n, s.bytes);
            for r in s.ranges {
                self.acked.insert(r.clone());
                self.pending.remove(r);
            }
        }
        // The acknowledged prefix of the stream is freed.
        while let Some(first) = self.acked.first() {
            if first.start > self.send_base {
                break;
            }
            let drop = (first.end - self.send_base) as usize;
            self.send_buf.drain(..drop.min(self.send_buf.len()));
            self.send_base = first.end;
            self.acked.remove(first);
        }
        self.pto_count = 0;
        self.detect_lost(now);
        Ok(())
    }

    /// Step 4: packets below the largest acknowledged that are three
    /// numbers behind it, or older than the loss delay, are lost; their
    /// unacknowledged data is sent again.
    fn detect_lost(&mut self, now: Instant) {
        self.loss_time = None;
        let Some(largest) = self.largest_acked else {
            return;
        };
        let delay = self.rtt.loss_delay();
        let mut lost = Vec::new();
        for (&n, s) in self.sent.range(..largest) {
            if n + PACKET_THRESHOLD <= largest || s.time + delay <= now {
                lost.push(n);
            } else {
                let at = s.time + delay;
                self.loss_time = Some(self.loss_time.map_or(at, |t| t.min(at)));
            }
        }
        let (mut bytes, mut latest) = (0u64, 0u64);
        for n in lost {
            let Some(s) = self.sent.remove(&n) else {
                continue;
            };
            bytes += s.bytes as u64;
            latest = latest.max(n);
            self.stats.lost += 1;
            for r in s.ranges {
                for gap in self.acked.gaps_in(r) {
                    if gap.start >= self.send_base {
                        self.pending.insert(gap);
                    }
                }
            }
        }
        if bytes > 0 {
            self.cc.on_lost(latest, bytes, self.next_number);
        }
    }

    /// When [`on_timeout`](Self::on_timeout) is next due, if ever.
    pub fn timeout(&self) -> Option<Instant> {
        if self.lost {
            return None;
        }
        let recovery = self.loss_time.or_else(|| self.probe_deadline());
        match (recovery, self.ack_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the probe timer (or the peer's silence) is due: step 5.
    fn probe_deadline(&self) -> Option<Instant> {
        let blocked = !self.pending.is_empty() && self.sent.is_empty();
        if self.sent.is_empty() && !blocked {
            return None;
        }
        let base = self.last_ack_eliciting.unwrap_or(self.last_heard);
        let pto = self.rtt.pto() + ACK_DELAY;
        let backoff = pto * 2u32.saturating_pow(self.pto_count.min(16));
        let probe = base + backoff;
        Some(probe.min(self.last_heard + self.config.lost_after))
    }

    /// Steps 5 and 8: the loss timer, the probe timer, the peer's silence.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.lost {
            return;
        }
        if self.loss_time.is_some_and(|t| t <= now) {
            self.detect_lost(now);
            return;
        }
        let waiting = !self.sent.is_empty() || !self.pending.is_empty();
        if waiting && now >= self.last_heard + self.config.lost_after {
            self.lost = true;
            return;
        }
        if self.loss_time.is_none() && self.probe_deadline().is_some_and(|t| t <= now) {
            self.pto_count += 1;
            self.probe_due = true;
            self.stats.probes += 1;
        }
    }

    /// Writes the next datagram into `buf` (at least `max_datagram` bytes)
    /// and returns its length, or `None` when nothing is to be sent now
    /// (steps 2, 3, 5, 6).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if self.lost {
            return None;
        }
        let max = self.config.max_datagram.min(buf.len());
        let may_send = self.cc.can_send(max) || self.probe_due;
        let data = may_send
            && self
                .pending
                .first()
                .is_some_and(|r| r.start < self.peer_max_data);
        // Step 3: an acknowledgement owed goes when due, after the delay,
        // with data once two packets wait for it, or alone when data is
        // blocked (an answering side whose window is full must not wait
        // out the delay).
        let blocked = !data && !self.pending.is_empty();
        let ack_owed = self.ack_due
            || self.ack_deadline.is_some_and(|t| t <= now)
            || (self.unacked_eliciting >= 2 && (data || blocked));
        if !ack_owed && !data && !self.probe_due {
            return None;
        }
        let number = self.next_number;
        self.next_number += 1;
        let header = Header {
            from: self.me,
            number,
        };
        let mut w = Writer::new(&mut buf[..max], &header);
        // An acknowledgement carries the receive limit when it grew by an
        // eighth of the window, or when it goes without data.
        if ack_owed || (self.ack_deadline.is_some() && self.probe_due && !data) {
            let ranges: Vec<_> = self
                .received
                .iter_desc()
                .take(packet::MAX_ACK_RANGES)
                .map(|r| r.start..=r.end - 1)
                .collect();
            let limit = self.limit();
            let grown = limit - self.advertised;
            let max_data =
                (grown > 0 && (!data || grown >= self.config.window / 8)).then_some(limit);
            if !ranges.is_empty() && w.room() >= packet::ack_len(max_data, &ranges) {
                w.ack(max_data, &ranges);
                if max_data.is_some() {
                    self.advertised = limit;
                }
            }
            self.ack_due = false;
            self.ack_deadline = None;
            self.unacked_eliciting = 0;
        }
        let ranges = match data {
            true => self.write_stream(&mut w),
            false => Vec::new(),
        };
        let eliciting = !ranges.is_empty() || self.probe_due;
        if self.probe_due && ranges.is_empty() {
            w.ping();
        }
        if w.is_empty() {
            return None;
        }
        let len = w.seal(&self.keys.send);
        self.stats.sent += 1;
        if eliciting {
            self.answered = true;
            self.probe_due = false;
            self.last_ack_eliciting = Some(now);
            self.cc.on_sent(len);
            self.sent.insert(
                number,
                Sent {
                    time: now,
                    bytes: len,
                    ranges,
                },
            );
        }
        Some(len)
    }
}

impl Connection {
    /// Step 2: the lowest unsent stream data below the peer's limit, as
    /// much as fits in `w`; the last piece runs to the end of the
    /// datagram, so that a datagram full of data is exactly full (a run's
    /// datagrams are of one size, `batch`). The offset ranges written.
    fn write_stream(&mut self, w: &mut Writer<'_>) -> Vec<Range<u64>> {
        let mut ranges = Vec::new();
        let mut next = self.pending.first();
        while let Some(r) = next.take() {
            if r.start >= self.peer_max_data {
                break;
            }
            let overhead = packet::stream_overhead(r.start);
            if w.room() <= overhead {
                break;
            }
            let available = r.end.min(self.peer_max_data) - r.start;
            let to_end = (w.room() - overhead) as u64;
            let (len, last) = if available >= to_end {
                (to_end, true)
            } else {
                next = self.pending.after(r.end);
                let more = next.as_ref().is_some_and(|n| n.start < self.peer_max_data);
                let with_length = overhead + packet::varint_len(available);
                match more && w.room() > with_length + available as usize {
                    true => (available, false),
                    false => {
                        next = None;
                        (available, true)
                    }
                }
            };
            let end = r.start + len;
            let at = (r.start - self.send_base) as usize;
            let (a, b) = self.send_buf.as_slices();
            w.stream(r.start, &slice_of(a, b, at, len as usize), last);
            self.pending.remove(r.start..end);
            ranges.push(r.start..end);
        }
        ranges
    }
}

/// `len` bytes from `at` of the concatenation of `a` and `b`.
pub(super) fn slice_of<'s>(
    a: &'s [u8],
    b: &'s [u8],
    at: usize,
    len: usize,
) -> std::borrow::Cow<'s, [u8]> {
    if at + len <= a.len() {
        return std::borrow::Cow::Borrowed(&a[at..at + len]);
    }
    if at >= a.len() {
        let at = at - a.len();
        return std::borrow::Cow::Borrowed(&b[at..at + len]);
    }
    let mut v = a[at..].to_vec();
    v.extend_from_slice(&b[..len - (a.len() - at)]);
    std::borrow::Cow::Owned(v)
}
