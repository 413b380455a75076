//! The job's addresses kept in the process manager's key-value space: each
//! node puts its own at start-up ([`addr_key`]) and reads a peer's the
//! first time it connects to it, so a job of `n` nodes makes `n` puts and,
//! with connections on first use (`peer::dial`), as many gets as pairs
//! that talk — not `n²`.
//!
//! Which nodes share a host comes from the manager
//! ([`Manager::hosts`]: PMI-1's `PMI_process_mapping`, which Hydra and
//! Slurm both publish; PMIx's `PMIX_NODEID` of every process), read once
//! at start-up, so that the collectives' host stage can group nodes
//! without reading every address.

use super::{Manager, PmiError};
use crate::lock;
use std::net::SocketAddr;
use std::sync::Mutex;

/// The key under which node `node` puts its listening address (named
/// after its owner: [`Manager`]'s docs).
pub(crate) fn addr_key(node: u32) -> String {
    format!("threadwire-addr-{node}")
}

/// The key under which node 0 puts the job id and secret.
pub(crate) const JOB_KEY: &str = "threadwire-job";

/// Addresses read from the manager, with the connection to it.
pub(crate) struct PmiBook {
    /// `None` once finalized.
    manager: Mutex<Option<Manager>>,
    addrs: Mutex<Vec<Option<SocketAddr>>>,
    /// The host of every node, numbered by the manager, if it said.
    hosts: Option<Vec<u32>>,
}

impl PmiBook {
    /// A book of `size` nodes, knowing this node's (`me`) address; reads
    /// the host mapping now.
    pub(crate) fn new(mut manager: Manager, me: u32, addr: SocketAddr) -> PmiBook {
        let hosts = manager.hosts();
        let mut addrs = vec![None; manager.size() as usize];
        addrs[me as usize] = Some(addr);
        PmiBook {
            manager: Mutex::new(Some(manager)),
            addrs: Mutex::new(addrs),
            hosts,
        }
    }

    /// `node`'s address: known, or read from the manager now.
    pub(crate) fn lookup(&self, node: u32) -> Result<SocketAddr, String> {
        if let Some(a) = self.known(node) {
            return Ok(a);
        }
        let mut manager = lock(&self.manager);
        let Some(manager) = manager.as_mut() else {
            return Err("this node has left the process manager".into());
        };
        let value = manager
            .get(node, &addr_key(node))
            .map_err(|e| format!("n{node}'s address from the process manager: {e}"))?;
        let addr: SocketAddr = value
            .parse()
            .map_err(|e| format!("n{node}'s address {value:?} from the process manager: {e}"))?;
        if let Some(slot) = lock(&self.addrs).get_mut(node as usize) {
            *slot = Some(addr);
        }
        Ok(addr)
    }

    /// `node`'s address, if read already.
    pub(crate) fn known(&self, node: u32) -> Option<SocketAddr> {
        *lock(&self.addrs).get(node as usize)?
    }

    /// Whether nodes `a` and `b` run on one host, as the manager's mapping
    /// says (or, without one, as their known addresses say).
    pub(crate) fn same_host(&self, a: u32, b: u32) -> bool {
        match &self.hosts {
            Some(h) => h.get(a as usize).is_some() && h.get(a as usize) == h.get(b as usize),
            None => match (self.known(a), self.known(b)) {
                (Some(x), Some(y)) => x.ip() == y.ip(),
                _ => false,
            },
        }
    }

    /// Leaves the process manager in order (`finalize`), once.
    pub(crate) fn finalize(&self) -> Result<(), PmiError> {
        match lock(&self.manager).take() {
            Some(c) => c.finalize(),
            None => Ok(()),
        }
    }
}

/// The host of each of `size` ranks from a `PMI_process_mapping` value,
/// `(vector,(start,hosts,per_host),…)`: blocks of `hosts` hosts numbered
/// from `start`, each given `per_host` consecutive ranks, the whole
/// pattern repeated until every rank has a host. `None` if it does not
/// parse or is empty.
pub(crate) fn process_mapping(value: &str, size: u32) -> Option<Vec<u32>> {
    let inner = value.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut pattern = Vec::new();
    for block in inner.split("),").map(|b| b.trim_start_matches('(').trim_end_matches(')')) {
        if block.is_empty() {
            continue;
        }
        let nums: Vec<u32> = block
            .split(',')
            .map(|n| n.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [start, hosts, per_host] = nums[..] else {
            return None;
        };
        for h in start..start.checked_add(hosts)? {
            pattern.extend(std::iter::repeat_n(h, per_host as usize));
            if pattern.len() > size as usize {
                break;
            }
        }
    }
    if pattern.is_empty() {
        return None;
    }
    Some((0..size as usize).map(|r| pattern[r % pattern.len()]).collect())
}

#[cfg(test)]
mod tests {
    use super::process_mapping;

    #[test]
    fn mappings_as_hydra_and_slurm_write_them() {
        // One host, four ranks.
        assert_eq!(process_mapping("(vector,(0,1,4))", 4), Some(vec![0, 0, 0, 0]));
        // Two hosts, two ranks each, in blocks.
        assert_eq!(process_mapping("(vector,(0,2,2))", 4), Some(vec![0, 0, 1, 1]));
        // Round robin: the pattern repeats.
        assert_eq!(process_mapping("(vector,(0,2,1))", 4), Some(vec![0, 1, 0, 1]));
        // Blocks of different sizes.
        assert_eq!(
            process_mapping("(vector,(0,1,3),(1,1,1))", 4),
            Some(vec![0, 0, 0, 1])
        );
        for bad in ["", "(vector,)", "(vector,(0,1))", "(list,(0,1,1))", "(vector,(a,1,1))"] {
            assert_eq!(process_mapping(bad, 4), None, "{bad:?}");
        }
    }
}
