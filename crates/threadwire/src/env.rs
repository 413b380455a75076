//! The environment contract between the launcher and the nodes it starts.
//!
//! A node can start three ways, and `init` looks for them in this order:
//!
//! 1. Under `threadwire run` (or any launcher that honours this contract):
//!    the `THREADWIRE_*` variables of the first table; the node registers
//!    with the launcher's rendezvous (`control` module).
//! 2. Under a process manager speaking PMI-1 (MPICH's Hydra, Slurm's
//!    `srun --mpi=pmi2`): the `PMI_*` variables below.
//! 3. Under a PMIx server (Open MPI's `mpirun`): the `PMIX_*` variables
//!    below.
//!
//! Under a process manager a node exchanges its address and the job's id
//! and secret through the manager's key-value space and then runs as
//! under `threadwire run`, without a launcher (`node::managed` has the
//! steps). A program started none of these ways gets
//! [`EnvError::NotLaunched`] from `init` (or runs alone, with
//! [`Config::standalone`](crate::Config::standalone)).
//!
//! `threadwire run` starts each node with these variables:
//!
//! | variable                 | meaning                                                   |
//! |--------------------------|-----------------------------------------------------------|
//! | `THREADWIRE_JOB`         | job id, 16 hex digits; in every name the job creates      |
//! | `THREADWIRE_NODE`        | this node's number, `0..THREADWIRE_NODES`                 |
//! | `THREADWIRE_NODES`       | the number of nodes in the job when this node starts (itself and those started with it included) |
//! | `THREADWIRE_FOUNDERS`    | optional: the nodes the job started with (default `THREADWIRE_NODES`); a node numbered from here on joins a running job (`vm` module) |
//! | `THREADWIRE_MAX_NODES`   | optional: the most nodes the job may grow to (default `THREADWIRE_NODES`: it cannot grow) |
//! | `THREADWIRE_RENDEZVOUS`  | `ip:port` of the launcher's rendezvous service            |
//! | `THREADWIRE_SECRET`      | the job secret, 64 hex digits; proven, never sent         |
//! | `THREADWIRE_BIND`        | optional: IP address this node listens on (default: its interface's address towards the rendezvous) |
//! | `THREADWIRE_LAUNCHER_PID` | optional: the pid of the launcher whose child this node is; `init` then has the node killed when that launcher dies (`PR_SET_PDEATHSIG`), and fails if it has died already |
//!
//! Tuning knobs read by every node, launched or not:
//!
//! | variable                 | meaning                                                   |
//! |--------------------------|-----------------------------------------------------------|
//! | `THREADWIRE_PROGRESS`    | `poll` (default: waiting threads drive progress) or `thread` (a communication thread as well) |
//! | `THREADWIRE_MAX_FRAME`   | largest frame accepted from a peer, in bytes (default 1 GiB) |
//! | `THREADWIRE_SPIN_US`     | how long a waiter spins and yields before it sleeps (default 50) |
//! | `THREADWIRE_WORKERS`     | fiber worker threads of a node (default: the host's cores ÷ the job's nodes on it, rounded up) |
//! | `THREADWIRE_LOG`         | log filter of the stderr log `Config::log(true)` installs (default `warn`) |
//! | `THREADWIRE_MALLOC_TUNE` | `0`: leave glibc's mmap and trim thresholds alone (default: large buffers stay in the heap) |
//! | `THREADWIRE_CHANNEL`     | `auto` (default: shared memory to nodes on this host, TCP to others), `tcp` or `shm` (for measurement), `udp` (the reliable UDP channel between every pair) |
//! | `THREADWIRE_MULTICAST`   | `off` keeps a node on the UDP channel between hosts off IP multicast (default: broadcasts go once by each root's multicast stream; `peer::multicast`) |
//! | `THREADWIRE_SHM_CMA`     | `1` (default) lets large frames between nodes on one host go by one cross-memory copy where the kernel allows it; `0` sends them in chunks through the rings |
//! | `THREADWIRE_SHM_CMA_MIN` | payload bytes from which frames go by cross-memory copy (default 524288) |
//! | `THREADWIRE_SHM_CHUNK`   | bytes per ring record for frames sent in chunks (default 65536) |
//! | `THREADWIRE_EAGER_BUDGET` | bytes of eager messages a node may hold per peer node before its sends are announced instead (default 33554432; `rendezvous` module) |
//! | `THREADWIRE_EAGER_SHM`   | longest message sent eagerly to a node of this host that reads this node's memory; longer ones by rendezvous (default 16384) |
//! | `THREADWIRE_EAGER_TCP`   | longest message sent eagerly over TCP, and to a node of this host that cannot read this node's memory (default 262144) |
//! | `THREADWIRE_HOST_STAGE`  | `0`: groups get no host stage (nodes of one host combining small collectives through one shared segment); `1`: barriers and small allreduces take it wherever a group has one; default: as tuning chooses (`group/algorithms/host_stage.rs`) |
//! | `THREADWIRE_PEER_TIMEOUT` | milliseconds a peer node may send nothing before it is lost as silent (default 1000; `0`: never; `Config::peer_timeout`, progress engine's `liveness` module) |
//! | `THREADWIRE_COLL_CHECKS` | `1` or `0`: whether collectives first check that every member passed the same arguments (default: on in debug builds, off in release; `group/check.rs`) |
//!
//! Set by a process manager that starts nodes through the PMI-1 wire
//! protocol instead of `threadwire run` (MPICH's `mpiexec.hydra`, Slurm's
//! `srun --mpi=pmi2`; the runtime's `pmi` module). A node finds itself
//! under one when any of the first five is set; one that is set wrongly,
//! or without its companions, is an error that names it:
//!
//! | variable     | meaning                                                          |
//! |--------------|------------------------------------------------------------------|
//! | `PMI_FD`     | an inherited socket to the manager (Hydra's default, Slurm); needs `PMI_RANK` and `PMI_SIZE` |
//! | `PMI_PORT`   | `host:port` of the manager (Hydra's `-pmi-port`); needs `PMI_ID`; rank and size come from the manager |
//! | `PMI_ID`     | the id this process announces on `PMI_PORT`                      |
//! | `PMI_RANK`   | this process's rank, `0..PMI_SIZE`                               |
//! | `PMI_SIZE`   | the number of processes                                          |
//! | `PMI_JOBID`  | optional: Slurm's job id (`job.step`)                            |
//!
//! Set by a PMIx server that starts nodes instead (Open MPI's `mpirun`,
//! PRRTE's `prterun`, Slurm's `srun --mpi=pmix`; the runtime's
//! `pmi::pmix` module), read only when no PMI-1 variable is set. A node
//! finds itself under one when `PMIX_NAMESPACE` or `PMIX_RANK` is set;
//! it then loads the system's PMIx client library, `libpmix.so.2` (from
//! the loader's path: `LD_LIBRARY_PATH` for one outside the system's
//! directories), which reads the rest of the server's variables itself
//! (`PMIX_SERVER_URI*`, `PMIX_SECURITY_MODE`, …). The job's size comes
//! from the server (`PMIX_JOB_SIZE`), not from a variable:
//!
//! | variable          | meaning                                                     |
//! |-------------------|-------------------------------------------------------------|
//! | `PMIX_NAMESPACE`  | the job's namespace; needs `PMIX_RANK`                      |
//! | `PMIX_RANK`       | this process's rank in it; needs `PMIX_NAMESPACE`           |
//! | `PMIX_SERVER_URI41`, `…4`, `…3`, `…21`, `…2` | the server's address, for each protocol version it speaks; at least one is needed |

