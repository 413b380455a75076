//! The fiber scheduler: workers, priorities, spawning and joining.
//!
//! A [`Scheduler`] owns one worker OS thread per core (configurable). Each
//! worker runs its fibers by priority — 16 levels, higher first, round
//! robin within a level — switching with corosensei (a few nanoseconds, no
//! system call). The safety model is in `worker.rs` (rules 1–4): a fiber
//! never leaves the worker that started it.
//!
//! Where a new fiber goes: spawned from a fiber, onto the spawner's worker
//! while that worker has little else to run (creation and a later join then
//! cost no cross-core traffic), else onto the workers in turn; spawned from
//! an OS thread, onto the workers in turn; [`FiberBuilder::worker`] chooses.

mod join;
mod stack;
mod worker;

pub use join::{JoinError, JoinHandle};
pub(crate) use worker::FiberShared;

use join::JoinState;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use worker::{current_worker, NewFiber, WorkerLocal, WorkerShared};

use crate::park::Parker;

/// Installs the fiber stack-overflow reporter (`SIGSEGV`, `SIGBUS`), as
/// building a scheduler does; idempotent. A library that installs a fault
/// handler of its own calls this first, so that its handler is the later
/// one and passes the faults it does not own on to this one.
pub fn install_fault_handlers() {
    stack::install_overflow_handler();
}

/// A fiber's scheduling priority: 16 levels, higher runs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    /// The lowest level, 0.
    pub const LOWEST: Priority = Priority(0);
    /// The level fibers get unless told otherwise, 7.
    pub const NORMAL: Priority = Priority(7);
    /// The highest level, 15.
    pub const HIGHEST: Priority = Priority(15);

    /// Level `level` (0–15); `None` above 15.
    pub const fn new(level: u8) -> Option<Priority> {
        if (level as usize) < worker::LEVELS {
            Some(Priority(level))
        } else {
            None
        }
    }

    /// The level, 0–15.
    pub const fn level(self) -> u8 {
        self.0
    }
}

impl Default for Priority {
    fn default() -> Self {
        Priority::NORMAL
    }
}

/// What a worker does when it has no fiber to run: the node's progress
/// engine, in threadwire.
pub trait Idle: Send + Sync {
    /// Makes progress without blocking; `true` if anything happened.
    fn poll(&self) -> bool;

    /// Sleeps until `parker` is unparked, or `timeout` passes. The default
    /// sleeps in a futex; an engine sleeps in its own poller instead
    /// ([`Parker::park_external`]).
    fn sleep(&self, parker: &Parker, timeout: Option<Duration>) {
        match timeout {
            Some(t) => parker.park_timeout(t),
            None => parker.park(),
        }
    }
}

pub(crate) struct Shared {
    workers: Vec<Arc<WorkerShared>>,
    next_worker: AtomicUsize,
    shutdown: AtomicBool,
    idle: Option<Arc<dyn Idle>>,
    stack_size: usize,
}

/// A fiber spawned from a fiber stays on the spawner's worker while fewer
/// than this many fibers wait to run there; beyond, spawns spread over the
/// workers in turn, so that a fiber forking many children gets every core
/// (a started fiber never moves, rule 1 of `worker.rs`, so spreading is
/// decided here).
const SPILL_AT: usize = 2;

static NEXT_FIBER_IDS: AtomicU64 = AtomicU64::new(1);

/// Fiber ids are handed to each thread in blocks, so spawning costs no
/// shared atomic operation.
fn next_fiber_id() -> u64 {
    const BLOCK: u64 = 1024;
    thread_local! {
        static IDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
    }
    IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = NEXT_FIBER_IDS.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
        }
        ids.set((next + 1, end));
        next
    })
}

/// Configures a [`Scheduler`].
pub struct Builder {
    workers: Option<usize>,
    stack_size: usize,
    name: String,
    idle: Option<Arc<dyn Idle>>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            stack_size: 128 * 1024,
            name: "tw-worker".into(),
            idle: None,
        }
    }
}

impl Builder {
    /// Worker threads; default one per core
    /// (`std::thread::available_parallelism`).
    pub fn workers(mut self, n: usize) -> Builder {
        self.workers = Some(n.max(1));
        self
    }

    /// Usable bytes per fiber stack (default 128 KiB), plus a guard page.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = bytes;
        self
    }

    /// Prefix of the worker threads' names (default `tw-worker`).
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = name.into();
        self
    }

    /// What idle workers do: poll this, then sleep through it.
    pub fn idle(mut self, idle: Arc<dyn Idle>) -> Builder {
        self.idle = Some(idle);
        self
    }

    /// Starts the workers.
    pub fn build(self) -> io::Result<Scheduler> {
        stack::install_overflow_handler();
        let count = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let shared = Arc::new(Shared {
            workers: (0..count).map(|i| Arc::new(WorkerShared::new(i))).collect(),
            next_worker: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            idle: self.idle,
            stack_size: self.stack_size,
        });
        let mut threads = Vec::with_capacity(count);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        for worker in &shared.workers {
            let worker = worker.clone();
            let scheduler = shared.clone();
            let ready = ready_tx.clone();
            let thread = std::thread::Builder::new()
                .name(format!("{}-{}", self.name, worker.index))
                .spawn(move || {
                    stack::ensure_alternate_stack();
                    let local = WorkerLocal::new(worker, scheduler);
                    let _ = ready.send(());
                    drop(ready);
                    local.run_loop();
                })?;
            threads.push(thread);
        }
        drop(ready_tx);
        // Every worker has its parker before anyone can wake it.
        for _ in 0..count {
            let _ = ready_rx.recv();
        }
        Ok(Scheduler {
            handle: Handle { shared },
            threads,
        })
    }
}

