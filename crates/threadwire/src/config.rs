//! How a node is configured: [`Config`] (the program's choices), the
//! environment (`THREADWIRE_*`, see [`crate::env`]) and the defaults, in
//! that order, resolved into [`Settings`] at init.

use crate::error::{InitError, InitErrorKind};
use std::str::FromStr;
use std::time::Duration;
use threadwire_transport::shm::ShmConfig;

/// Default largest frame accepted from a peer: 1 GiB.
pub const DEFAULT_MAX_FRAME: u64 = 1 << 30;
/// Default eager budget per peer node: 32 MiB.
pub const DEFAULT_EAGER_BUDGET: usize = 32 << 20;
/// Default peer timeout: a peer silent this long is lost (progress
/// engine, `liveness` module).
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(1);
/// Default longest eager message over TCP, and between nodes of one host
/// whose channel cannot read the sender's memory: 256 KiB.
const DEFAULT_EAGER_LIMIT: usize = 256 << 10;
/// Default longest eager message between nodes of one host that read
/// each other's memory: 16 KiB. Beyond it one cross-memory read into the
/// receive's buffer beats two copies through the ring
/// (PERFORMANCE-STUDIES.md, "The eager limits again").
const DEFAULT_EAGER_SHM: usize = 16 << 10;

/// How to join a job.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) standalone: bool,
    pub(crate) progress_thread: Option<bool>,
    workers: Option<usize>,
    max_frame: Option<u64>,
    channel: Option<ChannelChoice>,
    tune_allocator: Option<bool>,
    eager_budget: Option<usize>,
    peer_timeout: Option<Duration>,
    pub(crate) log: bool,
}

