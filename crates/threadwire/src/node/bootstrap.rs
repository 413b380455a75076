//! Joining the job: settings, the launcher's rendezvous, and the
//! connections to the other nodes, made on first use.
//!
//! 1. Connect to the launcher's rendezvous (authenticated like every
//!    connection), register this node's listening address, and read the
//!    directory of every node's address, then the job's host table. A
//!    node that joins a running job (`vm`) takes the nodes the directory
//!    marks gone as lost from the start.
//! 2. Arm the dialer with the directory: a founding node connects to
//!    another the first time one sends to the other ([`crate::peer::dial`]),
//!    so `init` makes no connection and costs the same at any job size.
//!    The liveness thread starts first, so that every connection carries
//!    heartbeats as soon as it exists (`progress::liveness`, step 1).
//! 3. A node joining a running job connects on first use too: it knows
//!    the addresses of the directory it was given, and asks the launcher
//!    for those of nodes that join after it, as founders ask for all
//!    (control step 11). A batch of N joiners makes no connection until
//!    its nodes talk (it made N·(N−1)/2 plus N times the running nodes
//!    before, each at start: `pvm_spawn` of 16 took 1.3–1.4× PVM's).
//! 4. Tell the launcher the routes so far (the joiner's), and, with a
//!    peer timeout, send it the first heartbeat (control protocol,
//!    step 7); a node's routes at its end follow at finalize.

use super::{Node, NodeShared};
use crate::config::{Config, Settings};
use crate::env::{EnvError, JobEnv};
use crate::error::{Failure, InitError, InitErrorKind, LossCause};
use crate::control::{self as protocol, Control};
use crate::progress::{Driver, ProgressEngine, Tokens};
use crate::peer::{AddressBook, LauncherBook};
use crate::router::{JobSize, Router};
use crate::Endpoint;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use threadwire_transport::handshake::{self, Credentials};
use threadwire_transport::{Channel, TcpChannel};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

static INITIALIZED: AtomicBool = AtomicBool::new(false);

