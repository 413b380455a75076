//! The receiving side of one sender's stream, without I/O: reassembly
//! within the window, NAKs of gaps and acknowledgements (steps 5–7 of
//! the module docs).

use super::super::ranges::RangeSet;
use super::control::{Control, MAX_NAK_RANGES};
use super::packet::Header;
use super::{McastConfig, McastStats};
use hmac::Hmac;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use threadwire_wire::FrameHeader;

/// The longest wait between NAKs for data that does not come (step 5):
/// a repair may wait behind a slow link's queue (50 ms at 10 Mbit/s in
/// the emulated hosts' `tbf`), and eight receivers asking every 2 ms
/// meanwhile filled the sender's own 10 Mbit/s link with NAKs.
const MAX_NAK_REPEAT: Duration = Duration::from_millis(64);

pub(super) struct Receiver {
    pub(super) key: Hmac<Sha256>,
    pub(super) session: [u8; 16],
    /// Bytes below this are in order (in `inbox` or handed on).
    delivered: u64,
    /// Out-of-order pieces above `delivered`, disjoint, and the offsets
    /// they cover.
    pieces: BTreeMap<u64, Vec<u8>>,
    have: RangeSet,
    /// In-order bytes not yet parsed into frames.
    pub(super) inbox: Vec<u8>,
    /// The header of the frame whose payload begins `inbox`, once parsed
    /// (`channel::take_frames`).
    pub(super) header: Option<FrameHeader>,
    /// The highest end the sender told.
    end: u64,
    nak_at: Option<Instant>,
    /// The wait before the next NAK: `nak_repeat`, doubled at each NAK
    /// that brought nothing (step 5), reset when data comes in order.
    nak_every: Option<Duration>,
    acked: u64,
    ack_at: Option<Instant>,
    /// A heartbeat asked for the acknowledgement again.
    reack: bool,
}

impl Receiver {
    pub(super) fn new(key: Hmac<Sha256>, session: [u8; 16], from: u64) -> Receiver {
        Receiver {
            key,
            session,
            delivered: from,
            pieces: BTreeMap::new(),
            have: RangeSet::default(),
            inbox: Vec::new(),
            header: None,
            end: from,
            nak_at: None,
            nak_every: None,
            acked: from,
            ack_at: None,
            reack: false,
        }
    }

    /// An authentic datagram's header and data.
    pub(super) fn on_datagram(
        &mut self,
        now: Instant,
        header: &Header,
        data: &[u8],
        config: &McastConfig,
        stats: &mut McastStats,
    ) {
        self.end = self.end.max(header.end);
        if data.is_empty() {
            // A heartbeat: acknowledge again, in case the last was lost
            // or the sender waits on it.
            stats.received += 1;
            self.reack = true;
            self.update(now, config);
            return;
        }
        let limit = self.delivered.saturating_add(config.window);
        let (start, end) = (header.offset, header.offset + data.len() as u64);
        if end > limit {
            stats.beyond_window += 1;
        }
        let (lo, hi) = (start.max(self.delivered), end.min(limit));
        let gaps = match lo < hi {
            true => self.have.gaps_in(lo..hi),
            false => Vec::new(),
        };
        if gaps.is_empty() {
            if end <= limit {
                stats.duplicates += 1;
            }
            self.update(now, config);
            return;
        }
        stats.received += 1;
        for g in gaps {
            let piece = &data[(g.start - start) as usize..(g.end - start) as usize];
            self.pieces.insert(g.start, piece.to_vec());
            self.have.insert(g);
        }
        if let Some(r) = self.have.first().filter(|r| r.start == self.delivered) {
            let keys: Vec<u64> = self.pieces.range(r.clone()).map(|(&k, _)| k).collect();
            for k in keys {
                if let Some(piece) = self.pieces.remove(&k) {
                    self.inbox.extend_from_slice(&piece);
                }
            }
            self.have.remove(r.clone());
            self.delivered = r.end;
            self.nak_every = None;
        }
        self.update(now, config);
    }

    /// Arms or disarms the NAK and acknowledgement timers.
    fn update(&mut self, now: Instant, config: &McastConfig) {
        match self.end > self.delivered {
            true if self.nak_at.is_none() => self.nak_at = Some(now + config.nak_delay),
            true => {}
            false => self.nak_at = None,
        }
        if self.delivered - self.acked >= config.ack_every {
            self.ack_at = Some(now);
        } else if (self.delivered > self.acked || self.reack) && self.ack_at.is_none() {
            self.ack_at = Some(now + config.ack_delay);
        }
    }

    pub(super) fn timeout(&self) -> Option<Instant> {
        [self.nak_at, self.ack_at].into_iter().flatten().min()
    }

    /// The control messages due at `now`.
    pub(super) fn poll(
        &mut self,
        now: Instant,
        config: &McastConfig,
        stats: &mut McastStats,
        out: &mut Vec<Control>,
    ) {
        if self.ack_at.is_some_and(|t| t <= now) {
            self.ack_at = None;
            self.reack = false;
            self.acked = self.delivered;
            out.push(Control::Ack {
                offset: self.delivered,
            });
        }
        if self.nak_at.is_some_and(|t| t <= now) {
            let top = self.end.min(self.delivered.saturating_add(config.window));
            let ranges: Vec<_> = self
                .have
                .gaps_in(self.delivered..top)
                .into_iter()
                .take(MAX_NAK_RANGES)
                .collect();
            let every = self.nak_every.unwrap_or(config.nak_repeat);
            self.nak_at = Some(now + every);
            self.nak_every = Some((every * 2).min(MAX_NAK_REPEAT));
            if !ranges.is_empty() {
                stats.naks_sent += 1;
                out.push(Control::Nak { ranges });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_naks_back_off_to_a_ceiling() {
        let key = super::super::packet::key(&[1; 32], 2, 3, &[4; 16]);
        let mut r = Receiver::new(key, [4; 16], 0);
        let config = McastConfig::default();
        let now = Instant::now();
        // A heartbeat told of 5000 bytes, none of which came.
        r.end = 5000;
        r.update(now, &config);
        let (mut out, mut stats) = (Vec::new(), McastStats::default());
        let mut at = r.nak_at.expect("a NAK armed");
        assert_eq!(at, now + config.nak_delay);
        let mut waits = Vec::new();
        for _ in 0..8 {
            r.poll(at, &config, &mut stats, &mut out);
            let next = r.nak_at.expect("NAKs go on while data is missing");
            waits.push(next - at);
            at = next;
        }
        assert_eq!(stats.naks_sent, 8);
        assert_eq!(out.len(), 8);
        let doubling: Vec<Duration> = (0..8)
            .map(|i| (config.nak_repeat * (1 << i)).min(MAX_NAK_REPEAT))
            .collect();
        assert_eq!(waits, doubling);
        assert_eq!(waits[7], MAX_NAK_REPEAT);
    }
}
