//! Remote thread spawn: any thread starts a thread on another node by
//! naming an entry point that node exported, learns the new thread's
//! address at once, and can join it for its result.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = threadwire::init()?;
//! // Every node exports the same entry points, before any node spawns.
//! me.node().export("square", |_ep, args| {
//!     let x = u64::from_le_bytes(args.to_vec().try_into().unwrap_or([0; 8]));
//!     (x * x).to_le_bytes().to_vec()
//! })?;
//! threadwire::Group::world(&me)?.barrier()?;
//! if me.address().node == 0 {
//!     let worker = me.spawn_remote(1, "square", 12u64.to_le_bytes().to_vec())?;
//!     println!("started {}", worker.address()); // a thread of node 1
//!     let result = worker.join(&me)?;
//!     assert_eq!(result.into_vec(), 144u64.to_le_bytes());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # The protocol
//!
//! 1. [`Endpoint::spawn_remote`] sends a request to the built-in inline
//!    active-message handler `threadwire.spawn` of the node (every node
//!    has it from its start): the arguments, then the entry's name, the
//!    name's length (2 bytes), a result tag (4 bytes, fresh from the
//!    sending node's request counter) and where to run (1 byte: fiber or
//!    OS thread), all little-endian, so the arguments are cut off with no
//!    copy.
//! 2. The handler looks the name up among the node's exports
//!    ([`Node::export`]) and starts the thread, with an endpoint of its
//!    own, then answers with its thread number — or with why not: no such
//!    entry, or the node could not start a thread.
//! 3. The thread runs the entry with its endpoint and the arguments;
//!    when the entry returns (or panics, caught), the thread sends the
//!    result, followed by a status byte (0 returned, 1 panicked: the
//!    bytes are the panic's message), to the spawning thread in the
//!    result context (`group::context`) with the result tag.
//! 4. [`RemoteHandle::join`] receives that message from the thread's
//!    address, or fails with `PeerLost` when its node is lost first.
//!
//! A handle dropped without joining leaves its result to arrive unread in
//! the spawning thread's mailbox (where no receive of the user's matches
//! it).

use crate::am::{ActiveMessage, AmError};
use crate::error::{PeerLost, RecvError, SpawnError};
use crate::lock;
use crate::{Address, Endpoint, Node, Source, TagMatch};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use threadwire_fiber::JoinError;
use threadwire_wire::Payload;

/// The built-in handler's name.
pub(crate) const SPAWN_HANDLER: &str = "threadwire.spawn";
/// The context of entry points' results (`group::context`).
pub(crate) const RESULT_CONTEXT: u32 = u32::MAX - 3;

/// An exported entry point: the new thread's endpoint and the arguments
/// in, the result's bytes out.
type EntryFn = dyn Fn(&Endpoint, Payload) -> Payload + Send + Sync;

/// The entry points a node exports.
#[derive(Default)]
pub(crate) struct Exports {
    entries: Mutex<HashMap<String, Arc<EntryFn>>>,
}

const FIBER: u8 = 0;
const OS_THREAD: u8 = 1;

/// Answers of step 2, first byte.
const STARTED: u8 = 0;
const NO_ENTRY: u8 = 1;
const NOT_STARTED: u8 = 2;

/// Results of step 3, last byte.
const RETURNED: u8 = 0;
const PANICKED: u8 = 1;

impl Node {
    /// Exports `f` as the entry point `name`: other nodes' threads may
    /// start a thread here running it ([`Endpoint::spawn_remote`]), with
    /// an endpoint of its own and the arguments they send; what it
    /// returns goes back to the spawning thread's
    /// [`RemoteHandle::join`]. Export the same names on every node
    /// before any node spawns (a barrier after exporting does it).
    ///
    /// # Errors
    ///
    /// [`SpawnError::AlreadyExported`] for a name exported before.
    pub fn export<R: Into<Payload>>(
        &self,
        name: &str,
        f: impl Fn(&Endpoint, Payload) -> R + Send + Sync + 'static,
    ) -> Result<(), SpawnError> {
        let mut entries = lock(&self.shared.router.exports.entries);
        if entries.contains_key(name) {
            return Err(SpawnError::AlreadyExported {
                name: name.to_string(),
            });
        }
        entries.insert(name.to_string(), Arc::new(move |ep, args| f(ep, args).into()));
        Ok(())
    }
}

