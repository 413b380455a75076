//! [`McastChannel`]: the node's [`Endpoint`] on its multicast socket,
//! and that socket ([`open_socket`]) on the job's group ([`group_for`]).
//!
//! As [`UdpChannel`](super::super::UdpChannel), senders and the progress
//! engine share the endpoint under one lock: a send appends its frame
//! and sends what window and pacing allow at once; the rest leaves from
//! [`McastChannel::flush`] and [`McastChannel::on_timeout`], whose times
//! ([`McastChannel::timeout`]) are the caller's to keep.

use super::super::channel::{lock, read_datagrams};
use super::super::frame_header;
use super::{Control, Endpoint, McastConfig, McastStats};
use crate::{ChannelError, Frame, SendOutcome};
use sha2::{Digest, Sha256};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use threadwire_wire::{FrameHeader, Payload};

/// The receive buffer asked for: a window's worth of datagrams while the
/// engine is busy (best effort: the kernel caps it at `rmem_max`).
const RECEIVE_BUFFER: usize = 4 << 20;

/// The multicast group and port of job `job_id`: 239.255.x.y
/// (administratively scoped, RFC 2365) and a port in 40000–59999, from a
/// hash of the id.
///
/// ```
/// use threadwire_transport::udp::mcast::group_for;
///
/// let group = group_for(42);
/// assert_eq!(group, group_for(42));
/// assert_eq!(group.ip().octets()[..2], [239, 255]);
/// assert!((40000..=59999).contains(&group.port()));
/// ```
pub fn group_for(job_id: u64) -> SocketAddrV4 {
    let digest = Sha256::new()
        .chain_update(b"threadwire mcast group")
        .chain_update(job_id.to_le_bytes())
        .finalize();
    let port = 40_000 + u16::from_le_bytes([digest[2], digest[3]]) % 20_000;
    SocketAddrV4::new(Ipv4Addr::new(239, 255, digest[0], digest[1]), port)
}

/// A non-blocking socket that receives `group`'s datagrams on
/// `interface` and sends through it, to hosts of this link only (TTL 1),
/// itself included (loopback on, so nodes of one host hear each other).
/// The port is shared (`SO_REUSEADDR`): every node of a host binds it
/// and each receives every datagram.
pub fn open_socket(group: SocketAddrV4, interface: Ipv4Addr) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    if let Err(e) = socket.set_recv_buffer_size(RECEIVE_BUFFER) {
        tracing::debug!("mcast receive buffer of {RECEIVE_BUFFER} bytes: {e}");
    }
    // Bound to the group's address, the socket hears only that group,
    // not another job's group on the same port.
    let bind = SocketAddrV4::new(*group.ip(), group.port());
    socket.bind(&SocketAddr::V4(bind).into())?;
    socket.join_multicast_v4(group.ip(), &interface)?;
    socket.set_multicast_if_v4(&interface)?;
    socket.set_multicast_ttl_v4(1)?;
    socket.set_multicast_loop_v4(true)?;
    report_local_drops(&socket);
    Ok(socket.into())
}

/// Asks the kernel to say when its own queue drops a datagram (`IP_RECVERR`).
///
/// Without it a datagram the interface's queue discards (a shaped or busy
/// link's queue full) is dropped silently: every receiver misses it, asks
/// for it, and each NAK halves the window. With it `send_to` fails with
/// `ENOBUFS`, which step 4 treats as the full buffer it is. Best effort:
/// without the option the NAKs repair the loss.
fn report_local_drops(socket: &Socket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, an `int` option of the right size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVERR,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::debug!("mcast IP_RECVERR: {}", io::Error::last_os_error());
    }
}

/// Reads datagrams from `socket` until it is empty or `budget` are read,
/// handing each to `on_datagram`; how many were read.
pub fn receive_datagrams(
    socket: &UdpSocket,
    budget: usize,
    on_datagram: impl FnMut(&[u8]),
) -> io::Result<usize> {
    read_datagrams(socket, budget, on_datagram)
}

/// A node's multicast stream and the streams it receives, on the job's
/// group socket.
pub struct McastChannel {
    socket: Arc<UdpSocket>,
    group: SocketAddrV4,
    max_frame: u64,
    state: Mutex<State>,
}

struct State {
    endpoint: Endpoint,
    /// A datagram being written.
    scratch: Vec<u8>,
    /// Datagrams the socket would not send.
    unsent: u64,
}

impl McastChannel {
    /// Node `me`'s channel in job `job_id` on `socket` (from
    /// [`open_socket`]), sending to `group`; its session is fresh and
    /// random. Frames longer than `max_frame` are refused.
    pub fn new(
        socket: Arc<UdpSocket>,
        group: SocketAddrV4,
        me: u32,
        secret: [u8; 32],
        job_id: u64,
        config: McastConfig,
        max_frame: u64,
    ) -> McastChannel {
        let mut session = [0u8; 16];
        if let Err(e) = getrandom::getrandom(&mut session) {
            // The session only needs to differ from this node's earlier
            // ones; the key's secrecy is the job secret's.
            tracing::warn!("mcast session from the clock: {e}");
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            session = t.to_le_bytes();
        }
        let datagram = config.max_datagram;
        McastChannel {
            socket,
            group,
            max_frame,
            state: Mutex::new(State {
                endpoint: Endpoint::new(me, secret, job_id, session, config, Instant::now()),
                scratch: vec![0; datagram],
                unsent: 0,
            }),
        }
    }

