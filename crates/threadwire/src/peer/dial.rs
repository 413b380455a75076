//! Connections on first use: a pair of nodes connects the first time one
//! of them sends to the other, not in `init`, so a node pays only for the
//! peers it talks to and a job's start-up is not quadratic in its nodes.
//!
//! 1. A frame for a peer whose channel is not settled waits in the peer's
//!    queue, in order ([`Peer::send`]); the first such frame, with no
//!    connection made or under way, asks the [`Dialer`] for one.
//! 2. The dialer looks up the peer's address in its [`AddressBook`] (the
//!    launcher, or the process manager's key-value space) and
//!    connects and proves the job secret on a thread of its own, off every
//!    polling thread: two nodes that dial each other at once never wait
//!    on each other's progress.
//! 3. The acceptor's verdict (the handshake's step 4, [`Peer::admit`]):
//!    welcome, unless it has the pair's connection already, or it is the
//!    pair's higher node and dials the connector itself; then it answers
//!    Busy. A lower node welcomes a higher one it has no connection with,
//!    so of two nodes that dial each other at once the higher one's
//!    connection is the one both keep.
//! 4. The connection, dialed or accepted, is installed and registered
//!    with the poller; the pair's higher node offers shared memory
//!    ([`crate::peer`], steps 1–4).
//! 5. When the channel choice is settled, the queue goes out in order on
//!    the data channel, and frames go straight to it from then on
//!    ([`Peer::open`]): nothing sent before the choice overtakes or
//!    follows what is sent after it on another channel.
//! 6. A dial that fails (refused, timed out, answered by another node)
//!    loses the peer with the cause; its queued frames are dropped. A
//!    Busy answer is no failure: the peer's own connection is on its way,
//!    and the peer is lost only if it has not come within the handshake's
//!    time.
//!
//! A node that joins a running job (`vm`) still connects to every node
//! before it at once, so that all count it in when its channels settle.

use super::{AddressBook, Peer};
use crate::error::{Failure, LossCause};
use crate::lock;
use crate::node::NodeShared;
use crate::progress::Tokens;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use threadwire_transport::handshake::{self, Credentials, HandshakeError};
use threadwire_transport::TcpChannel;

/// How long a dial may take, handshake included, and how long a Busy
/// answer's promised connection may take to come (step 6).
pub(crate) const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// What the dialer needs once the node is up ([`Dialer::arm`]).
struct Armed {
    node: Weak<NodeShared>,
    creds: Credentials,
    book: AddressBook,
    registry: mio::Registry,
}

/// Makes this node's connections on first use (module docs, step 2).
pub(crate) struct Dialer {
    me: u32,
    armed: OnceLock<Armed>,
}

impl Dialer {
    pub(crate) fn new(me: u32) -> Dialer {
        Dialer {
            me,
            armed: OnceLock::new(),
        }
    }

    /// Gives the dialer what it needs to connect; until then (a node
    /// alone, not launched) a dial loses the peer.
    pub(crate) fn arm(
        &self,
        node: Weak<NodeShared>,
        creds: Credentials,
        book: AddressBook,
        registry: mio::Registry,
    ) {
        let _ = self.armed.set(Armed {
            node,
            creds,
            book,
            registry,
        });
    }

    /// Whether `peer` runs on this node's host, in its network namespace,
    /// as far as the address book tells without a connection (the host
    /// stage's first guess, `group::algorithms`).
    pub(crate) fn same_host(&self, peer: u32) -> bool {
        self.armed
            .get()
            .is_some_and(|a| a.book.same_host(self.me, peer))
    }

    /// The launcher's answer to a lookup (control step 11).
    pub(crate) fn address_arrived(&self, node: u32, addr: &str) {
        if let Some(AddressBook::Launcher(book)) = self.armed.get().map(|a| &a.book) {
            book.arrived(node, addr);
        }
    }

    /// Leaves the process manager, if the node was started by one (at
    /// finalize, after the last connection).
    pub(crate) fn finish(&self) {
        if let Some(AddressBook::Pmi(book)) = self.armed.get().map(|a| &a.book) {
            if let Err(e) = book.finalize() {
                tracing::warn!("n{}: leaving the process manager: {e}", self.me);
            }
        }
    }

    /// Step 2: connects to `peer` on a thread of its own.
    pub(super) fn dial(&self, peer: u32) {
        let me = self.me;
        let Some(armed) = self.armed.get() else {
            return;
        };
        let node = armed.node.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("n{me}-dial-n{peer}"))
            .spawn(move || {
                if let Some(shared) = node.upgrade() {
                    dial(&shared, peer);
                }
            });
        if let Err(e) = spawned {
            if let Some(shared) = armed.node.upgrade() {
                let why = format!("cannot start a thread to connect: {e}");
                shared
                    .router
                    .lose_peer(peer, LossCause::Failed(Failure::Channel(why)));
            }
        }
    }
}

