//! A node: this process's membership in its job, shared by all its threads.
//!
//! - [`bootstrap`]: joining the job ([`Config::init`](crate::Config::init)).
//! - this module: the [`Node`] handle, the node's fiber workers, its
//!   optional communication thread and finalization.
//! - [`spawn`]: threads with endpoints of their own.
//!
//! Frames from other nodes never come here: the progress engine hands
//! them to the [`Router`], which the node owns beside the engine.

mod bootstrap;
mod managed;
mod spawn;

pub use bootstrap::init;
pub use spawn::ThreadHandle;

use crate::error::{Failure, InitError, LossCause, PeerLost, SpawnError};
use crate::control::Control;
use crate::lock;
use crate::mailbox::MAX_THREADS;
use crate::progress::{Liveness, Origin, ProgressEngine, Watched, IDLE_TIMEOUT};
use crate::router::Router;
use crate::{Endpoint, Stats};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;
use threadwire_fiber::{Idle, Parker, Scheduler};
use threadwire_wire::{FrameHeader, FrameKind, Payload};

pub(crate) struct NodeShared {
    /// First, so that it stops its workers while the engine still exists.
    scheduler: OnceLock<Scheduler>,
    /// Held while the scheduler is being built, so that only one is.
    scheduler_init: Mutex<()>,
    workers: Option<usize>,
    pub(crate) router: Router,
    pub(crate) engine: ProgressEngine,
    /// The group ids each thread's groups use.
    pub(crate) contexts: crate::group::ContextTable,
    /// The per-node stage's shared structures of this node's groups.
    pub(crate) node_teams: crate::group::NodeTeams,
    listen: Option<SocketAddr>,
    comm_stop: AtomicBool,
    comm_thread: Mutex<Option<JoinHandle<()>>>,
    /// The timer thread that finds silent peers (`progress::liveness`).
    liveness: Liveness,
}

/// A handle to this process's node: cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Node {
    pub(crate) shared: Arc<NodeShared>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.shared.router;
        write!(f, "Node(n{} of {})", r.id, r.nodes())
    }
}

impl NodeShared {
    fn new(
        router: Router,
        engine: ProgressEngine,
        listen: Option<SocketAddr>,
        workers: Option<usize>,
    ) -> NodeShared {
        NodeShared {
            scheduler: OnceLock::new(),
            scheduler_init: Mutex::new(()),
            workers,
            router,
            engine,
            contexts: Default::default(),
            node_teams: Default::default(),
            listen,
            comm_stop: AtomicBool::new(false),
            comm_thread: Mutex::new(None),
            liveness: Liveness::default(),
        }
    }

    /// The node's fiber scheduler, started on first use.
    fn scheduler(self: &Arc<Self>) -> std::io::Result<&Scheduler> {
        if let Some(s) = self.scheduler.get() {
            return Ok(s);
        }
        let _building = lock(&self.scheduler_init);
        if let Some(s) = self.scheduler.get() {
            return Ok(s);
        }
        let mut builder = Scheduler::builder()
            .name(format!("n{}-worker", self.router.id))
            .idle(Arc::new(WorkerIdle(Arc::downgrade(self))));
        let workers = self
            .workers
            .unwrap_or_else(|| default_workers(self.router.nodes_on_host()));
        builder = builder.workers(workers);
        let scheduler = builder.build()?;
        Ok(self.scheduler.get_or_init(|| scheduler))
    }

    /// The next thread number; numbers are never given twice, so once they
    /// run out they stay out.
    fn next_thread(&self) -> Result<u32, SpawnError> {
        self.router
            .threads
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < MAX_THREADS).then_some(n + 1)
            })
            .map_err(|_| SpawnError::ThreadsExhausted { max: MAX_THREADS })
    }
}

impl Watched for NodeShared {
    fn router(&self) -> &Router {
        &self.router
    }

    fn engine(&self) -> &ProgressEngine {
        &self.engine
    }
}

/// This node's share of the host's cores when `nodes` nodes of the job
/// share it, rounded up: as many worker threads as cores in all. A worker
/// per core in every node oversubscribed the host, and the extra workers'
/// waits held off the threads they waited for (measured, 2 cores, `bench
/// coll` 2x8 barrier: 19.8 µs with two workers a node, 12.3 µs with one;
/// again when the count came from the shared-memory channels made so far,
/// which since connections are made on first use are none at a node's
/// first spawn: 2x2 barrier 9–15 µs against 0.8–1.0, 2x8 10–20 against
/// 1.9).
fn default_workers(nodes: usize) -> usize {
    host_cores().div_ceil(nodes.max(1))
}

/// The cores this process may run on.
pub(crate) fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What the node's fiber workers do when they have nothing to run: drive
/// this node's progress engine (progress engine, step 6).
struct WorkerIdle(Weak<NodeShared>);

impl Idle for WorkerIdle {
    fn poll(&self) -> bool {
        match self.0.upgrade() {
            Some(node) => node.engine.idle_poll(&node.router),
            None => false,
        }
    }

    fn sleep(&self, parker: &Parker, timeout: Option<Duration>) {
        match self.0.upgrade() {
            Some(node) => node.engine.idle_sleep(&node.router, parker, timeout),
            // The node is going away; its workers are being stopped.
            None => parker.park_timeout(timeout.unwrap_or(IDLE_TIMEOUT)),
        }
    }
}

impl Node {
    /// This node's number.
    pub fn id(&self) -> u32 {
        self.shared.router.id
    }

    /// Node numbers given out so far: the nodes the job started with and
    /// those that joined it since ([`Endpoint::add_nodes`]), gone ones
    /// included. Nodes are numbered `0..nodes()`.
    pub fn nodes(&self) -> u32 {
        self.shared.router.nodes()
    }