use std::net::{IpAddr, SocketAddr};

/// Name of the job id variable.
pub const JOB: &str = "THREADWIRE_JOB";
/// Name of the node number variable.
pub const NODE: &str = "THREADWIRE_NODE";
/// Name of the node count variable.
pub const NODES: &str = "THREADWIRE_NODES";
/// Name of the founding node count variable.
pub const FOUNDERS: &str = "THREADWIRE_FOUNDERS";
/// Name of the variable bounding how far the job may grow.
pub const MAX_NODES: &str = "THREADWIRE_MAX_NODES";
/// Name of the rendezvous address variable.
pub const RENDEZVOUS: &str = "THREADWIRE_RENDEZVOUS";
/// Name of the job secret variable.
pub const SECRET: &str = "THREADWIRE_SECRET";
/// Name of the optional listen address variable.
pub const BIND: &str = "THREADWIRE_BIND";
/// Name of the optional launcher pid variable.
pub const LAUNCHER_PID: &str = "THREADWIRE_LAUNCHER_PID";
/// Name of the progress mode variable.
pub const PROGRESS: &str = "THREADWIRE_PROGRESS";
/// Name of the maximum frame length variable.
pub const MAX_FRAME: &str = "THREADWIRE_MAX_FRAME";
/// Name of the log filter variable.
pub const LOG: &str = "THREADWIRE_LOG";
/// Name of the fiber worker count variable.
pub const WORKERS: &str = "THREADWIRE_WORKERS";
/// Name of the channel choice variable.
pub const CHANNEL: &str = "THREADWIRE_CHANNEL";
/// Name of the variable that keeps a node off IP multicast (`off`).
pub const MULTICAST: &str = "THREADWIRE_MULTICAST";
/// Name of the cross-memory-attach switch.
pub const SHM_CMA: &str = "THREADWIRE_SHM_CMA";
/// Name of the cross-memory-attach threshold variable.
pub const SHM_CMA_MIN: &str = "THREADWIRE_SHM_CMA_MIN";
/// Name of the shared-memory chunk size variable.
pub const SHM_CHUNK: &str = "THREADWIRE_SHM_CHUNK";
/// `0` leaves the C allocator's settings alone ([`Config::tune_allocator`](crate::Config::tune_allocator)).
pub const MALLOC_TUNE: &str = "THREADWIRE_MALLOC_TUNE";
/// Name of the eager budget variable ([`Config::eager_budget`](crate::Config::eager_budget)).
pub const EAGER_BUDGET: &str = "THREADWIRE_EAGER_BUDGET";
/// Name of the shared-memory eager limit variable.
pub const EAGER_SHM: &str = "THREADWIRE_EAGER_SHM";
/// Name of the TCP eager limit variable.
pub const EAGER_TCP: &str = "THREADWIRE_EAGER_TCP";
/// Name of the collectives' host stage switch.
pub const HOST_STAGE: &str = "THREADWIRE_HOST_STAGE";
/// Name of the peer timeout variable ([`Config::peer_timeout`](crate::Config::peer_timeout)).
pub const PEER_TIMEOUT: &str = "THREADWIRE_PEER_TIMEOUT";
/// Name of the collectives' argument check switch.
pub const COLL_CHECKS: &str = "THREADWIRE_COLL_CHECKS";
/// A process manager's inherited socket (PMI).
pub const PMI_FD: &str = "PMI_FD";
/// A process manager's `host:port` (PMI).
pub const PMI_PORT: &str = "PMI_PORT";
/// The id a process announces on `PMI_PORT`.
pub const PMI_ID: &str = "PMI_ID";
/// A process's rank under a process manager (PMI).
pub const PMI_RANK: &str = "PMI_RANK";
/// The number of processes under a process manager (PMI).
pub const PMI_SIZE: &str = "PMI_SIZE";
/// Slurm's job id under its PMI plugin.
pub const PMI_JOBID: &str = "PMI_JOBID";
/// A PMIx job's namespace.
pub const PMIX_NAMESPACE: &str = "PMIX_NAMESPACE";
/// A process's rank under a PMIx server.
pub const PMIX_RANK: &str = "PMIX_RANK";
/// A PMIx server's address, one variable per protocol version it serves
/// (newest first, as PMIx 4 sets them).
pub const PMIX_SERVER_URIS: [&str; 5] = [
    "PMIX_SERVER_URI41",
    "PMIX_SERVER_URI4",
    "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI21",
    "PMIX_SERVER_URI2",
];
/// Name of the variable bounding the fiber handlers of active messages
/// that run at once on a node (default [`am::DEFAULT_FIBERS`](crate::am::DEFAULT_FIBERS)).
pub const AM_FIBERS: &str = "THREADWIRE_AM_FIBERS";
/// Fault injection for tests of group agreement: `<node>:asked` or
/// `<node>:told-one` makes that node, when it coordinates an agreement,
/// kill itself at that point (`group::agree`, step 4). Never set it in
/// production.
pub const FAULT_AGREE: &str = "THREADWIRE_FAULT_AGREE";

