//! Fiber stacks: a per-worker pool, and the report of a stack overflow.
//!
//! Each stack comes from corosensei's `DefaultStack`: an `mmap` with a
//! `PROT_NONE` guard page below the usable range. A fiber that runs past
//! its stack faults on the guard page; the `SIGSEGV` handler installed here
//! recognises the current fiber's guard page, writes one line naming the
//! fiber to stderr and aborts, so an overflow never corrupts memory and is
//! never anonymous. Any other fault is passed to the handler installed
//! before ours (the Rust runtime's, which reports overflows of OS threads).

use corosensei::stack::{DefaultStack, Stack};
use std::io;
use std::sync::Once;

/// Stacks kept for reuse per worker; beyond this finished fibers unmap
/// theirs (a pooled stack keeps the pages it touched).
const MAX_POOLED: usize = 1024;

pub(crate) struct StackPool {
    size: usize,
    free: Vec<DefaultStack>,
}

impl StackPool {
    pub(crate) fn new(size: usize) -> StackPool {
        StackPool {
            size,
            free: Vec::new(),
        }
    }

    pub(crate) fn take(&mut self) -> io::Result<DefaultStack> {
        match self.free.pop() {
            Some(stack) => Ok(stack),
            None => DefaultStack::new(self.size),
        }
    }

    pub(crate) fn give_back(&mut self, stack: DefaultStack) {
        if self.free.len() < MAX_POOLED {
            self.free.push(stack);
        }
    }
}

/// The guard page of a stack: `[start, end)`. corosensei's `limit` is the
/// start of the mapping, whose first page is the guard.
pub(crate) fn guard_range(stack: &DefaultStack) -> (usize, usize) {
    let start = stack.limit().get();
    (start, start + page_size())
}

fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize })
}

/// What the fault handler needs to know about the running fiber; read in a
/// signal handler, so plain data only.
pub(crate) struct OverflowInfo {
    pub(crate) guard: (usize, usize),
    pub(crate) id: u64,
    pub(crate) name: Option<std::sync::Arc<str>>,
    pub(crate) stack_size: usize,
}

static INSTALL: Once = Once::new();
static mut PREVIOUS: Option<libc::sigaction> = None;

/// Installs the overflow reporter once per process.
pub(crate) fn install_overflow_handler() {
    INSTALL.call_once(|| {
        for signal in [libc::SIGSEGV, libc::SIGBUS] {
            // SAFETY: a zeroed sigaction is a valid value to fill in; the
            // handler is an `extern "C"` function with the SA_SIGINFO
            // signature; PREVIOUS is written only here, under the Once,
            // before the handler can run for a fiber.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut previous) == 0 && signal == libc::SIGSEGV {
                    PREVIOUS = Some(previous);
                }
            }
        }
    });
}

/// Gives the calling thread an alternate signal stack if it has none, so
/// that the handler can run when the fiber's stack is exhausted.
pub(crate) fn ensure_alternate_stack() {
    const SIZE: usize = 64 * 1024;
    // SAFETY: sigaltstack with a null new stack only reads the current one.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut current) == 0
            && current.ss_flags & libc::SS_DISABLE == 0
        {
            return;
        }
    }
    // Leaked on purpose: the stack must outlive every signal on this thread.
    let memory = Box::leak(vec![0u8; SIZE].into_boxed_slice());
    let stack = libc::stack_t {
        ss_sp: memory.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: SIZE,
    };
    // SAFETY: `stack` describes live, leaked memory of SIZE bytes.
    unsafe {
        libc::sigaltstack(&stack, std::ptr::null_mut());
    }
}

extern "C" fn on_fault(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let address = unsafe { (*info).si_addr() } as usize;
    if let Some(fiber) = super::worker::overflow_info() {
        if address >= fiber.guard.0 && address < fiber.guard.1 {
            report_overflow(fiber);
        }
    }
    // Not a fiber's overflow: hand over to the previous handler.
    // SAFETY: PREVIOUS was written before this handler was installed.
    let previous = unsafe { *std::ptr::addr_of!(PREVIOUS) };
    match previous {
        Some(previous)
            if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN =>
        {
            if previous.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler declared the SA_SIGINFO
                // signature, and we pass it the kernel's arguments.
                unsafe {
                    let handler: extern "C" fn(
                        libc::c_int,
                        *mut libc::siginfo_t,
                        *mut libc::c_void,
                    ) = std::mem::transmute(previous.sa_sigaction);
                    handler(signal, info, context);
                }
            } else {
                // SAFETY: a plain handler takes the signal number only.
                unsafe {
                    let handler: extern "C" fn(libc::c_int) =
                        std::mem::transmute(previous.sa_sigaction);
                    handler(signal);
                }
            }
        }
        _ => {
            // Restore the default action and return: the faulting
            // instruction runs again and the process dies as it would have.
            // SAFETY: resetting a signal's action is async-signal-safe.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// Writes "threadwire-fiber: fiber #7 'name' overflowed its 128 KiB stack"
/// and aborts; only async-signal-safe calls.
fn report_overflow(fiber: &OverflowInfo) -> ! {
    let mut line = Line::default();
    line.push(b"threadwire-fiber: fiber #");
    line.push_number(fiber.id);
    if let Some(name) = &fiber.name {
        line.push(b" '");
        line.push(name.as_bytes());
        line.push(b"'");
    }
    line.push(b" overflowed its ");
    line.push_number((fiber.stack_size / 1024) as u64);
    line.push(b" KiB stack (raise it with Builder::stack_size); aborting\n");
    // SAFETY: write and abort are async-signal-safe; the buffer is live.
    unsafe {
        libc::write(2, line.bytes.as_ptr().cast(), line.len);
        libc::abort();
    }
}

struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            bytes: [0; 512],
            len: 0,
        }
    }
}

impl Line {
    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }

    fn push_number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}