    /// The job id, as in `THREADWIRE_JOB`.
    pub fn job_id(&self) -> u64 {
        self.shared.router.job_id
    }

    /// The address this node accepts peer connections on (`None` in a
    /// standalone job).
    pub fn listen_address(&self) -> Option<SocketAddr> {
        self.shared.listen
    }

    /// Makes the calling OS thread an endpoint with the next thread number.
    /// Fails if the thread is an endpoint already, or if the node's
    /// 65,536 thread numbers are all taken.
    pub fn endpoint(&self) -> Result<Endpoint, InitError> {
        let thread = self.shared.next_thread()?;
        Endpoint::bind(self.clone(), thread)
    }

    /// Thread numbers this node has given out so far: its threads,
    /// finished ones included.
    pub fn threads_started(&self) -> u32 {
        self.shared.router.threads.load(Ordering::Relaxed)
    }

    /// Counters of this node so far.
    pub fn stats(&self) -> Stats {
        self.shared.router.stats()
    }

    /// Nodes lost so far, with the cause.
    pub fn lost_peers(&self) -> Vec<PeerLost> {
        self.shared
            .router
            .peers
            .iter()
            .filter_map(|p| p.lost().cloned())
            .collect()
    }

    /// Calls `f` (on an arbitrary runtime thread, briefly) whenever a peer
    /// node is lost or finishes. To be told by a message in a thread's
    /// mailbox instead, see [`Endpoint::notify`].
    pub fn on_peer_lost(&self, f: impl Fn(&PeerLost) + Send + Sync + 'static) {
        self.shared.router.subscribe(Arc::new(f));
    }

    fn start_comm_thread(&self) -> std::io::Result<()> {
        let node = self.shared.clone();
        self.shared.engine.set_comm_thread(true);
        let handle = std::thread::Builder::new()
            .name(format!("n{}-progress", self.shared.router.id))
            .spawn(move || node.engine.run_comm_thread(&node.router, &node.comm_stop))?;
        *lock(&self.shared.comm_thread) = Some(handle);
        Ok(())
    }

    /// Leaves the job in order: flushes every queued frame, says goodbye to
    /// every peer, waits until every peer has said goodbye or is lost, and
    /// reports this node's counters to the launcher. Operations after it
    /// fail. Called by dropping thread 0's [`Endpoint`] as well.
    pub fn finalize(&self) {
        let node = &*self.shared;
        let s = &node.router;
        if s.finalized.swap(true, Ordering::AcqRel) {
            return;
        }
        let peers = &s.peers[..s.nodes() as usize];
        // Connections under way settle first, so that what waits for them
        // leaves, and the goodbye goes after it (`peer::dial`).
        node.engine
            .wait_polling(s, Origin::Anywhere, || peers.iter().all(|p| !p.linking()));
        // The multicast stream's last frames are in every live receiver's
        // hands before the goodbye, which travels apart from them and ends
        // the stream there (`peer::multicast`, step 6).
        if let Some(m) = s.multicast.get() {
            node.engine
                .wait_polling(s, Origin::Anywhere, || m.channel.queued_bytes() == 0);
            let counters = crate::peer::multicast::counters(&m.channel.stats());
            tracing::info!("n{}: multicast stream: {counters}", s.id);
        }
        for (j, p) in peers.iter().enumerate() {
            let failed = matches!(
                p.lost(),
                Some(PeerLost {
                    cause: LossCause::Failed(_),
                    ..
                })
            );
            if p.has_tcp() && !failed {
                if let Err(e) = p.say_goodbye() {
                    s.lose_peer(j as u32, LossCause::Failed(Failure::Channel(e.to_string())));
                }
            }
        }
        // Quiet: every peer has said goodbye (and our own goodbye has left)
        // or failed.
        let all_quiet = || {
            // A pair connected since (the peer dialed this node while it
            // finalized) gets this node's goodbye too, or both would wait
            // for the other's.
            for p in peers.iter().filter(|p| p.has_tcp() && p.lost().is_none()) {
                let _ = p.say_goodbye();
            }
            peers.iter().enumerate().all(|(j, p)| match p.lost() {
                _ if j as u32 == s.id => true,
                // A node still joining: nothing of ours is queued for it.
                None if !p.has_tcp() => true,
                None => false,
                Some(PeerLost {
                    cause: LossCause::Failed(_),
                    ..
                }) => true,
                Some(_) => p.queued_bytes() == 0,
            })
        };
        node.engine.wait_polling(s, Origin::Anywhere, all_quiet);
        // Before the launcher's goodbye, which no heartbeat may follow.
        node.liveness.stop();
        if let Some(control) = s.control.get() {
            let (h, p) = Control::Channels {
                routes: s.routes(true),
            }
            .encode();
            let _ = control.send(&h, p);
            let (h, p) = Control::Stats(s.stats()).encode();
            let _ = control.send(&h, p);
            let _ = control.send(
                &FrameHeader::control(FrameKind::Bye, 0, 0),
                Payload::from_vec(Vec::new()),
            );
            node.engine.wait_polling(s, Origin::Anywhere, || {
                control.queued_bytes() == 0 || control.flush().is_err()
            });
        }
        s.am.pool.stop();
        node.comm_stop.store(true, Ordering::Release);
        node.engine.wake();
        if let Some(h) = lock(&node.comm_thread).take() {
            let _ = h.join();
        }
        for p in s.peers.iter() {
            if let Some(c) = p.tcp() {
                c.close();
            }
        }
        // Started by a process manager: leave it (`managed`, step 6).
        s.dialer.finish();
    }
}
