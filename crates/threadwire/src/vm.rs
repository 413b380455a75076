//! The virtual machine: a running job grows by nodes and hosts, and
//! shrinks by hosts, at the request of any of its threads (PVM's
//! `pvm_spawn` onto new tasks, `pvm_addhosts`, `pvm_delhosts`).
//!
//! ```no_run
//! use threadwire::{AddNodes, Notify};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ep = threadwire::init()?;
//! if ep.node().id() == 0 {
//!     // Told of each host added, with tag 77.
//!     let _watch = ep.notify(Notify::HostAdd, 77)?;
//!     ep.add_hosts(&["netns:twh2"])?;
//!     // Two more processes of this program join the job on that host.
//!     let added = ep.add_nodes(&AddNodes::new(2).host("netns:twh2"))?;
//!     for node in added {
//!         ep.send(threadwire::Address::new(node, 0), 1, b"welcome".to_vec())?;
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! A node numbered `k` is the `k`-th process of the job, whenever it
//! started: nodes only join at the end, and a gone node's number is never
//! given again. Groups keep their members: to include new nodes, make a
//! new group with them ([`Group::new`](crate::Group::new) with their
//! addresses). Named groups (`group::named`) work for joiners too; their
//! names stay homed on the nodes the job started with. [`Node::nodes`](crate::Node::nodes) counts the numbers
//! given out so far, gone nodes included; [`Endpoint::machine`] says which
//! are alive. A job may grow up to `threadwire run --max-nodes` (default
//! 1024; `THREADWIRE_MAX_NODES` in the [environment contract](crate::env)).
//!
//! # How a job grows
//!
//! 1. A thread calls [`Endpoint::add_nodes`]: its node sends the launcher
//!    a `Vm` request on its control connection ([`crate::control`], step
//!    8) and the thread waits for the answer in its own mailbox.
//! 2. The launcher gives the new processes the next node numbers and
//!    starts them — on the host asked for, or on the job's hosts in turn
//!    — with the job's secret, `THREADWIRE_NODES` counting them in, and
//!    `THREADWIRE_FOUNDERS` saying they join a running job.
//! 3. Each registers as every node does; once all of the batch have, the
//!    launcher sends each the directory: every node's address, and which
//!    nodes are gone already (with how they left).
//! 4. Each new node joins as the founders did (`node::bootstrap`): it
//!    makes no connection at start, and connects to a node the first time
//!    one of the two sends to the other ([`crate::peer`]'s dialer),
//!    authenticated, with shared memory between nodes of one host. It
//!    knows the addresses of the directory it was given; running nodes,
//!    and it for nodes that join after it, ask the launcher (control step
//!    11). A node that dies meanwhile is only lost, as at any time; it
//!    does not fail the join.
//! 5. A running node counts a joiner in when the launcher says the job
//!    has grown (`Grown`), or when the joiner connects to it first.
//! 6. When every new node has told the launcher its channels (it has
//!    joined), the launcher tells every node the new count (`Grown`),
//!    then answers the request with the new numbers. Every guarantee of
//!    the founders holds for them: authentication, shared memory between
//!    nodes of one host, `PeerLost` and notification when they go. A new
//!    node that fails to start or join within 60 s fails the request with
//!    the cause; those of its batch that did join stay.
//!
//! # Hosts
//!
//! The launcher keeps the job's host table: the host file's hosts, then
//! each added one, numbered by place ([`Endpoint::hosts`]). New nodes go
//! on its present hosts in turn unless [`AddNodes::host`] names one.
//! [`Endpoint::remove_hosts`] kills the nodes on those hosts — as
//! `pvm_delhosts` does — which the others see as their loss (not as the
//! job's failure: `threadwire run` goes on) and the host stays in the
//! table marked removed. Every change of the table is sent to every node
//! (`Hosts`), which tells the threads that asked ([`Notify::HostAdd`],
//! [`Notify::HostDelete`](crate::Notify::HostDelete)).
//!
//! A user at the shell sees and changes the same machine with `threadwire
//! vm` — hosts, nodes with their state and threads, hosts added or
//! removed, nodes added — through the job's console socket (launcher
//! `console` module), as with PVM's console.
//!
//! A job that grows onto a namespace host must listen where that host can
//! reach it: start it with a namespace among its hosts, or with `--bind`
//! set to an address the new hosts reach (launcher `hosts` module).
//!
//! # Nothing waits forever
//!
//! The launcher answers every request exactly once; if the launcher goes
//! first, every waiting request fails with [`VmError::LauncherLost`].
//!
//! [`Notify::HostAdd`]: crate::Notify::HostAdd

