//! The calling thread's task: its endpoint, its buffers, the messages it
//! has pulled from its mailbox but not yet received, and its options.
//!
//! # Rules
//!
//! 1. Every OS thread that calls PVM is a task of its own with its own tid
//!    (the thesis' thread-based PVM): the first such thread of a process
//!    starts the node (`threadwire::init`, thread 0), later ones become
//!    further endpoints of it (`Node::endpoint`).
//! 2. A task's state lives behind a thread-local pointer; `pvm_exit`, or
//!    the end of its thread or process (`ExitGuard`, destroyed before the
//!    runtime's thread-locals), ends the task, and ending thread 0's
//!    finalizes the node, so that what it sent is delivered.
//! 3. [`with`] lends the state for the length of one call. User code
//!    (message handlers, reduce functions) is never called inside it: a
//!    call that may reach user code borrows, returns, calls, and borrows
//!    again, so a handler that calls PVM finds the state free.
//! 4. A founding node (started from the command line, not spawned) holds
//!    the job's names — named groups, the mailbox — as pvmd held PVM's.
//!    Its first task's `pvm_exit` ends the task but not the node: when
//!    its thread ends (the program exits), the node waits until every
//!    node that joined the job has left, and only then finalizes, so that
//!    the names outlive the program at the command line as long as
//!    anyone can ask for them. Tasks that asked to be told of its task's
//!    exit (`pvm_notify`) are told when its task ends, not when the node
//!    does (`spawn::tell_watchers`).

use crate::buffer::Buffer;
use crate::consts::*;
use crate::tid;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::sync::OnceLock;
use threadwire::{Address, Endpoint, Node};

/// The node, once the process's first task has started it.
static NODE: OnceLock<Node> = OnceLock::new();

thread_local! {
    static TASK: Cell<*mut Task> = const { Cell::new(std::ptr::null_mut()) };
    /// Whether this thread's task has exited (calls fail afterwards).
    static EXITED: Cell<bool> = const { Cell::new(false) };
}

/// First threadwire tag of the notifications this library asked for; PVM
/// messages travel with their own tag, which is never negative.
pub const NOTIFY_TAG: u32 = 0x8000_0000;

/// A message handler of `pvm_addmhf`.
#[derive(Clone, Copy)]
pub struct Mhf {
    pub id: i32,
    pub src: i32,
    pub tag: i32,
    pub ctx: i32,
    pub f: extern "C" fn(i32) -> i32,
}

impl Mhf {
    fn matches(&self, b: &Buffer) -> bool {
        (self.src == -1 || self.src == b.src)
            && (self.tag == -1 || self.tag == b.tag)
            && (self.ctx == -1 || self.ctx == b.ctx)
    }
}

/// What a notification this task asked for turns into: a PVM message of
/// `tag` in `ctx`, whose body says which task or host.
pub struct Subscription {
    pub kind: i32,
    pub tag: i32,
    pub ctx: i32,
    /// Held, not read: dropping it ends the subscription.
    pub _handle: Option<threadwire::NotifyHandle>,
}

pub struct Task {
    pub ep: Endpoint,
    pub tid: i32,
    /// The spawner of a task started as a thread (`threads`), which has
    /// no environment of its own to say so.
    pub parent: Option<i32>,
    bufs: HashMap<i32, Buffer>,
    next_buf: i32,
    /// The active send and receive buffers (0: none).
    pub sbuf: i32,
    pub rbuf: i32,
    /// Ids of arrived messages not yet received, in arrival order.
    queue: VecDeque<i32>,
    pub ctx: i32,
    pub handlers: Vec<Mhf>,
    next_mhf: i32,
    pub options: HashMap<i32, i32>,
    pub subscriptions: HashMap<u32, Subscription>,
    pub next_subscription: u32,
    /// Storage behind the pointers `pvm_config`, `pvm_tasks` and
    /// `pvm_siblings` return, valid until the next such call.
    pub kept_hosts: (Vec<HostInfo>, Vec<CString>),
    pub kept_tasks: (Vec<TaskInfo>, Vec<CString>),
    pub kept_tids: Vec<i32>,
    /// Groups frozen by `pvm_freezegroup`: their members' tids by instance.
    pub frozen: HashMap<String, Vec<i32>>,
    /// The mailbox homes this task has put entries to.
    pub mailbox_homes: std::collections::HashSet<u32>,
    /// What `pvm_getmboxinfo` returned last.
    pub kept_mailbox: crate::mailbox::Listing,
}

