//! A node: this process's membership in its job, shared by all its threads.

use crate::control::{self as protocol, Control};
use crate::error::{InitError, InitErrorKind, LossCause, PeerLost};
use crate::lock;
use crate::mailbox::{remote_message, MailboxTable, MAX_THREADS};
use crate::peer::{ChannelChoice, Peer};
use crate::progress::{Driver, Origin, ProgressEngine, Tokens};
use crate::{Address, Endpoint, Stats};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use threadwire_fiber::{JoinError, JoinHandle as FiberHandle, Priority, Scheduler};
use threadwire_transport::handshake::{self, Credentials};
use threadwire_transport::shm::ShmConfig;
use threadwire_transport::{Channel, Frame, TcpChannel};
use threadwire_wire::{FrameHeader, FrameKind, Payload};

/// Default largest frame accepted from a peer: 1 GiB.
pub const DEFAULT_MAX_FRAME: u64 = 1 << 30;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

type Subscriber = Arc<dyn Fn(&PeerLost) + Send + Sync>;

pub(crate) struct NodeShared {
    /// First, so that it stops its workers while the engine still exists.
    scheduler: OnceLock<Scheduler>,
    workers: Option<usize>,
    pub(crate) id: u32,
    pub(crate) nodes: u32,
    pub(crate) job_id: u64,
    pub(crate) mailboxes: MailboxTable,
    next_thread: AtomicU32,
    pub(crate) peers: Box<[Peer]>,
    pub(crate) control: OnceLock<Channel>,
    pub(crate) engine: ProgressEngine,
    pub(crate) channel_choice: ChannelChoice,
    pub(crate) shm_config: ShmConfig,
    /// Peers reached through shared memory; the engine polls their rings.
    pub(crate) shm_peers: AtomicUsize,
    pub(crate) max_frame: u64,
    pub(crate) finalized: AtomicBool,
    /// Bumped on every failure, so waits on wildcards notice one.
    pub(crate) failures: AtomicU64,
    listen: Option<SocketAddr>,
    subscribers: Mutex<Vec<Subscriber>>,
    comm_stop: AtomicBool,
    comm_thread: Mutex<Option<JoinHandle<()>>>,
}

/// A handle to this process's node: cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Node {
    pub(crate) shared: Arc<NodeShared>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node(n{} of {})", self.shared.id, self.shared.nodes)
    }
}

/// How to join a job.
#[derive(Clone, Debug)]
pub struct Config {
    standalone: bool,
    progress_thread: Option<bool>,
    workers: Option<usize>,
    max_frame: Option<u64>,
    channel: Option<ChannelChoice>,
    log: bool,
}

/// What a node is built with, from [`Config`] and the environment.
struct Settings {
    max_frame: u64,
    workers: Option<usize>,
    channel: ChannelChoice,
    shm: ShmConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

static INITIALIZED: AtomicBool = AtomicBool::new(false);

impl Config {
    /// The defaults: join the job the launcher describes.
    pub fn new() -> Config {
        Config {
            standalone: false,
            progress_thread: None,
            workers: None,
            max_frame: None,
            channel: None,
            log: true,
        }
    }

    /// Which channel to use between nodes on one host (default
    /// `THREADWIRE_CHANNEL`, else [`ChannelChoice::Auto`]: shared memory).
    pub fn channel(mut self, choice: ChannelChoice) -> Config {
        self.channel = Some(choice);
        self
    }

    /// Run as a one-node job when not started by a launcher, instead of
    /// failing.
    pub fn standalone(mut self, yes: bool) -> Config {
        self.standalone = yes;
        self
    }

    /// Start a communication thread that makes progress while every
    /// application thread computes (default: `THREADWIRE_PROGRESS`, else off).
    pub fn progress_thread(mut self, yes: bool) -> Config {
        self.progress_thread = Some(yes);
        self
    }

    /// Worker OS threads that run this node's fibers (default
    /// `THREADWIRE_WORKERS`, else one per core). Started at the first
    /// [`Node::spawn`].
    pub fn workers(mut self, n: usize) -> Config {
        self.workers = Some(n.max(1));
        self
    }

    /// Largest frame accepted from a peer (default `THREADWIRE_MAX_FRAME`, else 1 GiB).
    pub fn max_frame(mut self, bytes: u64) -> Config {
        self.max_frame = Some(bytes);
        self
    }

    /// Install a log subscriber writing to stderr, filtered by
    /// `THREADWIRE_LOG` (default `warn`), unless the program has its own
    /// (default: yes).
    pub fn log(mut self, yes: bool) -> Config {
        self.log = yes;
        self
    }

