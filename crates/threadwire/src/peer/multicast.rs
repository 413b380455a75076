//! A node's multicast stream: with `THREADWIRE_CHANNEL=udp` between
//! hosts, every node sends its broadcasts once, to the job's IP multicast
//! group, and receives every other node's (the transport's
//! [`mcast`](threadwire_transport::udp::mcast) protocol: NAK repair,
//! stability, pacing). The collectives use it for broadcast
//! (`group::algorithms::multicast`).
//!
//! 1. **Start.** A node on the UDP channel whose address is not loopback
//!    (its nodes are on hosts of a network, real or emulated) opens the
//!    job's group socket on its own address — group and port derived
//!    from the job, datagrams sent only through that interface, TTL 1 —
//!    has the engine poll it, and announces itself with one datagram.
//!    `THREADWIRE_MULTICAST=off` keeps a node off; a node that cannot open
//!    the socket says why (`-v`) and stays off: broadcasts to it then take
//!    the trees.
//! 2. **Joining.** A node that hears another's stream asks to join it
//!    over their pair's channel ([`FrameKind::McastControl`] frames); the
//!    sender answers with the offset the joiner's part starts at (whole
//!    frames only before it). A node that asks to join, or is asked,
//!    announces itself at once, so that the other, hearing it, joins its
//!    stream in turn; while a live peer has not joined, the node announces
//!    itself every 5 ms its engine polls, and at each liveness tick.
//! 3. **Sending.** A broadcast's root sends one [`FrameKind::Bcast`] frame
//!    on its stream, its data followed by the destination threads of
//!    every listed node ([`threadwire_wire::mcast::encode_nodes`]), once
//!    every listed node has joined its stream (else the broadcast takes a
//!    tree). Each listed thread's copy takes its cost from its node's
//!    eager budget, as a unicast multicast's does.
//! 4. **Receiving.** The engine hands datagrams to the channel and the
//!    frames completed, per sender in order, to [`Router::on_stream_frame`]:
//!    the threads listed for this node get a copy each, as eager messages
//!    from the root in the frame's context, whose receipt returns the
//!    cost to the root's budget. A node not listed drops the frame. Any
//!    other frame on a stream, or a malformed list, is a protocol
//!    violation that loses its sender.
//! 5. **Control.** Acknowledgements, repair requests and joins leave on
//!    the pair's channel after every read of the socket, every control
//!    frame taken and every timer fired.
//! 6. **Losses and the end.** A node lost or finished leaves the stream
//!    (stability no longer waits for it); a receiver the stream finds
//!    unable to keep up for the peer timeout is lost
//!    ([`Failure::Channel`]), never silently short of data. A finalizing
//!    node waits until every live receiver has acknowledged its whole
//!    stream before it says goodbye, since the goodbye travels on the
//!    pair's channel, apart from the stream, and ends it at the receiver.

