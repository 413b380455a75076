//! Round-trip estimation, loss timers and congestion control, after QUIC's
//! (RFC 9002, sections 5–7) with timer floors suited to a LAN.

use std::time::Duration;

/// The round-trip time assumed before the first sample. RFC 9002 takes
/// 333 ms for the Internet; on a LAN a lost first packet would then wait
/// a third of a second. A slower path only costs a spurious
/// retransmission before its first sample.
pub(super) const INITIAL_RTT: Duration = Duration::from_millis(2);
/// The timers' granularity (RFC 9002's kGranularity is 1 ms). The
/// progress engine's waits end in `epoll_wait`, whose timeout counts whole
/// milliseconds, so finer timers would fire no sooner.
pub(super) const GRANULARITY: Duration = Duration::from_millis(1);
/// A packet is lost once this many later packets are acknowledged
/// (kPacketThreshold).
pub(super) const PACKET_THRESHOLD: u64 = 3;

/// RFC 9002 section 5: smoothed round trip and its variation.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rtt {
    pub(super) latest: Duration,
    pub(super) smoothed: Duration,
    pub(super) var: Duration,
    pub(super) min: Duration,
    sampled: bool,
}

impl Default for Rtt {
    fn default() -> Rtt {
        Rtt {
            latest: INITIAL_RTT,
            smoothed: INITIAL_RTT,
            var: INITIAL_RTT / 2,
            min: INITIAL_RTT,
            sampled: false,
        }
    }
}

impl Rtt {
    /// A sample: the time from sending the largest newly acknowledged
    /// packet to its acknowledgement. (Acknowledgements here are sent
    /// without delay, so none is subtracted.)
    pub(super) fn sample(&mut self, rtt: Duration) {
        self.latest = rtt;
        if !self.sampled {
            self.sampled = true;
            self.min = rtt;
            self.smoothed = rtt;
            self.var = rtt / 2;
            return;
        }
        self.min = self.min.min(rtt);
        let diff = self.smoothed.abs_diff(rtt);
        self.var = (self.var * 3 + diff) / 4;
        self.smoothed = (self.smoothed * 7 + rtt) / 8;
    }

    /// Section 6.1.2: how long after its sending a packet with later
    /// ones acknowledged counts as lost: 9/8 of the larger of the latest
    /// and smoothed round trips.
    pub(super) fn loss_delay(&self) -> Duration {
        (self.latest.max(self.smoothed) * 9 / 8).max(GRANULARITY)
    }

    /// Section 6.2.1: the probe timeout, before backing off.
    pub(super) fn pto(&self) -> Duration {
        self.smoothed + (self.var * 4).max(GRANULARITY)
    }
}

/// NewReno congestion control in bytes (RFC 9002 section 7 and appendix
/// B): slow start to the first loss, then one datagram more per window
/// acknowledged; a loss halves the window, once per round trip (a
/// recovery period starts when the loss is found and ends with the
/// acknowledgement of a packet sent after that).
#[derive(Clone, Debug)]
pub(super) struct NewReno {
    pub(super) window: u64,
    pub(super) in_flight: u64,
    ssthresh: u64,
    /// Packets sent before this number belong to the recovery period.
    recovery_until: Option<u64>,
    datagram: u64,
    /// Bytes acknowledged towards the next increase in congestion
    /// avoidance.
    acked_bytes: u64,
}

impl NewReno {
    pub(super) fn new(datagram: usize) -> NewReno {
        let datagram = datagram as u64;
        NewReno {
            // RFC 9002 7.2: ten datagrams, at most 14720 bytes or two.
            window: (10 * datagram).min(14_720.max(2 * datagram)),
            in_flight: 0,
            ssthresh: u64::MAX,
            recovery_until: None,
            datagram,
            acked_bytes: 0,
        }
    }

    fn minimum(&self) -> u64 {
        2 * self.datagram
    }

    pub(super) fn can_send(&self, bytes: usize) -> bool {
        self.in_flight + bytes as u64 <= self.window
    }

    pub(super) fn on_sent(&mut self, bytes: usize) {
        self.in_flight += bytes as u64;
    }

    /// Packet `number` of `bytes` acknowledged.
    pub(super) fn on_acked(&mut self, number: u64, bytes: usize) {
        let bytes = bytes as u64;
        self.in_flight = self.in_flight.saturating_sub(bytes);
        if let Some(until) = self.recovery_until {
            if number < until {
                return;
            }
            self.recovery_until = None;
        }
        if self.window < self.ssthresh {
            self.window += bytes;
            return;
        }
        self.acked_bytes += bytes;
        if self.acked_bytes >= self.window {
            self.acked_bytes -= self.window;
            self.window += self.datagram;
        }
    }

    /// Packets of `bytes` in all were lost, the latest numbered `number`;
    /// the next packet to be sent is numbered `next`.
    pub(super) fn on_lost(&mut self, number: u64, bytes: u64, next: u64) {
        self.in_flight = self.in_flight.saturating_sub(bytes);
        if self.recovery_until.is_some_and(|until| number < until) {
            return;
        }
        self.recovery_until = Some(next);
        self.window = (self.window / 2).max(self.minimum());
        self.ssthresh = self.window;
        self.acked_bytes = 0;
    }
}
