//! The router: where frames from other nodes go, and what a lost peer
//! means. It is the one face of the node the progress driver sees — a
//! frame in ([`Router::on_frame`]), a peer lost ([`Router::lose_peer`]),
//! and the channels to read — so the driver knows nothing of spawning,
//! bootstrap or finalization, and the node knows nothing of polling.
//!
//! A frame's walk on receipt: channel → [`Router::on_frame`] → the
//! destination thread's mailbox (data), the peer's loss (goodbye), or the
//! peer's shared-memory set-up ([`crate::peer`]).

use crate::config::{ChannelChoice, Settings};
use crate::error::{Failure, LossCause, PeerLost};
use crate::lock;
use crate::mailbox::{remote_message, MailboxTable, MAX_THREADS};
use crate::message::Tail;
use crate::rendezvous::{codec, OVERHEAD};
use crate::peer::{Dialer, Peer, SetupContext, SharedDialer, ShmSetupError};
use crate::Stats;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use threadwire_transport::shm::setup::Pair;
use threadwire_transport::shm::{ShmChannel, ShmConfig};
use threadwire_transport::{Channel, Corking, Frame};
use threadwire_wire::mcast::{decode_list, McastListError};
use threadwire_wire::{FrameBytes, FrameHeader, FrameKind, Payload};

type Subscriber = Arc<dyn Fn(&PeerLost) + Send + Sync>;