/// `struct pvmhostinfo`.
#[repr(C)]
pub struct HostInfo {
    pub tid: i32,
    pub name: *const libc::c_char,
    pub arch: *const libc::c_char,
    pub speed: i32,
    pub dsig: i32,
}

/// `struct pvmtaskinfo`.
#[repr(C)]
pub struct TaskInfo {
    pub tid: i32,
    pub ptid: i32,
    pub host: i32,
    pub flag: i32,
    pub a_out: *const libc::c_char,
    pub pid: i32,
}

/// How long a receive may wait.
#[derive(Clone, Copy)]
pub enum Wait {
    Forever,
    Not,
    Until(std::time::Instant),
}

/// A step of a receive: what the caller does next outside the borrow.
pub enum Step {
    /// A message matched: its buffer id, now the active receive buffer.
    Found(i32),
    /// Nothing matched and the wait is over.
    Nothing,
    /// A handler takes this message (its buffer id).
    Handle(extern "C" fn(i32) -> i32, i32),
    /// A message arrived that did not match; look again.
    Again,
}

impl Task {
    fn new(ep: Endpoint) -> Result<Task, i32> {
        let Some(tid) = tid::of(ep.address()) else {
            eprintln!(
                "libpvm (threadwire): {} has no PVM task id (nodes up to {}, threads up to 262142)",
                ep.address(),
                tid::MAX_NODES
            );
            return Err(PVM_OUT_OF_RES);
        };
        let ctx = crate::spawn::inherited_context(ep.address());
        Ok(Task {
            ep,
            tid,
            parent: None,
            bufs: HashMap::new(),
            next_buf: 1,
            sbuf: 0,
            rbuf: 0,
            queue: VecDeque::new(),
            ctx,
            handlers: Vec::new(),
            next_mhf: 1,
            options: HashMap::new(),
            subscriptions: HashMap::new(),
            next_subscription: 0,
            kept_hosts: (Vec::new(), Vec::new()),
            kept_tasks: (Vec::new(), Vec::new()),
            kept_tids: Vec::new(),
            frozen: HashMap::new(),
            mailbox_homes: Default::default(),
            kept_mailbox: Default::default(),
        })
    }

    pub fn option(&self, what: i32) -> i32 {
        let default = match what {
            OPT_ROUTE => ALLOW_DIRECT,
            OPT_AUTO_ERR => 1,
            OPT_FRAG_SIZE => 4096,
            OPT_SHOW_TIDS => 1,
            OPT_POLL_TYPE => 1,
            _ => 0,
        };
        self.options.get(&what).copied().unwrap_or(default)
    }

    pub fn node(&self) -> &Node {
        self.ep.node()
    }

    /// Keeps `buffer` under a new id.
    pub fn insert(&mut self, buffer: Buffer) -> i32 {
        let id = self.next_buf;
        self.next_buf = self.next_buf.checked_add(1).unwrap_or(1);
        self.bufs.insert(id, buffer);
        id
    }

    pub fn buffer(&mut self, id: i32) -> Result<&mut Buffer, i32> {
        match id {
            ..=0 => Err(PVM_BAD_PARAM),
            _ => self.bufs.get_mut(&id).ok_or(PVM_NO_SUCH_BUF),
        }
    }

    pub fn free(&mut self, id: i32) -> Result<(), i32> {
        if id <= 0 {
            return Err(PVM_BAD_PARAM);
        }
        self.bufs.remove(&id).ok_or(PVM_NO_SUCH_BUF)?;
        self.queue.retain(|&q| q != id);
        if self.sbuf == id {
            self.sbuf = 0;
        }
        if self.rbuf == id {
            self.rbuf = 0;
        }
        Ok(())
    }

    /// The active send buffer.
    pub fn send_buffer(&mut self) -> Result<&mut Buffer, i32> {
        let id = self.sbuf;
        self.bufs.get_mut(&id).ok_or(PVM_NO_BUF)
    }

    /// The endpoint and the active send buffer, lent together.
    pub fn sender(&mut self) -> Result<(&Endpoint, &mut Buffer), i32> {
        let buffer = self.bufs.get_mut(&self.sbuf).ok_or(PVM_NO_BUF)?;
        Ok((&self.ep, buffer))
    }

    /// The active receive buffer.
    pub fn recv_buffer(&mut self) -> Result<&mut Buffer, i32> {
        let id = self.rbuf;
        self.bufs.get_mut(&id).ok_or(PVM_NO_BUF)
    }

