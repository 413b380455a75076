//! [`Endpoint`]: one node's side of the job's multicast, without I/O —
//! its own stream's sender and a receiver per stream it joined.

use super::super::channel::take_frames;
use super::super::packet::TAG_LEN;
use super::control::Control;
use super::packet::{self, Header};
use super::receiver::Receiver;
use super::sender::Sender;
use super::{McastConfig, McastStats};
use crate::{ChannelError, Frame};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often at most a node asks one sender to let it join (step 3).
const JOIN_EVERY: Duration = Duration::from_millis(10);

/// One node's multicast protocol: the caller feeds it datagrams
/// ([`on_datagram`](Self::on_datagram)), control messages from peers
/// ([`on_control`](Self::on_control)) and time
/// ([`on_timeout`](Self::on_timeout)), and sends what it produces
/// ([`poll_transmit`](Self::poll_transmit) to the group,
/// [`poll_control`](Self::poll_control) to peers).
pub struct Endpoint {
    me: u32,
    secret: [u8; 32],
    job: u64,
    config: McastConfig,
    sender: Sender,
    receivers: BTreeMap<u32, Receiver>,
    /// When each sender without a receiver was last asked to join.
    join_asked: BTreeMap<u32, Instant>,
    controls: Vec<(u32, Control)>,
    stats: McastStats,
}

impl Endpoint {
    /// Node `me`'s endpoint in job `job`, its stream of session `session`
    /// (fresh and random for each start).
    pub fn new(
        me: u32,
        secret: [u8; 32],
        job: u64,
        session: [u8; 16],
        config: McastConfig,
        now: Instant,
    ) -> Endpoint {
        Endpoint {
            me,
            sender: Sender::new(me, &secret, job, session, config.clone(), now),
            secret,
            job,
            config,
            receivers: BTreeMap::new(),
            join_asked: BTreeMap::new(),
            controls: Vec::new(),
            stats: McastStats::default(),
        }
    }

    /// Appends bytes (whole frames) to this node's stream.
    pub fn write(&mut self, bytes: &[u8]) {
        self.sender.write(bytes);
    }

    /// Whether `node` receives this node's stream.
    pub fn is_receiver(&self, node: u32) -> bool {
        self.sender.is_receiver(node)
    }

    /// The nodes receiving this node's stream.
    pub fn receivers(&self) -> Vec<u32> {
        self.sender.receivers()
    }

    /// Unsent and unstable bytes of this node's stream.
    pub fn queued_bytes(&self) -> usize {
        self.sender.held()
    }

    /// Makes a heartbeat due at once.
    pub fn announce(&mut self) {
        self.sender.announce();
    }

    /// One datagram from the group: refused and counted, or taken.
    pub fn on_datagram(&mut self, now: Instant, datagram: &[u8]) {
        let Ok(header) = Header::read(datagram) else {
            self.stats.refused += 1;
            return;
        };
        if header.sender == self.me {
            return;
        }
        let receiver = self
            .receivers
            .get_mut(&header.sender)
            .filter(|r| packet::prefix(&r.session) == header.session);
        let Some(receiver) = receiver else {
            self.stats.refused += 1;
            self.ask_to_join(now, header.sender);
            return;
        };
        match packet::open(datagram, &receiver.key) {
            Ok(data) => receiver.on_datagram(now, &header, data, &self.config, &mut self.stats),
            Err(_) => self.stats.forged += 1,
        }
    }

    fn ask_to_join(&mut self, now: Instant, sender: u32) {
        // Forged sender numbers must not grow the map: keep only asks
        // still within their interval.
        self.join_asked
            .retain(|_, at| now.saturating_duration_since(*at) < JOIN_EVERY);
        if self.join_asked.contains_key(&sender) {
            return;
        }
        self.join_asked.insert(sender, now);
        self.controls.push((sender, Control::Join));
    }