/// A frame no correct peer sends.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtocolError {
    #[error("message for thread {0} beyond the limit of {MAX_THREADS}")]
    NoSuchThread(u32),
    #[error("control frame on a peer connection")]
    ControlFrame,
    #[error(transparent)]
    ShmSetup(#[from] ShmSetupError),
    #[error(transparent)]
    UdpSetup(#[from] crate::peer::UdpSetupFailure),
    #[error(transparent)]
    McastList(#[from] McastListError),
    #[error(transparent)]
    Named(#[from] crate::group::named::protocol::DecodeError),
    #[error(transparent)]
    Rendezvous(#[from] crate::rendezvous::RendezvousError),
    #[error("bulk frame of {len} bytes for a buffer of fewer")]
    BulkOverrun { len: u64 },
    #[error("active message for a thread without the thread's number")]
    AmTarget,
    #[error("{0:?} frame on a multicast stream")]
    NotOnStream(FrameKind),
    #[error("multicast-stream frame on a pair's channel")]
    StreamFrame,
    #[error(transparent)]
    McastControl(threadwire_transport::udp::mcast::ControlError),
}

/// How many nodes a job has, had and may have ([`Router::new`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobSize {
    pub(crate) nodes: u32,
    pub(crate) founders: u32,
    pub(crate) capacity: u32,
}

impl JobSize {
    /// A job that cannot grow.
    pub(crate) fn fixed(nodes: u32) -> JobSize {
        JobSize {
            nodes,
            founders: nodes,
            capacity: nodes,
        }
    }
}

pub(crate) struct Router {
    pub(crate) id: u32,
    /// Node numbers given out so far: the job's nodes, gone ones
    /// included. Grows when nodes join a running job (`vm`), never
    /// beyond `capacity`.
    nodes: AtomicU32,
    /// The most nodes the job may grow to: the per-node tables' length.
    pub(crate) capacity: u32,
    /// The nodes the job started with (named groups are homed on them).
    pub(crate) founders: u32,
    pub(crate) job_id: u64,
    pub(crate) mailboxes: MailboxTable,
    pub(crate) peers: Box<[Peer]>,
    /// Makes this node's connections on first use (`peer::dial`).
    pub(crate) dialer: SharedDialer,
    /// The launcher's connection.
    pub(crate) control: OnceLock<Channel>,
    pub(crate) max_frame: u64,
    channel_choice: ChannelChoice,
    shm_config: ShmConfig,
    /// Peers reached through shared memory; the driver polls their rings.
    shm_peers: AtomicUsize,
    pub(crate) finalized: AtomicBool,
    /// Bumped on every failure, so waits on wildcards notice one.
    pub(crate) failures: AtomicU64,
    subscribers: Mutex<Vec<Subscriber>>,
    /// The named groups this node serves or backs up (`group::named`).
    pub(crate) named: crate::group::named::Home,
    /// The number of this node's next request to a name's home.
    pub(crate) named_requests: std::sync::atomic::AtomicU32,
    /// Announced messages, fetches and the eager budget.
    pub(crate) rendezvous: crate::rendezvous::Rendezvous,
    /// Active-message handlers and their fibers.
    pub(crate) am: crate::am::Registry,
    /// Entry points other nodes may start threads on.
    pub(crate) exports: crate::remote_spawn::Exports,
    /// Threads' subscriptions to peers' exits (`notify`).
    pub(crate) notify: crate::notify::Notifications,
    /// This node's members' parts of their groups' agreements.
    pub(crate) agreements: crate::group::agree::Table,
    /// Requests to the launcher to grow or shrink the machine (`vm`).
    pub(crate) vm: crate::vm::Requests,
    /// Per peer: messages it announced here whose bytes have not come by
    /// a `Bulk` frame (`answer_goodbye`).
    pub(crate) announced: Box<[AtomicU32]>,
    /// Groups revoked for this node's members (`group::revoke`).
    pub(crate) revoked: crate::group::revoke::Table,
    /// Thread numbers given out so far ([`crate::Node::threads_started`]);
    /// here so that the driver can tell the launcher (control step 10).
    pub(crate) threads: AtomicU32,
    /// Watches this node's connections for corking, once a timer thread
    /// uncorks idle ones (`progress::liveness`, step 5): connections made
    /// before, or without it, never cork.
    pub(crate) corking: OnceLock<Arc<Corking>>,
    /// This node's UDP socket, with `THREADWIRE_CHANNEL=udp`
    /// (`peer::udp_setup`).
    pub(crate) udp: OnceLock<crate::peer::UdpNode>,
    /// This node's multicast stream, on the UDP channel between hosts
    /// (`peer::multicast`).
    pub(crate) multicast: OnceLock<crate::peer::McastNode>,
    /// The job broadcasts by multicast where it can: the UDP channel
    /// between hosts, not turned off (the same at every node, so every
    /// member of a group picks the same algorithm).
    pub(crate) multicast_job: AtomicBool,
}

impl Router {
    /// The router of node `id` of a job of `size.nodes` nodes so far, of
    /// `size.founders` at its start, that may grow to `size.capacity`.
    pub(crate) fn new(id: u32, size: JobSize, job_id: u64, settings: &Settings) -> Router {
        let JobSize {
            nodes,
            founders,
            capacity,
        } = size;
        let dialer = Arc::new(Dialer::new(id));
        Router {
            id,
            nodes: AtomicU32::new(nodes),
            capacity,
            founders,
            job_id,
            mailboxes: MailboxTable::new(),
            peers: (0..capacity).map(|j| Peer::new(j, dialer.clone())).collect(),
            dialer,
            control: OnceLock::new(),
            max_frame: settings.max_frame,
            channel_choice: settings.channel,
            shm_config: settings.shm.clone(),
            shm_peers: AtomicUsize::new(0),
            finalized: AtomicBool::new(false),
            failures: AtomicU64::new(0),
            subscribers: Mutex::new(Vec::new()),
            named: Default::default(),
            named_requests: Default::default(),
            rendezvous: crate::rendezvous::Rendezvous::new(capacity, settings),
            am: crate::am::Registry::new(settings.am_fibers, settings.eager_budget),
            exports: Default::default(),
            notify: crate::notify::Notifications::new(nodes, capacity),
            agreements: Default::default(),
            vm: Default::default(),
            announced: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
            revoked: Default::default(),
            threads: AtomicU32::new(0),
            corking: OnceLock::new(),
            udp: OnceLock::new(),
            multicast: OnceLock::new(),
            multicast_job: AtomicBool::new(false),
        }
    }

    /// Node numbers given out so far (gone nodes included).
    #[inline]
    pub(crate) fn nodes(&self) -> u32 {
        self.nodes.load(Ordering::Acquire)
    }

    /// Nodes up to `nodes` have joined the job: the launcher said so
    /// (`vm`, step 6). Ignored beyond the capacity.
    pub(crate) fn grow_to(&self, nodes: u32) {
        if nodes > self.capacity {
            tracing::warn!("n{}: told of {nodes} nodes, beyond {}", self.id, self.capacity);
            return;
        }
        let before = self.nodes.fetch_max(nodes, Ordering::AcqRel);
        if nodes > before {
            self.notify.grown(nodes);
        }
    }

    /// Counts in the joining nodes that are ready — connected, their
    /// channel settled — in number order, before the launcher's word
    /// comes (`vm`, step 5): a joiner may send to this node as soon as it
    /// is ready, and this node may answer it. Never counts in a node
    /// whose channel is not settled, which a send would take for lost.
    fn admit_joined(&self) {
        loop {
            let n = self.nodes();
            let Some(p) = self.peers.get(n as usize) else {
                return;
            };
            let ready = n == self.id || p.lost().is_some() || (p.has_tcp() && p.ready());
            if !ready {
                return;
            }
            self.grow_to(n + 1);
        }
    }

    pub(crate) fn channel_choice(&self) -> ChannelChoice {
        self.channel_choice
    }

    /// Handles one frame from `peer`; an error is a protocol violation.
    #[inline]
    pub(crate) fn on_frame(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        match h.kind {
            FrameKind::Data => {
                let Some(mailbox) = self.mailboxes.get(h.dest_thread) else {
                    return Err(ProtocolError::NoSuchThread(h.dest_thread));
                };
                let payload = Payload::from_wire(h.format, frame.payload);
                let mut m = remote_message(peer, h.source_thread, h.aux, h.tag, payload);
                m.tail = Tail::Eager((h.len as usize + OVERHEAD) as u32);
                mailbox.deliver(m);
                Ok(())
            }
            FrameKind::Rts => self.on_rts(peer, frame),
            FrameKind::Cts => self.on_cts(peer, frame),
            FrameKind::Fin => {
                let (send_id, returns) = codec::decode_fin(&frame.payload)?;
                self.rendezvous.budget.returned(peer, returns);
                let out = self.take_send(peer, send_id)?;
                out.succeed();
                Ok(())
            }
            FrameKind::Bulk => self.on_bulk(frame),
            FrameKind::Credit => {
                let returns = codec::decode_credit(&frame.payload)?;
                self.rendezvous.budget.returned(peer, returns);
                Ok(())
            }
            FrameKind::Bye => {
                self.lose_peer(peer, LossCause::Finished);
                self.answer_goodbye(peer);
                Ok(())
            }
            FrameKind::Shm => {
                let peer_state = &self.peers[peer as usize];
                if peer_state.on_shm_setup(&self.setup_context(peer), frame)? {
                    self.shm_peers.fetch_add(1, Ordering::AcqRel);
                }
                self.check_forced_shm(peer);
                if peer >= self.nodes() {
                    self.admit_joined();
                }
                Ok(())
            }
            FrameKind::Udp => {
                self.peers[peer as usize].on_udp_setup(self.id, self.udp.get(), frame)?;
                if peer >= self.nodes() {
                    self.admit_joined();
                }
                Ok(())
            }
            FrameKind::Mcast => self.on_mcast(peer, frame),
            FrameKind::McastControl => self.on_mcast_control(peer, frame),
            FrameKind::Bcast => Err(ProtocolError::StreamFrame),
            FrameKind::Named => self.on_named(peer, frame),
            FrameKind::Am | FrameKind::AmAt => self.on_am(peer, frame),
            FrameKind::AmRts => self.on_am_rts(peer, frame),
            FrameKind::Doorbell | FrameKind::Heartbeat => Ok(()),
            FrameKind::Control => Err(ProtocolError::ControlFrame),
        }
    }

    /// An active message (`am`, protocol step 3).
    fn on_am(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        if h.source_thread >= MAX_THREADS {
            return Err(ProtocolError::NoSuchThread(h.source_thread));
        }
        let mut bytes = frame.payload;
        let target = match h.kind {
            FrameKind::AmAt => {
                let at = bytes.len().checked_sub(4).ok_or(ProtocolError::AmTarget)?;
                let thread = u32::from_le_bytes(bytes[at..].try_into().expect("4 bytes"));
                if thread >= MAX_THREADS {
                    return Err(ProtocolError::NoSuchThread(thread));
                }
                bytes.truncate(at);
                Some(thread)
            }
            _ => None,
        };
        let message = crate::am::Arrival {
            source: crate::Address::new(peer, h.source_thread),
            id: u64::from(h.aux) << 32 | u64::from(h.tag),
            request: h.dest_thread,
            target,
            payload: Payload::from_wire(h.format, bytes),
            cost: h.len as usize + OVERHEAD,
            large: 0,
        };
        crate::am::large::eager(self, message);
        Ok(())
    }

    /// A large active message's announcement (`am`, protocol step 3b).
    fn on_am_rts(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        if h.source_thread >= MAX_THREADS {
            return Err(ProtocolError::NoSuchThread(h.source_thread));
        }
        let (announced, target) = crate::am::large::decode(frame.payload.into_vec(), h.format, self.max_frame)?;
        if let Some(thread) = target {
            if thread >= MAX_THREADS {
                return Err(ProtocolError::NoSuchThread(thread));
            }
        }
        self.announced[peer as usize].fetch_add(1, Ordering::AcqRel);
        let message = crate::am::large::Pending {
            source: crate::Address::new(peer, h.source_thread),
            id: u64::from(h.aux) << 32 | u64::from(h.tag),
            request: h.dest_thread,
            target,
            announced,
        };
        crate::am::large::announced(self, message);
        Ok(())
    }

    /// A message `peer` announced here will need nothing more from it
    /// (pulled, or refused): see `answer_goodbye`.
    pub(crate) fn fetched_announced(&self, peer: u32) {
        if self.announced[peer as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
            self.answer_goodbye(peer);
        }
    }

    /// Answers a peer's goodbye with this node's, once this node will
    /// fetch nothing more from it: every message it announced here has
    /// come by a `Bulk` frame (`announced`). Then a peer that leaves while
    /// this node runs on (a joiner done with its work) closes the pair
    /// cleanly at once instead of waiting for this node's end, and no
    /// fetch of this node meets a peer that has given up its sends. A
    /// message announced and never fetched (never received, or pulled by
    /// cross-memory copy) keeps the count up, and the answer waits for
    /// this node's own goodbye, as a peer's goodbye always did.
    fn answer_goodbye(&self, peer: u32) {
        let p = &self.peers[peer as usize];
        let finished = matches!(p.lost().map(|l| &l.cause), Some(LossCause::Finished));
        // A peer that ended without ever connecting (the launcher's word)
        // needs no answer.
        if !finished || !p.has_tcp() || self.announced[peer as usize].load(Ordering::Acquire) != 0 {
            return;
        }
        if let Err(e) = p.say_goodbye() {
            tracing::debug!("n{}: goodbye to n{peer}: {e}", self.id);
        }
    }

    /// A multicast frame: a copy of the data to each listed thread (the
    /// buffer itself to the last), as an ordinary message from the sender.
    /// The whole list is checked before anything is delivered, so a
    /// malformed frame delivers nothing.
    fn on_mcast(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        let h = frame.header;
        let (data_len, threads) = decode_list(&frame.payload, h.dest_thread)?;
        let mut data = frame.payload;
        data.truncate(data_len);
        self.deliver_copies(peer, &h, &threads, data)
    }

    /// A copy of `data` to each of `threads` (the buffer itself to the
    /// last), as an eager message from `peer`'s thread addressed by `h`;
    /// every thread is checked before anything is delivered.
    pub(crate) fn deliver_copies(
        &self,
        peer: u32,
        h: &FrameHeader,
        threads: &[u32],
        data: FrameBytes,
    ) -> Result<(), ProtocolError> {
        let mut mailboxes = Vec::with_capacity(threads.len());
        for &t in threads {
            mailboxes.push(self.mailboxes.get(t).ok_or(ProtocolError::NoSuchThread(t))?);
        }
        let (last, rest) = mailboxes.split_last().expect("the list is not empty");
        // Each copy returns its share of the sender's budget when received.
        let cost = (data.len() + OVERHEAD) as u32;
        let eager = |payload| {
            let mut m = remote_message(peer, h.source_thread, h.aux, h.tag, payload);
            m.tail = Tail::Eager(cost);
            m
        };
        for mailbox in rest {
            mailbox.deliver(eager(Payload::from_wire(h.format, data.clone())));
        }
        last.deliver(eager(Payload::from_wire(h.format, data)));
        Ok(())
    }

    /// A `Named` frame (`group::named`): a request to a name this node
    /// serves (protocol step 4), or a message between a home and its
    /// backup (steps 6–9).
    fn on_named(&self, peer: u32, frame: Frame) -> Result<(), ProtocolError> {
        use crate::group::named::protocol::{decode_request, is_replica, Replica};
        let h = frame.header;
        if is_replica(&frame.payload) {
            let message = Replica::decode(&frame.payload)?;
            self.named.replica(self, peer, message);
            return Ok(());
        }
        if h.source_thread >= MAX_THREADS {
            return Err(ProtocolError::NoSuchThread(h.source_thread));
        }
        let (op, name) = decode_request(&frame.payload)?;
        let from = crate::Address::new(peer, h.source_thread);
        self.named.request(self, from, h.tag, op, name);
        Ok(())
    }

    /// A home's reply (`group::named`, step 5) to thread `to`, a data
    /// message in the reply context: into its mailbox if it is a thread
    /// of this node, else as a frame.
    pub(crate) fn named_reply(&self, to: crate::Address, tag: u32, reply: Vec<u8>) {
        use crate::group::named::protocol::REPLY_CONTEXT;
        if to.node == self.id {
            if let Some(mailbox) = self.mailboxes.get(to.thread) {
                let payload = Payload::from_vec(reply);
                mailbox.deliver(remote_message(self.id, 0, REPLY_CONTEXT, tag, payload));
            }
            return;
        }
        // An eager message like any: its receipt returns the bytes.
        self.rendezvous
            .budget
            .force_take(to.node, reply.len() + OVERHEAD);
        let header = FrameHeader::data_in(
            REPLY_CONTEXT,
            0,
            to.thread,
            tag,
            threadwire_wire::Format::OPAQUE,
            reply.len() as u64,
        );
        if let Err((e, _)) = self.peers[to.node as usize].send(&header, Payload::from_vec(reply)) {
            self.lose_peer(to.node, LossCause::Failed(Failure::Channel(e.to_string())));
        }
    }

    /// Records that `peer` is gone (first cause wins), notifies the threads
    /// that asked (`notify`), fails what waits on it and tells subscribers.
    pub(crate) fn lose_peer(&self, peer: u32, cause: LossCause) {
        let p = &self.peers[peer as usize];
        let lost = PeerLost { node: peer, cause };
        // Notifications first, under their lock, which records every loss
        // (first cause wins): a receive waiting for one gets it rather
        // than failing, and whoever sees the loss finds them delivered.
        if !self.notify.exited(&self.mailboxes, &lost, || p.set_lost(lost.clone())) {
            // A node that said goodbye and then failed (its process ended
            // in error, as the launcher reports) failed all the same: the
            // collectives waiting on it must stop, not wait on a member
            // that will never take part again. (Its connection closing
            // after the goodbye is no news.)
            if let LossCause::Failed(why @ Failure::ReportedByLauncher(_)) = &lost.cause {
                if !p.set_failed_later(lost.clone()) {
                    return;
                }
                tracing::warn!("n{}: node n{peer}, finished, then failed: {why}", self.id);
                self.failures.fetch_add(1, Ordering::SeqCst);
                self.mailboxes.for_each(|m| m.fail_for(&lost));
            }
            return;
        }
        if let LossCause::Failed(why) = &lost.cause {
            tracing::warn!("n{}: lost node n{peer}: {why}", self.id);
            self.failures.fetch_add(1, Ordering::SeqCst);
            if let Some(c) = p.tcp() {
                c.close();
            }
            if let Some(c) = p.udp() {
                c.close();
            }
        }
        self.leave_multicast(peer);
        self.named.lost(self, peer);
        self.rendezvous.lose(&lost);
        if matches!(lost.cause, LossCause::Failed(_)) {
            crate::am::large::lost(self, peer);
        }
        self.mailboxes.for_each(|m| m.fail_for(&lost));
        let subscribers = lock(&self.subscribers).clone();
        for s in subscribers {
            s(&lost);
        }
    }

    /// A node gone before this one joined the job, or that it could not
    /// reach while joining (`vm`, step 4): recorded lost — notification,
    /// peer table, failure count — but with none of the clean-up of a loss
    /// while work is under way. There is none yet, and that clean-up may
    /// send (a named group's replica to its backup) on channels that do
    /// not exist yet, which would lose the backup too.
    pub(crate) fn record_gone(&self, peer: u32, cause: LossCause) {
        let p = &self.peers[peer as usize];
        let lost = PeerLost { node: peer, cause };
        let failed = matches!(lost.cause, LossCause::Failed(_));
        if self.notify.exited(&self.mailboxes, &lost, || p.set_lost(lost.clone())) && failed {
            self.failures.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The launcher's connection broke: the job is over for this node.
    pub(crate) fn launcher_lost(&self, e: &dyn std::fmt::Display) {
        if self.finalized.load(Ordering::Acquire) {
            return;
        }
        tracing::warn!(
            "n{}: lost the launcher ({e}); treating every peer as lost",
            self.id
        );
        self.vm.launcher_lost(&self.mailboxes, self.id);
        for peer in 0..self.nodes() {
            if peer != self.id {
                self.lose_peer(peer, LossCause::Failed(Failure::LauncherGone));
            }
        }
    }

    /// Calls `f` whenever a peer is lost or finishes.
    pub(crate) fn subscribe(&self, f: Subscriber) {
        lock(&self.subscribers).push(f);
    }

    fn setup_context(&self, peer: u32) -> SetupContext<'_> {
        SetupContext {
            pair: Pair {
                job_id: self.job_id,
                me: self.id,
                peer,
            },
            choice: self.channel_choice,
            config: &self.shm_config,
        }
    }

    /// A connection to `peer`, dialed or accepted, is made (`peer::dial`,
    /// step 4): installed, and, at the pair's higher node, shared memory
    /// offered over it (set-up step 1).
    /// `false` if the pair had a connection already (`c` is closed).
    pub(crate) fn connected(&self, peer: u32, c: threadwire_transport::TcpChannel) -> bool {
        if let Some(watch) = self.corking.get() {
            c.watch_corking(watch.clone());
        }
        if !self.peers[peer as usize].set_tcp(c) {
            return false;
        }
        if self.id > peer {
            match self.channel_choice {
                ChannelChoice::Udp => self.peers[peer as usize].offer_udp(self.id, self.udp.get()),
                _ => {
                    self.peers[peer as usize].offer_shm(&self.setup_context(peer));
                    self.check_forced_shm(peer);
                }
            }
        }
        true
    }

    /// With `THREADWIRE_CHANNEL=shm`, a pair that settled on TCP is a
    /// failure: the peer is lost, saying why.
    fn check_forced_shm(&self, peer: u32) {
        if self.channel_choice != ChannelChoice::Shm {
            return;
        }
        if let Some(why) = self.peers[peer as usize].tcp_reason() {
            let why = format!("THREADWIRE_CHANNEL=shm, but n{peer} cannot share memory with this node: {why}");
            self.lose_peer(peer, LossCause::Failed(Failure::Channel(why)));
        }
    }

    /// The route to every node so far, `-` for this one, in words
    /// (control protocol, step 4); at the end (`counters`), a UDP pair's
    /// with its datagram counters, and this node's own entry its multicast
    /// stream's, if it has one.
    pub(crate) fn routes(&self, counters: bool) -> Vec<String> {
        self.peers[..self.nodes() as usize]
            .iter()
            .enumerate()
            .map(|(j, p)| match (j as u32 == self.id, counters) {
                (true, true) => match self.multicast.get() {
                    Some(m) => crate::peer::multicast::counters(&m.channel.stats()),
                    None => "-".to_string(),
                },
                (true, false) => "-".to_string(),
                (false, true) => match p.udp() {
                    Some(c) => format!("udp ({})", crate::peer::udp_counters(&c.stats())),
                    None => p.route().to_string(),
                },
                (false, false) => p.route().to_string(),
            })
            .collect()
    }

    /// Whether any peer is reached through shared memory.
    #[inline]
    pub(crate) fn has_shm_peers(&self) -> bool {
        self.shm_peers.load(Ordering::Acquire) > 0
    }

    /// The job's nodes on this node's host, this one included: those the
    /// launcher or process manager placed here (known without a
    /// connection: pairs connect on first use), or those reached through
    /// shared memory, whichever are more.
    pub(crate) fn nodes_on_host(&self) -> usize {
        let placed = (0..self.nodes())
            .filter(|&p| p == self.id || self.dialer.same_host(p))
            .count();
        placed.max(1 + self.shm_peer_count())
    }

    /// Peers reached through shared memory: the other nodes of this host
    /// (as far as channels tell: none with `THREADWIRE_CHANNEL=tcp`).
    pub(crate) fn shm_peer_count(&self) -> usize {
        self.shm_peers.load(Ordering::Acquire)
    }

    /// Whether a peer is reading one of this node's rendezvous messages
    /// (progress engine, step 7).
    pub(crate) fn peer_is_copying(&self) -> bool {
        self.shm_peers.load(Ordering::Relaxed) > 0
            && (self
                .rendezvous
                .sends
                .being_pulled(threadwire_transport::shm::COPY_WINDOW)
                || self.channel_copying())
    }

    /// [`peer_is_copying`](Self::peer_is_copying) for the channels' own
    /// rendezvous (large frames the runtime sends eagerly).
    fn channel_copying(&self) -> bool {
        self.peers
                .iter()
            .any(|p| p.shm().is_some_and(ShmChannel::reading_our_memory) && p.lost().is_none())
    }

    /// After a loss, whether frames from `peer` may still be read (a
    /// goodbye does not end reading: answers may follow it).
    #[inline]
    pub(crate) fn readable(&self, peer: u32) -> bool {
        !matches!(
            self.peers[peer as usize].lost(),
            Some(PeerLost {
                cause: LossCause::Failed(_),
                ..
            })
        )
    }

    /// The node's counters: the sum over its mailboxes.
    pub(crate) fn stats(&self) -> Stats {
        let mut total = Stats::default();
        self.mailboxes.for_each(|m| m.counters.add_to(&mut total));
        total
    }
}