    /// Makes `id` the active receive buffer, freeing the one before (as
    /// every receive does).
    pub fn make_rbuf(&mut self, id: i32) {
        if self.rbuf != 0 && self.rbuf != id {
            self.bufs.remove(&self.rbuf);
        }
        self.rbuf = id;
    }

    /// A context no other task of the job has: this node's number plus
    /// one in the high bits, as in a tid, and a count of the node's
    /// contexts below them (PVM's are machine-wide too).
    pub fn new_context(&mut self) -> Result<i32, i32> {
        static NEXT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let node_tid = tid::of(Address::new(self.ep.address().node, 0)).ok_or(PVM_OUT_OF_RES)?;
        match n < 0x3ffff {
            true => Ok((node_tid & !0x3ffff) | n),
            false => Err(PVM_OUT_OF_RES),
        }
    }

    pub fn add_handler(
        &mut self,
        src: i32,
        tag: i32,
        ctx: i32,
        f: extern "C" fn(i32) -> i32,
    ) -> i32 {
        let id = self.next_mhf;
        self.next_mhf += 1;
        self.handlers.push(Mhf {
            id,
            src,
            tag,
            ctx,
            f,
        });
        id
    }

    /// Where in the queue the first message that `(src, tag)` in this
    /// task's context matches is.
    fn find_match(&self, src: i32, tag: i32) -> Option<usize> {
        self.find_in(self.ctx, src, tag)
    }

    /// [`find_match`](Self::find_match) in context `ctx`.
    fn find_in(&self, ctx: i32, src: i32, tag: i32) -> Option<usize> {
        self.queue.iter().position(|id| {
            self.bufs.get(id).is_some_and(|b| {
                (src == -1 || b.src == src) && (tag == -1 || b.tag == tag) && b.ctx == ctx
            })
        })
    }

    /// The first queued match's id, left queued (`pvm_probe`).
    pub fn peek_match(&self, src: i32, tag: i32) -> Option<i32> {
        self.find_match(src, tag).map(|at| self.queue[at])
    }

    /// Queues one arrived message from `src` (a tid or -1) without
    /// waiting: whether there was one.
    pub fn pull_one(&mut self, src: i32) -> Result<bool, i32> {
        let from = source(src)?;
        let message = match self.ep.iprobe(from, threadwire::ANY_TAG) {
            Ok(Some(st)) => self.ep.recv(st.source, st.tag),
            Ok(None) => return Ok(false),
            Err(e) => Err(e),
        };
        let message = message.map_err(recv_error)?;
        if let Some(buffer) = self.arrived(message) {
            let id = self.insert(buffer);
            self.queue.push_back(id);
        }
        Ok(true)
    }

    /// One step of a receive of `(src, tag)` (`src` a tid or -1) in
    /// context `ctx`, this task's when `None`.
    pub fn receive_step(
        &mut self,
        ctx: Option<i32>,
        src: i32,
        tag: i32,
        wait: Wait,
    ) -> Result<Step, i32> {
        let ctx = ctx.unwrap_or(self.ctx);
        if let Some(at) = self.find_in(ctx, src, tag) {
            let id = self.queue.remove(at).expect("found in the queue");
            self.make_rbuf(id);
            return Ok(Step::Found(id));
        }
        let from = source(src)?;
        let message = match wait {
            Wait::Forever => self.ep.recv(from, threadwire::ANY_TAG).map(Some),
            Wait::Not => match self.ep.iprobe(from, threadwire::ANY_TAG) {
                Ok(Some(st)) => self.ep.recv(st.source, st.tag).map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            },
            Wait::Until(deadline) => {
                let mut req = self.ep.irecv(from, threadwire::ANY_TAG);
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match req.wait_timeout(left) || !req.cancel() {
                    true => req.wait().map(Some),
                    false => Ok(None),
                }
            }
        };
        let message = match message.map_err(recv_error)? {
            Some(m) => m,
            None => return Ok(Step::Nothing),
        };
        let Some(buffer) = self.arrived(message) else {
            return Ok(Step::Again);
        };
        if let Some(h) = self.handlers.iter().find(|h| h.matches(&buffer)).copied() {
            let id = self.insert(buffer);
            return Ok(Step::Handle(h.f, id));
        }
        let id = self.insert(buffer);
        self.queue.push_back(id);
        Ok(Step::Again)
    }

    /// Queues the message of a `pvm_notify` whose event has happened
    /// already: `about` (a tid or a host's), with `tag` in `ctx`.
    pub fn told(&mut self, tag: i32, ctx: i32, about: i32) {
        let r = Buffer::decode(Buffer::notice(about, ctx), about, tag);
        let id = self.insert(r);
        self.queue.push_back(id);
    }

