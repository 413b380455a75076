//! Where an app's jobs run: on this host, or on emulated hosts joined by
//! one of the seeds' networks ([`Link`]), so that one command reproduces
//! a seed's table on the seed's network.
//!
//! 1. [`Hosts::new`] with a link builds that many network namespaces
//!    joined by the link ([`ScopedNet`]); without a link the jobs run on
//!    this host. Building needs root, and fails saying so without it.
//! 2. [`Hosts::run`] starts a job of the app's nodes with node `i` on
//!    host `i mod hosts` (round robin), passes every event but the nodes'
//!    results on to the caller, and returns the job's status with the
//!    results its nodes reported ([`NodeResult`]: nothing is parsed back
//!    from their output).
//!    On a link slower than a gigabit the nodes' silent-peer timeout is
//!    [`SLOW_LINK_PEER_TIMEOUT`] unless `THREADWIRE_PEER_TIMEOUT` is set.
//! 3. Dropping [`Hosts`] removes the namespaces, after a sweep of any
//!    number of jobs on them; on a signal the testbed's interrupt handler
//!    removes them, if the caller installed it
//!    ([`threadwire_testbed::interrupt::install`]).

use std::fmt;
use threadwire_bench::node_result::NodeResult;
use threadwire_launch::{Event, JobReport, JobSpec, LaunchError};
use threadwire_testbed::net::{Link, NetError, ScopedNet};

/// The nodes' silent-peer timeout on links slower than a gigabit, in ms.
///
/// The runtime's default, 1 s, is shorter than a heartbeat can wait on
/// such a link: host–node's master streams B to eight worker nodes' two
/// threads each (2.3 MB, two seconds on ethernet10) through one shaped
/// link, whose tbf queue drops what waits more than 50 ms, so the
/// heartbeat of an idle connection meets drops and TCP's retransmission
/// backoff behind the busy ones. Measured: a worker lost its master as
/// "silent for 872 ms" on 9 nodes over ethernet10.
pub const SLOW_LINK_PEER_TIMEOUT: &str = "10000";

/// The hosts of an app's jobs: this one, or emulated ones on a link.
#[derive(Debug)]
pub struct Hosts {
    net: Option<ScopedNet>,
}

/// Why the hosts could not be made, or a job not started on them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostsError {
    /// The namespaces could not be built (not root, no `ip`, a kernel
    /// without network namespaces…).
    #[error("--link {link} runs the job on {count} emulated hosts, which could not be built")]
    Net {
        /// The link asked for.
        link: Link,
        /// Hosts asked for.
        count: u32,
        /// Why.
        #[source]
        source: NetError,
    },
    /// The launcher could not start the job.
    #[error("starting {} on {nodes} nodes", program.display())]
    Launch {
        /// The nodes' program.
        program: std::path::PathBuf,
        /// Nodes of the job.
        nodes: u32,
        /// Why.
        #[source]
        source: LaunchError,
    },
}

/// A job that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// The launcher's account: the exit status (0 when every node
    /// succeeded), each node's exit and counters.
    pub report: JobReport,
    /// What its nodes reported, in the order they did.
    pub results: Vec<NodeResult>,
}

impl Hosts {
    /// This host alone.
    pub fn here() -> Hosts {
        Hosts { net: None }
    }

    /// `count` emulated hosts joined by `link` (step 1), or this host when
    /// `link` is `None`.
    pub fn new(link: Option<Link>, count: u32) -> Result<Hosts, HostsError> {
        let Some(link) = link else {
            return Ok(Hosts::here());
        };
        let net = ScopedNet::up_with_free_prefix("twa", count, link).map_err(|source| {
            HostsError::Net {
                link,
                count,
                source,
            }
        })?;
        Ok(Hosts { net: Some(net) })
    }

    /// The link joining the hosts; `None` on this host alone.
    pub fn link(&self) -> Option<Link> {
        self.net.as_ref().map(|net| net.link)
    }

    /// How many hosts there are.
    pub fn count(&self) -> u32 {
        self.net.as_ref().map_or(1, |net| net.hosts.len() as u32)
    }

    /// Runs `spec` on these hosts (step 2): node `i` on host `i mod
    /// count`; every event but a node's result to `on_event`.
    pub fn run(
        &self,
        mut spec: JobSpec,
        mut on_event: impl FnMut(&Event),
    ) -> Result<Finished, HostsError> {
        if let Some(net) = &self.net {
            spec = spec.hosts(net.launch_hosts());
            let slow = net.link.rate_kbit().is_some_and(|k| k < 1_000_000);
            if slow && std::env::var_os(threadwire::env::PEER_TIMEOUT).is_none() {
                spec = spec.env(threadwire::env::PEER_TIMEOUT, SLOW_LINK_PEER_TIMEOUT);
            }
        }
        let mut results = Vec::new();
        let report = threadwire_launch::run(&spec, |e| match NodeResult::decode(e) {
            Some((_, result)) => results.push(result),
            None => on_event(e),
        })
        .map_err(|source| HostsError::Launch {
            program: spec.program.clone(),
            nodes: spec.nodes,
            source,
        })?;
        Ok(Finished { report, results })
    }
}

/// `one host`, or `4 emulated hosts joined by ethernet10 (10 Mbit/s)`.
impl fmt::Display for Hosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.net {
            None => f.write_str("one host"),
            Some(net) => {
                write!(
                    f,
                    "{} emulated hosts joined by {}",
                    net.hosts.len(),
                    net.link
                )?;
                match net.link.rate_mbit() {
                    Some(rate) => write!(f, " ({rate} Mbit/s)"),
                    None => f.write_str(" (unshaped)"),
                }
            }
        }
    }
}
