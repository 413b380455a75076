//! The driver: one poll loop per node over its listener, handshakes in
//! progress, peer channels and the launcher's control connection. It sees
//! the node through the [`Router`] alone: frames in, peers lost.

use crate::control::Control;
use crate::error::{Failure, LossCause};
use crate::router::Router;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use threadwire_transport::handshake::{AcceptProgress, Acceptor, Credentials};
use threadwire_transport::shm::ShmChannel;
use threadwire_transport::udp::{mcast, receive_datagrams, PacketError};
use threadwire_transport::{ChannelError, Frame, ReadOutcome, TcpChannel};
use threadwire_wire::FrameKind;

/// How poll tokens are laid out.
pub(crate) struct Tokens;

impl Tokens {
    pub(crate) const WAKER: mio::Token = mio::Token(0);
    const LISTENER: mio::Token = mio::Token(1);
    pub(crate) const CONTROL: mio::Token = mio::Token(2);
    pub(crate) const UDP: mio::Token = mio::Token(3);
    pub(crate) const MCAST: mio::Token = mio::Token(4);
    const HANDSHAKE_BASE: usize = 16;
    const PEER_BASE: usize = 1 << 40;

    pub(crate) fn peer(node: u32) -> mio::Token {
        mio::Token(Self::PEER_BASE + node as usize)
    }
}

/// With shared-memory peers, zero-timeout polls read the rings every time
/// but ask epoll only every this many times: a system call costs more than
/// a ring message, and TCP (doorbells, other hosts, the launcher) can wait
/// a few polls.
const EPOLL_EVERY: u32 = 16;
/// Datagrams read from the UDP socket per poll, at most.
const UDP_BUDGET: usize = 256;
/// How long a stranger may take to prove itself.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more connections are refused at once.
const MAX_HANDSHAKES: usize = 256;

struct Handshake {
    stream: mio::net::TcpStream,
    from: SocketAddr,
    acceptor: Acceptor,
}

pub(crate) struct Driver {
    poll: mio::Poll,
    events: mio::Events,
    listener: Option<mio::net::TcpListener>,
    creds: Option<Credentials>,
    handshakes: HashMap<usize, Handshake>,
    next_handshake: usize,
    /// Peers whose last read stopped on its budget with data left.
    more: Vec<u32>,
    control_more: bool,
    /// Some ring still had records when its read budget ran out.
    shm_more: bool,
    /// Zero-timeout polls since the last `epoll_wait`.
    quick_polls: u32,
    /// The UDP socket's last read stopped on its budget.
    udp_more: bool,
    /// The multicast socket's last read stopped on its budget.
    mcast_more: bool,
}

impl Driver {
    pub(crate) fn new(
        listener: Option<std::net::TcpListener>,
        creds: Option<Credentials>,
    ) -> io::Result<Driver> {
        let poll = mio::Poll::new()?;
        let listener = match listener {
            Some(l) => {
                l.set_nonblocking(true)?;
                let mut l = mio::net::TcpListener::from_std(l);
                poll.registry()
                    .register(&mut l, Tokens::LISTENER, mio::Interest::READABLE)?;
                Some(l)
            }
            None => None,
        };
        Ok(Driver {
            poll,
            events: mio::Events::with_capacity(256),
            listener,
            creds,
            handshakes: HashMap::new(),
            next_handshake: Tokens::HANDSHAKE_BASE,
            more: Vec::new(),
            control_more: false,
            shm_more: false,
            quick_polls: 0,
            udp_more: false,
            mcast_more: false,
        })
    }

