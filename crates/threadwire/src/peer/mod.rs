//! A peer node as this node sees it: the pair's TCP connection, the
//! shared-memory channel when both share a host, and what became of it.
//!
//! # Choosing the channel
//!
//! A pair gets its authenticated TCP connection when one of its nodes
//! first sends to the other ([`dial`], steps 1–6). The higher node of the
//! pair then offers a shared-memory region over it (or says it will not),
//! the lower one attaches if both run on one host and in one network
//! namespace, and frames wait until both have finished the exchange
//! ([`shm_setup`], after [`threadwire_transport::shm::setup`], steps 1–4).
//! From then on every frame to that peer — data and goodbye — goes through
//! the rings; the TCP connection carries only the doorbells the
//! shared-memory channel rings itself, and tells of the peer's death. With
//! `THREADWIRE_CHANNEL=tcp` no region is offered; with `shm` a pair that
//! cannot share memory fails `init`. With `udp` the higher node offers its
//! UDP socket instead ([`udp_setup`], steps 1–4), and every frame goes on
//! the pair's reliable UDP channel; the TCP connection again carries only
//! set-up, heartbeats and the news of the peer's end.

mod book;
pub(crate) mod dial;
pub(crate) mod multicast;
mod shm_setup;
mod udp_setup;

pub(crate) use book::{AddressBook, LauncherBook};
pub(crate) use dial::{Dialer, SharedDialer};
pub(crate) use multicast::McastNode;
pub(crate) use shm_setup::{SetupContext, ShmSetupError};
pub(crate) use udp_setup::{start_udp, udp_counters, UdpNode, UdpSetupFailure};

use crate::error::PeerLost;
use crate::lock;
use dial::{Link, LinkState};
use shm_setup::SetupState;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
use threadwire_transport::shm::ShmChannel;
use threadwire_transport::{Channel, ChannelError, SendOutcome, TcpChannel};
use threadwire_wire::{FrameHeader, Payload};

pub(crate) struct Peer {
    /// The peer's node number.
    node: u32,
    /// The pair's connection as it is made, and the frames that wait for
    /// it ([`dial`]).
    link: Mutex<Link>,
    /// Signalled when the connection is installed or the peer lost.
    linked: Condvar,
    dialer: SharedDialer,
    /// The pair's TCP connection (a [`Channel::Tcp`]).
    tcp: OnceLock<Channel>,
    /// When it was installed: the channel set-up's deadline counts from
    /// then (`progress::liveness`, step 4).
    connected_at: OnceLock<Instant>,
    /// The shared-memory channel once set up (a [`Channel::Shm`]); the
    /// data channel from then on.
    shm: OnceLock<Channel>,
    /// The UDP channel once made (a [`Channel::Udp`]); the data channel
    /// from the set-up's end (`udp_setup`).
    udp: OnceLock<Channel>,
    udp_setup: Mutex<udp_setup::UdpState>,
    setup: Mutex<SetupState>,
    setup_done: AtomicBool,
    lost: OnceLock<PeerLost>,
    /// A failure reported after the peer had finished (its goodbye came,
    /// then its process ended in error): it failed all the same.
    failed_later: OnceLock<PeerLost>,
    /// This node's goodbye has been sent on the pair ([`Peer::say_goodbye`]).
    bye_sent: AtomicBool,
}

impl Peer {
    pub(crate) fn new(node: u32, dialer: SharedDialer) -> Peer {
        Peer {
            node,
            link: Mutex::new(Link::new()),
            linked: Condvar::new(),
            dialer,
            tcp: OnceLock::new(),
            connected_at: OnceLock::new(),
            shm: OnceLock::new(),
            udp: OnceLock::new(),
            udp_setup: Mutex::new(udp_setup::UdpState::Idle),
            setup: Mutex::new(SetupState::Idle),
            setup_done: AtomicBool::new(false),
            lost: OnceLock::new(),
            failed_later: OnceLock::new(),
            bye_sent: AtomicBool::new(false),
        }
    }

    /// Sends this node's goodbye on the pair, once: after it, this node
    /// sends the peer nothing more. `Ok(false)` if it was sent before.
    /// A node says it when it finalizes, and in answer to a peer's
    /// goodbye (the router), so that a node that leaves while the others
    /// run on hears every pair closed and need not wait for their end.
    pub(crate) fn say_goodbye(&self) -> Result<bool, ChannelError> {
        if self.bye_sent.swap(true, Ordering::AcqRel) {
            return Ok(false);
        }
        let bye = FrameHeader::control(threadwire_wire::FrameKind::Bye, 0, 0);
        self.send(&bye, Payload::from_vec(Vec::new()))
            .map(|_| true)
            .map_err(|(e, _)| e)
    }

    /// Sends a set-up frame on the pair's TCP connection; the error is
    /// `None` when there is none.
    fn send_on_tcp(&self, header: &FrameHeader, bytes: Vec<u8>) -> Result<(), Option<ChannelError>> {
        let c = self.tcp().ok_or(None)?;
        c.send(header, Payload::from_vec(bytes))
            .map(|_| ())
            .map_err(|(e, _)| Some(e))
    }

    /// The pair's TCP connection.
    pub(crate) fn tcp(&self) -> Option<&Channel> {
        self.tcp.get()
    }

    pub(crate) fn has_tcp(&self) -> bool {
        self.tcp.get().is_some()
    }

    /// Installs the pair's connection (`dial`, step 4); `false`, closing
    /// `c`, if it has one already.
    pub(crate) fn set_tcp(&self, c: TcpChannel) -> bool {
        // Under the link's lock: `dial`'s waits and verdicts see it at once.
        let _link = lock(&self.link);
        if let Err(Channel::Tcp(c)) = self.tcp.set(Channel::Tcp(Arc::new(c))) {
            tracing::warn!("n{}: second connection to the same peer closed", self.node);
            c.close();
            return false;
        }
        let _ = self.connected_at.set(Instant::now());
        self.linked.notify_all();
        true
    }