impl Endpoint {
    /// Starts a fiber on `node` running the entry point `name` that node
    /// exported ([`Node::export`]) with `args`, and returns once it has
    /// started, with its address. Costs one active-message round trip.
    ///
    /// # Errors
    ///
    /// [`SpawnError::UnknownEntry`], [`SpawnError::PeerLost`],
    /// [`SpawnError::NoSuchNode`], [`SpawnError::Remote`] (the node could
    /// not start a thread), [`SpawnError::Finalized`].
    pub fn spawn_remote(
        &self,
        node: u32,
        name: &str,
        args: impl Into<Payload>,
    ) -> Result<RemoteHandle, SpawnError> {
        self.start_remote(node, name, args.into(), FIBER)
    }

    /// [`spawn_remote`](Self::spawn_remote) on an OS thread of `node`:
    /// for an entry point that blocks in the kernel.
    ///
    /// # Errors
    ///
    /// As [`spawn_remote`](Self::spawn_remote).
    pub fn spawn_remote_os(
        &self,
        node: u32,
        name: &str,
        args: impl Into<Payload>,
    ) -> Result<RemoteHandle, SpawnError> {
        self.start_remote(node, name, args.into(), OS_THREAD)
    }

    /// Step 1.
    fn start_remote(
        &self,
        node: u32,
        name: &str,
        mut args: Payload,
        placement: u8,
    ) -> Result<RemoteHandle, SpawnError> {
        let router = &self.node.shared.router;
        let handler = crate::am::Handler::builtin(SPAWN_HANDLER);
        let Ok(name_len) = u16::try_from(name.len()) else {
            return Err(SpawnError::UnknownEntry {
                node,
                name: name.to_string(),
            });
        };
        let tag = router.am.next_request();
        args.push_bytes(encode_request(name, name_len, tag, placement));
        let answer = self.am_request(node, &handler, args).wait().map_err(|e| match e {
            AmError::PeerLost { lost, .. } => SpawnError::PeerLost(lost),
            AmError::NoSuchNode { node, nodes } => SpawnError::NoSuchNode { node, nodes },
            AmError::Finalized => SpawnError::Finalized,
            other => SpawnError::Remote {
                node,
                why: other.to_string(),
            },
        })?;
        let answer = answer.into_vec();
        match answer.split_first() {
            Some((&STARTED, thread)) if thread.len() == 4 => {
                let thread = u32::from_le_bytes(thread.try_into().expect("4 bytes"));
                Ok(RemoteHandle {
                    address: Address::new(node, thread),
                    tag,
                    spawner: self.address,
                    _not_send: PhantomData,
                })
            }
            Some((&NO_ENTRY, _)) => Err(SpawnError::UnknownEntry {
                node,
                name: name.to_string(),
            }),
            Some((_, why)) => Err(SpawnError::Remote {
                node,
                why: String::from_utf8_lossy(why).into_owned(),
            }),
            None => Err(SpawnError::Remote {
                node,
                why: "empty answer".into(),
            }),
        }
    }
}

/// Step 2: the built-in handler, inline in the driving thread.
pub(crate) fn serve(am: &mut ActiveMessage<'_>) {
    let answer = match start(am) {
        Ok(thread) => {
            let mut b = vec![STARTED];
            b.extend_from_slice(&thread.to_le_bytes());
            b
        }
        Err((code, why)) => {
            let mut b = vec![code];
            b.extend_from_slice(why.as_bytes());
            b
        }
    };
    let _ = am.reply(answer);
}

/// Step 1's trailer, after the arguments: the name, its length, the
/// result tag and where to run.
pub fn encode_request(name: &str, name_len: u16, tag: u32, placement: u8) -> Vec<u8> {
    let mut trailer = Vec::with_capacity(name.len() + 7);
    trailer.extend_from_slice(name.as_bytes());
    trailer.extend_from_slice(&name_len.to_le_bytes());
    trailer.extend_from_slice(&tag.to_le_bytes());
    trailer.push(placement);
    trailer
}

/// A spawn request's parts — arguments (cut off in place), name, result
/// tag, where to run — or `None` for bytes no correct node sends.
pub fn decode_request(mut bytes: Vec<u8>) -> Option<(Vec<u8>, String, u32, u8)> {
    let placement = bytes.pop()?;
    let at = bytes.len().checked_sub(6)?;
    let tag = u32::from_le_bytes(bytes[at + 2..at + 6].try_into().ok()?);
    let name_len = usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
    let name_at = at.checked_sub(name_len)?;
    let name = String::from_utf8(bytes[name_at..at].to_vec()).ok()?;
    bytes.truncate(name_at);
    Some((bytes, name, tag, placement))
}

