//! Faults as signals: how a thread that touches a unit it may not use yet
//! waits for it — a fiber parking so that its worker runs other fibers, an
//! OS thread sleeping — instead of the whole OS thread blocking in the
//! kernel.
//!
//! The userfaultfd is opened with `UFFD_FEATURE_SIGBUS`: the kernel queues
//! no fault, it raises `SIGBUS` in the faulting thread, at the faulting
//! instruction; under the `mprotect` fallback (module `protection`) the
//! fault is a `SIGSEGV`, and the handler is installed for it too. The
//! handler installed here:
//!
//! 1. hands a fault outside the shared space to the handler installed
//!    before it for that signal (threadwire-fiber's overflow reporter,
//!    then the Rust runtime's): the program's own `SIGBUS` or `SIGSEGV`
//!    is never swallowed;
//! 2. resolves it in place when the unit is valid here (engine rule 2:
//!    map it, or take a twin and lift write protection) and returns, so
//!    that the instruction runs again and succeeds;
//! 3. otherwise marks the unit `Fetching`, writes its number into the
//!    fetcher's pipe (an async-signal-safe `write`), and waits on the
//!    unit's wake-up word until the fetcher has installed it, then goes
//!    back to step 2. Waiting on the word parks a fiber — its worker runs
//!    the node's other fibers meanwhile, the point of a multithreaded DSM —
//!    and puts an OS thread to sleep.
//!
//! Running this in a signal handler is sound here because the signal is
//! synchronous: it interrupts a load or store of the program's own code
//! touching shared memory, never the allocator or a lock of the runtime
//! (neither keeps anything in the shared space). The handler runs on the
//! thread's own stack (no `SA_ONSTACK`: a fiber parked in it keeps its
//! frame on its own stack) with `SA_NODEFER`, so that the other fibers its
//! worker runs meanwhile may fault too.
//!
//! One engine per process; the handler finds it through [`ACTIVE`].
//!
//! Under the fallback, a thread's stack overflow raises `SIGSEGV` on the
//! overflowed stack, where this handler (not on the alternate stack) cannot
//! run: the process dies of the signal without the overflow reporter's
//! message. userfaultfd leaves `SIGSEGV` alone.

use crate::engine::Engine;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

/// The engine whose space the handler serves; null when there is none.
static ACTIVE: AtomicPtr<Engine> = AtomicPtr::new(std::ptr::null_mut());

/// The handlers installed before ours: for `SIGBUS`, then `SIGSEGV`,
/// each written once, under its `Once`, before ours can run.
static INSTALL: [Once; 2] = [Once::new(), Once::new()];
static mut PREVIOUS: [Option<libc::sigaction>; 2] = [None, None];

/// `PREVIOUS`' and `INSTALL`'s index of `signal`.
fn slot(signal: libc::c_int) -> usize {
    usize::from(signal == libc::SIGSEGV)
}

/// Makes `engine` the one the handler serves (installing the handler the
/// first time). Fails if another engine is active.
pub fn activate(engine: &Engine) -> Result<(), ()> {
    threadwire_fiber::install_fault_handlers();
    install(libc::SIGBUS);
    if engine.protection.signal() == libc::SIGSEGV {
        install(libc::SIGSEGV);
    }
    ACTIVE
        .compare_exchange(
            std::ptr::null_mut(),
            engine as *const Engine as *mut Engine,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .map(|_| ())
        .map_err(|_| ())
}

/// Installs the handler for `signal` the first time, keeping the one
/// before it.
fn install(signal: libc::c_int) {
    INSTALL[slot(signal)].call_once(|| {
        // SAFETY: a zeroed sigaction is a valid value to fill in; the
        // handler has the SA_SIGINFO signature; PREVIOUS[slot] is written
        // only here, under its Once, before our handler can run for it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut previous) == 0 {
                (*std::ptr::addr_of_mut!(PREVIOUS))[slot(signal)] = Some(previous);
            }
        }
    });
}

/// The handler serves no engine from now on; faults in the old space are
/// the program's own.
pub fn deactivate(engine: &Engine) {
    let _ = ACTIVE.compare_exchange(
        engine as *const Engine as *mut Engine,
        std::ptr::null_mut(),
        Ordering::AcqRel,
        Ordering::Acquire,
    );
}

/// Whether [`was_write`] knows; where it does not, every fault is served
/// as a read first, and a write faults once more on the mapped unit.
pub const WRITES_KNOWN: bool = cfg!(target_arch = "x86_64");

/// Whether the faulting access was a write, where the machine says.
fn was_write(context: *mut libc::c_void) -> bool {
    cfg_if_write(context)
}

#[cfg(target_arch = "x86_64")]
fn cfg_if_write(context: *mut libc::c_void) -> bool {
    const WRITE: i64 = 1 << 1; // the page-fault error code's W bit
                               // SAFETY: an SA_SIGINFO handler's third argument is the ucontext.
    let err = unsafe {
        (*(context as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_ERR as usize]
    };
    err & WRITE != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn cfg_if_write(_context: *mut libc::c_void) -> bool {
    // Unknown: served as a read; a write then faults once more, as a write
    // to a protected unit.
    false
}

extern "C" fn on_fault(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let address = unsafe { (*info).si_addr() } as usize;
    let engine = ACTIVE.load(Ordering::Acquire);
    // SAFETY: an active engine outlives its activation (the node
    // deactivates it before dropping it, once no thread uses the space).
    if let Some(engine) = unsafe { engine.as_ref() } {
        if engine.contains(address) {
            engine.fault(address, was_write(context));
            return;
        }
    }
    pass_on(signal, info, context);
}

/// Step 1: the previous handler's turn, or the default action.
fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: PREVIOUS[slot] was written before this handler was
    // installed for the signal.
    let previous = unsafe { (*std::ptr::addr_of!(PREVIOUS))[slot(signal)] };
    match previous {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler declared the SA_SIGINFO
                // signature, and gets the kernel's arguments.
                unsafe {
                    let handler: extern "C" fn(
                        libc::c_int,
                        *mut libc::siginfo_t,
                        *mut libc::c_void,
                    ) = std::mem::transmute(p.sa_sigaction);
                    handler(signal, info, context);
                }
            } else {
                // SAFETY: a plain handler takes the signal number only.
                unsafe {
                    let handler: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                    handler(signal);
                }
            }
        }
        _ => {
            // The default action: the instruction runs again and the
            // process dies of the signal, as it would have without us.
            // SAFETY: resetting a signal's disposition.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}
