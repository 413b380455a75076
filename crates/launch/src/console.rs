//! A running job's console: a user at the shell sees and changes the
//! job's machine (`threadwire vm`), as with PVM's console (`conf`, `ps -a`,
//! `add`, `delete`, `spawn`).
//!
//! 1. When [`run`](crate::run) starts a job, it opens the console: a
//!    Unix-domain stream socket named by the job id (16 hex digits, as in
//!    `THREADWIRE_JOB`) in this user's console directory [`dir`]. The
//!    directory is created with mode 0700 and refused unless it is a
//!    directory of this user's alone; the socket gets mode 0600. Those
//!    permissions are the authentication, as for PVM's `/tmp/pvmd.<uid>`;
//!    a client of another user (`SO_PEERCRED`) is refused besides.
//! 2. A thread accepts connections and gives each a thread of its own (at
//!    most [`MAX_CLIENTS`] at once; more are told the console is busy).
//!    Each reads one request line — within [`REQUEST_TIMEOUT`] and at most
//!    [`MAX_REQUEST`] bytes, so that a client that never sends holds
//!    nobody else up — and parses it; a bad request is answered with an
//!    error line at once.
//! 3. A good request goes to the job's loop (`Internal::Console`, with a
//!    reply channel), which alone holds the job's state:
//!    - `job`, `hosts` are answered at once from the launcher's tables;
//!    - `nodes` sends `Describe` to every node that has joined and is
//!      alive (control protocol, step 10) and answers once all have said
//!      their thread count, or after [`DESCRIBE_WAIT`]: those that did not
//!      answer show `?`;
//!    - `add-hosts`, `remove-hosts` and `add-nodes` are the virtual
//!      machine's requests (`grow` module), with the console as the
//!      requester instead of a node: `add-nodes` is answered once its
//!      batch has joined, with the new nodes' numbers, as a node's request
//!      is. A node may not remove its own host; the console may remove
//!      any.
//! 4. The answer is written (within [`REQUEST_TIMEOUT`]) and the
//!    connection closed.
//! 5. When every node has ended — or `run` returns early or unwinds — the
//!    console is dropped: the accepting thread is stopped and the socket
//!    removed. A launcher killed outright leaves its socket behind;
//!    [`running_jobs`] removes such stale sockets when it finds them.
//!
//! # The protocol
//!
//! A request is one line of fields separated by tabs (a line without tabs
//! is split at spaces, for typing by hand):
//!
//! ```text
//! job
//! hosts
//! nodes
//! add-hosts HOST…
//! remove-hosts HOST…
//! add-nodes N [--host HOST] [--] [PROGRAM ARG…]
//! join
//! ```
//!
//! The answer is `error: WHY` on one line, or `ok` followed by rows of
//! tab-separated fields (`-` for an empty one):
//!
//! - `job`: `ID PROGRAM LIVE_NODES NODES PRESENT_HOSTS UPTIME_SECONDS`;
//! - `hosts`: per host `NUMBER NAME present|removed NODES`, its live
//!   nodes space-separated (`n0 n2`);
//! - `nodes`: per node `NUMBER HOST PID STATE ADDRESS THREADS`, STATE one
//!   of `joining`, `running`, `finished`, `failed: CAUSE`, `killed (host
//!   removed)`; THREADS `?` when unknown, `-` for an ended node;
//! - `add-nodes`, `remove-hosts`: a row per node added, or killed;
//!   `add-hosts`: no rows;
//! - `join`: a row `KEY VALUE` per variable of the environment of a new
//!   node on this host, which the asking command starts itself (as
//!   `threadwire pvm --join` does); the node joins as an added one
//!   (the `grow` module) and ends when its control connection does,
//!   cleanly if it has reported its counters. One that has not joined
//!   within the batch's time is given up.
//!
//! [`ask`] sends a request and parses its answer.

use crate::grow::{Requester, JOIN_TIMEOUT};
use crate::hosts::Host;
use crate::job::{Internal, Job, Slot};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::control::{Control, VmAnswer, VmOp};