fn start(am: &mut ActiveMessage<'_>) -> Result<u32, (u8, String)> {
    let spawner = am.source();
    let payload = am.take_payload();
    let format = payload.format();
    let Some((args, name, tag, placement)) = decode_request(payload.into_vec()) else {
        return Err((NOT_STARTED, "malformed spawn request".to_string()));
    };
    let args = Payload::from_wire(format, args);
    let router = am.router();
    let entry = lock(&router.exports.entries).get(&name).cloned();
    let Some(entry) = entry else {
        return Err((NO_ENTRY, name));
    };
    let Some(node) = router.am.node() else {
        return Err((NOT_STARTED, "the node is shutting down".into()));
    };
    let body = move |ep: Endpoint| run(&ep, &*entry, args, spawner, tag);
    let started = match placement {
        OS_THREAD => node.try_spawn_os(body).map(|h| h.address()),
        _ => node.try_spawn(body).map(|h| h.address()),
    };
    started.map(|a| a.thread).map_err(|e| (NOT_STARTED, e.to_string()))
}

/// Step 3.
fn run(ep: &Endpoint, entry: &EntryFn, args: Payload, spawner: Address, tag: u32) {
    let result = match catch_unwind(AssertUnwindSafe(|| entry(ep, args))) {
        Ok(mut result) => {
            result.push_bytes(vec![RETURNED]);
            result
        }
        Err(panic) => {
            let message = match JoinError::from_panic(&*panic) {
                JoinError::Panicked(message) => message.to_string(),
                other => other.to_string(),
            };
            let mut b = message.into_bytes();
            b.push(PANICKED);
            Payload::from_vec(b)
        }
    };
    if ep.send_in(RESULT_CONTEXT, spawner, tag, result).is_err() {
        tracing::debug!("{}: the spawner {spawner} is gone; result dropped", ep.address());
    }
}

/// A thread started on another node ([`Endpoint::spawn_remote`]).
#[derive(Debug)]
pub struct RemoteHandle {
    address: Address,
    tag: u32,
    spawner: Address,
    _not_send: PhantomData<*const ()>,
}

/// Why joining a remote thread failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteJoinError {
    /// The entry point panicked; its node goes on.
    #[error("remote thread {address} panicked: {message}")]
    Panicked {
        /// The thread.
        address: Address,
        /// The panic's message.
        message: String,
    },
    /// The thread's node is gone.
    #[error("remote thread's node: {0}")]
    PeerLost(PeerLost),
    /// Joined from another thread than the one that spawned it (the
    /// result goes to the spawner).
    #[error("remote thread joined by {by}, spawned by {spawner}")]
    WrongThread {
        /// Who spawned it.
        spawner: Address,
        /// Who tried to join.
        by: Address,
    },
    /// This node has finalized.
    #[error("join after finalize")]
    Finalized,
}

impl RemoteHandle {
    /// The thread's address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// Waits for the thread's entry point to return (step 4), from the
    /// thread that spawned it, and gives its result.
    ///
    /// # Errors
    ///
    /// [`RemoteJoinError::Panicked`], [`RemoteJoinError::PeerLost`] (the
    /// node was lost first: never waits forever),
    /// [`RemoteJoinError::WrongThread`], [`RemoteJoinError::Finalized`].
    pub fn join(self, ep: &Endpoint) -> Result<Payload, RemoteJoinError> {
        if ep.address() != self.spawner {
            return Err(RemoteJoinError::WrongThread {
                spawner: self.spawner,
                by: ep.address(),
            });
        }
        let m = ep
            .recv_in(RESULT_CONTEXT, Source::Thread(self.address), TagMatch::from(self.tag))
            .map_err(|e| match e {
                RecvError::PeerLost(lost) => RemoteJoinError::PeerLost(lost),
                _ => RemoteJoinError::Finalized,
            })?;
        let payload = m.into_payload();
        let format = payload.format();
        let mut bytes = payload.into_vec();
        match bytes.pop() {
            Some(RETURNED) => Ok(Payload::from_wire(format, bytes)),
            _ => Err(RemoteJoinError::Panicked {
                address: self.address,
                message: String::from_utf8_lossy(&bytes).into_owned(),
            }),
        }
    }
}