    /// Appends one frame to this node's stream and sends what the window
    /// and pacing allow now. Never fails: a frame no node receives is
    /// dropped.
    pub fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        let mut st = lock(&self.state);
        let mut compact = [0u8; frame_header::MAX_LEN];
        let len = frame_header::encode(header, &mut compact);
        st.endpoint.write(&compact[..len]);
        for segment in payload.segments() {
            st.endpoint.write(segment);
        }
        drop(payload);
        self.transmit(&mut st);
        Ok(match st.endpoint.queued_bytes() {
            0 => SendOutcome::Written,
            _ => SendOutcome::Queued,
        })
    }

    /// Whether `node` joined this node's stream.
    pub fn is_receiver(&self, node: u32) -> bool {
        lock(&self.state).endpoint.is_receiver(node)
    }

    /// The nodes that joined this node's stream.
    pub fn receivers(&self) -> Vec<u32> {
        lock(&self.state).endpoint.receivers()
    }

    /// Unsent + unstable bytes of my stream.
    pub fn queued_bytes(&self) -> usize {
        lock(&self.state).endpoint.queued_bytes()
    }

    /// Multicasts a heartbeat at once: a hello that makes the other nodes
    /// join this node's stream.
    pub fn announce(&self) {
        let mut st = lock(&self.state);
        st.endpoint.announce();
        self.transmit(&mut st);
    }

    /// One datagram read from the socket (any sender, this node's own
    /// looped back too: those are ignored).
    pub fn on_datagram(&self, datagram: &[u8]) {
        lock(&self.state)
            .endpoint
            .on_datagram(Instant::now(), datagram);
    }

    /// Hands the frames completed in order to `on_frame(sender, frame)`,
    /// outside the lock (a handler may send). An error names a sender
    /// whose stream held a malformed frame: the caller loses that peer.
    pub fn receive(&self, mut on_frame: impl FnMut(u32, Frame)) -> Result<(), (u32, ChannelError)> {
        let mut frames = Vec::new();
        let result = lock(&self.state)
            .endpoint
            .read_frames(self.max_frame, &mut frames);
        for (node, frame) in frames {
            on_frame(node, frame);
        }
        result
    }

    /// A control message from peer `from`, carried by unicast.
    pub fn on_control(&self, from: u32, control: Control) {
        let mut st = lock(&self.state);
        st.endpoint.on_control(Instant::now(), from, control);
        self.transmit(&mut st);
    }

    /// Control messages to carry to peers over unicast, in order.
    pub fn poll_control(&self) -> Vec<(u32, Control)> {
        lock(&self.state).endpoint.poll_control(Instant::now())
    }

    /// Sends whatever is due (data, repairs, heartbeats).
    pub fn flush(&self) {
        self.transmit(&mut lock(&self.state));
    }

    /// When [`on_timeout`](Self::on_timeout) (and then
    /// [`poll_control`](Self::poll_control)) is next due.
    pub fn timeout(&self) -> Option<Instant> {
        lock(&self.state).endpoint.timeout()
    }

    /// Fires due timers (NAK delays and repeats, acknowledgements,
    /// heartbeats, pacing) and sends what they ask for; returns the
    /// receivers found lost (removed).
    pub fn on_timeout(&self, now: Instant) -> Vec<u32> {
        let mut st = lock(&self.state);
        let lost = st.endpoint.on_timeout(now);
        self.transmit(&mut st);
        lost
    }

    /// Forgets `node` as receiver of this stream and as sender.
    pub fn remove_peer(&self, node: u32) {
        let mut st = lock(&self.state);
        st.endpoint.remove_peer(node);
        self.transmit(&mut st);
    }

    /// The counters; `unsent` counts datagrams the socket refused.
    pub fn stats(&self) -> McastStats {
        let st = lock(&self.state);
        McastStats {
            unsent: st.unsent,
            ..st.endpoint.stats()
        }
    }

    fn transmit(&self, st: &mut State) {
        let now = Instant::now();
        let State {
            endpoint,
            scratch,
            unsent,
        } = st;
        // A datagram the socket refused goes again after a tick
        // (`Endpoint::refused`), and nothing more leaves meanwhile.
        let to: SocketAddr = self.group.into();
        while let Some(len) = endpoint.poll_transmit(now, scratch) {
            let sent = loop {
                match self.socket.send_to(&scratch[..len], to) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    sent => break sent,
                }
            };
            if let Err(e) = sent {
                tracing::trace!("mcast send to {to}: {e}");
                *unsent += 1;
                endpoint.refused(now, &scratch[..len]);
                return;
            }
        }
    }
}
