//! A worker: one OS thread running its fibers, highest priority first.
//!
//! # Rules
//!
//! 1. A fiber runs only on the worker that created it: its coroutine lives
//!    in that worker's slab and is resumed only by the worker's loop, so
//!    thread-locals seen by a fiber stay valid for its whole life. Only a
//!    fiber's `Send` closure crosses threads, before it starts.
//! 2. A fiber's `state` word goes `RUNNING → PARKED` only on its worker,
//!    after the fiber has switched out (the CAS in [`WorkerLocal::run`]);
//!    anyone goes `any → NOTIFIED` (swap) and, if the old state was
//!    `PARKED`, makes the fiber runnable exactly once: pushed on the
//!    worker's ready queue (same thread) or its wake list (other threads,
//!    module `wake_list`).
//!    A fiber that finds `NOTIFIED` when it parks returns at once; one
//!    whose CAS fails is requeued. So no wake-up is lost or doubled.
//! 3. Worker-local state (`WorkerLocal`) is touched only by its thread;
//!    nothing borrows it across a switch into a fiber.
//! 4. A worker with nothing runnable takes its wake list, drains its inbox
//!    (fibers spawned from other threads), fires timers, polls
//!    blocked predicates and — if it has fibers at all — the idle hook (the
//!    node's progress engine), spins for the spin budget, then sleeps in
//!    the kernel (through the idle hook, e.g. inside `epoll_wait`, or on
//!    its own futex when it has no fibers) until its parker is unparked or
//!    the next timer is due.
//!
//! At about 600 lines this file is long on purpose: the rules above and
//! the loop and state they govern are read together, and split apart the
//! rules would be stated in one file and kept in another.

use super::stack::{guard_range, OverflowInfo, StackPool};
use super::Shared;
use crate::park::{Parker, Unparker};
use crate::spin::SpinWait;
use crate::wake_list::{Linked, WakeList};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const RUNNING: u32 = 0;
const PARKED: u32 = 1;
const NOTIFIED: u32 = 3;

pub(crate) const LEVELS: usize = 16;

/// How often a busy worker also looks at timers and the idle hook.
const HOUSEKEEPING_EVERY: u32 = 64;

/// How often a worker re-tests blocked predicates while it has nothing
/// else to do: predicates cannot wake anyone, so they are polled.
const PREDICATE_POLL: Duration = Duration::from_micros(200);

/// What a fiber asks of its worker when it switches out.
pub(crate) enum Suspend {
    Yield,
    Park,
}

type FiberYielder = Yielder<(), Suspend>;

type FiberCoroutine = Coroutine<(), Suspend, (), DefaultStack>;

/// A fiber: what other threads may use (its state word, to wake it) and,
/// in the same allocation, its coroutine, which only its worker touches.
pub(crate) struct FiberShared {
    /// Rule 1: accessed only by the worker that created the fiber, never
    /// across a resume of this coroutine.
    coroutine: std::cell::UnsafeCell<Option<FiberCoroutine>>,
    state: AtomicU32,
    worker: Arc<WorkerShared>,
    slot: u32,
    priority: u8,
    yielder: AtomicPtr<FiberYielder>,
    /// The next fiber in its worker's wake list (rule 2), while in it.
    next_wake: AtomicPtr<FiberShared>,
    pub(crate) overflow: OverflowInfo,
}

// SAFETY: every field but `coroutine` is Sync. The coroutine (not Send:
// its stack holds the fiber's frames) is created, resumed, taken and
// dropped only on the fiber's worker (rule 1); other threads reach a
// FiberShared only through `unpark`, which reads `state`, `worker`, `slot`
// and `priority`. A fiber still running when its worker stops is leaked
// with its slab reference, so the coroutine is never dropped elsewhere.
unsafe impl Send for FiberShared {}
// SAFETY: as above.
unsafe impl Sync for FiberShared {}