use crate::error::{Failure, LossCause};
use crate::router::{ProtocolError, Router};
use std::net::{IpAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;
use threadwire_transport::udp::mcast::{self, Control, McastChannel, McastConfig};
use threadwire_transport::Frame;
use threadwire_wire::mcast::threads_of;
use threadwire_wire::{FrameHeader, FrameKind, Payload};

/// A stream's counters in words (`--stats`, `-v`).
pub(crate) fn counters(s: &mcast::McastStats) -> String {
    format!(
        "multicast datagrams sent {}, repairs {} (suppressed {}), heartbeats {}; received {}, naks {}; refused: duplicates {}, forged {}, other {}, beyond window {}; receivers lost {}, unsent {}",
        s.sent,
        s.repairs,
        s.suppressed,
        s.heartbeats,
        s.received,
        s.naks_sent,
        s.duplicates,
        s.forged,
        s.refused,
        s.beyond_window,
        s.lost_receivers,
        s.unsent
    )
}

/// Names the variable that keeps a node off multicast (`off`).
pub(crate) const MULTICAST_VAR: &str = crate::env::MULTICAST;

/// This node's multicast socket and stream.
pub(crate) struct McastNode {
    pub(crate) socket: Arc<UdpSocket>,
    pub(crate) channel: McastChannel,
    /// Nodes a broadcast found not reached, told of once (`-v`).
    unreached_told: std::sync::Mutex<Vec<u32>>,
    /// When the stream started, and when this node last announced itself
    /// (step 2), in microseconds since: one load on the engine's polls.
    started: Instant,
    announced_us: std::sync::atomic::AtomicU64,
}

/// How often a node announces itself while a live peer has not joined
/// its stream (step 2): an announcement lost on a lossy network (5% in
/// the tests) would otherwise wait for the liveness thread's next tick,
/// 125 ms, and the job's first broadcasts would all take the trees.
const ANNOUNCE_EVERY: std::time::Duration = std::time::Duration::from_millis(5);

/// Step 1: the node's multicast stream, when it may have one; never fails
/// the node (a broadcast without it takes a tree).
pub(crate) fn start_multicast(
    router: &Router,
    engine: &crate::progress::ProgressEngine,
    ip: IpAddr,
    creds: &threadwire_transport::handshake::Credentials,
) {
    let IpAddr::V4(ip) = ip else {
        return;
    };
    if ip.is_loopback() || std::env::var(MULTICAST_VAR).is_ok_and(|v| v == "off") {
        return;
    }
    router
        .multicast_job
        .store(true, std::sync::atomic::Ordering::Release);
    let group = mcast::group_for(creds.job_id);
    let opened = mcast::open_socket(group, ip).and_then(|socket| {
        engine.lock_driver().register_mcast(&socket)?;
        Ok(socket)
    });
    let socket = match opened {
        Ok(socket) => Arc::new(socket),
        Err(e) => {
            tracing::info!(
                "n{}: no multicast on {ip} ({e}); broadcasts take the trees",
                router.id
            );
            return;
        }
    };
    let config = McastConfig::default();
    let channel = McastChannel::new(
        socket.clone(),
        group,
        router.id,
        creds.secret,
        creds.job_id,
        config,
        router.max_frame,
    );
    channel.announce();
    tracing::debug!("n{}: multicast stream on {group} through {ip}", router.id);
    let _ = router.multicast.set(McastNode {
        socket,
        channel,
        unreached_told: Default::default(),
        started: Instant::now(),
        announced_us: Default::default(),
    });
}

impl Router {
    /// Whether `node` receives this node's multicast stream (step 3).
    pub(crate) fn multicast_reaches(&self, node: u32) -> bool {
        self.multicast
            .get()
            .is_some_and(|m| m.channel.is_receiver(node))
    }

    /// Says once per node (`-v`) that the stream does not reach `node`,
    /// so a broadcast to it takes a tree.
    pub(crate) fn multicast_unreached(&self, node: u32) {
        let Some(m) = self.multicast.get() else {
            return;
        };
        let mut told = crate::lock(&m.unreached_told);
        if !told.contains(&node) {
            told.push(node);
            tracing::info!(
                "n{}: n{node} has not joined this node's multicast stream; broadcasts to it take a tree",
                self.id
            );
        }
    }

    /// Step 4: a frame completed on `sender`'s stream.
    pub(crate) fn on_stream_frame(&self, sender: u32, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        if h.kind != FrameKind::Bcast {
            return Err(ProtocolError::NotOnStream(h.kind));
        }
        let (data_len, threads) = threads_of(&frame.payload, h.dest_thread, self.id)?;
        if threads.is_empty() {
            return Ok(());
        }
        let mut data = frame.payload;
        data.truncate(data_len);
        self.deliver_copies(sender, &h, &threads, data)
    }

    /// Step 5: a control frame from `peer`'s pair channel.
    pub(crate) fn on_mcast_control(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let control = Control::decode(&frame.payload).map_err(ProtocolError::McastControl)?;
        let Some(m) = self.multicast.get() else {
            // A node off multicast ignores joins: its peers never use it.
            return Ok(());
        };
        let join = control == Control::Join;
        m.channel.on_control(peer, control);
        if join {
            m.channel.announce();
        }
        self.send_mcast_controls();
        Ok(())
    }

    /// Step 4: reads the frames completed on the streams, then sends
    /// what is due (step 5).
    pub(crate) fn deliver_streams(&self) {
        let Some(m) = self.multicast.get() else {
            return;
        };
        let mut failed: Option<(u32, String)> = None;
        let read = m.channel.receive(|sender, frame| {
            if failed.as_ref().is_some_and(|(s, _)| *s == sender)
                || sender >= self.nodes()
                || !self.readable(sender)
            {
                return;
            }
            if let Err(e) = self.on_stream_frame(sender, frame) {
                failed = Some((sender, e.to_string()));
            }
        });
        if let Err((sender, e)) = read {
            failed.get_or_insert((sender, e.to_string()));
        }
        if let Some((sender, why)) = failed {
            if sender < self.nodes() {
                let why = format!("multicast stream: {why}");
                self.lose_peer(sender, LossCause::Failed(Failure::Protocol(why)));
            }
        }
        self.send_mcast_controls();
        m.channel.flush();
    }

    /// Step 5: the controls the stream wants sent, each on its pair's
    /// channel. A join asked of another node makes this one announce
    /// itself (step 2): the other has just been heard, so may not have
    /// heard this one.
    pub(crate) fn send_mcast_controls(&self) {
        let Some(m) = self.multicast.get() else {
            return;
        };
        let controls = m.channel.poll_control();
        if controls.iter().any(|(_, c)| *c == Control::Join) {
            m.channel.announce();
        }
        for (node, control) in controls {
            if node >= self.nodes() || node == self.id {
                continue;
            }
            let peer = &self.peers[node as usize];
            if peer.lost().is_some() {
                continue;
            }
            let bytes = control.encode();
            let header = FrameHeader::control(FrameKind::McastControl, 0, bytes.len() as u64);
            if let Err((e, _)) = peer.send(&header, Payload::from_vec(bytes)) {
                self.lose_peer(node, LossCause::Failed(Failure::Channel(e.to_string())));
            }
        }
    }

    /// Fires the stream's timers due by `now` (step 6's losses among
    /// them) and returns when the next is due.
    pub(crate) fn multicast_timers(&self, now: Instant) -> Option<Instant> {
        let m = self.multicast.get()?;
        let announced = m.announced_us.load(std::sync::atomic::Ordering::Relaxed);
        let since = now.saturating_duration_since(m.started).as_micros() as u64;
        if since >= announced + ANNOUNCE_EVERY.as_micros() as u64 {
            self.announce_multicast();
        }
        if m.channel.timeout().is_some_and(|due| due <= now) {
            for node in m.channel.on_timeout(now) {
                let why = "multicast receiver acknowledged nothing for the peer timeout".to_string();
                self.lose_peer(node, LossCause::Failed(Failure::Channel(why)));
            }
            self.send_mcast_controls();
            m.channel.flush();
        }
        m.channel.timeout()
    }

    /// Step 2, each liveness tick and every [`ANNOUNCE_EVERY`] the engine
    /// polls: announces this node while a live peer has not joined its
    /// stream.
    pub(crate) fn announce_multicast(&self) {
        let Some(m) = self.multicast.get() else {
            return;
        };
        let since = m.started.elapsed().as_micros() as u64;
        m.announced_us
            .store(since, std::sync::atomic::Ordering::Relaxed);
        let missing = (0..self.nodes())
            .any(|j| j != self.id && self.peers[j as usize].lost().is_none() && !m.channel.is_receiver(j));
        if missing {
            m.channel.announce();
        }
    }

    /// Step 6: `peer` is gone from the stream, as sender and receiver.
    pub(crate) fn leave_multicast(&self, peer: u32) {
        if let Some(m) = self.multicast.get() {
            m.channel.remove_peer(peer);
        }
    }
}