    /// Joins the job; the calling thread becomes thread 0 of this node.
    pub fn init(self) -> Result<Endpoint, InitError> {
        if self.log {
            let filter = tracing_subscriber::EnvFilter::try_from_env(crate::env::LOG)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .try_init();
        }
        if INITIALIZED.swap(true, Ordering::SeqCst) {
            return Err(InitError::new(InitErrorKind::AlreadyInitialized));
        }
        let result = self.init_inner();
        if result.is_err() {
            INITIALIZED.store(false, Ordering::SeqCst);
        }
        result
    }

    /// The settings from this configuration, the environment and the
    /// defaults, in that order.
    fn settings(&self) -> Result<Settings, InitError> {
        fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
            std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
        }
        let max_frame = self
            .max_frame
            .or_else(|| var(crate::env::MAX_FRAME))
            .unwrap_or(DEFAULT_MAX_FRAME);
        let channel = match self.channel {
            Some(c) => c,
            None => match std::env::var(crate::env::CHANNEL) {
                Ok(v) => v.parse().map_err(|e: String| {
                    InitError::new(InitErrorKind::Setting {
                        name: crate::env::CHANNEL,
                        why: e,
                    })
                })?,
                Err(_) => ChannelChoice::Auto,
            },
        };
        let mut shm = ShmConfig::new(max_frame);
        if let Some(on) = var::<u8>(crate::env::SHM_CMA) {
            shm.cma = on != 0;
        }
        if let Some(min) = var(crate::env::SHM_CMA_MIN) {
            shm.cma_min = min;
        }
        if let Some(chunk) = var(crate::env::SHM_CHUNK) {
            shm.chunk = chunk;
        }
        Ok(Settings {
            max_frame,
            workers: self.workers.or_else(|| var(crate::env::WORKERS)),
            channel,
            shm,
        })
    }

