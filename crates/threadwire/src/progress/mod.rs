//! The progress engine: moves frames between channels and mailboxes.
//!
//! One [`Driver`] per node owns the poller (epoll through mio), the listener
//! and the connections' read sides. Whoever has time drives it:
//!
//! 1. A thread that waits for something that can arrive from the network
//!    takes the driver if it is free (`try_lock`) and polls it itself, without
//!    blocking, while its [`SpinWait`] lasts (a 2 µs spin, then a yield of
//!    the core between polls, so that on an oversubscribed host the peer
//!    it waits for can run; on a host running more of the job's nodes than
//!    it has cores, a yield from the first poll): opportunistic polling,
//!    the lowest latency.
//! 2. When the spin is spent, the thread holding the driver sleeps *inside*
//!    `epoll_wait` ([`Parker::park_external`]); a local delivery for it
//!    wakes it through the engine's eventfd.
//! 3. A waiter that finds the driver taken spins, then registers as a
//!    sleeper, tries the driver once more, and parks in the kernel.
//! 4. Whoever releases the driver wakes one sleeper, which takes it over, so
//!    while anyone waits on the network someone polls (steps 3 and 4 close
//!    the race: a sleeper either sees the driver free or is seen).
//! 5. With a communication thread (`THREADWIRE_PROGRESS=thread`), that thread
//!    sleeps in `epoll_wait` holding the driver and waiters only park:
//!    progress continues while every application thread computes, at the
//!    price of a kernel wake-up per delivery.
//!
//! 6. A fiber that waits parks at once: its worker runs other fibers, also
//!    polls the engine every 64 switches, and with nothing to run polls it
//!    for the spin budget and then sleeps in `epoll_wait` as in step 2
//!    ([`ProgressEngine::idle_poll`] and [`ProgressEngine::idle_sleep`],
//!    which the node's fiber workers call). A delivery makes the fiber
//!    runnable again on its worker.
//!
//! 7. While a peer on this host is reading one of this node's large
//!    messages out of its memory (a rendezvous not yet answered), a waiter
//!    whose spin is spent keeps polling, yielding the core between rounds,
//!    instead of sleeping: the answer and, in most programs, the reply
//!    follow within the copy's time (about 100 µs per MiB), and a sleep
//!    would add a doorbell and a kernel wake-up (measured: 1 MiB ping-pong
//!    at 5.5–6.2 GB/s with sleeping, 7.7–8.8 GB/s without). Yielding keeps
//!    an oversubscribed host fair: the copier gets the core when it needs
//!    it; and a peer that leaves a rendezvous unread for 10 ms is taken to
//!    be busy elsewhere, so waiters sleep again.
//!
//! 8. The spin budget counts from the last sign of a transfer, not from
//!    the start of the wait: a poll that moved bytes (a frame, or part of
//!    one), or a sleep that ended on an event, starts a new spin. A large
//!    TCP message arrives in socket-buffer pieces; sleeping between the
//!    pieces added a kernel wake-up to each. On a slow link the pieces
//!    come milliseconds apart, so the waiter still sleeps between them.
//!    (This step was first justified by 1 MiB over loopback TCP at
//!    3.1 GB/s against 8.4 GB/s for 1,000,000 B, read as 1,000,000 B
//!    fitting the socket in one write. It does not explain that gap: both
//!    sizes go in one `writev`, and the cliff was the congestion control,
//!    BBR, on loopback — PERFORMANCE-STUDIES.md, "TCP: the cliff between
//!    512 KiB and 1 MiB". The step stands on the wake-ups it saves.)
//!
//! 9. A wait on memory that other processes write (the host stage of a
//!    group's collectives, `group/algorithms/host_stage.rs`) has nobody to
//!    wake it: while one is under way ([`ProgressEngine::watch_shared_memory`])
//!    this node's waits, once their spin is spent, sleep at most
//!    [`SHARED_RECHECK`] before they re-check, and fibers park with that
//!    timeout instead of until woken.
//!
//! 10. A timer thread per node, the liveness thread, sends heartbeats to
//!     quiet peers, finds silent ones, and polls the engine a few times a
//!     second when nobody else does ([`liveness`], steps 1–4).
//!
//! 11. A thread that starts to wait, on a thread or in a fiber, and a fiber
//!     worker that goes idle first uncork this node's corked connections
//!     ([`Router::uncork`]; `threadwire_transport`'s `cork` module): what
//!     it waits for may answer the frames Nagle's algorithm holds there.
//!     One load when none is corked.
//!
//! No thread spins when nothing is pending: idle waits end in the kernel.