    /// How long the pair's connection has been installed (zero before).
    pub(crate) fn connected_for(&self) -> Duration {
        self.connected_at.get().map_or(Duration::ZERO, Instant::elapsed)
    }

    /// The shared-memory channel, once set up.
    pub(crate) fn shm(&self) -> Option<&ShmChannel> {
        self.shm.get().and_then(Channel::as_shm)
    }

    /// The channel frames to the peer go on: shared memory or UDP once
    /// set up, else TCP.
    #[inline]
    fn data_channel(&self) -> Option<&Channel> {
        self.shm
            .get()
            .or_else(|| self.udp.get())
            .or_else(|| self.tcp.get())
    }

    /// The pair's TCP connection when it carries the data (no shared
    /// memory, no UDP): the one a rendezvous may read into place.
    pub(crate) fn data_tcp(&self) -> Option<&Arc<TcpChannel>> {
        match (self.shm.get(), self.udp.get()) {
            (None, None) => self.tcp().and_then(Channel::as_tcp),
            _ => None,
        }
    }

    pub(crate) fn lost(&self) -> Option<&PeerLost> {
        self.lost.get()
    }

    /// The peer's failure, if it failed: its loss, or a failure reported
    /// after it had finished.
    pub(crate) fn failure(&self) -> Option<&PeerLost> {
        self.lost()
            .filter(|l| matches!(l.cause, crate::LossCause::Failed(_)))
            .or_else(|| self.failed_later.get())
    }

    /// Records `lost`, a failure, for a peer that had finished; `false` if
    /// it had not finished, or a failure is recorded already.
    pub(crate) fn set_failed_later(&self, lost: PeerLost) -> bool {
        let finished = matches!(self.lost().map(|l| &l.cause), Some(crate::LossCause::Finished));
        finished && self.failed_later.set(lost).is_ok()
    }

    /// Records the loss, dropping the frames that waited for a connection;
    /// `false` if one was recorded already.
    pub(crate) fn set_lost(&self, lost: PeerLost) -> bool {
        if self.lost.set(lost).is_err() {
            return false;
        }
        let queue = std::mem::take(&mut lock(&self.link).queue);
        self.linked.notify_all();
        drop(queue);
        true
    }

    /// Whether this node dials the peer, or frames wait for the pair's
    /// connection: either ends, connected or lost (`dial`, steps 2–6).
    pub(crate) fn linking(&self) -> bool {
        let link = lock(&self.link);
        (link.state == LinkState::Dialing || !link.queue.is_empty()) && !self.ready()
    }

    /// Whether the channel choice is settled (or the peer is gone).
    pub(crate) fn ready(&self) -> bool {
        self.setup_done.load(Ordering::Acquire) || self.lost().is_some()
    }

    /// Sends one frame on the pair's data channel, or queues it until the
    /// channel is settled, asking for a connection if none is made or
    /// under way (`dial`, step 1). On failure nothing of it was written
    /// and the payload is given back.
    #[inline]
    pub(crate) fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        if self.setup_done.load(Ordering::Acquire) {
            return self.send_settled(header, payload);
        }
        self.send_unsettled(header, payload)
    }

    fn send_settled(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        match self.data_channel() {
            Some(c) => c.send(header, payload),
            None => Err((
                std::io::Error::from(std::io::ErrorKind::NotConnected).into(),
                payload,
            )),
        }
    }

    #[cold]
    fn send_unsettled(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        let mut link = lock(&self.link);
        if self.setup_done.load(Ordering::Acquire) {
            drop(link);
            return self.send_settled(header, payload);
        }
        if self.lost().is_some() {
            let e = std::io::Error::from(std::io::ErrorKind::NotConnected);
            return Err((e.into(), payload));
        }
        link.queue.push((*header, payload));
        let dial = link.state == LinkState::Idle && !self.has_tcp();
        if dial {
            link.state = LinkState::Dialing;
        }
        drop(link);
        if dial {
            tracing::debug!("dialing n{} for a {:?} frame", self.node, header.kind);
            self.dialer.dial(self.node);
        }
        Ok(SendOutcome::Queued)
    }

    /// `dial`, step 5: the channel choice is settled; the frames that
    /// waited go out in order, and later ones straight after them.
    fn open(&self) {
        let mut link = lock(&self.link);
        for (header, payload) in link.queue.drain(..) {
            if let Err((e, _)) = self.send_settled(&header, payload) {
                tracing::debug!("n{}: a queued frame to the peer: {e}", self.node);
            }
        }
        self.setup_done.store(true, Ordering::Release);
    }

    /// Bytes accepted but not yet handed to the peer on either channel.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.tcp.get().map_or(0, Channel::queued_bytes)
            + self.shm.get().map_or(0, Channel::queued_bytes)
            + self.udp.get().map_or(0, Channel::queued_bytes)
    }

    /// The data channel in words, for `threadwire run --verbose`.
    pub(crate) fn route(&self) -> &'static str {
        if !self.has_tcp() {
            return "not connected";
        }
        match self.shm() {
            Some(s) if s.uses_cross_memory() => "shm (large messages by cross-memory copy)",
            Some(_) => "shm (large messages in chunks)",
            None if self.udp().is_some() => "udp",
            None => "tcp",
        }
    }

    /// Why the pair stays on TCP, once settled (`None` on shared memory or
    /// while setting up).
    pub(crate) fn tcp_reason(&self) -> Option<String> {
        match &*lock(&self.setup) {
            SetupState::Done(reason) => reason.clone(),
            _ => None,
        }
    }
}
