//! The UDP set-up as a state machine per peer: this node's side of
//! [`threadwire_transport::udp::UdpSetup`]'s steps 1–4, driven by the
//! messages as they arrive on the pair's TCP connection (with
//! `THREADWIRE_CHANNEL=udp`).
//!
//! 1. The pair's higher node, right after connecting, offers its socket's
//!    address and a nonce (`Idle` → `Offered`).
//! 2. The lower node, on the offer, makes its channel (keys from both
//!    nonces), installs it — datagrams from the peer are received from
//!    now on — and accepts (`Idle` → `Accepted`); its own frames still
//!    wait.
//! 3. The higher node, on the acceptance, makes and installs its channel,
//!    sends `Ready` and its waiting frames go out on UDP (`Offered` →
//!    `Done`).
//! 4. The lower node, on `Ready`, sends its waiting frames on UDP
//!    (`Accepted` → `Done`).
//!
//! A node without a UDP socket declines, and the pair stays on TCP. Any
//! other message in any state is a protocol violation.

use super::Peer;
use crate::lock;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use threadwire_transport::udp::{self, Keys, UdpChannel, UdpSetup, UdpSetupError};
use threadwire_transport::{Channel, ChannelError};

/// This node's UDP socket and what its channels are made of.
pub(crate) struct UdpNode {
    pub(crate) socket: Arc<UdpSocket>,
    pub(crate) addr: SocketAddr,
    pub(crate) secret: [u8; 32],
    pub(crate) job_id: u64,
    pub(crate) config: udp::Config,
    pub(crate) max_frame: u64,
}

impl UdpNode {
    /// A socket on `ip`, port chosen by the system, for a node of job
    /// `job_id` whose secret is `secret`.
    pub(crate) fn bind(
        ip: std::net::IpAddr,
        job_id: u64,
        secret: [u8; 32],
        max_frame: u64,
    ) -> std::io::Result<UdpNode> {
        let socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
        socket.set_nonblocking(true)?;
        udp::enable_receive_runs(&socket);
        let addr = socket.local_addr()?;
        Ok(UdpNode {
            socket: Arc::new(socket),
            addr,
            secret,
            job_id,
            config: udp::Config::default(),
            max_frame,
        })
    }
}

/// With `THREADWIRE_CHANNEL=udp`, binds this node's UDP socket on its
/// listener's address (`ip`) and has the engine poll it; between hosts,
/// also starts its multicast stream (`multicast`, step 1).
pub(crate) fn start_udp(
    router: &crate::router::Router,
    engine: &crate::progress::ProgressEngine,
    ip: std::net::IpAddr,
    creds: &threadwire_transport::handshake::Credentials,
) -> std::io::Result<()> {
    if router.channel_choice() != crate::config::ChannelChoice::Udp {
        return Ok(());
    }
    let node = UdpNode::bind(ip, creds.job_id, creds.secret, router.max_frame)?;
    engine.lock_driver().register_udp(&node.socket)?;
    let _ = router.udp.set(node);
    super::multicast::start_multicast(router, engine, ip, creds);
    Ok(())
}

/// A pair's datagram counters in words (`--stats`).
pub(crate) fn udp_counters(s: &udp::UdpStats) -> String {
    format!(
        "datagrams sent {}, received {}; lost {}, probes {}, unsent {}; refused: duplicates {}, forged {}, other {}",
        s.sent, s.received, s.lost, s.probes, s.unsent, s.duplicates, s.forged, s.refused
    )
}

/// The largest datagram to a peer on loopback (whose MTU is 65536). With
/// Ethernet's 1472 bytes a 1 MB message took 3994 µs one way between two
/// nodes of one host, with 16 KiB 856 µs (`bench pingpong --paths udp`):
/// a system call and a tag per datagram are the cost. Larger ones would
/// overflow the default socket buffer (208 KiB) within the first
/// congestion window of ten.
const LOOPBACK_DATAGRAM: usize = 16 * 1024;

/// Where a pair stands in the UDP set-up.
#[derive(Default)]
pub(super) enum UdpState {
    #[default]
    Idle,
    /// This node offered (the pair's higher node), with this nonce.
    Offered([u8; 32]),
    /// This node accepted and waits for `Ready`.
    Accepted,
    Done,
}

/// A UDP set-up message this node cannot follow: a protocol violation.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UdpSetupFailure {
    #[error(transparent)]
    Message(#[from] UdpSetupError),
    #[error("unexpected UDP set-up message {0:?}")]
    Unexpected(UdpSetup),
    #[error(transparent)]
    Send(ChannelError),
    #[error("no connection to the peer")]
    NotConnected,
}