    /// A control message from peer `from` (carried by unicast).
    pub fn on_control(&mut self, now: Instant, from: u32, control: Control) {
        match control {
            Control::Join => self.sender.on_join(now, from),
            Control::Joined {
                from: offset,
                session,
            } => {
                if self
                    .receivers
                    .get(&from)
                    .is_some_and(|r| r.session == session)
                {
                    return;
                }
                let key = packet::key(&self.secret, self.job, from, &session);
                self.receivers
                    .insert(from, Receiver::new(key, session, offset));
                self.join_asked.remove(&from);
            }
            Control::Ack { offset } => self.sender.on_ack(now, from, offset),
            Control::Nak { ranges } => self.sender.on_nak(now, from, &ranges),
        }
    }

    /// The control messages due at `now`, each with the peer it goes to.
    pub fn poll_control(&mut self, now: Instant) -> Vec<(u32, Control)> {
        self.poll_receivers(now);
        let mut out = std::mem::take(&mut self.controls);
        self.sender.take_controls(&mut out);
        out
    }

    /// Queues the receivers' acknowledgements and NAKs due at `now`.
    fn poll_receivers(&mut self, now: Instant) {
        let mut due = Vec::new();
        for (&node, r) in &mut self.receivers {
            r.poll(now, &self.config, &mut self.stats, &mut due);
            self.controls.extend(due.drain(..).map(|c| (node, c)));
        }
    }

    /// Writes the next datagram for the group into `buf` (at least
    /// `max_datagram` bytes): its length, or `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.sender.poll_transmit(now, buf)
    }

    /// The socket refused `datagram`, one of [`poll_transmit`](Self::poll_transmit)'s
    /// (a full send buffer): its data goes again after a timer's tick.
    pub fn refused(&mut self, now: Instant, datagram: &[u8]) {
        if let Ok(h) = Header::read(datagram) {
            let len = datagram.len().saturating_sub(packet::HEADER_LEN + TAG_LEN) as u64;
            if h.kind == packet::Kind::Data {
                self.sender.refused(now, h.offset..h.offset + len);
            }
        }
    }

    /// Moves the frames each stream completed into `frames`; an error
    /// names a sender whose stream holds a malformed frame.
    pub fn read_frames(
        &mut self,
        max_frame: u64,
        frames: &mut Vec<(u32, Frame)>,
    ) -> Result<(), (u32, ChannelError)> {
        let mut parsed = Vec::new();
        for (&node, r) in &mut self.receivers {
            let result = take_frames(&mut r.inbox, &mut r.header, max_frame, &mut parsed);
            frames.extend(parsed.drain(..).map(|f| (node, f)));
            result.map_err(|e| (node, e))?;
        }
        Ok(())
    }

    /// When [`on_timeout`](Self::on_timeout) or
    /// [`poll_control`](Self::poll_control) is next due.
    pub fn timeout(&self) -> Option<Instant> {
        let receiving = self.receivers.values().filter_map(Receiver::timeout).min();
        [self.sender.timeout(), receiving]
            .into_iter()
            .flatten()
            .min()
    }

    /// Fires the timers due at `now` (their control messages wait for
    /// [`poll_control`](Self::poll_control)): the receivers found lost
    /// (removed).
    pub fn on_timeout(&mut self, now: Instant) -> Vec<u32> {
        self.poll_receivers(now);
        self.sender.on_timeout(now)
    }

    /// Forgets `node`, as receiver of this stream and as sender.
    pub fn remove_peer(&mut self, node: u32) {
        self.sender.remove(node);
        self.receivers.remove(&node);
        self.join_asked.remove(&node);
    }

    /// The counters of this node's stream and those it receives.
    pub fn stats(&self) -> McastStats {
        let s = &self.sender.stats;
        McastStats {
            sent: s.sent,
            repairs: s.repairs,
            suppressed: s.suppressed,
            heartbeats: s.heartbeats,
            lost_receivers: s.lost_receivers,
            ..self.stats
        }
    }
}
