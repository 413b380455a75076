//! Watching the node processes the launcher started on this host: one
//! thread for all of them, not threads per node.
//!
//! Every thread of the launcher makes each later `fork` dearer (the child
//! gets a copy of the launcher's mappings, its threads' stacks among
//! them), and nodes are started by `fork` (their parent-death signal is
//! set between `fork` and `exec`). With threads per node, starting the
//! `k`-th node cost in proportion to `k`, and a job of `n` nodes in
//! proportion to `n²`. Here:
//!
//! 1. [`Watcher::add`] hands a started child to the watching thread,
//!    which registers its output pipes and a pidfd with one poller.
//! 2. Readable pipes are read as far as they go; each whole line is
//!    forwarded as [`Internal::Output`], tagged with the node and stream.
//! 3. A readable pidfd means the node ended: what its pipes still hold is
//!    forwarded first (a last line without its newline too), then the
//!    child is reaped and its exit reported ([`Internal::Exited`]). Pipes a
//!    process the node started still holds stay watched until they close.
//! 4. [`Watcher::finish`] waits until every node has been reported ended
//!    and its pipes have closed, or, past the job's end, a short grace for
//!    pipes held by processes the nodes left behind.

use crate::event::OutputStream;
use crate::job::Internal;
use crate::process::NodeExit;
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, ChildStderr, ChildStdout};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const WAKER: mio::Token = mio::Token(usize::MAX);
/// Tokens per node: stdout, stderr, pidfd.
const PER_NODE: usize = 3;
/// How long [`Watcher::finish`] waits for pipes held open by processes the
/// nodes left behind, once every node has ended.
const PIPE_GRACE: Duration = Duration::from_millis(500);
/// The longest line kept whole; a longer one is forwarded in pieces.
const MAX_LINE: usize = 1 << 20;

/// The thread that watches every local node process (module docs).
pub(crate) struct Watcher {
    add: Sender<Command>,
    waker: Arc<mio::Waker>,
    thread: Option<JoinHandle<()>>,
}

enum Command {
    Add { node: u32, child: Child },
    Finish,
}

impl Watcher {
    /// Starts the watching thread; it reports on `events`.
    pub(crate) fn new(events: Sender<Internal>) -> io::Result<Watcher> {
        let poll = mio::Poll::new()?;
        let waker = Arc::new(mio::Waker::new(poll.registry(), WAKER)?);
        let (add, commands) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("watch-nodes".into())
            .spawn(move || Watching::new(poll, commands, events).run())?;
        Ok(Watcher {
            add,
            waker,
            thread: Some(thread),
        })
    }

    /// Step 1: watches node `node`'s process from now on.
    pub(crate) fn add(&self, node: u32, child: Child) {
        let _ = self.add.send(Command::Add { node, child });
        let _ = self.waker.wake();
    }

    /// Step 4: returns once every node added has ended and its output has
    /// been forwarded.
    pub(crate) fn finish(&mut self) {
        let _ = self.add.send(Command::Finish);
        let _ = self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.finish();
    }
}

/// One pipe of a node: its partial line.
struct Pipe<R> {
    pipe: Option<R>,
    partial: Vec<u8>,
}

struct Watched {
    child: Child,
    stdout: Pipe<ChildStdout>,
    stderr: Pipe<ChildStderr>,
    pidfd: Option<OwnedFd>,
    exited: bool,
}

impl Watched {
    fn done(&self) -> bool {
        self.exited && self.stdout.pipe.is_none() && self.stderr.pipe.is_none()
    }
}

struct Watching {
    poll: mio::Poll,
    commands: Receiver<Command>,
    events: Sender<Internal>,
    nodes: HashMap<u32, Watched>,
    finishing: Option<Instant>,
}

impl Watching {
    fn new(poll: mio::Poll, commands: Receiver<Command>, events: Sender<Internal>) -> Watching {
        Watching {
            poll,
            commands,
            events,
            nodes: HashMap::new(),
            finishing: None,
        }
    }