fn nonce() -> [u8; 32] {
    let mut n = [0u8; 32];
    // The nonce only keeps sessions apart; without randomness (never
    // seen on Linux) a constant still keeps the keys secret.
    let _ = getrandom::getrandom(&mut n);
    n
}

impl Peer {
    fn send_udp_setup(&self, message: &UdpSetup) -> Result<(), UdpSetupFailure> {
        let (header, bytes) = message.encode();
        self.send_on_tcp(&header, bytes)
            .map_err(|e| e.map_or(UdpSetupFailure::NotConnected, UdpSetupFailure::Send))
    }

    fn make_udp(&self, me: u32, node: &UdpNode, addr: SocketAddr, mine: &[u8; 32], theirs: &[u8; 32]) {
        let keys = Keys::derive(&node.secret, node.job_id, me, self.node, mine, theirs);
        let mut config = node.config.clone();
        if addr.ip().is_loopback() {
            // Loopback's MTU is 64 KiB: fewer, larger datagrams.
            config.max_datagram = LOOPBACK_DATAGRAM;
        }
        let channel = UdpChannel::new(
            node.socket.clone(),
            addr,
            (me, self.node),
            keys,
            config,
            node.max_frame,
        );
        let _ = self.udp.set(Channel::Udp(Arc::new(channel)));
    }

    /// Step 1, on the pair's higher node right after connecting.
    pub(crate) fn offer_udp(&self, me: u32, node: Option<&UdpNode>) {
        let mut state = lock(&self.udp_setup);
        let (message, next) = match node {
            Some(n) => {
                let nonce = nonce();
                let offer = UdpSetup::Offer {
                    addr: n.addr,
                    nonce,
                };
                (offer, UdpState::Offered(nonce))
            }
            None => (UdpSetup::Decline("no UDP socket".into()), UdpState::Done),
        };
        if let Err(e) = self.send_udp_setup(&message) {
            tracing::warn!("n{me}: UDP offer to n{}: {e}", self.node);
        }
        if matches!(next, UdpState::Done) {
            drop(state);
            self.open();
            return;
        }
        *state = next;
    }

    /// Steps 2–4 as the messages arrive.
    pub(crate) fn on_udp_setup(
        &self,
        me: u32,
        node: Option<&UdpNode>,
        frame: threadwire_transport::Frame,
    ) -> Result<(), UdpSetupFailure> {
        let message = UdpSetup::decode(&frame.header, &frame.payload)?;
        let mut state = lock(&self.udp_setup);
        let current = std::mem::take(&mut *state);
        match (current, message, node) {
            (UdpState::Idle, UdpSetup::Offer { addr, nonce }, Some(n)) if self.node > me => {
                let mine = self::nonce();
                self.make_udp(me, n, addr, &mine, &nonce);
                *state = UdpState::Accepted;
                self.send_udp_setup(&UdpSetup::Accept {
                    addr: n.addr,
                    nonce: mine,
                })?;
            }
            (UdpState::Idle, UdpSetup::Offer { .. }, None) => {
                *state = UdpState::Done;
                self.send_udp_setup(&UdpSetup::Decline("no UDP socket".into()))?;
                drop(state);
                self.open();
            }
            (UdpState::Idle, UdpSetup::Decline(why), _) => {
                tracing::debug!("n{me}: n{} stays on TCP: {why}", self.node);
                *state = UdpState::Done;
                drop(state);
                self.open();
            }
            (UdpState::Offered(mine), UdpSetup::Accept { addr, nonce }, Some(n)) => {
                self.make_udp(me, n, addr, &mine, &nonce);
                *state = UdpState::Done;
                self.send_udp_setup(&UdpSetup::Ready)?;
                drop(state);
                self.open();
            }
            (UdpState::Offered(_), UdpSetup::Decline(why), _) => {
                tracing::debug!("n{me}: n{} declined UDP: {why}", self.node);
                *state = UdpState::Done;
                drop(state);
                self.open();
            }
            (UdpState::Accepted, UdpSetup::Ready, _) => {
                *state = UdpState::Done;
                drop(state);
                self.open();
            }
            (current, message, _) => {
                *state = current;
                return Err(UdpSetupFailure::Unexpected(message));
            }
        }
        Ok(())
    }

    /// The pair's UDP channel, once made.
    pub(crate) fn udp(&self) -> Option<&Arc<UdpChannel>> {
        self.udp.get().and_then(Channel::as_udp)
    }
}