    fn init_inner(self) -> Result<Endpoint, InitError> {
        let settings = self.settings()?;
        let comm = self.progress_thread.unwrap_or_else(|| {
            std::env::var(crate::env::PROGRESS)
                .map(|v| v == "thread")
                .unwrap_or(false)
        });
        let shared = match crate::env::JobEnv::from_env() {
            Ok(env) => bootstrap(&env, settings)?,
            Err(crate::env::EnvError::NotLaunched) if self.standalone => {
                let driver = Driver::new(None, None)?;
                Arc::new(NodeShared::new(
                    0,
                    1,
                    0,
                    ProgressEngine::new(driver)?,
                    None,
                    settings,
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let node = Node { shared };
        if comm {
            node.start_comm_thread();
        }
        node.endpoint()
    }
}

/// Joins the job this process was launched into; the calling thread becomes
/// thread 0 of this node. Equivalent to `Config::new().init()`.
pub fn init() -> Result<Endpoint, InitError> {
    Config::new().init()
}

impl NodeShared {
    /// The node's counters: the sum over its mailboxes.
    pub(crate) fn stats(&self) -> Stats {
        let mut total = Stats::default();
        self.mailboxes.for_each(|m| m.counters.add_to(&mut total));
        total
    }

    /// The node's fiber scheduler, started on first use.
    fn scheduler(self: &Arc<Self>) -> &Scheduler {
        self.scheduler.get_or_init(|| {
            let mut builder = Scheduler::builder()
                .name(format!("n{}-worker", self.id))
                .idle(Arc::new(crate::progress::WorkerIdle(Arc::downgrade(self))));
            if let Some(n) = self.workers {
                builder = builder.workers(n);
            }
            builder
                .build()
                .expect("the OS refused to start the fiber workers")
        })
    }

    fn new(
        id: u32,
        nodes: u32,
        job_id: u64,
        engine: ProgressEngine,
        listen: Option<SocketAddr>,
        settings: Settings,
    ) -> NodeShared {
        NodeShared {
            scheduler: OnceLock::new(),
            workers: settings.workers,
            id,
            nodes,
            job_id,
            mailboxes: MailboxTable::new(),
            next_thread: AtomicU32::new(0),
            peers: (0..nodes).map(|_| Peer::new()).collect(),
            control: OnceLock::new(),
            engine,
            channel_choice: settings.channel,
            shm_config: settings.shm,
            shm_peers: AtomicUsize::new(0),
            max_frame: settings.max_frame,
            finalized: AtomicBool::new(false),
            failures: AtomicU64::new(0),
            listen,
            subscribers: Mutex::new(Vec::new()),
            comm_stop: AtomicBool::new(false),
            comm_thread: Mutex::new(None),
        }
    }

    /// Handles one frame from `peer`; an error is a protocol violation.
    pub(crate) fn on_frame(&self, peer: u32, frame: Frame) -> Result<(), String> {
        let h = frame.header;
        match h.kind {
            FrameKind::Data => {
                let Some(mailbox) = self.mailboxes.get(h.dest_thread) else {
                    return Err(format!(
                        "message for thread {} beyond the limit of {MAX_THREADS}",
                        h.dest_thread
                    ));
                };
                let payload = Payload::from_wire(h.format, frame.payload);
                mailbox.deliver(remote_message(peer, h.source_thread, h.tag, payload));
                Ok(())
            }
            FrameKind::Bye => {
                self.lose_peer(peer, LossCause::Finished);
                Ok(())
            }
            FrameKind::Shm => self.on_shm_setup(peer, frame),
            FrameKind::Doorbell => Ok(()),
            FrameKind::Control => Err("control frame on a peer connection".into()),
        }
    }

    /// Records that `peer` is gone (first cause wins), fails what waits on
    /// it and tells subscribers.
    pub(crate) fn lose_peer(&self, peer: u32, cause: LossCause) {
        let p = &self.peers[peer as usize];
        let lost = PeerLost { node: peer, cause };
        if !p.set_lost(lost.clone()) {
            return;
        }
        if let LossCause::Failed(why) = &lost.cause {
            tracing::warn!("n{}: lost node n{peer}: {why}", self.id);
            self.failures.fetch_add(1, Ordering::SeqCst);
            if let Some(c) = p.tcp() {
                c.close();
            }
        }
        self.mailboxes.for_each(|m| m.fail_for(&lost));
        let subscribers = lock(&self.subscribers).clone();
        for s in subscribers {
            s(&lost);
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
        for peer in 0..self.nodes {
            if peer != self.id {
                self.lose_peer(peer, LossCause::Failed("the launcher is gone".into()));
            }
        }
    }

    pub(crate) fn next_thread(&self) -> u32 {
        self.next_thread.fetch_add(1, Ordering::Relaxed)
    }
}

/// Joins the job described by `env`: rendezvous, then a full mesh of
/// authenticated connections (node i connects to every j < i and accepts
/// every j > i).
fn bootstrap(env: &crate::env::JobEnv, settings: Settings) -> Result<Arc<NodeShared>, InitError> {
    let creds = Credentials {
        job_id: env.job_id,
        secret: env.secret,
    };
    let listener = TcpListener::bind(SocketAddr::new(env.bind, 0))?;
    let my_addr = listener.local_addr()?;
    let rv = env.rendezvous;
    let rv_err = |e: Box<dyn std::error::Error + Send + Sync>| {
        InitError::new(InitErrorKind::Rendezvous {
            addr: rv,
            source: e,
        })
    };

    let (_, mut control) =
        handshake::connect(rv, &creds, env.node, CONNECT_TIMEOUT).map_err(|e| rv_err(e.into()))?;
    protocol::write_control(
        &mut control,
        &Control::Register {
            addr: my_addr.to_string(),
        },
    )
    .map_err(|e| rv_err(e.into()))?;
    let addrs = match protocol::read_control(&mut control).map_err(|e| rv_err(e.into()))? {
        Some(Control::Directory { addrs }) if addrs.len() == env.nodes as usize => addrs,
        other => {
            return Err(rv_err(
                format!("expected the directory, got {other:?}").into(),
            ))
        }
    };

    let driver = Driver::new(Some(listener), Some(creds.clone()))?;
    let engine = ProgressEngine::new(driver)?;
    let shared = Arc::new(NodeShared::new(
        env.node,
        env.nodes,
        env.job_id,
        engine,
        Some(my_addr),
        settings,
    ));
    let max_frame = shared.max_frame;
    {
        let driver = shared.engine.lock_driver();
        for (j, addr) in addrs.iter().enumerate().take(env.node as usize) {
            let connect_err = |e: Box<dyn std::error::Error + Send + Sync>| {
                InitError::new(InitErrorKind::Connect {
                    node: j as u32,
                    addr: addr.clone(),
                    source: e,
                })
            };
            let sock: SocketAddr = addr
                .parse()
                .map_err(|e: std::net::AddrParseError| connect_err(e.into()))?;
            let (peer, stream) = handshake::connect(sock, &creds, env.node, CONNECT_TIMEOUT)
                .map_err(|e| connect_err(e.into()))?;
            if peer != j as u32 {
                return Err(connect_err(format!("answered as node n{peer}").into()));
            }
            let mut c = TcpChannel::new(stream, max_frame)?;
            driver.register_channel(&mut c, Tokens::peer(peer))?;
            shared.peers[j].set_tcp(Channel::Tcp(c));
            shared.offer_shm(peer);
        }
        control.set_nonblocking(true)?;
        let mut c = TcpChannel::new(control, protocol::MAX_CONTROL)?;
        driver.register_channel(&mut c, Tokens::CONTROL)?;
        let _ = shared.control.set(Channel::Tcp(c));
    }
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    while !shared
        .peers
        .iter()
        .enumerate()
        .all(|(j, p)| j as u32 == env.node || (p.has_tcp() && p.ready()) || p.lost().is_some())
    {
        if Instant::now() > deadline {
            return Err(InitError::new(InitErrorKind::PeersTimedOut(
                CONNECT_TIMEOUT,
            )));
        }
        shared
            .engine
            .lock_driver()
            .poll(&shared, Some(Duration::from_millis(50)));
    }
    // Only a failed peer fails the join. A peer may already have said
    // goodbye: one with nothing to do with this node can connect, do its
    // work with the others and finalize while this node is still joining.
    let failed = shared
        .peers
        .iter()
        .filter_map(|p| p.lost())
        .find(|l| matches!(l.cause, LossCause::Failed(_)));
    if let Some(lost) = failed {
        return Err(InitError::new(InitErrorKind::Connect {
            node: lost.node,
            addr: addrs[lost.node as usize].clone(),
            source: lost.to_string().into(),
        }));
    }
    if shared.channel_choice == ChannelChoice::Shm {
        let tcp = shared.peers.iter().enumerate().find_map(|(j, p)| {
            let why = p.tcp_reason()?;
            Some((j as u32, why))
        });
        if let Some((node, why)) = tcp {
            return Err(InitError::new(InitErrorKind::NoSharedMemory { node, why }));
        }
    }
    let routes = shared
        .peers
        .iter()
        .enumerate()
        .map(|(j, p)| match j as u32 == env.node {
            true => "-".to_string(),
            false => p.route().to_string(),
        })
        .collect();
    if let Some(control) = shared.control.get() {
        let (h, p) = Control::Channels { routes }.encode();
        let _ = control.send(&h, p);
    }
    Ok(shared)
}

impl Node {
    /// This node's number.
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// Nodes in the job.
    pub fn nodes(&self) -> u32 {
        self.shared.nodes
    }

    /// The job id, as in `THREADWIRE_JOB`.
    pub fn job_id(&self) -> u64 {
        self.shared.job_id
    }

    /// The address this node accepts peer connections on (`None` in a
    /// standalone job).
    pub fn listen_address(&self) -> Option<SocketAddr> {
        self.shared.listen
    }

    /// Makes the calling OS thread an endpoint with the next thread number.
    pub fn endpoint(&self) -> Result<Endpoint, InitError> {
        let thread = self.shared.next_thread();
        Endpoint::bind(self.clone(), thread)
    }

    /// Starts a fiber with an endpoint of its own and returns its handle.
    /// Fibers are cheap (a pooled stack, no system call): a node runs
    /// thousands on its workers (one per core by default, see
    /// [`Config::workers`]). A fiber that waits — `recv`, `wait`, `probe`,
    /// a [`threadwire_fiber::sync`] primitive — parks only itself; its worker runs
    /// other fibers meanwhile and, with nothing to run, drives the node's
    /// progress. Code that blocks in the kernel belongs in
    /// [`threadwire_fiber::bound`] or on an OS thread ([`spawn_os`](Self::spawn_os)).
    /// Thread numbers are given in the order of the spawn calls, so a
    /// program that spawns deterministically has the same addresses on
    /// every run.
    pub fn spawn<F, T>(&self, f: F) -> ThreadHandle<T>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn_with(Priority::NORMAL, f)
    }

    /// Like [`spawn`](Self::spawn), at a given priority (16 levels; higher
    /// runs first on its worker).
    pub fn spawn_with<F, T>(&self, priority: Priority, f: F) -> ThreadHandle<T>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        let (address, body) = self.endpoint_body(f);
        let fiber = self
            .shared
            .scheduler()
            .handle()
            .fiber()
            .priority(priority)
            .name(address.to_string())
            .spawn(body);
        ThreadHandle {
            address,
            inner: Joinable::Fiber(fiber),
        }
    }

    /// Starts an OS thread with an endpoint of its own: for code that
    /// blocks in the kernel or must not share a worker.
    pub fn spawn_os<F, T>(&self, f: F) -> ThreadHandle<T>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        let (address, body) = self.endpoint_body(f);
        let inner = std::thread::Builder::new()
            .name(address.to_string())
            .spawn(body)
            .expect("the OS refused to start a thread");
        ThreadHandle {
            address,
            inner: Joinable::Os(inner),
        }
    }

    /// A fresh thread number, and `f` wrapped to run as its endpoint on
    /// whatever thread (fiber or OS) runs it.
    fn endpoint_body<F, T>(&self, f: F) -> (Address, impl FnOnce() -> T + Send + 'static)
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        let node = self.clone();
        let thread = self.shared.next_thread();
        let body = move || {
            let ep = Endpoint::bind(node, thread).expect("a fresh thread number is free");
            f(ep)
        };
        (Address::new(self.shared.id, thread), body)
    }

    /// Counters of this node so far.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Nodes lost so far, with the cause.
    pub fn lost_peers(&self) -> Vec<PeerLost> {
        self.shared
            .peers
            .iter()
            .filter_map(|p| p.lost().cloned())
            .collect()
    }

    /// Calls `f` (on an arbitrary runtime thread, briefly) whenever a peer
    /// node is lost or finishes.
    pub fn on_peer_lost(&self, f: impl Fn(&PeerLost) + Send + Sync + 'static) {
        lock(&self.shared.subscribers).push(Arc::new(f));
    }

    fn start_comm_thread(&self) {
        let node = self.shared.clone();
        self.shared.engine.set_comm_thread(true);
        let handle = std::thread::Builder::new()
            .name(format!("n{}-progress", self.shared.id))
            .spawn(move || node.engine.run_comm_thread(&node, &node.comm_stop))
            .expect("the OS refused to start a thread");
        *lock(&self.shared.comm_thread) = Some(handle);
    }

    /// Leaves the job in order: flushes every queued frame, says goodbye to
    /// every peer, waits until every peer has said goodbye or is lost, and
    /// reports this node's counters to the launcher. Operations after it
    /// fail. Called by dropping thread 0's [`Endpoint`] as well.
    pub fn finalize(&self) {
        let s = &*self.shared;
        if s.finalized.swap(true, Ordering::AcqRel) {
            return;
        }
        for (j, p) in s.peers.iter().enumerate() {
            let failed = matches!(
                p.lost(),
                Some(PeerLost {
                    cause: LossCause::Failed(_),
                    ..
                })
            );
            if p.has_tcp() && !failed {
                let bye = FrameHeader::control(FrameKind::Bye, 0, 0);
                if let Err((e, _)) = p.send(&bye, Payload::from_vec(Vec::new())) {
                    s.lose_peer(j as u32, LossCause::Failed(e.to_string()));
                }
            }
        }
        // Quiet: every peer has said goodbye (and our own goodbye has left)
        // or failed.
        let all_quiet = || {
            s.peers.iter().enumerate().all(|(j, p)| match p.lost() {
                _ if j as u32 == s.id => true,
                None => false,
                Some(PeerLost {
                    cause: LossCause::Failed(_),
                    ..
                }) => true,
                Some(_) => p.queued_bytes() == 0,
            })
        };
        s.engine.wait_polling(s, Origin::Anywhere, all_quiet);
        if let Some(control) = s.control.get() {
            let (h, p) = Control::Stats(s.stats()).encode();
            let _ = control.send(&h, p);
            let _ = control.send(
                &FrameHeader::control(FrameKind::Bye, 0, 0),
                Payload::from_vec(Vec::new()),
            );
            s.engine.wait_polling(s, Origin::Anywhere, || {
                control.queued_bytes() == 0 || control.flush().is_err()
            });
        }
        s.comm_stop.store(true, Ordering::Release);
        s.engine.wake();
        if let Some(h) = lock(&s.comm_thread).take() {
            let _ = h.join();
        }
        for p in s.peers.iter() {
            if let Some(c) = p.tcp() {
                c.close();
            }
        }
    }
}

/// A thread started with [`Node::spawn`].
#[derive(Debug)]
pub struct ThreadHandle<T> {
    address: Address,
    inner: Joinable<T>,
}

#[derive(Debug)]
enum Joinable<T> {
    Fiber(FiberHandle<T>),
    Os(JoinHandle<T>),
}

impl<T> ThreadHandle<T> {
    /// The thread's address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// Waits for the thread (from a fiber or an OS thread); `Err` carries
    /// its panic's message.
    pub fn join(self) -> Result<T, JoinError> {
        match self.inner {
            Joinable::Fiber(f) => f.join(),
            Joinable::Os(t) => t.join().map_err(|panic| JoinError::from_panic(&*panic)),
        }
    }
}