mod driver;
mod liveness;
mod upkeep;

pub(crate) use driver::{Driver, Tokens};
pub(crate) use liveness::{Liveness, Watched};

use crate::lock;
use crate::router::Router;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};
use threadwire_fiber::{Parker, SpinWait, Unparker, Wake};

/// The shorter of `recheck` and the time left until `deadline` (none
/// when neither is given).
fn until(recheck: Option<Duration>, deadline: Option<Instant>) -> Option<Duration> {
    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    match (recheck, left) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Longest sleep without re-checking: a safety net, never the wake-up path.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_millis(200);

/// Longest sleep while a wait of this node watches memory another process
/// writes (step 9): nothing wakes it, so it re-checks this often.
pub(crate) const SHARED_RECHECK: Duration = Duration::from_micros(100);

struct EngineWaker(mio::Waker);

impl Wake for EngineWaker {
    fn wake(&self) {
        // Fails only if the eventfd is gone, i.e. the engine is being dropped.
        let _ = self.0.wake();
    }
}

/// Where the event a waiter waits for can come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A thread of this node: no polling needed.
    Local,
    /// This peer node.
    Peer(u32),
    /// Any node.
    Anywhere,
}

impl Origin {
    /// The origin of a wait on several operations at once.
    pub(crate) fn combine(origins: impl IntoIterator<Item = Origin>) -> Origin {
        origins
            .into_iter()
            .fold(Origin::Local, |acc, o| match (acc, o) {
                (a, Origin::Local) => a,
                (Origin::Local, o) => o,
                (a, o) if a == o => a,
                _ => Origin::Anywhere,
            })
    }
}

pub(crate) struct ProgressEngine {
    driver: Mutex<Driver>,
    waker: Arc<dyn Wake>,
    sleepers: Mutex<Vec<Unparker>>,
    sleeper_count: AtomicUsize,
    comm_thread: AtomicBool,
    /// Waits under way on memory other processes write (step 9).
    shared_waits: AtomicUsize,
}

/// A wait on memory another process writes, under way (step 9).
pub(crate) struct SharedWait<'e>(&'e ProgressEngine);

impl Drop for SharedWait<'_> {
    fn drop(&mut self) {
        self.0.shared_waits.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The driver, held; releasing it hands polling to a sleeper (step 4).
pub(crate) struct DriverGuard<'a> {
    guard: Option<MutexGuard<'a, Driver>>,
    engine: &'a ProgressEngine,
}

impl std::ops::Deref for DriverGuard<'_> {
    type Target = Driver;
    fn deref(&self) -> &Driver {
        self.guard.as_ref().expect("guard held until drop")
    }
}

impl std::ops::DerefMut for DriverGuard<'_> {
    fn deref_mut(&mut self) -> &mut Driver {
        self.guard.as_mut().expect("guard held until drop")
    }
}

impl Drop for DriverGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        if self.engine.sleeper_count.load(Ordering::SeqCst) > 0 {
            let next = lock(&self.engine.sleepers).pop();
            if let Some(next) = next {
                self.engine.sleeper_count.fetch_sub(1, Ordering::SeqCst);
                next.unpark();
            }
        }
    }
}

impl ProgressEngine {
    pub(crate) fn new(driver: Driver) -> std::io::Result<ProgressEngine> {
        let waker = mio::Waker::new(driver.registry(), Tokens::WAKER)?;
        Ok(ProgressEngine {
            driver: Mutex::new(driver),
            waker: Arc::new(EngineWaker(waker)),
            sleepers: Mutex::new(Vec::new()),
            sleeper_count: AtomicUsize::new(0),
            comm_thread: AtomicBool::new(false),
            shared_waits: AtomicUsize::new(0),
        })
    }