    pub(crate) fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }

    /// Polls the node's UDP socket from now on (`Tokens::UDP`).
    pub(crate) fn register_udp(&self, socket: &std::net::UdpSocket) -> io::Result<()> {
        self.register_datagrams(socket, Tokens::UDP)
    }

    /// Polls the node's multicast socket from now on (`Tokens::MCAST`).
    pub(crate) fn register_mcast(&self, socket: &std::net::UdpSocket) -> io::Result<()> {
        self.register_datagrams(socket, Tokens::MCAST)
    }

    fn register_datagrams(&self, socket: &std::net::UdpSocket, token: mio::Token) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        self.poll.registry().register(
            &mut mio::unix::SourceFd(&socket.as_raw_fd()),
            token,
            mio::Interest::READABLE,
        )
    }

    /// Waits up to `timeout` for readiness and handles it. Returns whether
    /// any event or pending read was handled.
    pub(crate) fn poll(&mut self, router: &Router, timeout: Option<Duration>) -> bool {
        let shm = router.has_shm_peers();
        let mut progressed = shm && self.poll_rings(router);
        let tcp_pending =
            !self.more.is_empty() || self.control_more || self.udp_more || self.mcast_more;
        // The UDP channels' and the multicast stream's timers: due ones
        // fire now, the next bounds the wait.
        let udp_next = match router.udp.get() {
            Some(_) => {
                let now = Instant::now();
                let unicast = router.udp_timers(now);
                match (unicast, router.multicast_timers(now)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            None => None,
        };
        let timeout = match udp_next {
            Some(next) => {
                let until = next.saturating_duration_since(Instant::now());
                Some(timeout.map_or(until, |t| t.min(until)))
            }
            None => timeout,
        };
        let mut timeout = if progressed || self.shm_more || tcp_pending {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        if shm && timeout == Some(Duration::ZERO) && !tcp_pending {
            self.quick_polls += 1;
            if self.quick_polls < EPOLL_EVERY {
                return progressed;
            }
        }
        self.quick_polls = 0;
        // The consumer's sleeping steps: the peers ring the doorbell (on
        // TCP, which wakes epoll_wait) only if told we sleep.
        let sleeping = shm && timeout != Some(Duration::ZERO);
        if sleeping && !self.each_ring(router, |ring| ring.prepare_to_sleep()) {
            timeout = Some(Duration::ZERO);
        }
        let polled = self.poll.poll(&mut self.events, timeout);
        if sleeping {
            self.each_ring(router, |ring| {
                ring.woke();
                true
            });
        }
        if let Err(e) = polled {
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::error!("poll failed: {e}");
            }
            return progressed;
        }
        progressed |= tcp_pending;
        let ready: Vec<(mio::Token, bool, bool)> = self
            .events
            .iter()
            .map(|e| {
                (
                    e.token(),
                    e.is_readable() || e.is_read_closed() || e.is_error(),
                    e.is_writable(),
                )
            })
            .collect();
        for (token, readable, writable) in ready {
            progressed = true;
            match token {
                Tokens::WAKER => {}
                Tokens::LISTENER => self.accept(router),
                Tokens::UDP => {
                    self.read_udp(router);
                }
                Tokens::MCAST => {
                    self.read_mcast(router);
                }
                Tokens::CONTROL => {
                    if let (true, Some(c)) = (writable, router.control.get()) {
                        let _ = c.flush();
                    }
                    if readable {
                        self.read_control(router);
                    }
                }
                mio::Token(t) if t >= Tokens::PEER_BASE => {
                    let peer = (t - Tokens::PEER_BASE) as u32;
                    if writable {
                        self.flush_peer(router, peer);
                    }
                    if readable {
                        self.read_peer(router, peer);
                    }
                }
                mio::Token(t) => self.advance_handshake(router, t),
            }
        }
        for peer in std::mem::take(&mut self.more) {
            self.read_peer(router, peer);
        }
        if std::mem::take(&mut self.control_more) {
            self.read_control(router);
        }
        if std::mem::take(&mut self.udp_more) {
            self.read_udp(router);
        }
        if std::mem::take(&mut self.mcast_more) {
            self.read_mcast(router);
        }
        if !self.handshakes.is_empty() {
            self.expire_handshakes();
        }
        if shm {
            progressed |= self.poll_rings(router);
        }
        progressed
    }

    /// Polls once without waiting, asking epoll whatever the pacing of
    /// zero-timeout polls says (the liveness thread's poll, a few times a
    /// second: its TCP reads must not wait for fifteen more).
    pub(crate) fn sweep(&mut self, router: &Router) -> bool {
        self.quick_polls = EPOLL_EVERY;
        self.poll(router, Some(Duration::ZERO))
    }

    /// `f` on the receiving side of every shared-memory channel still
    /// read; `true` if it returned `true` for all.
    fn each_ring(&self, router: &Router, mut f: impl FnMut(&ShmChannel) -> bool) -> bool {
        let mut all = true;
        // The job's nodes so far, not the tables' whole capacity.
        for (j, p) in router.peers[..router.nodes() as usize].iter().enumerate() {
            if let (Some(ring), true) = (p.shm(), router.readable(j as u32)) {
                all &= f(ring);
            }
        }
        all
    }

    /// Reads every shared-memory channel and moves its backlog on; `true`
    /// if any frame arrived.
    fn poll_rings(&mut self, router: &Router) -> bool {
        self.shm_more = false;
        let mut any = false;
        for peer in 0..router.nodes() {
            any |= self.read_ring(router, peer);
        }
        any
    }

    /// Reads `peer`'s ring, if it has one, and moves this side's backlog
    /// on; `true` if any record arrived (a frame, or a chunk of one).
    fn read_ring(&mut self, router: &Router, peer: u32) -> bool {
        let p = &router.peers[peer as usize];
        let Some(ring) = p.shm() else {
            return false;
        };
        if !router.readable(peer) {
            return false;
        }
        let mut protocol_error = None;
        let received = ring.receive(|frame| {
            if protocol_error.is_none() {
                protocol_error = router.on_frame(peer, frame).err();
            }
        });
        let failure = match (received, protocol_error) {
            (Ok(outcome), None) => {
                self.shm_more |= outcome == ReadOutcome::More;
                return outcome != ReadOutcome::Empty;
            }
            (Err(e), _) => Failure::Channel(e.to_string()),
            (_, Some(why)) => Failure::Protocol(why.to_string()),
        };
        tracing::warn!(
            "n{}: closing the shared-memory channel to n{peer}: {failure}",
            router.id
        );
        router.lose_peer(peer, LossCause::Failed(failure));
        true
    }

    /// Before believing that `peer` ended without a goodbye: its goodbye
    /// may wait in its ring, sent before its connection closed.
    fn drain_ring(&mut self, router: &Router, peer: u32) {
        while self.read_ring(router, peer) && router.peers[peer as usize].lost().is_none() {}
    }

    fn accept(&mut self, router: &Router) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok((mut stream, from)) => {
                    let (Some(creds), true) = (&self.creds, self.handshakes.len() < MAX_HANDSHAKES)
                    else {
                        tracing::warn!(
                            "refused connection from {from}: too many handshakes in progress"
                        );
                        continue;
                    };
                    let token = self.next_handshake;
                    self.next_handshake += 1;
                    if self.next_handshake >= Tokens::PEER_BASE {
                        self.next_handshake = Tokens::HANDSHAKE_BASE;
                    }
                    if let Err(e) = self.poll.registry().register(
                        &mut stream,
                        mio::Token(token),
                        mio::Interest::READABLE,
                    ) {
                        tracing::warn!("refused connection from {from}: {e}");
                        continue;
                    }
                    let acceptor = Acceptor::new(creds.clone(), router.id, HANDSHAKE_TIMEOUT);
                    self.handshakes.insert(
                        token,
                        Handshake {
                            stream,
                            from,
                            acceptor,
                        },
                    );
                    self.advance_handshake(router, token);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and friends: leave the rest in the backlog.
                    tracing::warn!("accept failed: {e}");
                    return;
                }
            }
        }
    }

    fn advance_handshake(&mut self, router: &Router, token: usize) {
        let Some(h) = self.handshakes.get_mut(&token) else {
            return;
        };
        // `peer::dial`, step 3: welcome the peer, or keep the pair's other
        // connection.
        let mut admitted = None;
        let admit = |peer: u32| {
            let welcome = peer < router.capacity
                && peer != router.id
                && router.peers[peer as usize].admit(router.id, peer);
            admitted = welcome.then_some(peer);
            welcome
        };
        let advanced = h.acceptor.advance_with(&h.stream, admit);
        if let (Err(_), Some(peer)) = (&advanced, admitted) {
            // Welcomed, but the welcome did not go out: the pair is as
            // before, and this node may dial it.
            router.peers[peer as usize].unadmit();
        }
        let peer = match advanced {
            Ok(AcceptProgress::Pending) => return,
            Ok(AcceptProgress::Done(peer)) => peer,
            Ok(AcceptProgress::Busy(peer)) => {
                let h = self.handshakes.remove(&token).expect("present");
                tracing::debug!("n{}: n{peer} told to use the pair's other connection", router.id);
                self.drop_stream(h.stream);
                return;
            }
            Err(e) => {
                let h = self.handshakes.remove(&token).expect("present");
                tracing::warn!("refused connection from {}: {e}", h.from);
                self.drop_stream(h.stream);
                return;
            }
        };
        let mut h = self.handshakes.remove(&token).expect("present");
        let _ = self.poll.registry().deregister(&mut h.stream);
        let channel = TcpChannel::from_mio(h.stream, router.max_frame).and_then(|mut c| {
            c.register(self.poll.registry(), Tokens::peer(peer))?;
            Ok(c)
        });
        match channel {
            Ok(c) => {
                tracing::debug!("n{}: accepted peer n{peer} from {}", router.id, h.from);
                if router.connected(peer, c) {
                    // Frames may already wait behind the handshake.
                    self.read_peer(router, peer);
                }
            }
            Err(e) => {
                let why = Failure::Channel(format!("connection from n{peer} at {}: {e}", h.from));
                router.lose_peer(peer, LossCause::Failed(why));
            }
        }
    }

    fn drop_stream(&mut self, mut stream: mio::net::TcpStream) {
        let _ = self.poll.registry().deregister(&mut stream);
    }

    fn expire_handshakes(&mut self) {
        let now = Instant::now();
        let expired: Vec<usize> = self
            .handshakes
            .iter()
            .filter(|(_, h)| h.acceptor.deadline() <= now)
            .map(|(&t, _)| t)
            .collect();
        for token in expired {
            let h = self.handshakes.remove(&token).expect("present");
            tracing::warn!("refused connection from {}: handshake timed out", h.from);
            self.drop_stream(h.stream);
        }
    }

    /// Registers a channel this node opened (as connector) with the poller.
    pub(crate) fn register_channel(&self, c: &mut TcpChannel, token: mio::Token) -> io::Result<()> {
        c.register(self.poll.registry(), token)
    }

    fn flush_peer(&mut self, router: &Router, peer: u32) {
        let Some(channel) = router.peers[peer as usize].tcp() else {
            return;
        };
        if let Err(e) = channel.flush() {
            router.lose_peer(peer, failure_cause(&e));
        }
    }

    /// Reads what `peer` has sent, without asking epoll first; `true` if
    /// anything came, a whole frame or a part of one.
    pub(crate) fn poll_peer(&mut self, router: &Router, peer: u32) -> bool {
        let p = &router.peers[peer as usize];
        if p.shm().is_some() {
            return self.read_ring(router, peer);
        }
        if p.udp().is_some() {
            // The peer's frames come on the node's UDP socket, shared by
            // every UDP peer: one read of it serves them all.
            return self.read_udp(router);
        }
        self.read_peer(router, peer)
    }

    /// Reads `peer`'s TCP connection; `true` unless it had nothing.
    fn read_peer(&mut self, router: &Router, peer: u32) -> bool {
        let Some(channel) = router.peers[peer as usize].tcp() else {
            return false;
        };
        let mut protocol_error = None;
        let outcome = channel.receive(|frame| {
            if protocol_error.is_none() {
                protocol_error = router.on_frame(peer, frame).err();
            }
        });
        if let Some(why) = protocol_error {
            tracing::warn!("n{}: dropping connection to n{peer}: {why}", router.id);
            router.lose_peer(peer, LossCause::Failed(Failure::Protocol(why.to_string())));
            return true;
        }
        match outcome {
            Ok(ReadOutcome::Empty) => return false,
            Ok(ReadOutcome::Drained) => {}
            Ok(ReadOutcome::More) => self.more.push(peer),
            Err(ChannelError::Closed) => {
                self.drain_ring(router, peer);
                self.drain_udp(router, peer);
                router.lose_peer(peer, LossCause::Failed(Failure::ClosedWithoutGoodbye))
            }
            Err(e) => {
                if matches!(e, ChannelError::Frame(_)) {
                    tracing::warn!("n{}: dropping connection to n{peer}: {e}", router.id);
                }
                self.drain_ring(router, peer);
                self.drain_udp(router, peer);
                router.lose_peer(peer, failure_cause(&e))
            }
        }
        true
    }

    /// The pair's TCP connection ended: the peer's process is gone. What
    /// it sent over UDP before (its goodbye) is read first — its
    /// datagrams may still wait in the socket — and its UDP channel
    /// closed.
    fn drain_udp(&mut self, router: &Router, peer: u32) {
        if let Some(c) = router.peers[peer as usize].udp().cloned() {
            self.read_udp(router);
            c.close();
        }
    }

    /// Reads the node's UDP socket: each datagram to its pair's channel,
    /// then the frames completed to the router.
    fn read_udp(&mut self, router: &Router) -> bool {
        let Some(node) = router.udp.get() else {
            return false;
        };
        let mut touched: Vec<u32> = Vec::new();
        let read = receive_datagrams(&node.socket, UDP_BUDGET, |from, datagram| {
            if from >= router.nodes() {
                return;
            }
            let Some(c) = router.peers[from as usize].udp() else {
                return;
            };
            match c.on_datagram(datagram) {
                Ok(()) => {
                    if !touched.contains(&from) {
                        touched.push(from);
                    }
                }
                Err(PacketError::Malformed(why)) => {
                    let why = format!("malformed UDP datagram: {why}");
                    router.lose_peer(from, LossCause::Failed(Failure::Protocol(why)));
                }
                // Forged, replayed, foreign: counted by the channel.
                Err(_) => {}
            }
        });
        let n = match read {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("n{}: reading the UDP socket: {e}", router.id);
                0
            }
        };
        self.udp_more = n == UDP_BUDGET;
        for peer in touched {
            let Some(c) = router.peers[peer as usize].udp() else {
                continue;
            };
            let mut protocol_error = None;
            let outcome = c.receive(|frame| {
                if protocol_error.is_none() {
                    protocol_error = router.on_frame(peer, frame).err();
                }
            });
            if let Some(why) = protocol_error {
                router.lose_peer(peer, LossCause::Failed(Failure::Protocol(why.to_string())));
            } else if let Err(e) = outcome {
                router.lose_peer(peer, failure_cause(&e));
            }
        }
        n > 0
    }

    /// Reads the node's multicast socket: each datagram to the stream,
    /// then the frames completed to the router (`peer::multicast`, step 4).
    fn read_mcast(&mut self, router: &Router) -> bool {
        let Some(m) = router.multicast.get() else {
            return false;
        };
        let read = mcast::receive_datagrams(&m.socket, UDP_BUDGET, |d| m.channel.on_datagram(d));
        let n = read.unwrap_or_else(|e| {
            tracing::warn!("n{}: reading the multicast socket: {e}", router.id);
            0
        });
        self.mcast_more = n == UDP_BUDGET;
        if n > 0 {
            router.deliver_streams();
        }
        n > 0
    }

    fn read_control(&mut self, router: &Router) {
        let Some(control) = router.control.get() else {
            return;
        };
        let mut messages = Vec::new();
        let outcome = control.receive(|frame: Frame| messages.push(frame));
        for frame in messages {
            match frame.header.kind {
                FrameKind::Bye => {}
                _ => match Control::decode(&frame.header, frame.payload.into_vec()) {
                    Ok(Control::PeerLost { node: lost, cause })
                        if lost < router.capacity && lost != router.id =>
                    {
                        router
                            .lose_peer(lost, LossCause::Failed(Failure::ReportedByLauncher(cause)))
                    }
                    // For a peer never connected to: one this node is
                    // connected to says goodbye on the pair, or its loss
                    // shows there (a cut link: silence), whatever its exit.
                    Ok(Control::Finished { nodes }) => {
                        for gone in nodes {
                            let known = gone < router.capacity && gone != router.id;
                            if known && !router.peers[gone as usize].has_tcp() {
                                router.lose_peer(gone, LossCause::Finished);
                            }
                        }
                    }
                    Ok(Control::Address { node, addr }) => router.dialer.address_arrived(node, &addr),
                    Ok(Control::Grown { nodes }) => router.grow_to(nodes),
                    Ok(Control::VmAnswer { request, answer }) => {
                        router.vm.answer(&router.mailboxes, router.id, request, answer)
                    }
                    Ok(Control::Hosts { hosts }) => {
                        router.notify.hosts_changed(&router.mailboxes, router.id, hosts)
                    }
                    Ok(Control::Describe) => {
                        // Control step 10: answered at once, on the same
                        // connection, as the node's other control sends.
                        let threads = router.threads.load(Ordering::Relaxed);
                        let (h, p) = Control::Described { threads }.encode();
                        if let Err((e, _)) = control.send(&h, p) {
                            tracing::debug!("n{}: cannot describe itself: {e}", router.id);
                        }
                    }
                    Ok(other) => {
                        tracing::warn!("n{}: unexpected control message {other:?}", router.id)
                    }
                    Err(e) => tracing::warn!("n{}: {e}", router.id),
                },
            }
        }
        match outcome {
            Ok(ReadOutcome::Empty | ReadOutcome::Drained) => {}
            Ok(ReadOutcome::More) => self.control_more = true,
            Err(e) => router.launcher_lost(&e),
        }
    }
}

fn failure_cause(e: &ChannelError) -> LossCause {
    LossCause::Failed(Failure::Channel(e.to_string()))
}