    fn run(mut self) {
        let mut ready = mio::Events::with_capacity(256);
        loop {
            while let Ok(command) = self.commands.try_recv() {
                match command {
                    Command::Add { node, child } => self.add(node, child),
                    Command::Finish => self.finishing = Some(Instant::now()),
                }
            }
            if self.finishing.is_some() {
                let exited = self.nodes.values().all(|w| w.exited);
                let grace_over = self
                    .finishing
                    .is_some_and(|since| exited && since.elapsed() > PIPE_GRACE);
                if self.nodes.is_empty() || grace_over {
                    self.flush_all();
                    return;
                }
            }
            // Without a pidfd (an old kernel) exits are looked for often.
            let unwatched: Vec<u32> = self
                .nodes
                .iter()
                .filter(|(_, w)| w.pidfd.is_none() && !w.exited)
                .map(|(&n, _)| n)
                .collect();
            for node in &unwatched {
                self.exited(*node);
            }
            let timeout = match self.finishing.is_some() || !unwatched.is_empty() {
                true => Some(Duration::from_millis(50)),
                false => None,
            };
            if let Err(e) = self.poll.poll(&mut ready, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    tracing::error!("watching the nodes: {e}");
                    return;
                }
            }
            let tokens: Vec<usize> = ready.iter().map(|e| e.token().0).collect();
            for token in tokens {
                if token == WAKER.0 {
                    continue;
                }
                let node = (token / PER_NODE) as u32;
                match token % PER_NODE {
                    0 => self.read(node, OutputStream::Stdout),
                    1 => self.read(node, OutputStream::Stderr),
                    _ => self.exited(node),
                }
            }
        }
    }

    /// Step 1.
    fn add(&mut self, node: u32, mut child: Child) {
        let base = node as usize * PER_NODE;
        let registry = self.poll.registry();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        for (fd, token) in [
            (stdout.as_ref().map(|p| p.as_raw_fd()), base),
            (stderr.as_ref().map(|p| p.as_raw_fd()), base + 1),
        ] {
            if let Some(fd) = fd {
                set_nonblocking(fd);
                let _ = registry.register(
                    &mut mio::unix::SourceFd(&fd),
                    mio::Token(token),
                    mio::Interest::READABLE,
                );
            }
        }
        let pidfd = pidfd_open(child.id()).ok();
        if let Some(fd) = &pidfd {
            let _ = registry.register(
                &mut mio::unix::SourceFd(&fd.as_raw_fd()),
                mio::Token(base + 2),
                mio::Interest::READABLE,
            );
        }
        let watched = Watched {
            child,
            stdout: Pipe {
                pipe: stdout,
                partial: Vec::new(),
            },
            stderr: Pipe {
                pipe: stderr,
                partial: Vec::new(),
            },
            pidfd,
            exited: false,
        };
        self.nodes.insert(node, watched);
    }

    /// Step 2: reads `node`'s `stream` as far as it goes.
    fn read(&mut self, node: u32, stream: OutputStream) {
        let Some(w) = self.nodes.get_mut(&node) else {
            return;
        };
        let events = &self.events;
        let closed = match stream {
            OutputStream::Stdout => drain(node, stream, &mut w.stdout, events),
            OutputStream::Stderr => drain(node, stream, &mut w.stderr, events),
        };
        if closed {
            // Closing the pipe takes it out of the poller too.
            match stream {
                OutputStream::Stdout => w.stdout.pipe = None,
                OutputStream::Stderr => w.stderr.pipe = None,
            }
        }
        self.forget_if_done(node);
    }

    /// Step 3.
    fn exited(&mut self, node: u32) {
        let Some(w) = self.nodes.get_mut(&node) else {
            return;
        };
        let status = match w.child.try_wait() {
            Ok(Some(s)) => NodeExit::from_status(s),
            Ok(None) => return,
            Err(_) => NodeExit::Code(-1),
        };
        w.exited = true;
        w.pidfd = None;
        self.read(node, OutputStream::Stdout);
        self.read(node, OutputStream::Stderr);
        if let Some(w) = self.nodes.get_mut(&node) {
            flush(node, OutputStream::Stdout, &mut w.stdout, &self.events);
            flush(node, OutputStream::Stderr, &mut w.stderr, &self.events);
        }
        let _ = self.events.send(Internal::Exited { node, exit: status });
        self.forget_if_done(node);
    }

    fn forget_if_done(&mut self, node: u32) {
        if self.nodes.get(&node).is_some_and(Watched::done) {
            self.nodes.remove(&node);
        }
    }

    /// Past the grace: partial lines of pipes still open go out as they are.
    fn flush_all(&mut self) {
        for (&node, w) in self.nodes.iter_mut() {
            flush(node, OutputStream::Stdout, &mut w.stdout, &self.events);
            flush(node, OutputStream::Stderr, &mut w.stderr, &self.events);
        }
    }
}

/// Reads `pipe` until it would block, forwarding whole lines; `true` if it
/// closed (its partial line forwarded too).
fn drain<R: Read>(
    node: u32,
    stream: OutputStream,
    pipe: &mut Pipe<R>,
    events: &Sender<Internal>,
) -> bool {
    let Some(reader) = pipe.pipe.as_mut() else {
        return false;
    };
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => {
                flush(node, stream, pipe, events);
                return true;
            }
            Ok(n) => {
                pipe.partial.extend_from_slice(&buf[..n]);
                while let Some(at) = pipe.partial.iter().position(|&b| b == b'\n') {
                    let rest = pipe.partial.split_off(at + 1);
                    let mut line = std::mem::replace(&mut pipe.partial, rest);
                    line.pop();
                    send_line(node, stream, line, events);
                }
                if pipe.partial.len() > MAX_LINE {
                    let line = std::mem::take(&mut pipe.partial);
                    send_line(node, stream, line, events);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(_) => {
                flush(node, stream, pipe, events);
                return true;
            }
        }
    }
}

/// Forwards a partial line, if any.
fn flush<R>(node: u32, stream: OutputStream, pipe: &mut Pipe<R>, events: &Sender<Internal>) {
    if !pipe.partial.is_empty() {
        let line = std::mem::take(&mut pipe.partial);
        send_line(node, stream, line, events);
    }
}

fn send_line(node: u32, stream: OutputStream, line: Vec<u8>, events: &Sender<Internal>) {
    let line = String::from_utf8_lossy(&line).into_owned();
    let _ = events.send(Internal::Output { node, stream, line });
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor this process owns; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// A pidfd for `pid`: readable once the process has ended.
fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}