use crate::control::{Control, HostEntry, VmAnswer, VmOp};
use crate::lock;
use crate::mailbox::{remote_message, MailboxTable};
use crate::{Endpoint, RecvError, TagMatch};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use threadwire_wire::{Encoding, Packer, Payload, UnpackError};

/// The context of the launcher's answers, as this node delivers them.
pub(crate) const ANSWER_CONTEXT: u32 = u32::MAX - 4;

/// Nodes to add to a running job ([`Endpoint::add_nodes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddNodes {
    count: u32,
    program: Option<PathBuf>,
    args: Option<Vec<String>>,
    host: Option<String>,
    env: Vec<(String, String)>,
}

impl AddNodes {
    /// `count` more processes of the job's program, with its arguments,
    /// on the job's hosts in turn.
    pub fn new(count: u32) -> AddNodes {
        AddNodes {
            count,
            program: None,
            args: None,
            host: None,
            env: Vec::new(),
        }
    }

    /// Runs this program instead (a path every host has).
    pub fn program(mut self, program: impl Into<PathBuf>) -> AddNodes {
        self.program = Some(program.into());
        self
    }

    /// With these arguments instead of the job's.
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> AddNodes {
        self.args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// With `key` set to `value` in their environment, besides the job's
    /// (as `MPI_Comm_spawn`'s info, or PVM's parent task id).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> AddNodes {
        self.env.push((key.into(), value.into()));
        self
    }

    /// On this host (`local`, `netns:NAME`, `ssh:HOST`), added to the
    /// job's host table if it is not there.
    pub fn host(mut self, host: impl Into<String>) -> AddNodes {
        self.host = Some(host.into());
        self
    }
}

/// Why the machine could not be changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VmError {
    /// This node was not started by a launcher (or is a standalone one):
    /// there is no one to start processes.
    #[error("this node was not started by a launcher; nothing can add nodes or hosts")]
    NotLaunched,
    /// Nothing was asked: no nodes, or no hosts.
    #[error("nothing to do: no nodes or hosts were named")]
    Nothing,
    /// The launcher refused or failed, and says why.
    #[error("the launcher refused: {0}")]
    Refused(String),
    /// The launcher went before it answered.
    #[error("the launcher is gone")]
    LauncherLost,
    /// This node has finalized.
    #[error("virtual machine request after finalize")]
    Finalized,
}

impl Endpoint {
    /// Adds nodes to the running job (module docs, steps 1–6) and
    /// returns their numbers once every one has joined: a send to them
    /// goes at once.
    ///
    /// ```
    /// use threadwire::{AddNodes, VmError};
    ///
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// assert_eq!(ep.add_nodes(&AddNodes::new(2)), Err(VmError::NotLaunched));
    /// ```
    ///
    /// # Errors
    ///
    /// [`VmError::Refused`] when the job would grow beyond its maximum,
    /// the program cannot start, a host is unknown or a new node failed
    /// to join (with the cause); [`VmError::Nothing`] for no nodes; and
    /// [`VmError::NotLaunched`], [`VmError::LauncherLost`],
    /// [`VmError::Finalized`].
    pub fn add_nodes(&self, nodes: &AddNodes) -> Result<Vec<u32>, VmError> {
        if nodes.count == 0 {
            return Err(VmError::Nothing);
        }
        let op = VmOp::AddNodes {
            count: nodes.count,
            program: nodes
                .program
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            args: nodes.args.clone(),
            host: nodes.host.clone().unwrap_or_default(),
            env: nodes.env.clone(),
        };
        let added = self.ask_launcher(op)?;
        // The launcher's `Grown` came before its answer on the same
        // connection; this only keeps the count from lagging the answer.
        if let Some(&last) = added.iter().max() {
            self.node.shared.router.grow_to(last + 1);
        }
        Ok(added)
    }

    /// Adds hosts (`local`, `netns:NAME`, `ssh:HOST`, as a host file names
    /// them) to the job's host table; a host present already is left as
    /// it is. Threads that asked for [`Notify::HostAdd`](crate::Notify::HostAdd)
    /// are told of each.
    pub fn add_hosts<S: AsRef<str>>(&self, hosts: &[S]) -> Result<(), VmError> {
        if hosts.is_empty() {
            return Err(VmError::Nothing);
        }
        let hosts = hosts.iter().map(|h| h.as_ref().to_string()).collect();
        self.ask_launcher(VmOp::AddHosts { hosts }).map(drop)
    }