/// Steps 2, 4 and 6 for `peer`, on the dialing thread.
fn dial(shared: &NodeShared, peer: u32) {
    let router = &shared.router;
    let armed = router.dialer.armed.get().expect("dialed only when armed");
    let p = &router.peers[peer as usize];
    let connected = armed
        .book
        .lookup(router, peer)
        .and_then(|addr| {
            handshake::connect(addr, &armed.creds, router.id, DIAL_TIMEOUT)
                .map_err(|e| match e {
                    HandshakeError::Busy { .. } => String::new(),
                    e => format!("could not connect to n{peer} at {addr}: {e}"),
                })
        })
        .and_then(|(answered, stream)| match answered == peer {
            true => Ok(stream),
            false => Err(format!("n{peer}'s address answered as n{answered}")),
        });
    match connected {
        Ok(stream) => {
            // Installed first, registered after: a poller that saw the
            // connection readable before it was installed would find no
            // channel and lose the (edge-triggered) event for good.
            let installed = TcpChannel::new(stream, router.max_frame).and_then(|c| {
                match (router.connected(peer, c), p.tcp().and_then(|c| c.as_tcp())) {
                    (true, Some(c)) => c.register_shared(&armed.registry, Tokens::peer(peer)),
                    _ => Ok(()),
                }
            });
            if let Err(e) = installed {
                let why = Failure::Channel(format!("connection to n{peer}: {e}"));
                router.lose_peer(peer, LossCause::Failed(why));
            }
        }
        // Step 6: Busy — the peer's own connection is on its way.
        Err(why) if why.is_empty() => {
            if !p.await_connection(DIAL_TIMEOUT) {
                let why = format!(
                    "n{peer} kept its own connection to this node, which never came"
                );
                router.lose_peer(peer, LossCause::Failed(Failure::Channel(why)));
            }
        }
        Err(why) => router.lose_peer(peer, LossCause::Failed(Failure::Channel(why))),
    }
}

/// The state of a pair's connection at this node, with the frames that
/// wait for it (under [`Peer`]'s `link` lock).
pub(super) struct Link {
    pub(super) state: LinkState,
    /// Frames sent before the channel choice settled, in order (step 1).
    pub(super) queue: Vec<(threadwire_wire::FrameHeader, threadwire_wire::Payload)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
/// How the pair's connection is being made; once it is, the installed
/// connection ([`Peer::has_tcp`]) says so.
pub(super) enum LinkState {
    /// No connection, none under way.
    Idle,
    /// This node dials the peer.
    Dialing,
    /// The peer's connection was welcomed, or is promised (Busy).
    Accepting,
}

impl Link {
    pub(super) fn new() -> Link {
        Link {
            state: LinkState::Idle,
            queue: Vec::new(),
        }
    }
}

impl Peer {
    /// Asks for the pair's connection without sending anything (step 1
    /// with an empty queue): for callers that need the channel choice
    /// settled ([`settle`]).
    pub(crate) fn connect(&self) {
        let mut link = lock(&self.link);
        if link.state != LinkState::Idle || self.has_tcp() || self.lost().is_some() {
            return;
        }
        link.state = LinkState::Dialing;
        drop(link);
        self.dialer.dial(self.node);
    }

    /// Step 3, at the acceptor: whether to welcome `peer`'s connection
    /// (`me` is this node). A welcomed one is expected: this node will not
    /// dial the peer itself.
    pub(crate) fn admit(&self, me: u32, peer: u32) -> bool {
        let mut link = lock(&self.link);
        let welcome = !self.has_tcp()
            && match link.state {
                LinkState::Dialing => me < peer,
                LinkState::Idle | LinkState::Accepting => true,
            };
        if welcome {
            link.state = LinkState::Accepting;
        }
        welcome
    }

    /// Undoes [`admit`](Self::admit) when the welcomed connection failed
    /// before it was installed; frames that wait ask for a dial.
    pub(crate) fn unadmit(&self) {
        let mut link = lock(&self.link);
        if link.state != LinkState::Accepting || self.has_tcp() {
            return;
        }
        let dial = !link.queue.is_empty() && self.lost().is_none();
        link.state = match dial {
            true => LinkState::Dialing,
            false => LinkState::Idle,
        };
        drop(link);
        if dial {
            self.dialer.dial(self.node);
        }
    }

    /// Step 6 after a Busy answer: waits until the peer's connection is
    /// installed or the peer is lost; `false` if neither came in time.
    fn await_connection(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut link = lock(&self.link);
        if link.state == LinkState::Dialing {
            link.state = LinkState::Accepting;
        }
        loop {
            if self.has_tcp() || self.lost().is_some() {
                return true;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            link = self
                .linked
                .wait_timeout(link, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Connects this node to each of `peers` not connected yet and waits,
/// polling, until every pair's channel choice is settled or the peer lost
/// (within [`DIAL_TIMEOUT`] and the handshake's time).
pub(crate) fn settle(shared: &NodeShared, peers: &[u32]) {
    let router = &shared.router;
    let pairs: Vec<&Peer> = peers
        .iter()
        .filter(|&&p| p != router.id)
        .map(|&p| &router.peers[p as usize])
        .collect();
    for p in &pairs {
        p.connect();
    }
    shared.engine.wait_polling(
        router,
        crate::progress::Origin::Anywhere,
        || pairs.iter().all(|p| p.ready()),
    );
}

/// `Arc` so that the router and every peer share one dialer.
pub(crate) type SharedDialer = Arc<Dialer>;