/// What a launched node learns from its environment.
#[derive(Clone)]
pub struct JobEnv {
    /// The job id.
    pub job_id: u64,
    /// This node's number.
    pub node: u32,
    /// Nodes in the job when this node starts.
    pub nodes: u32,
    /// Nodes the job started with; this node joined a running job if its
    /// number is not below it.
    pub founders: u32,
    /// The most nodes the job may grow to.
    pub max_nodes: u32,
    /// The launcher's rendezvous service.
    pub rendezvous: SocketAddr,
    /// The job secret.
    pub secret: [u8; 32],
    /// Where this node listens for its peers.
    pub bind: IpAddr,
}

impl std::fmt::Debug for JobEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobEnv")
            .field("job_id", &format_args!("{:016x}", self.job_id))
            .field("node", &self.node)
            .field("nodes", &self.nodes)
            .field("founders", &self.founders)
            .field("max_nodes", &self.max_nodes)
            .field("rendezvous", &self.rendezvous)
            .field("bind", &self.bind)
            .finish_non_exhaustive()
    }
}

/// Why the environment does not describe a launched node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// No launcher variables at all: the program was not started by a launcher.
    #[error("not started by a launcher ({JOB} is not set); run it with `threadwire run -n N -- program`")]
    NotLaunched,
    /// A variable is missing or malformed.
    #[error("bad launcher environment: {name} = {value:?} ({why})")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// Its value, empty when missing.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl JobEnv {
    /// Reads the contract from this process's environment.
    pub fn from_env() -> Result<JobEnv, EnvError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the contract through `lookup` (for tests and wrappers).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<JobEnv, EnvError> {
        let Some(job) = lookup(JOB) else {
            return Err(EnvError::NotLaunched);
        };
        let get = |name: &'static str| {
            lookup(name).ok_or(EnvError::Invalid {
                name,
                value: String::new(),
                why: "missing",
            })
        };
        let invalid = |name, value: String, why| EnvError::Invalid { name, value, why };
        let job_id = u64::from_str_radix(&job, 16)
            .map_err(|_| invalid(JOB, job.clone(), "not 16 hex digits"))?;
        let node_s = get(NODE)?;
        let node: u32 = node_s
            .parse()
            .map_err(|_| invalid(NODE, node_s.clone(), "not a number"))?;
        let nodes_s = get(NODES)?;
        let nodes: u32 = nodes_s
            .parse()
            .map_err(|_| invalid(NODES, nodes_s.clone(), "not a number"))?;
        if nodes == 0 || node >= nodes {
            return Err(invalid(NODE, node_s, "not below the node count"));
        }
        let count = |name: &'static str, default: u32| match lookup(name) {
            None => Ok(default),
            Some(v) => v.parse::<u32>().map_err(|_| invalid(name, v, "not a number")),
        };
        let founders = count(FOUNDERS, nodes)?;
        let max_nodes = count(MAX_NODES, nodes)?;
        if founders == 0 || founders > nodes {
            return Err(invalid(FOUNDERS, founders.to_string(), "not in 1..=THREADWIRE_NODES"));
        }
        if max_nodes < nodes {
            return Err(invalid(MAX_NODES, max_nodes.to_string(), "below the node count"));
        }
        let rv_s = get(RENDEZVOUS)?;
        let rendezvous: SocketAddr = rv_s
            .parse()
            .map_err(|_| invalid(RENDEZVOUS, rv_s.clone(), "not ip:port"))?;
        let secret_s = get(SECRET)?;
        let secret = parse_secret(&secret_s).ok_or(invalid(
            SECRET,
            "<hidden>".into(),
            "not 64 hex digits",
        ))?;
        let bind = match lookup(BIND) {
            None => address_towards(rendezvous),
            Some(s) => s
                .parse()
                .map_err(|_| invalid(BIND, s.clone(), "not an IP address"))?,
        };
        Ok(JobEnv {
            job_id,
            node,
            nodes,
            founders,
            max_nodes,
            rendezvous,
            secret,
            bind,
        })
    }

    /// Whether this node joined a running job rather than starting it.
    pub fn joins(&self) -> bool {
        self.node >= self.founders
    }

    /// The variables that describe node `node` of this job, for a launcher:
    /// `nodes` in the job once it has started, of `founders` the job
    /// started with, in a job that may grow to `max_nodes`.
    pub fn vars_for(
        job_id: u64,
        node: u32,
        (nodes, founders, max_nodes): (u32, u32, u32),
        rendezvous: SocketAddr,
        secret: &[u8; 32],
    ) -> Vec<(&'static str, String)> {
        vec![
            (JOB, format!("{job_id:016x}")),
            (NODE, node.to_string()),
            (NODES, nodes.to_string()),
            (FOUNDERS, founders.to_string()),
            (MAX_NODES, max_nodes.to_string()),
            (RENDEZVOUS, rendezvous.to_string()),
            (SECRET, hex(secret)),
        ]
    }
}

