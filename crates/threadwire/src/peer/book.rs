//! Where the job's nodes listen: the dialer's address book
//! ([`super::dial`], step 2), filled as the node's start allows.
//!
//! - A founding node under `threadwire run` asks the launcher for a peer's
//!   address the first time it dials it (control protocol, step 11), so
//!   the launcher sends no node the whole directory and start-up costs
//!   the same per node at any job size.
//! - A node joining a running job gets every address at once: it connects
//!   to every node before it (`vm`, step 4).
//! - A node started by a process manager reads them from the manager's
//!   key-value space (`pmi::book`).
//!
//! Which nodes share a host — for the collectives' host stage — is known
//! without an address: the launcher placed its founding nodes on its
//! hosts in turn, and a process manager publishes its mapping.

use crate::lock;
use crate::router::Router;
use std::net::SocketAddr;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long the launcher may take to answer a lookup.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the job's nodes listen.
pub(crate) enum AddressBook {
    /// Asked of the launcher on first need (a founding node).
    Launcher(LauncherBook),
    /// Read from the process manager's key-value space on first need
    /// (started under PMI: `pmi::book`).
    Pmi(crate::pmi::PmiBook),
}

impl AddressBook {
    pub(super) fn lookup(&self, router: &Router, node: u32) -> Result<SocketAddr, String> {
        match self {
            AddressBook::Launcher(book) => book.lookup(router, node),
            AddressBook::Pmi(book) => book.lookup(node),
        }
    }

    /// Whether nodes `a` and `b` run on one host and in one network
    /// namespace, as far as the book tells without asking anyone.
    pub(super) fn same_host(&self, a: u32, b: u32) -> bool {
        match self {
            AddressBook::Launcher(book) => book.same_host(a, b),
            AddressBook::Pmi(book) => book.same_host(a, b),
        }
    }
}

fn parse(node: u32, addr: Option<&String>) -> Result<SocketAddr, String> {
    match addr {
        None => Err(format!("no address for n{node}")),
        Some(a) if a.is_empty() => Err(format!("n{node} has left the job")),
        Some(a) => a.parse().map_err(|e| format!("n{node}'s address {a:?}: {e}")),
    }
}

/// Addresses asked of the launcher, as they come.
pub(crate) struct LauncherBook {
    /// Per node: `None` until answered; the answer as the launcher gave it.
    answers: Mutex<Vec<Option<String>>>,
    answered: Condvar,
    /// The founding nodes, placed on `spread` hosts in turn.
    founders: u32,
    spread: u32,
}

impl LauncherBook {
    /// The book of a founding node of `founders`, placed on `spread` hosts.
    pub(crate) fn new(capacity: u32, founders: u32, spread: u32) -> LauncherBook {
        LauncherBook::knowing(capacity, founders, spread, &[])
    }

    /// The book of a node joining a running job, which knows the
    /// addresses of the directory it was given (empty for a node gone) and
    /// asks the launcher for those of nodes that join after it.
    pub(crate) fn knowing(capacity: u32, founders: u32, spread: u32, known: &[String]) -> LauncherBook {
        let mut answers = vec![None; capacity as usize];
        for (slot, addr) in answers.iter_mut().zip(known) {
            *slot = Some(addr.clone());
        }
        LauncherBook {
            answers: Mutex::new(answers),
            answered: Condvar::new(),
            founders,
            spread: spread.max(1),
        }
    }

    fn lookup(&self, router: &Router, node: u32) -> Result<SocketAddr, String> {
        let deadline = Instant::now() + LOOKUP_TIMEOUT;
        let mut answers = lock(&self.answers);
        let Some(slot) = answers.get(node as usize) else {
            return Err(format!("no node n{node}"));
        };
        if slot.is_none() {
            let control = router.control.get().ok_or("no launcher to ask")?;
            let (h, p) = crate::control::Control::Lookup { node }.encode();
            control
                .send(&h, p)
                .map_err(|(e, _)| format!("asking the launcher for n{node}'s address: {e}"))?;
        }
        loop {
            if let Some(addr) = &answers[node as usize] {
                return parse(node, Some(addr));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("the launcher did not give n{node}'s address within {LOOKUP_TIMEOUT:?}"));
            }
            answers = self
                .answered
                .wait_timeout(answers, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The launcher's answer for `node` (control step 11).
    pub(super) fn arrived(&self, node: u32, addr: &str) {
        if let Some(slot) = lock(&self.answers).get_mut(node as usize) {
            *slot = Some(addr.to_string());
        }
        self.answered.notify_all();
    }

    /// Founders by the launcher's placement; any other pair by the
    /// addresses known so far (one IP: one host and namespace).
    fn same_host(&self, a: u32, b: u32) -> bool {
        if a < self.founders && b < self.founders {
            return a % self.spread == b % self.spread;
        }
        let answers = lock(&self.answers);
        let ip = |n: u32| {
            let addr = answers.get(n as usize)?.as_deref()?;
            addr.parse::<SocketAddr>().ok().map(|s| s.ip())
        };
        ip(a).is_some() && ip(a) == ip(b)
    }
}