/// Overrides the console directory (module docs, step 1): for tests, and
/// for users who want their jobs' consoles elsewhere.
pub const DIR_VAR: &str = "THREADWIRE_CONSOLE_DIR";

/// The longest request line accepted, in bytes (step 2).
pub const MAX_REQUEST: usize = 64 * 1024;

/// How long a client has to send its request, and the console to write
/// its answer (steps 2 and 4).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Clients served at once (step 2).
pub const MAX_CLIENTS: usize = 16;

/// How long `nodes` waits for the nodes' thread counts (step 3).
pub const DESCRIBE_WAIT: Duration = Duration::from_secs(1);

/// How long a client waits for the job's answer: an `add-nodes` may wait
/// for an earlier batch to join, then for its own.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(3 * JOIN_TIMEOUT.as_secs() + 10);

/// Where the job loop sends a console answer: its text, in the protocol.
pub(crate) type Reply = Sender<String>;

fn euid() -> u32 {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// This user's console directory: `$THREADWIRE_CONSOLE_DIR` if set,
/// else `$XDG_RUNTIME_DIR/threadwire` if that directory exists, else
/// `/tmp/threadwire-<uid>`.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os(DIR_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir());
    match runtime {
        Some(r) => r.join("threadwire"),
        None => PathBuf::from(format!("/tmp/threadwire-{}", euid())),
    }
}

/// Creates `dir` (mode 0700) if it is missing, and checks that it is a
/// directory of this user's that nobody else may enter (step 1).
fn private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != euid() || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory of this user's alone (mode 0700)",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// A job's open console; dropping it closes it (step 5).
pub(crate) struct Console {
    listener: Arc<UnixListener>,
    closed: Arc<AtomicBool>,
    path: PathBuf,
}

impl Console {
    /// Opens job `job_id`'s console in [`dir`] (step 1), its requests
    /// going to `jobs`. A job runs without one, with a warning, if it
    /// cannot be opened.
    pub(crate) fn open(job_id: u64, jobs: Sender<Internal>) -> Option<Console> {
        let dir = dir();
        match Console::open_in(&dir, job_id, jobs) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(
                    "launcher: no console for `threadwire vm` in {}: {e}",
                    dir.display()
                );
                None
            }
        }
    }

    fn open_in(dir: &Path, job_id: u64, jobs: Sender<Internal>) -> io::Result<Console> {
        private_dir(dir)?;
        let path = dir.join(format!("{job_id:016x}"));
        // Bound and listening under a name no client looks for, then moved
        // to its own: a client never finds a socket that refuses it (and
        // would remove it as stale).
        let fresh = dir.join(format!(".{job_id:016x}.new"));
        let _ = std::fs::remove_file(&fresh);
        let listener = UnixListener::bind(&fresh)?;
        let placed = std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&fresh, &path));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&fresh);
            return Err(e);
        }
        let listener = Arc::new(listener);
        let closed = Arc::new(AtomicBool::new(false));
        let (l, c) = (listener.clone(), closed.clone());
        let spawned = std::thread::Builder::new()
            .name("console".into())
            .spawn(move || accept(&l, &c, jobs));
        if let Err(e) = spawned {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(Console {
            listener,
            closed,
            path,
        })
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        let _ = std::fs::remove_file(&self.path);
        // Wakes the accepting thread, which then sees `closed`.
        // SAFETY: shutdown(2) on a socket this value owns (through the
        // `Arc`, which keeps it open); no memory is passed.
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
    }
}