impl FiberShared {
    /// Rule 2.
    pub(crate) fn unpark(&self) {
        if self.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            match current_worker() {
                Some(local) if Arc::ptr_eq(&local.shared, &self.worker) => {
                    local.push_ready(self.slot, self.priority)
                }
                _ => self.worker.push_wake(self),
            }
        }
    }
}

impl Linked for FiberShared {
    fn link(&self) -> &AtomicPtr<FiberShared> {
        &self.next_wake
    }
}

/// A fiber not yet started: `Send`, so it may travel to its worker.
pub(crate) struct NewFiber {
    pub(crate) body: Box<dyn FnOnce() + Send>,
    pub(crate) priority: u8,
    pub(crate) name: Option<Arc<str>>,
    pub(crate) id: u64,
}

/// The part of a worker other threads use: its wake list, its inbox of
/// new fibers and its parker.
pub(crate) struct WorkerShared {
    pub(crate) index: usize,
    inbox: Mutex<Vec<NewFiber>>,
    has_inbox: AtomicBool,
    /// Fibers of this worker that other threads made runnable (rule 2):
    /// a wake-up costs one compare-and-swap here, where the locked inbox
    /// cost a lock, a buffer and a flag, each a cache line from the other
    /// core (measured, `bench coll`, alternated: fibers of one node on two
    /// workers, 1x2 barrier 0.70–0.74 µs through the inbox, 0.57–0.59
    /// through the list; 1x16 6.4–7.8 µs against 4.8–5.3).
    wakes: WakeList<FiberShared>,
    unparker: OnceLock<Unparker>,
}

impl WorkerShared {
    pub(crate) fn new(index: usize) -> WorkerShared {
        WorkerShared {
            index,
            inbox: Mutex::new(Vec::new()),
            has_inbox: AtomicBool::new(false),
            wakes: WakeList::default(),
            unparker: OnceLock::new(),
        }
    }

    pub(crate) fn push_spawn(&self, item: NewFiber) {
        crate::loom::lock(&self.inbox).push(item);
        self.has_inbox.store(true, Ordering::Release);
        self.wake();
    }

    /// Rule 2, from another thread: `fiber`, parked on this worker, joins
    /// its wake list.
    fn push_wake(&self, fiber: &FiberShared) {
        // SAFETY: the caller took the fiber from parked to notified, so it
        // is in no list and is pushed again only after it ran (the wake
        // list's rule 3); parked, it lives in this worker's slab until it
        // runs again (rule 5).
        unsafe { self.wakes.push(fiber) };
        self.wake();
    }

    /// Whether other threads left anything for the worker.
    fn has_work(&self) -> bool {
        !self.wakes.is_empty() || self.has_inbox.load(Ordering::Acquire)
    }

    pub(crate) fn wake(&self) {
        if let Some(u) = self.unparker.get() {
            u.unpark();
        }
    }
}

/// Worker-local data touched only in short sections that call no user
/// code and never nest (rule 3): cheaper than a `RefCell` on the switch
/// path, which is measured in nanoseconds.
struct LocalCell<T>(std::cell::UnsafeCell<T>);

impl<T: Default> Default for LocalCell<T> {
    fn default() -> Self {
        LocalCell(Default::default())
    }
}

impl<T> LocalCell<T> {
    fn new(value: T) -> Self {
        LocalCell(std::cell::UnsafeCell::new(value))
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: WorkerLocal is !Sync and used only on its thread; the
        // closures passed here call no user code and no other `with` on
        // the same cell, so this is the only reference while it lives.
        f(unsafe { &mut *self.0.get() })
    }
}

#[derive(Default)]
struct ReadyQueues {
    levels: [VecDeque<u32>; LEVELS],
    /// Bit `p` set when level `p` is non-empty.
    occupied: u16,
    len: usize,
}

impl ReadyQueues {
    fn push(&mut self, slot: u32, priority: u8) {
        self.levels[priority as usize].push_back(slot);
        self.occupied |= 1 << priority;
        self.len += 1;
    }

