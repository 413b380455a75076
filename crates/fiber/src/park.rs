//! Park and unpark: the one place where a thread goes to sleep.
//!
//! States of [`Inner::state`] and the transitions allowed:
//!
//! 1. `EMPTY → PARKED` (parker, CAS) then futex-wait while `PARKED`.
//! 2. `EMPTY → PARKED_EXTERNAL` (parker, CAS) after publishing its [`Wake`]
//!    in `external`; then it runs the external blocking call.
//! 3. any `→ NOTIFIED` (unparker, swap); if the old state was `PARKED` the
//!    unparker wakes the futex, if `PARKED_EXTERNAL` it calls the `Wake`.
//! 4. `NOTIFIED → EMPTY` (parker, swap) consumes the notification; a parker
//!    that finds `NOTIFIED` instead of `EMPTY` returns at once.
//!
//! A notification is never lost: it is either seen by the parker's CAS
//! (step 1/2 fails) or delivered to the sleeping parker (step 3).

use crate::loom::{futex_wait, futex_wake_one, lock, Arc, AtomicU32, Mutex, Ordering};
use std::marker::PhantomData;
use std::time::Duration;

const EMPTY: u32 = 0;
const PARKED: u32 = 1;
const PARKED_EXTERNAL: u32 = 2;
const NOTIFIED: u32 = 3;

/// Wakes a thread parked inside an external blocking call.
pub trait Wake: Send + Sync {
    /// Makes the external blocking call return soon.
    fn wake(&self);
}

struct Inner {
    state: AtomicU32,
    external: Mutex<Option<std::sync::Arc<dyn Wake>>>,
}

/// The parking side of an OS thread, owned by the one thread that waits.
/// Fibers park through [`park`] instead, which switches to their scheduler.
pub struct Parker {
    inner: Arc<Inner>,
    _not_send: PhantomData<*const ()>,
}

/// The waking side of a thread — an OS thread or a fiber: cheap to clone,
/// callable from any thread.
#[derive(Clone)]
pub struct Unparker {
    target: Target,
}

#[derive(Clone)]
enum Target {
    Thread(Arc<Inner>),
    #[cfg(not(loom))]
    Fiber(std::sync::Arc<crate::scheduler::FiberShared>),
}

impl Default for Parker {
    fn default() -> Self {
        Self::new()
    }
}

impl Parker {
    /// A parker with no pending notification.
    pub fn new() -> Parker {
        Parker {
            inner: Arc::new(Inner {
                state: AtomicU32::new(EMPTY),
                external: Mutex::new(None),
            }),
            _not_send: PhantomData,
        }
    }

    /// The handle others use to wake this parker.
    pub fn unparker(&self) -> Unparker {
        Unparker {
            target: Target::Thread(self.inner.clone()),
        }
    }

    /// Sleeps until unparked; returns at once if a notification is pending.
    /// May return spuriously: callers re-check their condition.
    pub fn park(&self) {
        self.park_inner(None)
    }

    /// Like [`park`](Self::park), but returns after `timeout` at the latest.
    pub fn park_timeout(&self, timeout: Duration) {
        self.park_inner(Some(timeout))
    }

    fn park_inner(&self, timeout: Option<Duration>) {
        let state = &self.inner.state;
        if state
            .compare_exchange(EMPTY, PARKED, Ordering::Acquire, Ordering::Acquire)
            .is_err()
        {
            // A swap, not a store: a second unpark landing after the CAS
            // must be read (and acquired), or what it published could be
            // missed and its wake-up lost (found by the loom model).
            state.swap(EMPTY, Ordering::Acquire);
            return;
        }
        match timeout {
            None => {
                while state.load(Ordering::Acquire) == PARKED {
                    futex_wait(state, PARKED);
                }
            }
            Some(timeout) => {
                let deadline = std::time::Instant::now() + timeout;
                while state.load(Ordering::Acquire) == PARKED {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        break;
                    }
                    futex_wait_timeout(state, PARKED, deadline - now);
                }
            }
        }
        state.swap(EMPTY, Ordering::Acquire);
    }

    /// Parks by running `block`, an external blocking call that `waker` can
    /// interrupt (for example `epoll_wait` with an eventfd). `block` is not
    /// run if a notification is already pending.
    pub fn park_external(&self, waker: &std::sync::Arc<dyn Wake>, block: impl FnOnce()) {
        *lock(&self.inner.external) = Some(waker.clone());
        let state = &self.inner.state;
        if state
            .compare_exchange(EMPTY, PARKED_EXTERNAL, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            block();
        }
        state.swap(EMPTY, Ordering::Acquire);
    }
}