/// Step 2: accepts clients until the console closes.
fn accept(listener: &UnixListener, closed: &AtomicBool, jobs: Sender<Internal>) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept();
        if closed.load(Ordering::Acquire) {
            return;
        }
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // EMFILE and friends: try again a little later.
                tracing::debug!("console: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CLIENTS {
            active.fetch_sub(1, Ordering::AcqRel);
            let busy = error(&format!(
                "the console serves {MAX_CLIENTS} clients at once; try again"
            ));
            let _ = (&stream).write_all(busy.as_bytes());
            continue;
        }
        let (jobs, left) = (jobs.clone(), active.clone());
        let spawned = std::thread::Builder::new()
            .name("console-client".into())
            .spawn(move || {
                serve(&stream, &jobs);
                left.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Steps 2–4 for one client.
fn serve(stream: &UnixStream, jobs: &Sender<Internal>) {
    let answer = match peer_uid(stream) {
        Some(uid) if uid != euid() => error("this console is another user's"),
        _ => match read_request(stream, REQUEST_TIMEOUT).and_then(|line| parse(&line)) {
            Err(why) => error(&why),
            Ok(request) => ask_job(request, jobs),
        },
    };
    let mut stream = stream;
    let _ = stream.write_all(answer.as_bytes());
}

/// The user id of the process at the other end (`SO_PEERCRED`).
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given,
    // and the descriptor is the open socket `stream` owns.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// Step 3: the job loop's answer to `request`.
fn ask_job(request: Request, jobs: &Sender<Internal>) -> String {
    let (reply, answer) = mpsc::channel();
    if jobs.send(Internal::Console { request, reply }).is_err() {
        return error("the job has ended");
    }
    match answer.recv_timeout(ANSWER_TIMEOUT) {
        Ok(text) => text,
        Err(RecvTimeoutError::Timeout) => error(&format!(
            "the job did not answer within {} s",
            ANSWER_TIMEOUT.as_secs()
        )),
        Err(RecvTimeoutError::Disconnected) => error("the job ended before it answered"),
    }
}

/// Reads one request line (without its newline) within `timeout`, at
/// most [`MAX_REQUEST`] bytes (step 2).
fn read_request(mut stream: impl Read + Timed, timeout: Duration) -> Result<String, String> {
    let deadline = Instant::now() + timeout;
    let mut line = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no request within {} s", timeout.as_secs()));
        }
        stream.set_timeout(left);
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
                    line.extend_from_slice(&buf[..end]);
                    break;
                }
                line.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!("no request within {} s", timeout.as_secs()))
            }
            Err(e) => return Err(format!("reading the request: {e}")),
        }
        if line.len() > MAX_REQUEST {
            return Err(format!("a request is at most {MAX_REQUEST} bytes"));
        }
    }
    if line.len() > MAX_REQUEST {
        return Err(format!("a request is at most {MAX_REQUEST} bytes"));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| "the request is not UTF-8 text".to_string())
}

/// A stream whose reads can be given a timeout.
trait Timed {
    fn set_timeout(&mut self, timeout: Duration);
}

impl Timed for &UnixStream {
    fn set_timeout(&mut self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
    }
}

impl Timed for &[u8] {
    fn set_timeout(&mut self, _: Duration) {}
}

/// A console request (module docs, the protocol).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    Job,
    Hosts,
    Nodes,
    /// `add-hosts`, `remove-hosts` and `add-nodes`.
    Vm(VmOp),
    /// `join`: a node the asking command starts itself.
    Join,
}

const REQUESTS: &str = "job, hosts, nodes, add-hosts, remove-hosts, add-nodes, join";

/// Parses a request line (step 2).
pub(crate) fn parse(line: &str) -> Result<Request, String> {
    let fields: Vec<&str> = match line.contains('\t') {
        true => line.split('\t').collect(),
        false => line.split_whitespace().collect(),
    };
    let Some((&verb, rest)) = fields.split_first() else {
        return Err(format!("empty request; ask one of: {REQUESTS}"));
    };
    let no_arguments = |request| match rest.is_empty() {
        true => Ok(request),
        false => Err(format!("`{verb}` takes no arguments")),
    };
    let hosts = || -> Result<Vec<String>, String> {
        if rest.is_empty() {
            return Err(format!("`{verb}` needs at least one host"));
        }
        rest.iter()
            .map(|h| {
                h.parse::<Host>()
                    .map(|h| h.to_string())
                    .map_err(|e| e.to_string())
            })
            .collect()
    };
    match verb {
        "job" => no_arguments(Request::Job),
        "hosts" => no_arguments(Request::Hosts),
        "nodes" => no_arguments(Request::Nodes),
        "add-hosts" => Ok(Request::Vm(VmOp::AddHosts { hosts: hosts()? })),
        "remove-hosts" => Ok(Request::Vm(VmOp::RemoveHosts { hosts: hosts()? })),
        "add-nodes" => parse_add_nodes(rest),
        "join" => no_arguments(Request::Join),
        other => Err(format!(
            "unknown request {:?}; ask one of: {REQUESTS}",
            other.chars().take(64).collect::<String>()
        )),
    }
}