    pub(crate) fn lock_driver(&self) -> DriverGuard<'_> {
        DriverGuard {
            guard: Some(lock(&self.driver)),
            engine: self,
        }
    }

    pub(crate) fn try_driver(&self) -> Option<DriverGuard<'_>> {
        match self.driver.try_lock() {
            Ok(g) => Some(DriverGuard {
                guard: Some(g),
                engine: self,
            }),
            Err(TryLockError::Poisoned(p)) => Some(DriverGuard {
                guard: Some(p.into_inner()),
                engine: self,
            }),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Wakes whoever sleeps in the driver's `epoll_wait`.
    pub(crate) fn wake(&self) {
        self.waker.wake();
    }

    /// Step 9: while the guard lives, this node's waits re-check their
    /// condition every [`SHARED_RECHECK`] instead of sleeping until woken.
    pub(crate) fn watch_shared_memory(&self) -> SharedWait<'_> {
        self.shared_waits.fetch_add(1, Ordering::SeqCst);
        SharedWait(self)
    }

    /// How long a wait may sleep before it re-checks its condition.
    fn idle_timeout(&self) -> Duration {
        match self.shared_waits.load(Ordering::SeqCst) {
            0 => IDLE_TIMEOUT,
            _ => SHARED_RECHECK,
        }
    }

    pub(crate) fn set_comm_thread(&self, on: bool) {
        self.comm_thread.store(on, Ordering::SeqCst);
    }

    /// Polls once without blocking if the driver is free.
    pub(crate) fn try_progress(&self, router: &Router) {
        if self.comm_thread.load(Ordering::Relaxed) {
            return;
        }
        if let Some(mut d) = self.try_driver() {
            d.poll(router, Some(Duration::ZERO));
        }
    }

    /// The liveness thread's poll ([`liveness`], step 3): everything that
    /// has arrived, epoll included, if nobody else drives the engine.
    pub(crate) fn sweep(&self, router: &Router) {
        if self.comm_thread.load(Ordering::Relaxed) {
            return;
        }
        if let Some(mut d) = self.try_driver() {
            d.sweep(router);
        }
    }

    /// Waits until `done()` holds; `origin` says where what makes it true
    /// can come from (and so whether this thread may have to poll). Whatever
    /// makes `done()` true must wake the waiter (a delivery or failure
    /// wakes its mailbox's owner); see [`wait_polling`](Self::wait_polling)
    /// otherwise.
    pub(crate) fn wait_until(&self, router: &Router, origin: Origin, done: impl FnMut() -> bool) {
        router.uncork();
        if threadwire_fiber::in_fiber() {
            return self.wait_in_fiber(done, None, None);
        }
        self.wait_on_thread(router, origin, done, None)
    }

    /// Like [`wait_until`](Self::wait_until), giving up at `deadline`:
    /// whether `done()` held.
    pub(crate) fn wait_until_deadline(
        &self,
        router: &Router,
        origin: Origin,
        mut done: impl FnMut() -> bool,
        deadline: Instant,
    ) -> bool {
        router.uncork();
        let mut held = false;
        let mut check = || {
            held = done();
            held || Instant::now() >= deadline
        };
        match threadwire_fiber::in_fiber() {
            true => self.wait_in_fiber(&mut check, None, Some(deadline)),
            false => self.wait_on_thread(router, origin, &mut check, Some(deadline)),
        }
        held
    }

    /// Like [`wait_until`](Self::wait_until), for a condition that nothing
    /// wakes (queued bytes draining): a fiber re-checks it periodically.
    pub(crate) fn wait_polling(&self, router: &Router, origin: Origin, done: impl FnMut() -> bool) {
        router.uncork();
        if threadwire_fiber::in_fiber() {
            return self.wait_in_fiber(done, Some(Duration::from_millis(1)), None);
        }
        self.wait_on_thread(router, origin, done, None)
    }

    /// Step 6. The fiber does not poll: parking is a switch (tens of
    /// nanoseconds) and a worker with nothing else to run polls at once,
    /// while a poll here would cost a system call even when the message
    /// comes from a fiber of this node.
    fn wait_in_fiber(
        &self,
        mut done: impl FnMut() -> bool,
        recheck: Option<Duration>,
        deadline: Option<Instant>,
    ) {
        while !done() {
            let shared = self.shared_waits.load(Ordering::SeqCst) > 0;
            let recheck = match recheck {
                _ if shared => Some(SHARED_RECHECK),
                r => r,
            };
            match until(recheck, deadline) {
                Some(t) => threadwire_fiber::park_timeout(t),
                None => threadwire_fiber::park(),
            }
        }
    }

    /// A wait on an OS thread (steps 1–5, 7–9); with a deadline, no sleep
    /// outlasts it.
    fn wait_on_thread(
        &self,
        router: &Router,
        origin: Origin,
        mut done: impl FnMut() -> bool,
        deadline: Option<Instant>,
    ) {
        let sleep = |t: Duration| until(Some(t), deadline).unwrap_or(t);
        threadwire_fiber::with_thread_parker(|parker| {
            let mut spin = SpinWait::new();
            let polls = origin != Origin::Local && !self.comm_thread.load(Ordering::Relaxed);
            let mut round = 0u32;
            loop {
                if done() {
                    return;
                }
                if polls {
                    if let Some(mut d) = self.try_driver() {
                        round = round.wrapping_add(1);
                        let moved = match origin {
                            // Reading the one socket that matters costs one
                            // syscall when data is there; epoll_wait and then
                            // read cost two (measured: ~0.4 µs per message
                            // on the development VM). A full poll every few
                            // rounds keeps writes and other peers moving.
                            Origin::Peer(peer) if !round.is_multiple_of(8) => {
                                d.poll_peer(router, peer)
                            }
                            _ => d.poll(router, Some(Duration::ZERO)),
                        };
                        if done() {
                            return;
                        }
                        if moved {
                            // Step 8: a transfer is under way.
                            spin = SpinWait::new();
                        }
                        if !spin.spin() {
                            if router.peer_is_copying() {
                                // Step 7: keep polling, letting others run.
                                drop(d);
                                std::thread::yield_now();
                                continue;
                            }
                            let mut woke_to_work = false;
                            parker.park_external(&self.waker, || {
                                woke_to_work = d.poll(router, Some(sleep(self.idle_timeout())));
                            });
                            if woke_to_work {
                                spin = SpinWait::new();
                            }
                        }
                        continue;
                    }
                }
                if spin.spin() {
                    continue;
                }
                if polls {
                    self.sleep_as_candidate(parker, sleep(self.idle_timeout()));
                } else {
                    parker.park_timeout(sleep(self.idle_timeout()));
                }
            }
        })
    }

    /// Steps 3 and 4: park, unless the driver became free meanwhile.
    fn sleep_as_candidate(&self, parker: &Parker, timeout: Duration) {
        let me = parker.unparker();
        lock(&self.sleepers).push(me.clone());
        self.sleeper_count.fetch_add(1, Ordering::SeqCst);
        let free = matches!(
            self.driver.try_lock(),
            Ok(_) | Err(TryLockError::Poisoned(_))
        );
        if !free {
            parker.park_timeout(timeout);
        }
        let mut sleepers = lock(&self.sleepers);
        if let Some(i) = sleepers.iter().position(|u| u.same_as(&me)) {
            sleepers.swap_remove(i);
            self.sleeper_count.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// An idle fiber worker's poll (step 6): `true` if anything happened.
    pub(crate) fn idle_poll(&self, router: &Router) -> bool {
        if self.comm_thread.load(Ordering::Relaxed) {
            return false;
        }
        match self.try_driver() {
            Some(mut d) => d.poll(router, Some(Duration::ZERO)),
            None => false,
        }
    }

    /// An idle fiber worker's sleep: inside `epoll_wait` if the driver is
    /// free (step 2), otherwise as a candidate (step 3).
    pub(crate) fn idle_sleep(&self, router: &Router, parker: &Parker, timeout: Option<Duration>) {
        router.uncork();
        let idle = self.idle_timeout();
        let timeout = timeout.map_or(idle, |t| t.min(idle));
        if self.comm_thread.load(Ordering::Relaxed) {
            return parker.park_timeout(timeout);
        }
        if router.peer_is_copying() {
            // Step 7: back to polling, letting others run.
            std::thread::yield_now();
            return;
        }
        match self.try_driver() {
            Some(mut d) => parker.park_external(&self.waker, || {
                d.poll(router, Some(timeout));
            }),
            None => self.sleep_as_candidate(parker, timeout),
        }
    }

    /// The communication thread's loop: poll, sleeping in the kernel, until
    /// `stop` is set (and the engine woken).
    pub(crate) fn run_comm_thread(&self, router: &Router, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            let mut d = self.lock_driver();
            d.poll(router, Some(IDLE_TIMEOUT));
        }
    }
}
