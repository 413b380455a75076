//! The node's handlers by id, and the names it has seen.

use super::pool::Pool;
use super::large::{Large, Provider};
use super::{ActiveMessage, AmError, FiberFn, InlineFn};
use crate::name_hash::name_hash;
use crate::node::NodeShared;
use crate::{Endpoint, Node};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, RwLock, Weak};

/// A handler's name and id, for sending to it: from
/// [`Node::register_inline`], [`Node::register_fiber`] or
/// [`Node::handler`]. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handler {
    pub(crate) id: u64,
    name: Arc<str>,
}

impl Handler {
    /// A handler every node registers from its start (`Registry::new`).
    pub(crate) fn builtin(name: &'static str) -> Handler {
        Handler {
            id: name_hash(name),
            name: name.into(),
        }
    }

    /// The name it was made from.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// What runs for an id.
#[derive(Clone)]
pub(crate) enum Run {
    Inline(Arc<InlineFn>),
    Fiber(Arc<FiberFn>),
}

struct Entry {
    name: Arc<str>,
    /// `None`: a name this node calls but does not serve.
    run: Option<Run>,
    /// Where large messages' bytes go, if not into a fresh vector.
    provider: Option<Arc<Provider>>,
}

/// Handlers of this node, the names it knows, the pool of fiber handlers.
pub(crate) struct Registry {
    entries: RwLock<HashMap<u64, Entry>>,
    /// The number of this node's next request (0 means one-way).
    next_request: AtomicU32,
    pub(crate) pool: Pool,
    /// Reports of this node's threads' failed one-way messages.
    pub(crate) reports: super::reports::Reports,
    /// The node, for starting threads; set at start-up (`bind`).
    node: OnceLock<Weak<NodeShared>>,
    /// Large messages being fetched, and what waits behind them.
    pub(crate) large: Large,
}

impl Registry {
    /// The handlers every node has from its start: remote spawn's, the
    /// machine's view, reports of failed one-way messages and group
    /// agreement's.
    /// `large` bounds the bytes of large messages held at once.
    pub(crate) fn new(fibers: usize, large: usize) -> Registry {
        let spawn = (
            crate::remote_spawn::SPAWN_HANDLER,
            Run::Inline(Arc::new(crate::remote_spawn::serve)),
        );
        let machine = (
            crate::machine::MACHINE_HANDLER,
            Run::Inline(Arc::new(crate::machine::serve)),
        );
        let report = (
            super::reports::REPORT_HANDLER,
            Run::Inline(Arc::new(super::reports::serve)),
        );
        let revoke = (
            crate::group::revoke::HANDLER,
            Run::Inline(Arc::new(crate::group::revoke::serve)),
        );
        let entries = [spawn, machine, report, revoke]
            .into_iter()
            .chain(crate::group::agree::builtins())
            .map(|(name, run)| {
                let entry = Entry {
                    name: name.into(),
                    run: Some(run),
                    provider: None,
                };
                (name_hash(name), entry)
            })
            .collect();
        Registry {
            entries: RwLock::new(entries),
            next_request: AtomicU32::new(0),
            pool: Pool::new(fibers),
            reports: Default::default(),
            node: OnceLock::new(),
            large: Large::new(large),
        }
    }

    /// Gives the registry its node, for starting threads (at start-up).
    pub(crate) fn bind(&self, node: &Arc<NodeShared>) {
        let _ = self.node.set(Arc::downgrade(node));
    }

    /// What runs for `id`, if anything.
    #[inline]
    pub(crate) fn lookup(&self, id: u64) -> Option<Run> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        entries.get(&id)?.run.clone()
    }

    /// What runs for `id`, if anything, and its buffer provider.
    pub(crate) fn lookup_with_provider(&self, id: u64) -> Option<(Run, Option<Arc<Provider>>)> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(&id)?;
        Some((entry.run.clone()?, entry.provider.clone()))
    }

    /// The name of `id` as this node knows it, else the id in hex.
    pub(crate) fn name_of(&self, id: u64) -> String {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        match entries.get(&id) {
            Some(entry) => entry.name.to_string(),
            None => format!("{id:#018x}"),
        }
    }

    /// A fresh request number, never 0.
    pub(crate) fn next_request(&self) -> u32 {
        loop {
            let n = self.next_request.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if n != 0 {
                return n;
            }
        }
    }

    pub(crate) fn node(&self) -> Option<Node> {
        let shared = self.node.get()?.upgrade()?;
        Some(Node { shared })
    }

    /// Records `name`, with what runs for it if `run` is given.
    fn record(&self, name: &str, run: Option<Run>) -> Result<Handler, AmError> {
        self.record_with(name, run, None)
    }

    /// [`record`](Self::record), with a buffer provider for large messages.
    fn record_with(
        &self,
        name: &str,
        run: Option<Run>,
        provider: Option<Arc<Provider>>,
    ) -> Result<Handler, AmError> {
        let id = name_hash(name);
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        match entries.get_mut(&id) {
            Some(entry) if &*entry.name != name => Err(AmError::IdCollision {
                name: name.to_string(),
                other: entry.name.to_string(),
            }),
            Some(entry) => {
                if run.is_some() {
                    if entry.run.is_some() {
                        return Err(AmError::AlreadyRegistered {
                            name: name.to_string(),
                        });
                    }
                    entry.run = run;
                    entry.provider = provider;
                }
                Ok(Handler {
                    id,
                    name: entry.name.clone(),
                })
            }
            None => {
                let name: Arc<str> = name.into();
                entries.insert(
                    id,
                    Entry {
                        name: name.clone(),
                        run,
                        provider,
                    },
                );
                Ok(Handler { id, name })
            }
        }
    }
}