    /// A message from the mailbox as a PVM message: a PVM message's
    /// buffer, or a notification turned into the message the task asked
    /// for; `None` for a notification no longer wanted.
    fn arrived(&mut self, message: threadwire::Message) -> Option<Buffer> {
        let from = tid::of(message.source()).unwrap_or(0);
        if message.tag() < NOTIFY_TAG {
            let tag = message.tag() as i32;
            return Some(Buffer::decode(message.into_vec(), from, tag));
        }
        let tag = message.tag();
        let sub = self.subscriptions.get(&tag)?;
        if sub.kind == NOTIFY_TASK_EXIT && message.payload().to_vec().first() == Some(&b'P') {
            // A founding node's first task telling its end itself (rule 4):
            // already the PVM message; the node's own exit, later, finds
            // the subscription spent.
            let (ctx, pvm_tag) = (sub.ctx, sub.tag);
            let mut r = Buffer::decode(message.into_vec(), from, pvm_tag);
            r.ctx = ctx;
            self.subscriptions.remove(&tag);
            return Some(r);
        }
        let note = threadwire::Notification::from_message(message).ok()?;
        let about = match note {
            threadwire::Notification::NodeExit { node, .. } => {
                tid::of(Address::new(node, 0)).unwrap_or(0)
            }
            threadwire::Notification::HostAdded { host, .. }
            | threadwire::Notification::HostRemoved { host, .. } => tid::of_host(host as usize),
            _ => return None,
        };
        let r = Buffer::decode(Buffer::notice(about, sub.ctx), from, sub.tag);
        if sub.kind == NOTIFY_TASK_EXIT || sub.kind == NOTIFY_HOST_DELETE {
            // One message per task or host asked about: the subscription
            // is spent (its handle, dropped, cancels nothing further).
            self.subscriptions.remove(&tag);
        }
        Some(r)
    }
}

/// The mailbox source a PVM source names.
fn source(src: i32) -> Result<threadwire::Source, i32> {
    match src {
        -1 => Ok(threadwire::ANY_SOURCE),
        t => Ok(tid::address(t).ok_or(PVM_BAD_PARAM)?.into()),
    }
}

fn recv_error(e: threadwire::RecvError) -> i32 {
    match e {
        threadwire::RecvError::PeerLost(_) => PVM_NO_TASK,
        threadwire::RecvError::NoSuchNode(_) => PVM_BAD_PARAM,
        _ => PVM_SYS_ERR,
    }
}

/// Starts this thread's task if it has none (rule 1).
fn enroll() -> Result<*mut Task, i32> {
    if EXITED.with(Cell::get) {
        return Err(PVM_SYS_ERR);
    }
    let ep = match NODE.get() {
        Some(node) => node.endpoint().map_err(|e| {
            eprintln!("libpvm (threadwire): this thread cannot become a task: {e}");
            PVM_OUT_OF_RES
        })?,
        None => {
            let ep = threadwire::init().map_err(|e| {
                eprintln!(
                    "libpvm (threadwire): cannot start: {e}\n\
                     libpvm (threadwire): run PVM programs with `threadwire pvm -- PROGRAM ARGS`"
                );
                PVM_SYS_ERR
            })?;
            let _ = NODE.set(ep.node().clone());
            crate::spawn::serve(ep.node());
            crate::threads::export_all(ep.node());
            ep
        }
    };
    let task = Box::into_raw(Box::new(Task::new(ep)?));
    TASK.with(|t| t.set(task));
    EXIT_GUARD.with(|_| ());
    Ok(task)
}

/// The node, if this process's first task has started it.
pub fn node() -> Option<Node> {
    NODE.get().cloned()
}

/// Makes `ep`, a thread's endpoint made by threadwire (a task started as
/// a thread), this thread's task, with `parent` as its parent.
pub fn adopt(ep: Endpoint, parent: i32) -> Result<(), i32> {
    if !TASK.with(Cell::get).is_null() {
        return Err(PVM_ALREADY);
    }
    let mut task = Task::new(ep)?;
    task.parent = (parent > 0).then_some(parent);
    TASK.with(|t| t.set(Box::into_raw(Box::new(task))));
    EXIT_GUARD.with(|_| ());
    Ok(())
}

