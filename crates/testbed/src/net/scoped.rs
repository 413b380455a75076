//! A net for one run, removed when dropped and, on a signal, by
//! [`crate::interrupt`].

use super::build::{down_locked, up_locked};
use super::{Link, Net, NetConfig, NetError};
use crate::interrupt::{registry, Registry, Removable};

/// A net that is removed when this is dropped: for a benchmark that runs
/// on an emulated link and must leave nothing behind.
#[derive(Debug)]
pub struct ScopedNet(Net);

impl ScopedNet {
    /// Builds the net ([`up`](super::up)).
    pub fn up(cfg: &NetConfig) -> Result<ScopedNet, NetError> {
        let mut registry = registry();
        // Registered before it exists, so an interrupt while it is being
        // built removes it too (crate::interrupt, rule 1).
        registry.add_removable(Box::new(Registered(cfg.prefix.clone())));
        let built = up_locked(cfg, &registry);
        if built.is_err() {
            if crate::interrupt::signal().is_some() {
                // Stopped by the signal: the interrupt thread, waiting for
                // the lock, removes it (again, harmlessly) and the rest,
                // and ends the process.
                drop(registry);
                crate::interrupt::wait_for_exit();
            }
            registry.remove_removable(&Registered::name_of(&cfg.prefix));
        }
        built.map(ScopedNet)
    }

    /// `hosts` hosts on `link`, for one run: the prefix is `stem` and a
    /// number from this process's id, and as the prefix picks the subnet,
    /// which another net may hold, a few numbers are tried.
    pub fn up_with_free_prefix(stem: &str, hosts: u32, link: Link) -> Result<ScopedNet, NetError> {
        let mut last = None;
        for k in 0..5 {
            let config = NetConfig {
                prefix: format!("{stem}{}", (std::process::id() + k) % 100_000),
                ..NetConfig::new(hosts, link)
            };
            match ScopedNet::up(&config) {
                Ok(net) => return Ok(net),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("tried at least once"))
    }
}

impl std::ops::Deref for ScopedNet {
    type Target = Net;
    fn deref(&self) -> &Net {
        &self.0
    }
}

impl Drop for ScopedNet {
    fn drop(&mut self) {
        let mut registry = registry();
        if let Err(e) = down_locked(&self.0.prefix, &registry) {
            tracing::warn!("removing emulated net {}: {e}", self.0.prefix);
        }
        registry.remove_removable(&Registered::name_of(&self.0.prefix));
    }
}

/// A [`ScopedNet`] as the interrupt registry knows it (`net PREFIX`).
struct Registered(String);

impl Registered {
    fn name_of(prefix: &str) -> String {
        format!("net {prefix}")
    }
}

impl Removable for Registered {
    fn name(&self) -> String {
        Registered::name_of(&self.0)
    }

    fn remove(&self, locked: &Registry) -> Result<(), Box<dyn std::error::Error>> {
        Ok(down_locked(&self.0, locked)?)
    }
}