/// A pool of workers running fibers. Dropping it lets runnable fibers
/// finish, then stops the workers; fibers still parked then are abandoned
/// (never resumed, their memory leaked), as a process exit would.
///
/// ```
/// use threadwire_fiber::Scheduler;
///
/// let scheduler = Scheduler::builder().workers(2).build().unwrap();
/// let fibers: Vec<_> = (0..100u64).map(|i| scheduler.spawn(move || i * i)).collect();
/// let sum: u64 = fibers.into_iter().map(|f| f.join().unwrap()).sum();
/// assert_eq!(sum, 328_350);
/// ```
pub struct Scheduler {
    handle: Handle,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Scheduler {
    /// A builder with the defaults.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A handle to spawn with from anywhere.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Spawns a fiber at normal priority; see [`Handle::spawn`].
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle.spawn(f)
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.handle.shared.workers.len()
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.handle.shared.shutdown.store(true, Ordering::Release);
        for w in &self.handle.shared.workers {
            w.wake();
        }
        let on_own_worker =
            current_worker().is_some_and(|w| Arc::ptr_eq(&w.scheduler, &self.handle.shared));
        if on_own_worker {
            // Joining our own thread would deadlock; the workers stop by
            // themselves.
            return;
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A cheap, cloneable, `Send` handle on a scheduler.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    /// The scheduler the caller runs on, if it runs in a fiber or worker.
    pub fn current() -> Option<Handle> {
        current_worker().map(|w| Handle {
            shared: w.scheduler.clone(),
        })
    }

    /// Spawns a fiber at normal priority and returns its handle.
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.fiber().spawn(f)
    }

    /// A builder for a fiber with a priority, name or worker.
    pub fn fiber(&self) -> FiberBuilder<'_> {
        FiberBuilder {
            handle: self,
            priority: Priority::NORMAL,
            name: None,
            worker: None,
        }
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }
}

/// Options for one fiber.
pub struct FiberBuilder<'a> {
    handle: &'a Handle,
    priority: Priority,
    name: Option<Arc<str>>,
    worker: Option<usize>,
}

impl FiberBuilder<'_> {
    /// Its priority (default [`Priority::NORMAL`]).
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// A name, shown in stack-overflow reports.
    pub fn name(mut self, name: impl AsRef<str>) -> Self {
        self.name = Some(Arc::from(name.as_ref()));
        self
    }

    /// The worker to run on (modulo the number of workers).
    pub fn worker(mut self, index: usize) -> Self {
        self.worker = Some(index % self.handle.shared.workers.len());
        self
    }

    /// Spawns the fiber.
    pub fn spawn<F, T>(self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        spawn_on(
            &self.handle.shared,
            self.priority,
            self.name,
            self.worker,
            f,
        )
    }
}

fn spawn_on<F, T>(
    shared: &Arc<Shared>,
    priority: Priority,
    name: Option<Arc<str>>,
    worker: Option<usize>,
    f: F,
) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let state = JoinState::new();
    let id = next_fiber_id();
    let completion = state.clone();
    let body = move || {
        let result = catch_unwind(AssertUnwindSafe(f)).map_err(|p| JoinError::from_panic(&*p));
        completion.complete(result);
    };
    let here = current_worker().filter(|w| Arc::ptr_eq(&w.scheduler, shared));
    let target = match (worker, here) {
        (Some(i), _) => i,
        (None, Some(w)) if w.ready_len() < SPILL_AT => w.shared.index,
        _ => shared.next_worker.fetch_add(1, Ordering::Relaxed) % shared.workers.len(),
    };
    match here {
        Some(w) if w.shared.index == target => {
            w.start(priority.0, name, id, body);
        }
        _ => shared.workers[target].push_spawn(NewFiber {
            body: Box::new(body),
            priority: priority.0,
            name,
            id,
        }),
    }
    JoinHandle { state, id }
}

/// Spawns a fiber on the scheduler the caller runs on.
///
/// # Panics
/// Outside a fiber or worker: use [`Scheduler::spawn`] or a [`Handle`].
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let worker = current_worker()
        .expect("threadwire_fiber::spawn called outside a fiber; use Scheduler::spawn or a Handle");
    spawn_on(&worker.scheduler, Priority::NORMAL, None, None, f)
}

/// The running fiber, if the caller is one.
pub(crate) fn current_fiber() -> Option<Arc<FiberShared>> {
    let ptr = worker::current_fiber_ptr();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` came from `Arc::as_ptr` on a FiberShared the slab keeps
    // alive while the fiber runs; we add the strong count we hand out.
    unsafe {
        Arc::increment_strong_count(ptr);
        Some(Arc::from_raw(ptr))
    }
}

/// Whether the caller is a fiber, cheaply.
pub(crate) fn in_fiber() -> bool {
    !worker::current_fiber_ptr().is_null()
}

pub(crate) use worker::{current_fiber_ptr, park_fiber, park_until};

/// Lets other fibers of the same or higher priority run (round robin); on
/// an OS thread, yields to the kernel.
pub fn yield_now() {
    if in_fiber() {
        worker::suspend(worker::Suspend::Yield);
    } else {
        std::thread::yield_now();
    }
}

/// Sleeps for `duration`: a fiber parks and its worker runs others; an OS
/// thread sleeps in the kernel.
pub fn sleep(duration: Duration) {
    let deadline = Instant::now() + duration;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        crate::park::park_timeout(deadline - now);
    }
}
