//! Channels between threadwire nodes. A channel moves frames
//! ([`threadwire_wire::FrameHeader`] + payload) between two nodes and knows
//! nothing of threads, tags or matching; the runtime above joins them.
//!
//! - [`TcpChannel`]: one authenticated, non-blocking connection per pair
//!   of nodes; every pair has one, for data between hosts and for control
//!   between nodes of one host.
//! - [`shm::ShmChannel`]: two lock-free rings in memory shared by two
//!   nodes of one host, set up over their TCP connection ([`shm::setup`]);
//!   large frames by one cross-memory copy or in chunks. It wakes its
//!   peer itself, with the [`shm::Doorbell`] it is given at set-up.
//! - [`Channel`]: either, behind one `send`, `flush` and `receive`.
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
#![warn(missing_docs)]

#[cfg(not(loom))]
mod channel;
pub mod handshake;
mod loom;
pub mod shm;
mod tcp;
pub mod udp;

#[cfg(not(loom))]
pub use channel::Channel;
pub use tcp::{
    quiet, ChannelError, Corking, Frame, Quiet, ReadOutcome, SendOutcome, TcpChannel, CORK_AFTER,
};
