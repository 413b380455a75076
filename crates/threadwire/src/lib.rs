//! threadwire: thread-addressed message passing between processes.
//!
//! A job runs as N nodes (processes) started by `threadwire run -n N --
//! program`; every thread of every node is an endpoint [`Address`]
//! `(node, thread)`, printed `n2.t5`, that can send to and receive from any
//! other while the node's other threads keep computing.
//!
//! ```no_run
//! use threadwire::{Address, ANY_SOURCE, ANY_TAG};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let ep = threadwire::init()?; // this thread becomes n<i>.t0
//!     let node = ep.node().clone();
//!     let workers: Vec<_> = (0..3)
//!         .map(|_| node.spawn(|ep| {
//!             let hello = format!("hello from {}", ep.address());
//!             ep.send(Address::new(0, 0), 1, hello.into_bytes())
//!         }))
//!         .collect();
//!     if node.id() == 0 {
//!         for _ in 0..3 * node.nodes() {
//!             let m = ep.recv(ANY_SOURCE, ANY_TAG)?;
//!             println!("{}: {}", m.source(), String::from_utf8_lossy(&m.into_vec()));
//!         }
//!     }
//!     for w in workers {
//!         w.join().unwrap()?;
//!     }
//!     Ok(()) // dropping `ep` (thread 0) finalizes the node
//! }
//! ```
//!
//! Runs without a launcher as a one-node job when asked to:
//!
//! ```
//! let ep = threadwire::Config::new().standalone(true).init().unwrap();
//! let me = ep.address();
//! ep.send(me, 7, b"to myself".to_vec()).unwrap();
//! let m = ep.recv(me, 7).unwrap();
//! assert_eq!(m.into_vec(), b"to myself");
//! ```
#![warn(missing_docs)]

/// Items of the runtime proper. Under `--cfg loom` the crate is only its
/// lock-free parts ([`loom`] and the mailbox's incoming stack), for the models in
/// `tests/loom_*.rs`: the rest needs real sockets and memory, which loom
/// does not model.
macro_rules! runtime {
    ($($item:item)*) => { $( #[cfg(not(loom))] $item )* };
}

mod loom;

/// The mailbox's incoming stack alone, for the loom model.
#[cfg(loom)]
#[doc(hidden)]
#[path = "mailbox/incoming.rs"]
pub mod incoming;

runtime! {
mod address;
pub mod am;
mod allocator;
mod config;
pub mod control;
mod endpoint;
pub mod env;
mod error;
pub mod group;
mod mailbox;
mod machine;
mod matched;
pub mod mcast;
mod message;
mod name_hash;
mod node;
pub mod notify;
mod peer;
mod pmi;
mod progress;
mod receive;
mod remote_spawn;
mod rendezvous;
/// The rendezvous frames' payloads (`Rts`, `Cts`, `Fin`, `Credit`), for
/// the fuzz target; not part of the API.
#[doc(hidden)]
pub mod rendezvous_codec {
    pub use crate::rendezvous::codec::*;
}
/// Active messages' answers, large messages' announcements (`AmRts`) and
/// spawn requests, for the fuzz target; not part of the API.
#[doc(hidden)]
pub mod am_codec {
    pub use crate::am::large::{decode as decode_large, encode as encode_large};
    pub use crate::am::status::{decode, Failed, Status};
    pub use crate::remote_spawn::{decode_request, encode_request};
}
mod report;
mod send;
mod request;
mod router;
mod stats;
pub mod vm;

pub use am::{ActiveMessage, AmError, AmRequest, Handler};
pub use address::{Address, ParseAddressError, Source, Tag, TagMatch, ANY_SOURCE, ANY_TAG};
pub use config::{
    ChannelChoice, Config, ParseChannelChoiceError, DEFAULT_EAGER_BUDGET, DEFAULT_MAX_FRAME,
    DEFAULT_PEER_TIMEOUT,
};
pub use endpoint::Endpoint;
pub use send::SendBuf;
pub use group::{Agreement, CollError, CollRequest, GroupError, Element, Group, Op, Reducible, Reduction, ValueLoc};
pub use error::{Failure, InitError, LossCause, PeerLost, RecvError, SendError, SpawnError};
pub use machine::{NodeInfo, NodeState};
pub use matched::Matched;
pub use mcast::McastError;
pub use message::{Message, Status};
pub use node::{init, Node, ThreadHandle};
pub use remote_spawn::{RemoteHandle, RemoteJoinError};
pub use notify::{ExitCause, Notification, NotificationError, Notify, NotifyError, NotifyHandle};
pub use report::ReportError;
pub use request::{
    wait_all, wait_any, Completion, RecvIntoError, RecvIntoRequest, RecvRequest, Request, SendRequest,
};
pub use stats::Stats;
pub use vm::{AddNodes, VmError};
pub use control::HostEntry;

/// Locks `m`, ignoring poisoning: every critical section in this crate leaves
/// its data consistent before anything that could panic.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
/// Fibers, their scheduler and synchronization, re-exported: the same
/// primitives work in fibers and OS threads.
pub use threadwire_fiber as fiber;
pub use threadwire_fiber::{JoinError, Priority};
pub use threadwire_wire::{ByteOrder, Encoding, Packer, Payload, UnpackError, Unpacker};
}