/// `add-nodes N [--host HOST] [--] [PROGRAM ARG…]`.
fn parse_add_nodes(fields: &[&str]) -> Result<Request, String> {
    let usage = "add-nodes N [--host HOST] [--] [PROGRAM ARG…]";
    let Some((count, mut rest)) = fields.split_first() else {
        return Err(format!("`add-nodes` needs a number of nodes: {usage}"));
    };
    let count = match count.parse::<u32>() {
        Ok(n) if n > 0 => n,
        _ => {
            return Err(format!(
                "`add-nodes` needs a number of nodes from 1, not {:?}: {usage}",
                count.chars().take(64).collect::<String>()
            ))
        }
    };
    let mut host = String::new();
    if let Some((&"--host", after)) = rest.split_first() {
        let Some((name, after)) = after.split_first() else {
            return Err(format!("`--host` needs a host: {usage}"));
        };
        host = name.parse::<Host>().map_err(|e| e.to_string())?.to_string();
        rest = after;
    }
    if let Some((&"--", after)) = rest.split_first() {
        rest = after;
    }
    let (program, args) = match rest.split_first() {
        None => (String::new(), None),
        Some((program, args)) => (
            program.to_string(),
            Some(args.iter().map(|a| a.to_string()).collect()),
        ),
    };
    Ok(Request::Vm(VmOp::AddNodes {
        count,
        program,
        args,
        host,
        env: Vec::new(),
    }))
}

/// A field as it may travel: no tabs or line ends; `-` for none.
fn field(s: &str) -> String {
    match s.is_empty() {
        true => "-".into(),
        false => s.replace(['\t', '\n', '\r'], " "),
    }
}

/// An `ok` answer with these rows.
pub(crate) fn ok(rows: &[Vec<String>]) -> String {
    let mut text = String::from("ok\n");
    for row in rows {
        let row: Vec<String> = row.iter().map(|f| field(f)).collect();
        text += &row.join("\t");
        text.push('\n');
    }
    text
}

/// An `error` answer.
fn error(why: &str) -> String {
    format!("error: {}\n", why.replace(['\n', '\r'], " "))
}

/// The console's text for the answer to a virtual machine request.
pub(crate) fn vm_answer(answer: &VmAnswer) -> String {
    match answer {
        VmAnswer::Nodes(nodes) => ok(&nodes
            .iter()
            .map(|n| vec![n.to_string()])
            .collect::<Vec<_>>()),
        VmAnswer::Refused(why) => error(why),
    }
}

/// A `nodes` request waiting for the nodes' thread counts (step 3).
pub(crate) struct Describing {
    reply: Reply,
    /// The nodes asked that have not answered.
    waiting: Vec<u32>,
    /// The answers, by node.
    threads: Vec<Option<u32>>,
    pub(crate) deadline: Instant,
}

