//! The fibers that run fiber handlers (protocol step 3).
//!
//! 1. A message for a fiber handler pops an idle pool fiber, puts the work
//!    in its slot and unparks it; with none idle it starts a new fiber
//!    (with an endpoint of its own) holding the work.
//! 2. A pool fiber runs its work, pushes itself on the idle list and parks
//!    until its slot holds more.
//! 3. At finalize every idle fiber is handed `Stop` and ends, dropping its
//!    endpoint; a fiber busy in a handler ends when the handler returns.

use super::registry::Registry;
use super::FiberFn;
use crate::lock;
use crate::Endpoint;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use threadwire_fiber::Unparker;

/// One fiber handler's call: the handler and its message.
pub(crate) struct Work {
    pub(crate) handler: Arc<FiberFn>,
    pub(crate) message: super::Arrival,
}

enum Job {
    Run(Work),
    Stop,
}

struct Fiber {
    slot: Mutex<Option<Job>>,
    owner: Unparker,
}

#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Arc<Fiber>>>,
    stopped: AtomicBool,
}

impl Pool {
    /// Step 1: `work` to an idle fiber, or to a new one. `Err` says why
    /// no fiber could take it (the work is dropped).
    pub(crate) fn hand(&self, registry: &Registry, work: Work) -> Result<(), String> {
        let fiber = lock(&self.idle).pop();
        if let Some(fiber) = fiber {
            *lock(&fiber.slot) = Some(Job::Run(work));
            fiber.owner.unpark();
            return Ok(());
        }
        let Some(node) = registry.node() else {
            return Err("the node is gone".into());
        };
        let started = node.clone();
        node.try_spawn(move |ep| serve(&ep, &started.shared.router.am, work))
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Step 3.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        for fiber in lock(&self.idle).drain(..) {
            *lock(&fiber.slot) = Some(Job::Stop);
            fiber.owner.unpark();
        }
    }
}

/// Step 2: a pool fiber's life.
fn serve(ep: &Endpoint, registry: &Registry, first: Work) {
    let me = Arc::new(Fiber {
        slot: Mutex::new(None),
        owner: threadwire_fiber::current_unparker(),
    });
    let mut work = first;
    loop {
        super::arrive::run_fiber(ep, work);
        if registry.pool.stopped.load(Ordering::Acquire) {
            return;
        }
        lock(&registry.pool.idle).push(me.clone());
        if registry.pool.stopped.load(Ordering::Acquire) {
            // `stop` may have emptied the list before the push.
            return;
        }
        let job = loop {
            if let Some(job) = lock(&me.slot).take() {
                break job;
            }
            threadwire_fiber::park();
        };
        match job {
            Job::Run(next) => work = next,
            Job::Stop => return,
        }
    }
}