impl Unparker {
    /// Wakes the thread, or makes its next park return at once.
    pub fn unpark(&self) {
        match &self.target {
            Target::Thread(inner) => match inner.state.swap(NOTIFIED, Ordering::Release) {
                PARKED => futex_wake_one(&inner.state),
                PARKED_EXTERNAL => {
                    let waker = lock(&inner.external).clone();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                _ => {}
            },
            #[cfg(not(loom))]
            Target::Fiber(fiber) => fiber.unpark(),
        }
    }

    /// Whether this handle wakes the caller: the calling OS thread, or
    /// the fiber the caller runs in. A thread that completes what it is
    /// itself waiting for need not wake itself: it re-checks its condition
    /// before parking, and an unpark would cost a wasted round, or a
    /// system call while it runs [`Parker::park_external`]'s blocking
    /// call.
    pub fn is_current_thread(&self) -> bool {
        match &self.target {
            Target::Thread(inner) => CURRENT
                .try_with(|p| Arc::ptr_eq(&p.inner, inner))
                .unwrap_or(false),
            #[cfg(not(loom))]
            Target::Fiber(fiber) => {
                std::sync::Arc::as_ptr(fiber) == crate::scheduler::current_fiber_ptr()
            }
        }
    }

    /// Whether both handles wake the same thread.
    pub fn same_as(&self, other: &Unparker) -> bool {
        match (&self.target, &other.target) {
            (Target::Thread(a), Target::Thread(b)) => Arc::ptr_eq(a, b),
            #[cfg(not(loom))]
            (Target::Fiber(a), Target::Fiber(b)) => std::sync::Arc::ptr_eq(a, b),
            #[cfg(not(loom))]
            _ => false,
        }
    }

    #[cfg(not(loom))]
    pub(crate) fn fiber(fiber: std::sync::Arc<crate::scheduler::FiberShared>) -> Unparker {
        Unparker {
            target: Target::Fiber(fiber),
        }
    }
}

#[cfg(loom)]
fn futex_wait_timeout(word: &AtomicU32, expected: u32, _timeout: Duration) {
    futex_wait(word, expected)
}

#[cfg(all(target_os = "linux", not(loom)))]
fn futex_wait_timeout(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc_timespec(timeout);
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word`, which outlives
    // the call; the timespec is a valid pointer for its duration.
    unsafe {
        sys::futex(
            word.as_ptr(),
            sys::FUTEX_WAIT | sys::FUTEX_PRIVATE_FLAG,
            expected,
            &ts,
        );
    }
}

#[cfg(all(not(target_os = "linux"), not(loom)))]
fn futex_wait_timeout(_word: &AtomicU32, _expected: u32, timeout: Duration) {
    std::thread::sleep(timeout.min(Duration::from_millis(1)));
}

#[cfg(all(target_os = "linux", not(loom)))]
fn libc_timespec(d: Duration) -> sys::Timespec {
    sys::Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as i64,
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
mod sys {
    //! The one raw syscall of this crate: a timed futex wait.
    #[repr(C)]
    pub struct Timespec {
        pub tv_sec: i64,
        pub tv_nsec: i64,
    }
    pub const FUTEX_WAIT: i32 = 0;
    pub const FUTEX_PRIVATE_FLAG: i32 = 128;
    #[cfg(target_arch = "x86_64")]
    const SYS_FUTEX: i64 = 202;
    #[cfg(target_arch = "aarch64")]
    const SYS_FUTEX: i64 = 98;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    compile_error!("threadwire-fiber: add the futex syscall number for this architecture");

    extern "C" {
        fn syscall(num: i64, ...) -> i64;
    }

    /// # Safety
    /// `word` must point to a live, aligned u32 and `ts` to a valid timespec.
    pub unsafe fn futex(word: *mut u32, op: i32, val: u32, ts: *const Timespec) -> i64 {
        // SAFETY: forwarded from the caller's contract.
        unsafe { syscall(SYS_FUTEX, word, op, val, ts) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn notification_before_park_is_kept() {
        let p = Parker::new();
        p.unparker().unpark();
        p.park(); // returns at once
    }

    #[test]
    fn wakes_a_sleeping_thread() {
        let p = Parker::new();
        let u = p.unparker();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            d.store(true, Ordering::Release);
            u.unpark();
        });
        while !done.load(Ordering::Acquire) {
            p.park();
        }
        t.join().unwrap();
    }

    #[test]
    fn timeout_returns() {
        let p = Parker::new();
        let start = std::time::Instant::now();
        p.park_timeout(Duration::from_millis(10));
        assert!(start.elapsed() >= Duration::from_millis(10));
    }

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(&self) {
            self.0.store(true, Ordering::Release);
        }
    }

    #[test]
    fn external_park_uses_the_waker() {
        let p = Parker::new();
        let u = p.unparker();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker: Arc<dyn Wake> = flag.clone();
        let f = flag.clone();
        p.park_external(&waker, move || {
            let t = std::thread::spawn(move || u.unpark());
            while !f.0.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            t.join().unwrap();
        });
        assert!(flag.0.load(Ordering::Acquire));
    }
}

thread_local! {
    static CURRENT: Parker = Parker::new();
}

/// Runs `f` with the calling OS thread's parker. Inside a fiber this is
/// the worker's parker: parking it would stall every fiber of the worker,
/// so fibers wait through [`park`] instead.
pub fn with_thread_parker<R>(f: impl FnOnce(&Parker) -> R) -> R {
    CURRENT.with(f)
}

/// Whether the caller runs in a fiber (rather than on an OS thread of its own).
pub fn in_fiber() -> bool {
    #[cfg(not(loom))]
    return crate::scheduler::in_fiber();
    #[cfg(loom)]
    false
}

/// The unparker of the calling thread: its fiber if it runs in one,
/// otherwise its OS thread.
pub fn current_unparker() -> Unparker {
    #[cfg(not(loom))]
    if let Some(fiber) = crate::scheduler::current_fiber() {
        return Unparker::fiber(fiber);
    }
    CURRENT.with(Parker::unparker)
}

/// Parks the calling thread until its [`current_unparker`] is used: a
/// fiber switches to its scheduler (the worker runs other fibers), an OS
/// thread sleeps in the kernel. Returns at once if a notification is
/// pending; may return spuriously, so callers re-check their condition.
pub fn park() {
    #[cfg(not(loom))]
    if crate::scheduler::in_fiber() {
        return crate::scheduler::park_fiber(None);
    }
    CURRENT.with(Parker::park)
}

/// Like [`park`], but returns after `timeout` at the latest.
pub fn park_timeout(timeout: Duration) {
    #[cfg(not(loom))]
    if crate::scheduler::in_fiber() {
        return crate::scheduler::park_fiber(Some(timeout));
    }
    CURRENT.with(|p| p.park_timeout(timeout))
}