impl Job<'_> {
    /// Step 3.
    pub(crate) fn on_console(
        &mut self,
        request: Request,
        reply: Reply,
        on_event: &mut impl FnMut(&crate::Event),
    ) {
        match request {
            Request::Job => {
                let _ = reply.send(self.job_answer());
            }
            Request::Hosts => {
                let _ = reply.send(self.hosts_answer());
            }
            Request::Nodes => self.describe(reply),
            Request::Vm(op) => self.on_vm(Requester::Console(reply), op, on_event),
            Request::Join => {
                let op = VmOp::AddNodes {
                    count: 1,
                    program: String::new(),
                    args: None,
                    host: "local".into(),
                    env: Vec::new(),
                };
                self.on_vm(Requester::Outside(reply), op, on_event)
            }
        }
    }

    fn job_answer(&self) -> String {
        let live = self.slots.iter().filter(|s| s.exit.is_none()).count();
        let present = self.hosts.names().iter().filter(|(_, p)| *p).count();
        ok(&[vec![
            format!("{:016x}", self.job_id),
            self.spec.program.display().to_string(),
            live.to_string(),
            self.slots.len().to_string(),
            present.to_string(),
            self.started.elapsed().as_secs().to_string(),
        ]])
    }

    fn hosts_answer(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .hosts
            .names()
            .into_iter()
            .enumerate()
            .map(|(h, (name, present))| {
                let nodes: Vec<String> = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.host == h && s.exit.is_none())
                    .map(|(n, _)| format!("n{n}"))
                    .collect();
                let state = if present { "present" } else { "removed" };
                vec![h.to_string(), name, state.into(), nodes.join(" ")]
            })
            .collect();
        ok(&rows)
    }

    /// Asks every joined, live node for its thread count (control step
    /// 10); answers once all have, or at the deadline.
    fn describe(&mut self, reply: Reply) {
        let asked: Vec<u32> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.joined && s.exit.is_none() && s.control.is_some())
            .map(|(n, _)| n as u32)
            .collect();
        for &node in &asked {
            self.send_to(node, &Control::Describe);
        }
        self.describing.push(Describing {
            reply,
            waiting: asked,
            threads: vec![None; self.slots.len()],
            deadline: Instant::now() + DESCRIBE_WAIT,
        });
        self.finish_describing(|d| d.waiting.is_empty());
    }

    /// Node `node` has said its thread count.
    pub(crate) fn on_described(&mut self, node: u32, threads: u32) {
        for d in &mut self.describing {
            if let Some(at) = d.waiting.iter().position(|&n| n == node) {
                d.waiting.swap_remove(at);
                if let Some(t) = d.threads.get_mut(node as usize) {
                    *t = Some(threads);
                }
            }
        }
        self.finish_describing(|d| d.waiting.is_empty());
    }

    /// Node `node` has ended: no request waits for it any longer.
    pub(crate) fn describe_gone(&mut self, node: u32) {
        for d in &mut self.describing {
            d.waiting.retain(|&n| n != node);
        }
        self.finish_describing(|d| d.waiting.is_empty());
    }

    /// The requests whose time is up are answered as they stand.
    pub(crate) fn describe_due(&mut self, now: Instant) {
        self.finish_describing(|d| d.deadline <= now);
    }

    fn finish_describing(&mut self, done: impl Fn(&Describing) -> bool) {
        if !self.describing.iter().any(&done) {
            return;
        }
        let (finished, waiting) = std::mem::take(&mut self.describing)
            .into_iter()
            .partition(|d| done(d));
        self.describing = waiting;
        for d in finished {
            let _ = d.reply.send(self.nodes_answer(&d.threads));
        }
    }

    fn nodes_answer(&self, threads: &[Option<u32>]) -> String {
        let hosts = self.hosts.names();
        let rows: Vec<Vec<String>> = self
            .slots
            .iter()
            .enumerate()
            .map(|(n, s)| {
                let threads = match (s.exit, threads.get(n).copied().flatten()) {
                    (Some(_), _) => "-".to_string(),
                    (None, Some(t)) => t.to_string(),
                    (None, None) => "?".to_string(),
                };
                vec![
                    n.to_string(),
                    hosts.get(s.host).map(|h| h.0.clone()).unwrap_or_default(),
                    s.process
                        .as_ref()
                        .and_then(|p| p.pid())
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                    node_state(s),
                    s.addr.clone().unwrap_or_default(),
                    threads,
                ]
            })
            .collect();
        ok(&rows)
    }
}

/// A node's state as `nodes` says it.
fn node_state(s: &Slot) -> String {
    match s.exit {
        None if s.joined => "running".into(),
        None => "joining".into(),
        Some(exit) if exit.success() => "finished".into(),
        Some(_) if s.host_removed => "killed (host removed)".into(),
        Some(exit) => format!(
            "failed: {}",
            s.ended.clone().unwrap_or_else(|| exit.to_string())
        ),
    }
}

mod client;
pub use client::{ask, await_running_jobs, running_jobs, ConsoleError, RunningJob};

#[cfg(test)]
mod tests;