    fn pop(&mut self) -> Option<u32> {
        if self.occupied == 0 {
            return None;
        }
        let level = 15 - self.occupied.leading_zeros() as usize;
        let slot = self.levels[level].pop_front();
        self.len -= 1;
        if self.levels[level].is_empty() {
            self.occupied &= !(1 << level);
        }
        slot
    }
}

struct Timer {
    deadline: Instant,
    fiber: Arc<FiberShared>,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.deadline.cmp(&other.deadline)
    }
}

/// A predicate a parked fiber waits on (`block_until`); it lives on that
/// fiber's stack until the fiber unregisters it.
struct Blocked {
    fiber: Arc<FiberShared>,
    predicate: *const (dyn Fn() -> bool + 'static),
}

pub(crate) struct WorkerLocal {
    pub(crate) shared: Arc<WorkerShared>,
    pub(crate) scheduler: Arc<Shared>,
    ready: LocalCell<ReadyQueues>,
    slab: LocalCell<Vec<Option<Arc<FiberShared>>>>,
    free_slots: LocalCell<Vec<u32>>,
    timers: LocalCell<BinaryHeap<Reverse<Timer>>>,
    /// Predicates are user code: a RefCell catches misuse instead of UB.
    blocked: RefCell<Vec<Blocked>>,
    blocked_count: Cell<usize>,
    stacks: LocalCell<StackPool>,
    parker: Parker,
}

thread_local! {
    static WORKER: Cell<*const WorkerLocal> = const { Cell::new(std::ptr::null()) };
    static FIBER: Cell<*const FiberShared> = const { Cell::new(std::ptr::null()) };
}

/// The worker the calling thread is, if it is one.
pub(crate) fn current_worker() -> Option<&'static WorkerLocal> {
    let ptr = WORKER.with(Cell::get);
    // SAFETY: WORKER points at the WorkerLocal on this thread's stack for
    // the whole of its loop and is cleared before it returns; 'static is a
    // lie only to callers on this thread, which cannot outlive the loop.
    unsafe { ptr.as_ref() }
}

/// The fiber the calling thread runs, if any.
pub(crate) fn current_fiber_ptr() -> *const FiberShared {
    FIBER.with(Cell::get)
}

/// For the fault handler: the running fiber's stack facts.
pub(crate) fn overflow_info() -> Option<&'static OverflowInfo> {
    let ptr = FIBER.try_with(Cell::get).ok()?;
    // SAFETY: FIBER is set only while the fiber runs on this thread, and
    // its FiberShared is kept alive by the slab until after it is cleared.
    unsafe { ptr.as_ref().map(|f| &f.overflow) }
}

/// Switches the running fiber out with `why`.
pub(crate) fn suspend(why: Suspend) {
    let fiber = current_fiber_ptr();
    assert!(!fiber.is_null(), "suspend outside a fiber");
    // SAFETY: the fiber is running (FIBER is set), so its FiberShared is
    // alive and its yielder pointer was stored when its body started; the
    // Yielder lives on the fiber's own stack for the fiber's whole life.
    unsafe {
        let yielder = (*fiber).yielder.load(Ordering::Relaxed);
        (*yielder).suspend(why);
    }
}

/// Parks the running fiber (rule 2); with a timeout, a timer unparks it.
pub(crate) fn park_fiber(timeout: Option<Duration>) {
    let fiber = current_fiber_ptr();
    // SAFETY: as in `suspend`.
    let fiber = unsafe { &*fiber };
    // Swaps, not stores, consume a notification: an unpark that lands in
    // between must be acquired, or what it published could be missed (the
    // same race the loom model found in the thread parker).
    if fiber.state.load(Ordering::Relaxed) == NOTIFIED
        && fiber.state.swap(RUNNING, Ordering::Acquire) == NOTIFIED
    {
        return;
    }
    if let Some(timeout) = timeout {
        let local = current_worker().expect("a fiber runs on a worker");
        let me = local.fiber_arc(fiber.slot);
        let timer = Timer {
            deadline: Instant::now() + timeout,
            fiber: me,
        };
        local.timers.with(|t| t.push(Reverse(timer)));
    }
    suspend(Suspend::Park);
    fiber.state.swap(RUNNING, Ordering::Acquire);
}