/// Ends the thread's task when the thread ends (or the process exits)
/// without `pvm_exit` (rule 2). Touched after the runtime's thread-locals
/// exist, it is destroyed before them: thread-local destructors run in
/// the reverse order of their registration, and at `exit` before any
/// `atexit` handler, which would find the runtime's gone.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        exit();
        end_deferred();
    }
}

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// Lends the calling thread's task to `f`, starting the task first if
/// need be (rule 3).
pub fn with<R>(f: impl FnOnce(&mut Task) -> Result<R, i32>) -> Result<R, i32> {
    let mut task = TASK.with(Cell::get);
    if task.is_null() {
        task = enroll()?;
    }
    // SAFETY: the pointer came from `Box::into_raw` on this thread and is
    // freed only by `exit` on this thread; no other borrow is alive, since
    // no user code runs inside `with` and `with` is not called inside it
    // (rule 3).
    f(unsafe { &mut *task })
}

/// Whether this thread is a task now (without starting one).
pub fn enrolled() -> bool {
    !TASK.with(Cell::get).is_null()
}

/// Ends this thread's task: `pvm_exit`, or the thread's end. A founding
/// node's first task is kept, unfinalized, until its thread ends (rule 4).
pub fn exit() -> bool {
    let task = TASK.with(|t| t.replace(std::ptr::null_mut()));
    if task.is_null() {
        return false;
    }
    EXITED.with(|e| e.set(true));
    // SAFETY: as in `with`; the pointer is cleared first, so this is its
    // only owner.
    let mut task = unsafe { Box::from_raw(task) };
    crate::mailbox::release_own(&mut task);
    match task.ep.address().thread == 0 && founding(task.ep.address().node) {
        true => {
            crate::spawn::tell_watchers(&task);
            DEFERRED.with(|d| d.set(Box::into_raw(task)))
        }
        false => end(task),
    }
    true
}

/// Finalizes the node if `task` is its first thread's.
fn end(task: Box<Task>) {
    let node = task.node().clone();
    let finalizes = task.ep.address().thread == 0;
    drop(task);
    if finalizes {
        node.finalize();
    }
}

thread_local! {
    /// A founding node's first task after `pvm_exit`, until its thread
    /// ends: a pointer with no destructor, as `TASK` (rule 2).
    static DEFERRED: Cell<*mut Task> = const { Cell::new(std::ptr::null_mut()) };
}

/// The nodes the job started with (from the command line): a joined
/// node's `THREADWIRE_FOUNDERS`, a founder's `THREADWIRE_NODES`.
pub fn founders() -> u32 {
    std::env::var(threadwire::env::FOUNDERS)
        .or_else(|_| std::env::var(threadwire::env::NODES))
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1)
}

/// Whether `node` started with the job rather than joining it
/// (spawned): the job's names live on founding nodes.
fn founding(node: u32) -> bool {
    node < founders()
}

/// Tag of the exits a lingering founder waits for.
const LINGER_TAG: u32 = NOTIFY_TAG | 0x7fff_fffe;
/// Subscriptions' keys run from [`NOTIFY_TAG`] up to below the library's
/// own tags (the linger above, the mailbox's wake-up).
pub const SUBSCRIPTION_KEYS: u32 = 0x7fff_fff0;

/// Rule 4: waits until every node that joined the job has left.
fn linger(task: &Task) {
    // What the program printed shows now, not when the others are done.
    // SAFETY: fflush(NULL) flushes every C stream; no pointer is kept.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    loop {
        let joined: Vec<u32> = task
            .ep
            .machine()
            .into_iter()
            .filter(|n| !founding(n.node) && n.state == threadwire::NodeState::Alive)
            .map(|n| n.node)
            .collect();
        if joined.is_empty() {
            return;
        }
        let watches: Vec<_> = joined
            .iter()
            .filter_map(|&n| {
                task.ep
                    .notify(threadwire::Notify::NodeExit(n), LINGER_TAG)
                    .ok()
            })
            .collect();
        if watches.is_empty() || task.ep.recv(threadwire::ANY_SOURCE, LINGER_TAG).is_err() {
            return;
        }
    }
}

/// Ends the task of a founding node's first thread, kept since
/// `pvm_exit`, once the joined nodes have left.
fn end_deferred() {
    let task = DEFERRED.with(|d| d.replace(std::ptr::null_mut()));
    if !task.is_null() {
        // SAFETY: from `Box::into_raw` in `exit`, on this thread; the
        // pointer is cleared first, so this is its only owner.
        let task = unsafe { Box::from_raw(task) };
        linger(&task);
        end(task);
    }
}
