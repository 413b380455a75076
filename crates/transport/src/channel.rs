//! [`Channel`]: the channels a node can use to reach another node, as one
//! closed set (crossbeam's `SenderFlavor`, timely's `Allocator`). The
//! runtime calls one `send` and one `receive`; each flavor owns its own
//! wake-ups (TCP's through epoll readiness, shared memory's through its
//! [`Doorbell`](crate::shm::Doorbell)).

use crate::shm::ShmChannel;
use crate::udp::UdpChannel;
use crate::{ChannelError, Frame, ReadOutcome, SendOutcome, TcpChannel};
use std::sync::Arc;
use threadwire_wire::{FrameHeader, Payload};

/// A channel to another node.
// One per peer, made once and kept in place: the size costs nothing, and
// boxing the shared-memory channel would add a pointer chase to every send.
#[allow(clippy::large_enum_variant)]
pub enum Channel {
    /// A TCP connection: between hosts, for measurement, and beside every
    /// shared-memory channel for set-up, doorbells and loss detection
    /// (hence shared).
    Tcp(Arc<TcpChannel>),
    /// Two rings in memory shared with a node of this host.
    Shm(ShmChannel),
    /// The reliable UDP channel, beside the pair's TCP connection (which
    /// set it up and tells of the peer's death).
    Udp(Arc<UdpChannel>),
}

impl Channel {
    /// Sends one frame; on failure nothing of it was written and the payload
    /// is given back. A shared-memory send never fails (a dead peer shows
    /// on its TCP connection).
    #[inline]
    pub fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        match self {
            Channel::Tcp(c) => c.send(header, payload),
            Channel::Shm(c) => Ok(c.send(header, payload)),
            Channel::Udp(c) => c.send(header, payload),
        }
    }

    /// Moves queued frames on; `Ok(true)` when nothing is left queued.
    pub fn flush(&self) -> Result<bool, ChannelError> {
        match self {
            Channel::Tcp(c) => c.flush(),
            Channel::Shm(c) => Ok(c.flush()),
            Channel::Udp(c) => c.flush(),
        }
    }

    /// Bytes accepted but not yet handed to the peer.
    pub fn queued_bytes(&self) -> usize {
        match self {
            Channel::Tcp(c) => c.queued_bytes(),
            Channel::Shm(c) => c.queued_bytes(),
            Channel::Udp(c) => c.queued_bytes(),
        }
    }

    /// Reads available frames and hands each to `on_frame` (for shared
    /// memory, also moves this side's backlog on).
    #[inline]
    pub fn receive(&self, on_frame: impl FnMut(Frame)) -> Result<ReadOutcome, ChannelError> {
        match self {
            Channel::Tcp(c) => c.receive(on_frame),
            Channel::Shm(c) => c.receive(on_frame).map_err(ChannelError::from),
            Channel::Udp(c) => c.receive(on_frame),
        }
    }

    /// Closes a TCP channel; the peer sees end of stream. A shared-memory
    /// channel ends with its pair's TCP connection, so this does nothing.
    pub fn close(&self) {
        match self {
            Channel::Tcp(c) => c.close(),
            Channel::Udp(c) => c.close(),
            Channel::Shm(_) => {}
        }
    }

    /// A short name for logs: `tcp` or `shm`.
    pub fn kind(&self) -> &'static str {
        match self {
            Channel::Tcp(_) => "tcp",
            Channel::Shm(_) => "shm",
            Channel::Udp(_) => "udp",
        }
    }

    /// The shared-memory channel, if this is one.
    pub fn as_shm(&self) -> Option<&ShmChannel> {
        match self {
            Channel::Shm(c) => Some(c),
            _ => None,
        }
    }

    /// The TCP connection, if this is one.
    pub fn as_tcp(&self) -> Option<&Arc<TcpChannel>> {
        match self {
            Channel::Tcp(c) => Some(c),
            _ => None,
        }
    }

    /// The UDP channel, if this is one.
    pub fn as_udp(&self) -> Option<&Arc<UdpChannel>> {
        match self {
            Channel::Udp(c) => Some(c),
            _ => None,
        }
    }
}