/// Parks the running fiber until `predicate()` holds, testing it whenever
/// the worker looks for work.
pub(crate) fn park_until(predicate: &dyn Fn() -> bool) {
    let local = current_worker().expect("a fiber runs on a worker");
    // SAFETY: the fiber is running, see `suspend`.
    let slot = unsafe { (*current_fiber_ptr()).slot };
    let fiber = local.fiber_arc(slot);
    // SAFETY: only the lifetime is erased; the entry is removed below,
    // before `predicate` goes out of scope, and nothing else keeps it.
    let erased: *const (dyn Fn() -> bool + 'static) = unsafe { std::mem::transmute(predicate) };
    local.blocked.borrow_mut().push(Blocked {
        fiber: fiber.clone(),
        predicate: erased,
    });
    local.blocked_count.set(local.blocked_count.get() + 1);
    while !predicate() {
        park_fiber(None);
    }
    local
        .blocked
        .borrow_mut()
        .retain(|b| !Arc::ptr_eq(&b.fiber, &fiber));
    local.blocked_count.set(local.blocked_count.get() - 1);
}

impl WorkerLocal {
    pub(crate) fn new(shared: Arc<WorkerShared>, scheduler: Arc<Shared>) -> WorkerLocal {
        let parker = Parker::new();
        let _ = shared.unparker.set(parker.unparker());
        let stack_size = scheduler.stack_size;
        WorkerLocal {
            shared,
            scheduler,
            ready: LocalCell::default(),
            slab: LocalCell::default(),
            free_slots: LocalCell::default(),
            timers: LocalCell::default(),
            blocked: RefCell::default(),
            blocked_count: Cell::new(0),
            stacks: LocalCell::new(StackPool::new(stack_size)),
            parker,
        }
    }

    fn fiber_arc(&self, slot: u32) -> Arc<FiberShared> {
        self.slab
            .with(|slab| slab[slot as usize].clone())
            .expect("a live fiber's slot")
    }

    /// Whether any fiber lives on this worker (running, ready or parked).
    fn has_fibers(&self) -> bool {
        let slots = self.slab.with(|slab| slab.len());
        slots > self.free_slots.with(|free| free.len())
    }

    /// Fibers waiting to run on this worker.
    pub(crate) fn ready_len(&self) -> usize {
        self.ready.with(|r| r.len)
    }

    pub(crate) fn push_ready(&self, slot: u32, priority: u8) {
        self.ready.with(|r| r.push(slot, priority));
    }

    /// Creates a fiber on this worker and makes it runnable.
    pub(crate) fn start(
        &self,
        priority: u8,
        name: Option<Arc<str>>,
        id: u64,
        body: impl FnOnce() + 'static,
    ) {
        let stack = match self.stacks.with(StackPool::take) {
            Ok(stack) => stack,
            Err(e) => panic!("threadwire-fiber: cannot map a fiber stack: {e}"),
        };
        let slot = self.free_slots.with(Vec::pop).unwrap_or_else(|| {
            self.slab.with(|slab| {
                slab.push(None);
                (slab.len() - 1) as u32
            })
        });
        let shared = Arc::new(FiberShared {
            coroutine: std::cell::UnsafeCell::new(None),
            state: AtomicU32::new(RUNNING),
            worker: self.shared.clone(),
            slot,
            priority,
            yielder: AtomicPtr::new(std::ptr::null_mut()),
            next_wake: AtomicPtr::new(std::ptr::null_mut()),
            overflow: OverflowInfo {
                guard: guard_range(&stack),
                id,
                name,
                stack_size: self.scheduler.stack_size,
            },
        });
        let coroutine = Coroutine::with_stack(stack, move |yielder: &FiberYielder, ()| {
            let me = current_fiber_ptr();
            // SAFETY: the worker set FIBER to this fiber before resuming it.
            unsafe {
                (*me)
                    .yielder
                    .store(yielder as *const _ as *mut _, Ordering::Relaxed)
            };
            body();
        });
        // SAFETY: rule 1; the fiber has not run, nobody else holds the cell.
        unsafe { *shared.coroutine.get() = Some(coroutine) };
        self.slab.with(|slab| slab[slot as usize] = Some(shared));
        self.push_ready(slot, priority);
    }

    /// Runs one fiber until it switches out (rules 1–3).
    fn run(&self, slot: u32) {
        let Some(fiber) = self
            .slab
            .with(|slab| slab[slot as usize].as_ref().map(Arc::as_ptr))
        else {
            return;
        };
        // SAFETY: the slab keeps the FiberShared alive until this function
        // removes it below; only this loop resumes coroutines (rule 1) and
        // nothing else touches the cell while it runs.
        let fiber = unsafe { &*fiber };
        // SAFETY: rule 1 — only this worker touches the cell, and no other
        // reference to it exists while the coroutine runs.
        let coroutine = unsafe { (*fiber.coroutine.get()).as_mut() }.expect("a live fiber");
        FIBER.with(|f| f.set(fiber));
        let outcome = coroutine.resume(());
        FIBER.with(|f| f.set(std::ptr::null()));
        match outcome {
            CoroutineResult::Yield(Suspend::Yield) => self.push_ready(slot, fiber.priority),
            CoroutineResult::Yield(Suspend::Park) => {
                if fiber
                    .state
                    .compare_exchange(RUNNING, PARKED, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    self.push_ready(slot, fiber.priority);
                }
            }
            CoroutineResult::Return(()) => {
                // A finished fiber is never PARKED again (rule 2).
                fiber.state.store(NOTIFIED, Ordering::Release);
                // SAFETY: rule 1, and the coroutine has returned.
                let coroutine = unsafe { (*fiber.coroutine.get()).take() };
                if let Some(coroutine) = coroutine {
                    let stack = coroutine.into_stack();
                    self.stacks.with(|pool| pool.give_back(stack));
                }
                let done = self.slab.with(|slab| slab[slot as usize].take());
                self.free_slots.with(|free| free.push(slot));
                drop(done);
            }
        }
    }

    /// What other threads left: the fibers they woke, then those they
    /// spawned here.
    fn take_from_others(&self) {
        self.take_wakes();
        if !self.shared.has_inbox.load(Ordering::Acquire) {
            return;
        }
        let spawned = {
            let mut inbox = crate::loom::lock(&self.shared.inbox);
            self.shared.has_inbox.store(false, Ordering::Relaxed);
            std::mem::take(&mut *inbox)
        };
        for new in spawned {
            self.start(new.priority, new.name, new.id, new.body);
        }
    }

    /// The wake list, taken whole and made runnable in the order it was
    /// pushed.
    fn take_wakes(&self) {
        // SAFETY: only this worker takes its list.
        unsafe {
            self.shared
                .wakes
                .take(|fiber| self.push_ready(fiber.slot, fiber.priority))
        };
    }

    /// Wakes fibers whose timers are due; returns the next deadline.
    fn fire_timers(&self) -> Option<Instant> {
        if self.timers.with(|t| t.is_empty()) {
            return None;
        }
        let now = Instant::now();
        loop {
            let due = self.timers.with(|timers| match timers.peek() {
                Some(Reverse(timer)) if timer.deadline > now => Err(Some(timer.deadline)),
                Some(_) => Ok(timers.pop().map(|Reverse(t)| t.fiber)),
                None => Err(None),
            });
            match due {
                Err(next) => return next,
                Ok(Some(fiber)) => {
                    if fiber
                        .state
                        .compare_exchange(PARKED, NOTIFIED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        self.push_ready(fiber.slot, fiber.priority);
                    }
                }
                Ok(None) => return None,
            }
        }
    }

    fn poll_blocked(&self) {
        if self.blocked_count.get() == 0 {
            return;
        }
        let due: Vec<Arc<FiberShared>> = self
            .blocked
            .borrow()
            .iter()
            // SAFETY: an entry is removed by its fiber before the
            // predicate it points to goes away (see `park_until`), and
            // predicates run on this thread, where the fiber lives.
            .filter(|b| unsafe { (*b.predicate)() })
            .map(|b| b.fiber.clone())
            .collect();
        for fiber in due {
            fiber.unpark();
        }
    }

    /// The worker's loop; returns once the scheduler shuts down and
    /// nothing is runnable.
    pub(crate) fn run_loop(&self) {
        WORKER.with(|w| w.set(self));
        let mut dispatched: u32 = 0;
        loop {
            // Runnable fibers back to back; the checks between two are one
            // load each (measured: the switch path is tens of nanoseconds).
            while let Some(slot) = self.ready.with(ReadyQueues::pop) {
                self.run(slot);
                dispatched = dispatched.wrapping_add(1);
                self.take_from_others();
                self.poll_blocked();
                if dispatched.is_multiple_of(HOUSEKEEPING_EVERY) {
                    self.fire_timers();
                    if let Some(idle) = self.scheduler.idle.as_deref() {
                        idle.poll();
                    }
                }
            }
            if self.look_for_work() {
                continue;
            }
            if !self.idle() {
                break;
            }
        }
        self.abandon_parked();
        WORKER.with(|w| w.set(std::ptr::null()));
    }

    /// Inbox, timers, predicates: `true` if anything became runnable.
    fn look_for_work(&self) -> bool {
        self.take_from_others();
        self.poll_blocked();
        self.fire_timers();
        self.ready.with(|r| r.occupied != 0)
    }

    /// Rule 4, with nothing runnable: poll the idle hook while the spin
    /// budget lasts, then sleep. `false` when the scheduler shuts down.
    fn idle(&self) -> bool {
        let mut spin = SpinWait::new();
        loop {
            if self.look_for_work() {
                return true;
            }
            if self.scheduler.shutdown.load(Ordering::Acquire) && !self.shared.has_work() {
                return false;
            }
            // A worker without fibers has nobody to make progress for: it
            // leaves the hook (the node's poller) to the threads that wait
            // on it, instead of sleeping inside it (measured: an idle
            // worker asleep in `epoll_wait` turned an OS thread's 5 µs TCP
            // ping-pong into a 12–60 µs relay through the worker).
            let idle = self.scheduler.idle.as_deref().filter(|_| self.has_fibers());
            if let Some(idle) = idle {
                if idle.poll() {
                    spin.reset();
                    continue;
                }
            }
            if spin.spin() {
                continue;
            }
            let next_timer = self.fire_timers();
            let mut timeout = next_timer.map(|t| t.saturating_duration_since(Instant::now()));
            if self.blocked_count.get() != 0 {
                timeout = Some(timeout.map_or(PREDICATE_POLL, |t| t.min(PREDICATE_POLL)));
            }
            match idle {
                Some(idle) => idle.sleep(&self.parker, timeout),
                None => match timeout {
                    Some(t) => self.parker.park_timeout(t),
                    None => self.parker.park(),
                },
            }
            spin.reset();
        }
    }
    /// At shutdown, fibers still parked are leaked, not unwound: their
    /// stacks may be borrowed by others (see `bound`), and a fiber that
    /// never ends never reaches code that assumes it ended.
    fn abandon_parked(&self) {
        let fibers = self.slab.with(std::mem::take);
        for fiber in fibers.into_iter().flatten() {
            std::mem::forget(fiber);
        }
    }
}