impl Config {
    /// Joins the job; the calling thread becomes thread 0 of this node.
    pub fn init(self) -> Result<Endpoint, InitError> {
        if self.log {
            install_log_subscriber();
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

    fn init_inner(self) -> Result<Endpoint, InitError> {
        let settings = self.settings()?;
        if settings.tune_allocator {
            crate::allocator::tune();
        }
        let comm = self.progress_thread.unwrap_or_else(|| {
            std::env::var(crate::env::PROGRESS)
                .map(|v| v == "thread")
                .unwrap_or(false)
        });
        let launched = JobEnv::from_env();
        // Not by our launcher: perhaps by a process manager (`managed`).
        let pmi = match &launched {
            // PMI-1's variables, then PMIx's (`pmi::Manager::from_env`).
            Err(EnvError::NotLaunched) => crate::pmi::Manager::from_env(crate::pmi::DEFAULT_TIMEOUT)
                .map_err(|e| InitError::new(InitErrorKind::Pmi(e.to_string())))?,
            _ => None,
        };
        let shared = match (launched, pmi) {
            (Ok(env), _) => bootstrap(&env, settings)?,
            (Err(_), Some(pmi)) => super::managed::bootstrap(pmi, settings)?,
            (Err(EnvError::NotLaunched), None) if self.standalone => {
                let engine = ProgressEngine::new(Driver::new(None, None)?)?;
                let router = Router::new(0, JobSize::fixed(1), 0, &settings);
                let shared = Arc::new(NodeShared::new(router, engine, None, settings.workers));
                shared.router.am.bind(&shared);
                shared
            }
            (Err(e), None) => return Err(e.into()),
        };
        // Waiters on a crowded host yield from their first round
        // (`threadwire_fiber::spin`, rule 3).
        threadwire_fiber::set_crowded(shared.router.nodes_on_host() > super::host_cores());
        let node = Node { shared };
        if comm {
            node.start_comm_thread()?;
        }
        node.endpoint()
    }
}

/// A subscriber writing to stderr, filtered by `THREADWIRE_LOG` (default
/// `warn`), unless the program installed one ([`Config::log`]).
fn install_log_subscriber() {
    let filter = tracing_subscriber::EnvFilter::try_from_env(crate::env::LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Joins the job this process was launched into; the calling thread becomes
/// thread 0 of this node. Equivalent to `Config::new().init()`.
pub fn init() -> Result<Endpoint, InitError> {
    Config::new().init()
}

/// A node started by a launcher on this host dies with it: the launcher
/// starts its nodes with `posix_spawn`, which cannot set the parent-death
/// signal, and names itself in `THREADWIRE_LAUNCHER_PID` instead. Fails if
/// the launcher has died already.
fn die_with_launcher() -> Result<(), InitError> {
    let Some(pid) = std::env::var(crate::env::LAUNCHER_PID)
        .ok()
        .and_then(|p| p.parse::<libc::pid_t>().ok())
    else {
        return Ok(());
    };
    // SAFETY: prctl and getppid take no pointers here.
    let parent = unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::getppid()
    };
    if parent != pid {
        return Err(InitError::new(InitErrorKind::LauncherGone(pid)));
    }
    Ok(())
}

/// A peer that goes while this node writes to it is a lost peer, not
/// this process's death: SIGPIPE is ignored, as every Rust program's
/// runtime does at start, unless the program has a handler of its own. C
/// programs (the C API, the PVM library) keep their default otherwise, and
/// a write to a connection a peer closed would kill them. A write to a
/// closed pipe then fails with `EPIPE` instead.
fn ignore_broken_pipes() {
    // SAFETY: sigaction with a null new action only reads the current one
    // into `old`; signal() installs SIG_IGN, which runs no code.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_DFL
        {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
}

/// Joins the job described by `env` (module docs, steps 1–4).
fn bootstrap(env: &JobEnv, settings: Settings) -> Result<Arc<NodeShared>, InitError> {
    die_with_launcher()?;
    ignore_broken_pipes();
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

    // Step 1.
    let (_, mut control) =
        handshake::connect(rv, &creds, env.node, CONNECT_TIMEOUT).map_err(|e| rv_err(e.into()))?;
    protocol::write_control(
        &mut control,
        &Control::Register {
            addr: my_addr.to_string(),
        },
    )
    .map_err(|e| rv_err(e.into()))?;
    let (addrs, gone, spread) = match protocol::read_control(&mut control).map_err(|e| rv_err(e.into()))? {
        // Addresses for a joining node; none for a founding one, which
        // asks for those it needs (control protocol, steps 2 and 11).
        Some(Control::Directory {
            addrs,
            gone,
            spread,
        }) if addrs.len() == env.nodes as usize || (addrs.is_empty() && !env.joins()) => {
            (addrs, gone, spread)
        }
        other => {
            return Err(rv_err(
                format!("expected the directory, got {other:?}").into(),
            ))
        }
    };

    // The host table follows the directory (control protocol, step 2).
    let hosts = match protocol::read_control(&mut control).map_err(|e| rv_err(e.into()))? {
        Some(Control::Hosts { hosts }) => hosts,
        other => {
            return Err(rv_err(
                format!("expected the host table, got {other:?}").into(),
            ))
        }
    };

    let driver = Driver::new(Some(listener), Some(creds.clone()))?;
    let engine = ProgressEngine::new(driver)?;
    let size = JobSize {
        nodes: env.nodes,
        founders: env.founders,
        capacity: env.max_nodes,
    };
    let router = Router::new(env.node, size, env.job_id, &settings);
    let shared = Arc::new(NodeShared::new(
        router,
        engine,
        Some(my_addr),
        settings.workers,
    ));
    shared.router.am.bind(&shared);
    crate::peer::start_udp(&shared.router, &shared.engine, my_addr.ip(), &creds)?;
    shared
        .router
        .notify
        .hosts_changed(&shared.router.mailboxes, env.node, hosts);
    // Step 2.
    let registry = shared.engine.lock_driver().registry().try_clone()?;
    let book = match env.joins() {
        true => LauncherBook::knowing(env.max_nodes, env.founders, spread, &addrs),
        false => LauncherBook::new(env.max_nodes, env.founders, spread),
    };
    let book = AddressBook::Launcher(book);
    shared
        .router
        .dialer
        .arm(Arc::downgrade(&shared), creds.clone(), book, registry);
    let peer_timeout = settings
        .peer_timeout
        .filter(|_| env.nodes > 1 || env.max_nodes > 1);
    if let Some(timeout) = peer_timeout {
        shared.liveness.start(Arc::downgrade(&shared), timeout)?;
    }
    let (router, engine) = (&shared.router, &shared.engine);
    // A node joining a running job: those gone before it came are lost
    // from the start (`vm`, step 4).
    for g in gone.iter().filter(|g| g.node < env.node) {
        let cause = match g.finished {
            true => LossCause::Finished,
            false => LossCause::Failed(Failure::ReportedByLauncher(g.cause.clone())),
        };
        router.record_gone(g.node, cause);
    }
    // Step 3: no connection is made here, a joining node's neither; the
    // control connection joins the engine.
    {
        let driver = engine.lock_driver();
        control.set_nonblocking(true)?;
        let mut c = TcpChannel::new(control, protocol::MAX_CONTROL)?;
        driver.register_channel(&mut c, Tokens::CONTROL)?;
        let _ = router.control.set(Channel::Tcp(Arc::new(c)));
    }
    // Step 4.
    if let Some(control) = router.control.get() {
        let (h, p) = Control::Channels {
            routes: router.routes(false),
        }
        .encode();
        let _ = control.send(&h, p);
        // The launcher watches this node from now on (control protocol,
        // step 7), even if it falls silent before its first tick.
        if let Some(timeout) = peer_timeout {
            let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
            let (h, p) = Control::Heartbeat { timeout_ms }.encode();
            let _ = control.send(&h, p);
        }
    }
    Ok(shared)
}
