//! The fibers that run fiber handlers (protocol step 3).
//!
//! 1. A message for a fiber handler pops an idle pool fiber, puts the work
//!    in its slot and unparks it; with none idle it starts a new fiber
//!    (with an endpoint of its own) holding the work, unless the pool has
//!    its bound of fibers: then the work waits in the pool's queue.
//! 2. A pool fiber runs its work, then the queue's first, if any; with the
//!    queue empty it pushes itself on the idle list and parks until its
//!    slot holds more.
//! 3. At finalize every idle fiber is handed `Stop` and ends, dropping its
//!    endpoint; a fiber busy in a handler ends when the handler returns.

use super::registry::Registry;
use super::FiberFn;
use crate::lock;
use crate::Endpoint;
use std::collections::VecDeque;
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

pub(crate) struct Pool {
    /// Idle fibers, the work waiting for one, and how many fibers exist.
    state: Mutex<State>,
    /// Fibers at most.
    bound: usize,
    stopped: AtomicBool,
}

#[derive(Default)]
struct State {
    idle: Vec<Arc<Fiber>>,
    queue: VecDeque<Work>,
    fibers: usize,
}

impl Pool {
    pub(crate) fn new(bound: usize) -> Pool {
        Pool {
            state: Mutex::default(),
            bound,
            stopped: AtomicBool::new(false),
        }
    }

    /// Step 1: `work` to an idle fiber, a new one, or the queue. `Err`
    /// says why no fiber could take it (the work is dropped).
    pub(crate) fn hand(&self, registry: &Registry, work: Work) -> Result<(), String> {
        let mut state = lock(&self.state);
        if let Some(fiber) = state.idle.pop() {
            drop(state);
            *lock(&fiber.slot) = Some(Job::Run(work));
            fiber.owner.unpark();
            return Ok(());
        }
        if state.fibers >= self.bound {
            state.queue.push_back(work);
            return Ok(());
        }
        state.fibers += 1;
        drop(state);
        let started = registry.node().and_then(|node| {
            let serving = node.clone();
            node.try_spawn(move |ep| serve(&ep, &serving.shared.router.am, work))
                .map_err(|e| e.to_string())
                .ok()
        });
        if started.is_none() {
            lock(&self.state).fibers -= 1;
            return Err("the node could not start a fiber (thread numbers or workers)".into());
        }
        Ok(())
    }

    /// Step 3.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let idle = std::mem::take(&mut lock(&self.state).idle);
        for fiber in idle {
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
    let pool = &registry.pool;
    let mut work = first;
    loop {
        super::arrive::run_fiber(ep, work);
        if pool.stopped.load(Ordering::Acquire) {
            lock(&pool.state).fibers -= 1;
            return;
        }
        {
            let mut state = lock(&pool.state);
            if let Some(next) = state.queue.pop_front() {
                work = next;
                continue;
            }
            state.idle.push(me.clone());
        }
        if pool.stopped.load(Ordering::Acquire) {
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