impl Node {
    /// Registers `f` as the handler `name`, to run inline: in whichever
    /// thread drives this node's progress when a message for it arrives,
    /// in the order messages from one thread arrive. It gets no endpoint
    /// and must be short (see [`am`](crate::am)); a panic in it is
    /// reported to the sender and goes no further.
    ///
    /// Register the same names on every node that serves them before any
    /// node calls them (a barrier after registering does it).
    ///
    /// # Errors
    ///
    /// [`AmError::AlreadyRegistered`], [`AmError::IdCollision`].
    pub fn register_inline(
        &self,
        name: &str,
        f: impl Fn(&mut ActiveMessage<'_>) + Send + Sync + 'static,
    ) -> Result<Handler, AmError> {
        let registry = &self.shared.router.am;
        registry.record(name, Some(Run::Inline(Arc::new(f))))
    }

    /// Registers `f` as the handler `name`, to run in a fiber of this
    /// node's pool with an endpoint of its own: it may block, send,
    /// receive and call other handlers (see [`am`](crate::am)).
    ///
    /// # Errors
    ///
    /// As [`register_inline`](Self::register_inline).
    pub fn register_fiber(
        &self,
        name: &str,
        f: impl Fn(&Endpoint, &mut ActiveMessage<'_>) + Send + Sync + 'static,
    ) -> Result<Handler, AmError> {
        let registry = &self.shared.router.am;
        registry.record(name, Some(Run::Fiber(Arc::new(f))))
    }

    /// [`register_fiber`](Self::register_fiber), with a buffer provider
    /// for large messages: a message for `name` longer than its channel's
    /// eager limit (see [`am`](crate::am), step 3b) is fetched into the
    /// vector `provider(len)` returns — its contents overwritten, its
    /// capacity grown to `len` if less, its length then `len` — which the
    /// handler may keep ([`ActiveMessage::take_payload`], then
    /// [`Payload::into_vec`](crate::Payload::into_vec): no copy).
    /// `None` refuses the message: the handler does not run and the
    /// sender gets [`AmError::Refused`] (from its request, or from
    /// [`Endpoint::am_check`](crate::Endpoint::am_check) for a one-way
    /// message). Shorter messages arrive eagerly, as for any handler, and
    /// never reach the provider.
    ///
    /// The provider runs in whichever thread fetches the message (the
    /// node's progress driver, or a thread finishing a handler): it must
    /// be short and must not block.
    ///
    /// ```no_run
    /// use std::sync::{Arc, Mutex};
    /// use threadwire::{ActiveMessage, Endpoint};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let me = threadwire::init()?;
    /// let node = me.node().clone();
    /// let kept: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    /// let k = kept.clone();
    /// let store = node.register_fiber_into(
    ///     "store",
    ///     // At most 64 MiB a message, into a buffer of our own.
    ///     |len| (len <= 64 << 20).then(|| Vec::with_capacity(len)),
    ///     move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
    ///         k.lock().unwrap().push(am.take_payload().into_vec());
    ///     },
    /// )?;
    /// threadwire::Group::world(&me)?.barrier()?;
    /// if me.node().id() == 1 {
    ///     me.am_send(0, &store, vec![7u8; 16 << 20])?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`register_inline`](Self::register_inline).
    pub fn register_fiber_into(
        &self,
        name: &str,
        provider: impl Fn(usize) -> Option<Vec<u8>> + Send + Sync + 'static,
        f: impl Fn(&Endpoint, &mut ActiveMessage<'_>) + Send + Sync + 'static,
    ) -> Result<Handler, AmError> {
        let registry = &self.shared.router.am;
        registry.record_with(name, Some(Run::Fiber(Arc::new(f))), Some(Arc::new(provider)))
    }

    /// [`register_inline`](Self::register_inline), with a buffer provider
    /// for large messages, as for
    /// [`register_fiber_into`](Self::register_fiber_into).
    ///
    /// # Errors
    ///
    /// As [`register_inline`](Self::register_inline).
    pub fn register_inline_into(
        &self,
        name: &str,
        provider: impl Fn(usize) -> Option<Vec<u8>> + Send + Sync + 'static,
        f: impl Fn(&mut ActiveMessage<'_>) + Send + Sync + 'static,
    ) -> Result<Handler, AmError> {
        let registry = &self.shared.router.am;
        registry.record_with(name, Some(Run::Inline(Arc::new(f))), Some(Arc::new(provider)))
    }

    /// The handler `name`, to call on other nodes, without registering
    /// anything here. This node remembers the name, so errors about it
    /// name it.
    ///
    /// # Errors
    ///
    /// [`AmError::IdCollision`] with a name this node knows.
    pub fn handler(&self, name: &str) -> Result<Handler, AmError> {
        self.shared.router.am.record(name, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_skip_zero() {
        let r = Registry::new(1, 1 << 20);
        r.next_request.store(u32::MAX - 1, Ordering::Relaxed);
        assert_eq!(r.next_request(), u32::MAX);
        assert_eq!(r.next_request(), 1);
    }
}
