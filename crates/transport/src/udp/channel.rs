//! [`UdpChannel`]: a pair's [`Connection`] on the node's one UDP socket,
//! carrying wire frames as the TCP channel does.
//!
//! Senders and the progress engine share the connection under one lock:
//! a send appends its frame to the stream and sends what the congestion
//! window allows at once, from the sender's thread; what it does not
//! allow leaves when acknowledgements open the window, sent by whoever
//! handles them. The engine reads the socket ([`receive_datagrams`]),
//! hands each datagram to its pair's channel ([`UdpChannel::on_datagram`]),
//! then takes the frames completed ([`UdpChannel::receive`]) and sends
//! what is due, acknowledgements first ([`UdpChannel::flush`]). Timers
//! ([`UdpChannel::timeout`], [`UdpChannel::on_timeout`]) are the caller's
//! to keep.

pub(super) use super::batch::read_datagrams;
use super::batch::{self, Runs};
use super::frame_header;
use super::{Config, Connection, Keys, PacketError, UdpStats};
use crate::{ChannelError, Frame, ReadOutcome, SendOutcome};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use threadwire_wire::{FrameHeader, Payload};

/// One pair's reliable channel over the node's UDP socket.
pub struct UdpChannel {
    socket: Arc<UdpSocket>,
    peer_addr: SocketAddr,
    max_frame: u64,
    state: Mutex<State>,
}

struct State {
    conn: Connection,
    /// The header of the frame whose payload begins the connection's
    /// unread bytes, once it was parsed (`take_frames`).
    header: Option<FrameHeader>,
    /// A run of datagrams being written (`batch`, step 1).
    scratch: Vec<u8>,
    /// The largest datagram: the size of every one in a run but the last.
    segment: usize,
    /// Datagrams in a run (1 once the kernel refused runs).
    runs: Runs,
    /// Datagrams the socket refused (a full send buffer): lost, and sent
    /// again by the protocol.
    refused: u64,
    /// Closed by the owner: nothing more is sent or waited for.
    closed: bool,
}

impl UdpChannel {
    /// The channel to the peer at `peer_addr`, on this node's `socket`
    /// (non-blocking); frames longer than `max_frame` are refused.
    pub fn new(
        socket: Arc<UdpSocket>,
        peer_addr: SocketAddr,
        ends: (u32, u32),
        keys: Keys,
        config: Config,
        max_frame: u64,
    ) -> UdpChannel {
        let datagram = config.max_datagram;
        let runs = Runs::new(datagram, config.run);
        UdpChannel {
            socket,
            peer_addr,
            max_frame,
            state: Mutex::new(State {
                conn: Connection::new(ends.0, ends.1, keys, config, Instant::now()),
                header: None,
                scratch: vec![0; datagram * runs.datagrams],
                segment: datagram,
                runs,
                refused: 0,
                closed: false,
            }),
        }
    }