/// What a node is built with, from [`Config`] and the environment.
pub(crate) struct Settings {
    pub(crate) max_frame: u64,
    pub(crate) workers: Option<usize>,
    pub(crate) channel: ChannelChoice,
    pub(crate) shm: ShmConfig,
    pub(crate) tune_allocator: bool,
    pub(crate) eager_budget: usize,
    pub(crate) eager_shm: usize,
    pub(crate) eager_tcp: usize,
    /// `None`: silent peers are not looked for.
    pub(crate) peer_timeout: Option<Duration>,
    /// At most this many fiber handlers of active messages run at once.
    pub(crate) am_fibers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// The defaults: join the job the launcher describes.
    pub fn new() -> Config {
        Config {
            standalone: false,
            progress_thread: None,
            workers: None,
            max_frame: None,
            channel: None,
            tune_allocator: None,
            eager_budget: None,
            peer_timeout: None,
            log: false,
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
    /// `THREADWIRE_WORKERS`, else this node's share of its host's cores:
    /// the cores divided by the job's nodes on this host, rounded up, at
    /// least one). Started at the first [`Node::spawn`](crate::Node::spawn).
    pub fn workers(mut self, n: usize) -> Config {
        self.workers = Some(n.max(1));
        self
    }

    /// Let init keep large buffers in the C allocator's heaps instead of
    /// mapping and unmapping each one (default `THREADWIRE_MALLOC_TUNE`,
    /// else yes): a process-wide setting of glibc's `mallopt`, which the
    /// runtime's large messages and collectives need to run at memory
    /// speed rather than page-fault speed. What it sets, why, and what it
    /// costs in memory is in the crate's `allocator` notes, summed up in
    /// docs/PERFORMANCE.md; no effect off glibc.
    pub fn tune_allocator(mut self, yes: bool) -> Config {
        self.tune_allocator = Some(yes);
        self
    }

    /// Bytes of eager messages this node may hold per peer node — sent to
    /// it and not yet taken by a receive there — before further sends to
    /// it are announced and wait for their receive (default
    /// `THREADWIRE_EAGER_BUDGET`, else [`DEFAULT_EAGER_BUDGET`]). Bounds
    /// the memory a flood of sends costs both nodes; see the module docs
    /// of the runtime's rendezvous for which programs may then wait.
    ///
    /// ```no_run
    /// let node = threadwire::Config::new().eager_budget(8 << 20);
    /// let me = node.init()?;
    /// # Ok::<(), threadwire::InitError>(())
    /// ```
    pub fn eager_budget(mut self, bytes: usize) -> Config {
        self.eager_budget = Some(bytes);
        self
    }

    /// How long a peer node may send nothing before it is taken to be lost
    /// with [`Failure::Silent`](crate::Failure::Silent) (default
    /// `THREADWIRE_PEER_TIMEOUT` in milliseconds, else
    /// [`DEFAULT_PEER_TIMEOUT`]; zero: never). A stopped, hung or cut-off
    /// peer is found within this time. Every node answers for itself from
    /// a timer thread of its own, so a node whose threads all compute
    /// outside the runtime is not taken for lost; one whose process is
    /// stopped (a debugger too), or that gets no CPU for this long, is.
    /// The protocol, its limits and its cost (a timer thread per node) are
    /// in the progress engine's `liveness` module.
    pub fn peer_timeout(mut self, timeout: Duration) -> Config {
        self.peer_timeout = Some(timeout);
        self
    }

    /// Largest frame accepted from a peer (default `THREADWIRE_MAX_FRAME`, else 1 GiB).
    pub fn max_frame(mut self, bytes: u64) -> Config {
        self.max_frame = Some(bytes);
        self
    }

    /// Install a global log subscriber writing to stderr, filtered by
    /// `THREADWIRE_LOG` (default `warn`), unless the program has one
    /// already (default: no). A library does not install one on its own:
    /// the program decides where its log goes, so this is for node
    /// programs that want the runtime's warnings (refused connections,
    /// lost peers) without setting up `tracing` themselves.
    pub fn log(mut self, yes: bool) -> Config {
        self.log = yes;
        self
    }

    /// The settings from this configuration, the environment and the
    /// defaults, in that order.
    pub(crate) fn settings(&self) -> Result<Settings, InitError> {
        fn var<T: FromStr>(name: &str) -> Option<T> {
            std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
        }
        let max_frame = self
            .max_frame
            .or_else(|| var(crate::env::MAX_FRAME))
            .unwrap_or(DEFAULT_MAX_FRAME);
        let channel = match self.channel {
            Some(c) => c,
            None => match std::env::var(crate::env::CHANNEL) {
                Ok(v) => v.parse().map_err(|source| {
                    InitError::new(InitErrorKind::Setting {
                        name: crate::env::CHANNEL,
                        source,
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
            tune_allocator: self
                .tune_allocator
                .or_else(|| var::<u8>(crate::env::MALLOC_TUNE).map(|v| v != 0))
                .unwrap_or(true),
            eager_budget: self
                .eager_budget
                .or_else(|| var(crate::env::EAGER_BUDGET))
                .unwrap_or(DEFAULT_EAGER_BUDGET),
            eager_shm: var(crate::env::EAGER_SHM).unwrap_or(DEFAULT_EAGER_SHM),
            eager_tcp: var(crate::env::EAGER_TCP).unwrap_or(DEFAULT_EAGER_LIMIT),
            peer_timeout: Some(
                self.peer_timeout
                    .or_else(|| var(crate::env::PEER_TIMEOUT).map(Duration::from_millis))
                    .unwrap_or(DEFAULT_PEER_TIMEOUT),
            )
            .filter(|t| !t.is_zero()),
            am_fibers: var(crate::env::AM_FIBERS)
                .unwrap_or(crate::am::DEFAULT_FIBERS)
                .max(1),
        })
    }
}

/// Which channel nodes on one host use between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChannelChoice {
    /// Shared memory between nodes on one host, TCP between hosts.
    #[default]
    Auto,
    /// TCP everywhere (for measurement).
    Tcp,
    /// Shared memory; `init` fails if a peer cannot share memory.
    Shm,
    /// The reliable UDP channel between every pair, nodes of one host
    /// included (each pair's TCP connection sets it up and tells of the
    /// peer's death); shared-memory collectives' host stage off, as with
    /// `Tcp`.
    Udp,
}

/// A channel name that is not `auto`, `tcp`, `shm` or `udp`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown channel {name:?} (auto, tcp, shm or udp)")]
pub struct ParseChannelChoiceError {
    name: String,
}

impl FromStr for ChannelChoice {
    type Err = ParseChannelChoiceError;

    fn from_str(s: &str) -> Result<ChannelChoice, ParseChannelChoiceError> {
        match s.trim() {
            "auto" | "" => Ok(ChannelChoice::Auto),
            "tcp" => Ok(ChannelChoice::Tcp),
            "shm" => Ok(ChannelChoice::Shm),
            "udp" => Ok(ChannelChoice::Udp),
            other => Err(ParseChannelChoiceError {
                name: other.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program's choice wins over the environment; zero turns the
    /// liveness protocol off.
    #[test]
    fn peer_timeout_of_zero_is_off() {
        let off = Config::new().peer_timeout(Duration::ZERO).settings();
        assert_eq!(off.map(|s| s.peer_timeout).ok(), Some(None));
        let short = Duration::from_millis(300);
        let on = Config::new().peer_timeout(short).settings();
        assert_eq!(on.map(|s| s.peer_timeout).ok(), Some(Some(short)));
    }
}
