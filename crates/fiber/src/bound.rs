//! Binding a fiber to an OS thread of its own while it blocks in the kernel.
//!
//! [`bound`] runs a closure on a helper OS thread while the calling fiber
//! stays parked, so a `read` on a pipe, a `waitpid` or a C library that
//! sleeps holds up only that fiber, never its worker's other fibers. The
//! fiber itself does not move (its stack and thread-locals stay on its
//! worker, rule 1 of the scheduler); the closure is the part that runs
//! elsewhere, which is why it must be `Send`. Helper threads are kept for
//! reuse, so binding costs two wake-ups, not a thread creation.
//!
//! ```
//! use threadwire_fiber::{bound, Scheduler};
//!
//! let scheduler = Scheduler::builder().workers(1).build().unwrap();
//! let sleeper = scheduler.spawn(|| bound(|| std::thread::sleep(std::time::Duration::from_millis(20))));
//! // The worker is free meanwhile: this fiber runs while the other sleeps.
//! assert_eq!(scheduler.spawn(|| 6 * 7).join().unwrap(), 42);
//! sleeper.join().unwrap();
//! ```

use crate::loom::lock;
use crate::park::{current_unparker, park, Parker, Unparker};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// An idle helper thread waiting for a job.
struct Helper {
    job: Mutex<Option<Job>>,
    unparker: Unparker,
}

static IDLE: Mutex<Vec<Arc<Helper>>> = Mutex::new(Vec::new());

/// Runs `f` on an OS thread of its own while the calling fiber waits
/// without holding its worker; on an OS thread, simply runs `f`. A panic
/// in `f` resumes in the caller.
pub fn bound<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if !crate::in_fiber() {
        return f();
    }
    let mut result: Option<std::thread::Result<R>> = None;
    let done = AtomicBool::new(false);
    let fiber = current_unparker();
    {
        let result = &mut result;
        let done = &done;
        let fiber = fiber.clone();
        let job = move || {
            *result = Some(catch_unwind(AssertUnwindSafe(f)));
            done.store(true, Ordering::Release);
            fiber.unpark();
        };
        let job: Box<dyn FnOnce() + Send + '_> = Box::new(job);
        // SAFETY: only the lifetime is erased. The job borrows `result`
        // and `done` on this fiber's stack; we do not return (nor unwind:
        // `park` does not panic) until `done` is set, which is the job's
        // last access to them, and a fiber's stack is never freed while
        // it is parked (the scheduler abandons, never unwinds, parked
        // fibers).
        let job: Job = unsafe { std::mem::transmute(job) };
        hand_over(job);
    }
    while !done.load(Ordering::Acquire) {
        park();
    }
    match result.take().expect("set before done") {
        Ok(r) => r,
        Err(panic) => resume_unwind(panic),
    }
}

fn hand_over(job: Job) {
    let helper = lock(&IDLE).pop();
    match helper {
        Some(helper) => {
            *lock(&helper.job) = Some(job);
            helper.unparker.unpark();
        }
        None => {
            std::thread::Builder::new()
                .name("tw-bound".into())
                .spawn(move || helper_loop(job))
                .expect("the OS refused to start a thread for a bound fiber");
        }
    }
}

fn helper_loop(first: Job) {
    let parker = Parker::new();
    let me = Arc::new(Helper {
        job: Mutex::new(None),
        unparker: parker.unparker(),
    });
    let mut job = Some(first);
    loop {
        if let Some(job) = job.take() {
            job();
            lock(&IDLE).push(me.clone());
        }
        parker.park();
        job = lock(&me.job).take();
    }
}
