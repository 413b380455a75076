//! The process manager that started this node, whichever interface it
//! serves: a closed set (STYLE rule 3), one enum for `node::managed` and
//! the address book.
//!
//! The two differ in whose a key is. Under PMI-1 the key-value space is
//! the job's: a key names one value for everybody. Under PMIx a value
//! belongs to the process that put it, and a get names that process. The
//! runtime's keys name their owner in both (`threadwire-addr-<rank>`, put
//! by `rank`; the job entry, put by rank 0), and every get says whose key
//! it reads ([`get`](Manager::get)`(owner, key)`): PMI-1 ignores the
//! owner, PMIx asks that process's.

use super::{process_mapping, PmiClient, PmiError, PmixClient};
use std::time::Duration;

/// A process manager: PMI-1 (Hydra, Slurm's `pmi2`) or PMIx (Open MPI's
/// `mpirun`, PRRTE, Slurm's `pmix`).
#[derive(Debug)]
pub(crate) enum Manager {
    /// The PMI-1 wire protocol (`pmi::client`).
    Pmi1(PmiClient),
    /// The PMIx client library (`pmi::pmix`).
    Pmix(PmixClient),
}

impl Manager {
    /// The manager that started this process, from its variables: PMI-1's
    /// first (a PMIx server that also serves PMI-1 sets both, and PMI-1
    /// needs no library), then PMIx's; `Ok(None)` when neither is set.
    /// Every request is then awaited at most `timeout`, barriers excepted.
    pub(crate) fn from_env(timeout: Duration) -> Result<Option<Manager>, PmiError> {
        if let Some(client) = PmiClient::from_env(timeout)? {
            return Ok(Some(Manager::Pmi1(client)));
        }
        Ok(PmixClient::from_env(timeout)?.map(Manager::Pmix))
    }

    /// Introduces this process to the manager; first of all requests.
    pub(crate) fn init(&mut self) -> Result<(), PmiError> {
        match self {
            Manager::Pmi1(client) => client.init(),
            Manager::Pmix(client) => client.init(),
        }
    }

    /// This process's rank, `0..size`.
    pub(crate) fn rank(&self) -> u32 {
        match self {
            Manager::Pmi1(client) => client.rank(),
            Manager::Pmix(client) => client.rank(),
        }
    }

    /// The number of processes the manager started.
    pub(crate) fn size(&self) -> u32 {
        match self {
            Manager::Pmi1(client) => client.size(),
            Manager::Pmix(client) => client.size(),
        }
    }

    /// Stores `value` under `key`, as this process's; the others see it
    /// after the next [`exchange`](Self::exchange).
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        match self {
            Manager::Pmi1(client) => client.put(key, value),
            Manager::Pmix(client) => client.put(key, value),
        }
    }

    /// Waits, at most `timeout`, until every process has arrived here;
    /// then every value put before is visible to all (PMI-1's barrier;
    /// PMIx's commit and fence, collecting the data).
    pub(crate) fn exchange(&mut self, timeout: Duration) -> Result<(), PmiError> {
        match self {
            Manager::Pmi1(client) => client.barrier(timeout),
            Manager::Pmix(client) => client.fence(timeout),
        }
    }

    /// The value process `owner` put under `key` before the last
    /// exchange (module docs).
    pub(crate) fn get(&mut self, owner: u32, key: &str) -> Result<String, PmiError> {
        match self {
            Manager::Pmi1(client) => client.get(key),
            Manager::Pmix(client) => client.get(owner, key),
        }
    }

    /// The host of every process, numbered by the manager, if it says:
    /// PMI-1's `PMI_process_mapping`, PMIx's `PMIX_NODEID` of each
    /// process. `None` when it does not, or not in a form understood.
    pub(crate) fn hosts(&mut self) -> Option<Vec<u32>> {
        let size = self.size();
        let hosts = match self {
            Manager::Pmi1(client) => client
                .get("PMI_process_mapping")
                .map(|mapping| process_mapping(&mapping, size)),
            Manager::Pmix(client) => client.node_ids().map(Some),
        };
        hosts.unwrap_or_else(|e| {
            tracing::debug!("no host mapping from the process manager: {e}");
            None
        })
    }

    /// Leaves the manager in order, at the node's end.
    pub(crate) fn finalize(self) -> Result<(), PmiError> {
        match self {
            Manager::Pmi1(client) => client.finalize(),
            Manager::Pmix(client) => client.finalize(),
        }
    }

    /// Asks the manager to end the whole job with `exit_code`, logging
    /// `message`.
    pub(crate) fn abort(self, exit_code: i32, message: &str) -> Result<(), PmiError> {
        match self {
            Manager::Pmi1(client) => client.abort(exit_code, message),
            Manager::Pmix(client) => client.abort(exit_code, message),
        }
    }
}