    /// Sends one frame: it joins the stream at once (the channel keeps a
    /// copy until the peer acknowledges it) and leaves as the congestion
    /// window allows. Fails only when the peer is lost.
    pub fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        let mut st = lock(&self.state);
        if st.conn.is_lost() || st.closed {
            return Err((lost(), payload));
        }
        let mut compact = [0u8; frame_header::MAX_LEN];
        let len = frame_header::encode(header, &mut compact);
        st.conn.write(&compact[..len]);
        for segment in payload.segments() {
            st.conn.write(segment);
        }
        drop(payload);
        self.transmit(&mut st);
        Ok(SendOutcome::Written)
    }

    /// Sends whatever is due now; `Ok(true)` when nothing waits for
    /// acknowledgement.
    pub fn flush(&self) -> Result<bool, ChannelError> {
        let mut st = lock(&self.state);
        if st.conn.is_lost() {
            return Err(lost());
        }
        self.transmit(&mut st);
        Ok(st.conn.unacknowledged() == 0)
    }

    /// Bytes sent and not yet acknowledged; none once the channel is
    /// closed or its peer lost, as none will be.
    pub fn queued_bytes(&self) -> usize {
        let st = lock(&self.state);
        match st.closed || st.conn.is_lost() {
            true => 0,
            false => st.conn.unacknowledged(),
        }
    }

    /// Stops the channel: the peer is gone (its process ended, as its TCP
    /// connection told), so nothing more is sent, retransmitted or waited
    /// for. A peer ends only once it has everything it waited for, so
    /// what it has not acknowledged by then it did not need.
    pub fn close(&self) {
        lock(&self.state).closed = true;
    }

    /// Takes one datagram from the peer (the engine's, after
    /// [`receive_datagrams`]).
    pub fn on_datagram(&self, datagram: &[u8]) -> Result<(), PacketError> {
        lock(&self.state).conn.on_datagram(Instant::now(), datagram)
    }

    /// Hands each frame completed to `on_frame`, then sends what is due
    /// (acknowledgements of what arrived, data the window now allows).
    pub fn receive(&self, mut on_frame: impl FnMut(Frame)) -> Result<ReadOutcome, ChannelError> {
        let mut frames = Vec::new();
        let outcome = {
            let mut st = lock(&self.state);
            if st.conn.is_lost() {
                return Err(lost());
            }
            let State { conn, header, .. } = &mut *st;
            let mut parsed = Ok(());
            let n = conn.read_with(|bytes| {
                parsed = take_frames(bytes, header, self.max_frame, &mut frames);
            });
            self.transmit(&mut st);
            parsed?;
            match (n, frames.is_empty()) {
                (0, true) => ReadOutcome::Empty,
                _ => ReadOutcome::Drained,
            }
        };
        // Outside the lock: a frame's handling may send on this channel.
        frames.into_iter().for_each(&mut on_frame);
        Ok(outcome)
    }

    /// Sends a keep-alive that the peer acknowledges
    /// ([`Connection::ping`]).
    pub fn ping(&self) {
        let mut st = lock(&self.state);
        if st.closed || st.conn.is_lost() {
            return;
        }
        st.conn.ping();
        self.transmit(&mut st);
    }

    /// How long since a datagram from the peer was last accepted.
    pub fn quiet(&self) -> std::time::Duration {
        lock(&self.state).conn.quiet(Instant::now())
    }

    /// When [`on_timeout`](Self::on_timeout) is next due.
    pub fn timeout(&self) -> Option<Instant> {
        let st = lock(&self.state);
        match st.closed {
            true => None,
            false => st.conn.timeout(),
        }
    }

    /// Fires the timers due at `now` and sends what they ask for; an
    /// error when the peer is found lost.
    pub fn on_timeout(&self, now: Instant) -> Result<(), ChannelError> {
        let mut st = lock(&self.state);
        st.conn.on_timeout(now);
        if st.conn.is_lost() {
            return Err(lost());
        }
        self.transmit(&mut st);
        Ok(())
    }

    /// The pair's counters; `refused` includes datagrams the socket
    /// refused to send.
    pub fn stats(&self) -> UdpStats {
        let st = lock(&self.state);
        let mut s = *st.conn.stats();
        s.unsent = st.refused;
        s
    }

    /// Datagrams in a run at most, now.
    #[cfg(test)]
    pub(super) fn run_length(&self) -> usize {
        lock(&self.state).runs.datagrams
    }

    /// Sends what the connection has to send, in runs of full-sized
    /// datagrams (`batch`): a shorter datagram ends its run.
    fn transmit(&self, st: &mut State) {
        let now = Instant::now();
        let State {
            conn,
            scratch,
            segment,
            runs,
            refused,
            ..
        } = st;
        let segment = *segment;
        loop {
            let mut len = 0;
            let mut last = segment;
            while last == segment && len + segment <= segment * runs.datagrams {
                match conn.poll_transmit(now, &mut scratch[len..len + segment]) {
                    Some(n) => {
                        len += n;
                        last = n;
                    }
                    None => last = 0,
                }
            }
            if len == 0 {
                return;
            }
            let outcome = batch::send_run(
                &self.socket,
                self.peer_addr,
                &scratch[..len],
                segment,
                runs.datagrams > 1,
            );
            *refused += outcome.refused;
            if outcome.runs_refused {
                runs.datagrams = 1;
            }
            if last == 0 {
                return;
            }
        }
    }
}

/// Reads datagrams from `socket` until it is empty or `budget` are read,
/// handing each with the node number its header names (not yet
/// authenticated: the pair's channel checks). Returns how many were read.
pub fn receive_datagrams(
    socket: &UdpSocket,
    budget: usize,
    mut on_datagram: impl FnMut(u32, &[u8]),
) -> io::Result<usize> {
    read_datagrams(socket, budget, |datagram| {
        if let Some(from) = super::packet::sender(datagram) {
            on_datagram(from, datagram);
        }
    })
}

/// Moves every complete frame at the front of `bytes` (headers as
/// `frame_header` carries them) into `frames`. The header of an
/// incomplete frame is taken out into `header` and its payload moved to
/// the front, with room reserved for the rest: a payload that ends the
/// bytes is then taken whole, not copied. The multicast streams' frames
/// too (`mcast::endpoint`).
pub(super) fn take_frames(
    bytes: &mut Vec<u8>,
    header: &mut Option<FrameHeader>,
    max_frame: u64,
    frames: &mut Vec<Frame>,
) -> Result<(), ChannelError> {
    let mut at = 0;
    loop {
        let h = match header.take() {
            Some(h) => h,
            None => match frame_header::decode(&bytes[at..], max_frame)? {
                Some((h, len)) => {
                    at += len;
                    h
                }
                None => break,
            },
        };
        let len = h.len as usize;
        if bytes.len() - at < len {
            *header = Some(h);
            bytes.drain(..at);
            // A peer's claim reserves at most this much ahead of its data.
            const MAX_RESERVE: usize = 64 << 20;
            bytes.reserve((len - bytes.len()).min(MAX_RESERVE));
            return Ok(());
        }
        let payload = match at == 0 && bytes.len() == len {
            true => std::mem::take(bytes),
            false => bytes[at..at + len].to_vec(),
        };
        at += payload.len();
        frames.push(Frame {
            header: h,
            payload: payload.into(),
        });
        if bytes.is_empty() {
            return Ok(());
        }
    }
    bytes.drain(..at);
    Ok(())
}

fn lost() -> ChannelError {
    io::Error::new(io::ErrorKind::TimedOut, "UDP peer stopped answering").into()
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