    /// Removes hosts from the job, killing the nodes that run on them
    /// (PVM's `pvm_delhosts`), and returns those nodes' numbers once the
    /// launcher has killed them. Their peers see them lost; the job goes
    /// on. A host cannot remove itself: the caller's own host is refused.
    pub fn remove_hosts<S: AsRef<str>>(&self, hosts: &[S]) -> Result<Vec<u32>, VmError> {
        if hosts.is_empty() {
            return Err(VmError::Nothing);
        }
        let hosts = hosts.iter().map(|h| h.as_ref().to_string()).collect();
        self.ask_launcher(VmOp::RemoveHosts { hosts })
    }

    /// The job's host table as this node last heard it, by host number;
    /// empty for a node without a launcher.
    pub fn hosts(&self) -> Vec<HostEntry> {
        self.node.shared.router.notify.hosts().unwrap_or_default()
    }

    /// Step 1: sends `op` on the control connection and waits for its
    /// answer in this thread's mailbox.
    fn ask_launcher(&self, op: VmOp) -> Result<Vec<u32>, VmError> {
        let router = &self.node.shared.router;
        if router.finalized.load(Ordering::Acquire) {
            return Err(VmError::Finalized);
        }
        let Some(control) = router.control.get() else {
            return Err(VmError::NotLaunched);
        };
        let request = router.vm.open(self.address.thread);
        let (h, p) = Control::Vm { request, op }.encode();
        if control.send(&h, p).is_err() {
            router.vm.close(request);
            return Err(VmError::LauncherLost);
        }
        let answer = self.recv_driven(ANSWER_CONTEXT, TagMatch::from(request));
        let message = match answer {
            Ok(m) => m,
            Err(RecvError::Finalized) => return Err(VmError::Finalized),
            Err(_) => return Err(VmError::LauncherLost),
        };
        decode(message.into_payload()).unwrap_or_else(|e| Err(VmError::Refused(e.to_string())))
    }
}

/// A node's requests to the launcher still unanswered: request number and
/// the thread waiting.
#[derive(Default)]
pub(crate) struct Requests {
    next: AtomicU32,
    pending: Mutex<Vec<(u32, u32)>>,
}

const ANSWER_NODES: u32 = 0;
const ANSWER_REFUSED: u32 = 1;
const ANSWER_LAUNCHER_LOST: u32 = 2;

impl Requests {
    fn open(&self, thread: u32) -> u32 {
        let request = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.pending).push((request, thread));
        request
    }

    fn close(&self, request: u32) -> Option<u32> {
        let mut pending = lock(&self.pending);
        let at = pending.iter().position(|&(r, _)| r == request)?;
        Some(pending.swap_remove(at).1)
    }

    /// The launcher answered `request`: the answer goes to the waiting
    /// thread's mailbox, from thread 0 of this node.
    pub(crate) fn answer(&self, mailboxes: &MailboxTable, me: u32, request: u32, answer: VmAnswer) {
        let Some(thread) = self.close(request) else {
            tracing::warn!("n{me}: the launcher answered request {request}, which is not open");
            return;
        };
        let mut p = Packer::new(Encoding::Portable);
        match answer {
            VmAnswer::Nodes(nodes) => p.pack(ANSWER_NODES).pack_slice(&nodes),
            VmAnswer::Refused(why) => p.pack(ANSWER_REFUSED).pack_str(&why),
        };
        deliver(mailboxes, me, thread, request, p.finish());
    }

    /// The launcher is gone: every open request fails.
    pub(crate) fn launcher_lost(&self, mailboxes: &MailboxTable, me: u32) {
        for (request, thread) in std::mem::take(&mut *lock(&self.pending)) {
            let mut p = Packer::new(Encoding::Portable);
            p.pack(ANSWER_LAUNCHER_LOST);
            deliver(mailboxes, me, thread, request, p.finish());
        }
    }
}

fn deliver(mailboxes: &MailboxTable, me: u32, thread: u32, request: u32, payload: Payload) {
    if let Some(mailbox) = mailboxes.get(thread) {
        mailbox.deliver(remote_message(me, 0, ANSWER_CONTEXT, request, payload));
    }
}

fn decode(payload: Payload) -> Result<Result<Vec<u32>, VmError>, UnpackError> {
    let mut u = payload.unpack()?;
    Ok(match u.unpack::<u32>()? {
        ANSWER_NODES => Ok(u.unpack_vec()?),
        ANSWER_REFUSED => Err(VmError::Refused(u.unpack_string()?)),
        _ => Err(VmError::LauncherLost),
    })
}