/// The address of this host's interface towards `to`: the rendezvous
/// address itself when the launcher runs here; in a network namespace,
/// the namespace's own address (launcher hosts, step 2). Connecting a UDP
/// socket sends nothing; it only asks the kernel for the route.
fn address_towards(to: SocketAddr) -> IpAddr {
    let unspecified: SocketAddr = match to {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    std::net::UdpSocket::bind(unspecified)
        .and_then(|s| {
            s.connect(to)?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .unwrap_or(to.ip())
}

/// `bytes` as lower-case hex digits, two a byte (the secret's form here
/// and in a process manager's key-value space).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A job secret from its 64 hex digits.
pub(crate) fn parse_secret(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn round_trip_and_errors() {
        let secret = [0xab; 32];
        let vars: HashMap<_, _> =
            JobEnv::vars_for(0x1234, 2, (4, 4, 8), "127.0.0.1:5000".parse().unwrap(), &secret)
                .into_iter()
                .collect();
        let env = JobEnv::from_lookup(|n| vars.get(n).cloned()).unwrap();
        assert_eq!(
            (env.job_id, env.node, env.nodes, env.secret),
            (0x1234, 2, 4, secret)
        );
        assert_eq!((env.founders, env.max_nodes, env.joins()), (4, 8, false));
        assert_eq!(env.bind.to_string(), "127.0.0.1");

        assert_eq!(
            JobEnv::from_lookup(|_| None).unwrap_err(),
            EnvError::NotLaunched
        );
        let mut bad = vars.clone();
        bad.insert(NODE, "9".into());
        assert!(matches!(
            JobEnv::from_lookup(|n| bad.get(n).cloned()),
            Err(EnvError::Invalid { name: NODE, .. })
        ));
        let mut bad = vars.clone();
        bad.insert(SECRET, "zz".into());
        assert!(matches!(
            JobEnv::from_lookup(|n| bad.get(n).cloned()),
            Err(EnvError::Invalid { name: SECRET, .. })
        ));
    }
}
