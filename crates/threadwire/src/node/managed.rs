//! Joining a job started by a process manager instead of `threadwire
//! run` — MPICH's Hydra (`mpiexec.hydra -n 4 prog`), Slurm (`srun
//! --mpi=pmi2 -n 4 prog`) through the PMI-1 wire protocol, Open MPI
//! (`mpirun -n 4 prog`) through PMIx ([`crate::pmi`], whose `Manager` is
//! either) — used only to exchange what the job needs; the node's own
//! channels do the rest, exactly as under our launcher.
//!
//! 1. Connect to the manager (PMI-1: `PMI_FD` or `PMI_PORT`; PMIx:
//!    `PMIx_Init`) and `init`; the node's number and the job's size are
//!    the manager's rank and size.
//! 2. Listen on `THREADWIRE_BIND`, or on the address of this host's
//!    interface towards its default route (the one its peers on other
//!    hosts reach; loopback on a host without one).
//! 3. Put this node's address in the manager's key-value space; node 0
//!    also puts the job: a random job id and a random job secret, made
//!    here and proven, never sent, on every connection — the key-value
//!    space is the job's own, read by its processes alone.
//! 4. One exchange (PMI-1's barrier, PMIx's fence); then read the job
//!    id and secret from node 0's entry, and the host mapping
//!    (`pmi::book`).
//! 5. Arm the dialer with the manager as the address book: a pair
//!    connects on first use, and reads the peer's address then.
//! 6. At finalize, after the node's last goodbye, leave the manager
//!    (`finalize`): Hydra and `mpirun` take a process that leaves without
//!    it for a failure and end the whole job.
//!
//! There is no launcher: no control connection, no reports, no growing
//! (`add_nodes` is refused), and a peer's death is learnt from its
//! connection or its silence (`THREADWIRE_PEER_TIMEOUT`) — or the manager
//! ends the job, as Hydra, Slurm and `mpirun` do by default when a
//! process fails.

use super::NodeShared;
use crate::env::hex;
use crate::config::Settings;
use crate::error::{InitError, InitErrorKind};
use crate::peer::AddressBook;
use crate::pmi::{addr_key, Manager, PmiBook, PmiError, JOB_KEY};
use crate::progress::{Driver, ProgressEngine};
use crate::router::{JobSize, Router};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use threadwire_transport::handshake::Credentials;

/// How long the start-up exchange may wait for the slowest process.
const EXCHANGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Steps 1–5 (module docs). A failure after `init` aborts the job
/// through the manager, so that no other process waits for this one
/// (Hydra ends the job at once; `mpirun` when this process exits, as it
/// does on the error returned).
pub(super) fn bootstrap(mut pmi: Manager, settings: Settings) -> Result<Arc<NodeShared>, InitError> {
    pmi.init().map_err(err)?;
    let mut pmi = Some(pmi);
    match bootstrap_inited(&mut pmi, settings) {
        Ok(shared) => Ok(shared),
        Err(e) => {
            if let Some(pmi) = pmi {
                let _ = pmi.abort(1, &format!("threadwire init: {e}"));
            }
            Err(e)
        }
    }
}

fn err(e: PmiError) -> InitError {
    InitError::new(InitErrorKind::Pmi(e.to_string()))
}

/// Steps 1–5 after `init`; takes `pmi` into the address book at step 5.
fn bootstrap_inited(
    slot: &mut Option<Manager>,
    settings: Settings,
) -> Result<Arc<NodeShared>, InitError> {
    let pmi = slot.as_mut().expect("the manager, until step 5");
    let (node, nodes) = (pmi.rank(), pmi.size());
    // Step 2.
    let bind = match std::env::var(crate::env::BIND) {
        Ok(s) => s.parse().map_err(|_| {
            InitError::new(InitErrorKind::Env(crate::env::EnvError::Invalid {
                name: crate::env::BIND,
                value: s.clone(),
                why: "not an IP address",
            }))
        })?,
        Err(_) => default_route_address(),
    };
    let listener = TcpListener::bind(SocketAddr::new(bind, 0))?;
    let my_addr = listener.local_addr()?;
    // Step 3.
    pmi.put(&addr_key(node), &my_addr.to_string()).map_err(err)?;
    if node == 0 {
        let mut job = [0u8; 40];
        getrandom::getrandom(&mut job).map_err(|e| std::io::Error::other(e.to_string()))?;
        pmi.put(JOB_KEY, &hex(&job)).map_err(err)?;
    }
    // Step 4.
    pmi.exchange(EXCHANGE_TIMEOUT).map_err(err)?;
    let job = pmi.get(0, JOB_KEY).map_err(err)?;
    let creds = parse_job(&job).ok_or_else(|| {
        InitError::new(InitErrorKind::Pmi(format!(
            "node 0's job entry {JOB_KEY} is not 80 hex digits"
        )))
    })?;
    let driver = Driver::new(Some(listener), Some(creds.clone()))?;
    let engine = ProgressEngine::new(driver)?;
    let router = Router::new(node, JobSize::fixed(nodes), creds.job_id, &settings);
    let shared = Arc::new(NodeShared::new(router, engine, Some(my_addr), settings.workers));
    shared.router.am.bind(&shared);
    crate::peer::start_udp(&shared.router, &shared.engine, my_addr.ip(), &creds)?;
    if let Some(timeout) = settings.peer_timeout.filter(|_| nodes > 1) {
        shared.liveness.start(Arc::downgrade(&shared), timeout)?;
    }
    // Step 5.
    let registry = shared.engine.lock_driver().registry().try_clone()?;
    let book = PmiBook::new(slot.take().expect("the manager"), node, my_addr);
    shared
        .router
        .dialer
        .arm(Arc::downgrade(&shared), creds, AddressBook::Pmi(book), registry);
    Ok(shared)
}

/// The address of the interface towards this host's default route
/// (connecting a UDP socket sends nothing), or loopback without one.
fn default_route_address() -> IpAddr {
    let probe: SocketAddr = (Ipv4Addr::new(192, 0, 2, 1), 9).into();
    std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| {
            s.connect(probe)?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// Node 0's job entry: the job id's 16 hex digits (as in
/// `THREADWIRE_JOB`), then the secret's 64 (as in `THREADWIRE_SECRET`).
fn parse_job(s: &str) -> Option<Credentials> {
    let (id, secret) = s.split_at_checked(16)?;
    Some(Credentials {
        job_id: u64::from_str_radix(id, 16).ok()?,
        secret: crate::env::parse_secret(secret)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_entry_round_trips() {
        let bytes: Vec<u8> = (0..40).collect();
        let c = parse_job(&hex(&bytes)).expect("parses");
        assert_eq!(c.job_id, u64::from_be_bytes([0, 1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(c.secret[0], 8);
        assert!(parse_job("00").is_none());
        assert!(parse_job(&"zz".repeat(40)).is_none());
    }
}
