//! Channels between threadwire nodes. A channel moves frames
//! ([`threadwire_wire::FrameHeader`] + payload) between two nodes and knows
//! nothing of threads, tags or matching; the runtime above joins them.
//!
//! - [`TcpChannel`]: one authenticated, non-blocking connection per pair
//!   of nodes; every pair has one, for data between hosts and for control
//!   between nodes of one host.
//! - [`shm::ShmChannel`]: two lock-free rings in memory shared by two
//!   nodes of one host, set up over their TCP connection ([`shm::setup`]);
//!   large frames by one cross-memory copy or in chunks.
//!
//! Every connection starts with an authenticated handshake ([`handshake`]):
//! both sides prove knowledge of the job secret with HMAC-SHA256 over fresh
//! nonces before any frame is accepted.
//!
//! ```
//! use std::net::TcpListener;
//! use threadwire_transport::handshake::{connect, Credentials};
//!
//! let creds = Credentials { job_id: 7, secret: [42; 32] };
//! let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//! let addr = listener.local_addr().unwrap();
//! let server_creds = creds.clone();
//! let server = std::thread::spawn(move || {
//!     let (stream, _) = listener.accept().unwrap();
//!     threadwire_transport::handshake::accept_blocking(stream, &server_creds, 0).unwrap()
//! });
//! let (peer, _stream) = connect(addr, &creds, 1, std::time::Duration::from_secs(5)).unwrap();
//! assert_eq!(peer, 0);
//! assert_eq!(server.join().unwrap().0, 1);
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod handshake;
mod loom;
pub mod shm;
mod tcp;

pub use tcp::{ChannelError, Frame, ReadOutcome, SendOutcome, TcpChannel};

use threadwire_wire::{FrameHeader, Payload};

/// The channels a node can use to reach another node.
pub enum Channel {
    /// A TCP connection, for nodes on other hosts (and for measurement).
    Tcp(TcpChannel),
}

impl Channel {
    /// Sends one frame; on failure nothing of it was written and the payload
    /// is given back.
    #[inline]
    pub fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        match self {
            Channel::Tcp(c) => c.send(header, payload),
        }
    }

    /// Moves queued frames on; `Ok(true)` when nothing is left queued.
    pub fn flush(&self) -> Result<bool, ChannelError> {
        match self {
            Channel::Tcp(c) => c.flush(),
        }
    }

    /// Bytes accepted but not yet handed to the peer.
    pub fn queued_bytes(&self) -> usize {
        match self {
            Channel::Tcp(c) => c.queued_bytes(),
        }
    }

    /// Reads available frames and hands each to `on_frame`.
    pub fn receive(&self, on_frame: impl FnMut(Frame)) -> Result<ReadOutcome, ChannelError> {
        match self {
            Channel::Tcp(c) => c.receive(on_frame),
        }
    }

    /// Closes the channel; the peer sees end of stream.
    pub fn close(&self) {
        match self {
            Channel::Tcp(c) => c.close(),
        }
    }

    /// A short name for logs: `tcp`.
    pub fn kind(&self) -> &'static str {
        match self {
            Channel::Tcp(_) => "tcp",
        }
    }
}
