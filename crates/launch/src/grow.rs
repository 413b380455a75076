//! A running job grows and shrinks: the launcher's half of the virtual
//! machine (`threadwire::vm` has the protocol, steps 1–6).
//!
//! 1. A node's `Vm` request arrives on its control connection
//!    (`Internal::Vm`), or a user's from `threadwire vm` on the job's
//!    console (`console` module): either is a [`Requester`], and is
//!    answered the same way, on the node's control connection or to the
//!    console's client. Adding nodes waits while an earlier batch is
//!    still joining; adding or removing hosts is done at once.
//! 2. Adding nodes: the next node numbers are given out (the rendezvous
//!    [`Door`](crate::rendezvous) accepts them from then on) and the
//!    processes started, on the host asked for or on the present hosts in
//!    turn. A process that cannot start is recorded as gone.
//! 3. Once every node of the batch has registered or exited, each gets the
//!    directory of every node so far — the gone ones marked — and the host
//!    table.
//! 4. Once every node of the batch has joined (told its channels) or
//!    exited, every live node is told the new count (`Grown`) and the
//!    requester gets the numbers of those that joined (ended since or
//!    not), or, if none did, why. A batch not done within
//!    [`JOIN_TIMEOUT`] has its stragglers killed. An added node that ends before it joined fails its request,
//!    never the job.
//! 5. Removing hosts kills the nodes on them (their peers are told, the
//!    job is not failed), ends the proxy of an ssh host (`proxy` module,
//!    step 7), and marks the hosts removed; adding hosts appends
//!    them. Every change of the host table goes to every node.

use crate::console::Reply;
use crate::event::Event;
use crate::hosts::{Host, HostError};
use crate::job::{Job, Slot};
use crate::process::{NodeExit, NodeProcess};
use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use threadwire::control::{Control, HostEntry, VmAnswer, VmOp};

/// How long added nodes have to join (step 4).
pub(crate) const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The job's hosts by number: those it started with, then those added.
pub(crate) struct HostTable {
    entries: Vec<Entry>,
    /// The host the next added node goes on, in turn (step 2).
    next: usize,
    founders: usize,
}

struct Entry {
    host: Host,
    /// How a node in this namespace reaches the launcher.
    gateway: Option<IpAddr>,
    present: bool,
}

impl HostTable {
    /// The job's starting hosts; none means this host alone.
    pub(crate) fn new(hosts: &[Host]) -> Result<HostTable, HostError> {
        let hosts = match hosts.is_empty() {
            true => vec![Host::Local],
            false => hosts.to_vec(),
        };
        let mut entries = Vec::with_capacity(hosts.len());
        for host in hosts {
            entries.push(Entry {
                gateway: host.gateway()?,
                host,
                present: true,
            });
        }
        Ok(HostTable {
            founders: entries.len(),
            entries,
            next: 0,
        })
    }

    /// A namespace's gateway among the starting hosts.
    pub(crate) fn first_gateway(&self) -> Option<IpAddr> {
        self.entries.iter().find_map(|e| e.gateway)
    }

    /// How many hosts the founding nodes were placed on in turn.
    pub(crate) fn spread(&self) -> u32 {
        self.founders as u32
    }

    /// The host of founding node `node`.
    pub(crate) fn founder_host(&self, node: u32) -> usize {
        node as usize % self.founders
    }

    /// Host `h` and its gateway.
    pub(crate) fn get(&self, h: usize) -> (Host, Option<IpAddr>) {
        (self.entries[h].host.clone(), self.entries[h].gateway)
    }

    /// Each host's name and whether it is present, by number.
    pub(crate) fn names(&self) -> Vec<(String, bool)> {
        self.entries
            .iter()
            .map(|e| (e.host.to_string(), e.present))
            .collect()
    }

    /// The table as the nodes get it.
    pub(crate) fn control(&self) -> Control {
        Control::Hosts {
            hosts: self
                .entries
                .iter()
                .map(|e| HostEntry {
                    name: e.host.to_string(),
                    present: e.present,
                })
                .collect(),
        }
    }

    fn find(&self, host: &Host) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.present && e.host == *host)
    }

    /// The next present host in turn.
    fn next_present(&mut self) -> Option<usize> {
        for _ in 0..self.entries.len() {
            let h = self.next % self.entries.len();
            self.next += 1;
            if self.entries[h].present {
                return Some(h);
            }
        }
        None
    }
}

/// Who asked to change the machine (step 1), and so where the answer goes.
#[derive(Clone)]
pub(crate) enum Requester {
    /// A node, with its number for the request.
    Node { node: u32, request: u32 },
    /// A user at the shell, on the job's console (`threadwire vm`).
    Console(Reply),
    /// A command that starts the node itself (`threadwire pvm --join`):
    /// it is sent the node's environment, not the batch's answer.
    Outside(Reply),
}

impl Requester {
    /// The asking node, if a node asked.
    fn node(&self) -> Option<u32> {
        match self {
            Requester::Node { node, .. } => Some(*node),
            Requester::Console(_) | Requester::Outside(_) => None,
        }
    }
}

impl std::fmt::Display for Requester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Requester::Node { node, .. } => write!(f, "n{node}"),
            Requester::Console(_) => write!(f, "the console"),
            Requester::Outside(_) => write!(f, "a command joining from outside"),
        }
    }
}

/// Added nodes joining now (steps 2–4).
pub(crate) struct Batch {
    first: u32,
    count: u32,
    requester: Requester,
    pub(crate) deadline: Instant,
    directory_sent: bool,
    /// Why members did not join.
    failures: Vec<String>,
}

impl Batch {
    pub(crate) fn has(&self, node: u32) -> bool {
        (self.first..self.first + self.count).contains(&node)
    }

    fn members(&self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.count) as usize
    }
}

impl Job<'_> {
    /// Step 1.
    pub(crate) fn on_vm(
        &mut self,
        requester: Requester,
        op: VmOp,
        on_event: &mut impl FnMut(&Event),
    ) {
        let answer = match op {
            // One batch at a time, and none before the founders have their
            // directory (a console may ask that early).
            VmOp::AddNodes { .. } if self.batch.is_some() || !self.founded => {
                self.queued.push_back((requester, op));
                return;
            }
            VmOp::AddNodes {
                count,
                program,
                args,
                host,
                env,
            } => {
                let asked = requester.clone();
                let run = (program, args, env);
                match self.start_batch(asked, count, run, &host, on_event) {
                    Ok(()) => return,
                    Err(why) => VmAnswer::Refused(why),
                }
            }
            VmOp::AddHosts { hosts } => match self.add_hosts(&hosts, on_event) {
                Ok(()) => VmAnswer::Nodes(Vec::new()),
                Err(why) => VmAnswer::Refused(why),
            },
            VmOp::RemoveHosts { hosts } => {
                match self.remove_hosts(requester.node(), &hosts, on_event) {
                    Ok(killed) => VmAnswer::Nodes(killed),
                    Err(why) => VmAnswer::Refused(why),
                }
            }
        };
        self.answer(requester, answer);
    }

    /// Sends `answer` where `requester` waits: its node's control
    /// connection, or the console's client.
    fn answer(&mut self, requester: Requester, answer: VmAnswer) {
        match requester {
            Requester::Node { node, request } => {
                self.send_to(node, &Control::VmAnswer { request, answer })
            }
            Requester::Console(reply) => {
                let _ = reply.send(crate::console::vm_answer(&answer));
            }
            // It was answered with the environment when its node was made.
            Requester::Outside(_) => {}
        }
    }

    /// Step 2.
    fn start_batch(
        &mut self,
        requester: Requester,
        count: u32,
        (program, args, env): (String, Option<Vec<String>>, Vec<(String, String)>),
        host: &str,
        on_event: &mut impl FnMut(&Event),
    ) -> Result<(), String> {
        let first = self.slots.len() as u32;
        let capacity = self.spec.capacity();
        if count == 0 {
            return Err("no nodes asked for".into());
        }
        if u64::from(first) + u64::from(count) > u64::from(capacity) {
            return Err(format!(
                "the job has {first} nodes and may grow to {capacity} (`threadwire run --max-nodes`); {count} more do not fit"
            ));
        }
        let named = match host.is_empty() {
            true => None,
            false => Some(self.host_index(host, on_event)?),
        };
        let program = match program.is_empty() {
            true => self.spec.program.clone(),
            false => PathBuf::from(program),
        };
        let args: Vec<OsString> = match args {
            Some(a) => a.into_iter().map(OsString::from).collect(),
            None => self.spec.args.clone(),
        };
        let total = first + count;
        self.door.started.store(total, Ordering::Release);
        let mut failures = Vec::new();
        let mut placed = Vec::new();
        for node in first..total {
            let Some(h) = named.or_else(|| self.hosts.next_present()) else {
                return Err("the job has no hosts left".into());
            };
            let (entry, gateway) = self.hosts.get(h);
            placed.push(format!("n{node} on {entry}"));
            let mut slot = Slot {
                host: h,
                ..Slot::default()
            };
            if let Requester::Outside(reply) = &requester {
                let vars = self.starter.vars(node, total, gateway, &env);
                let rows: Vec<Vec<String>> = vars.into_iter().map(|(k, v)| vec![k, v]).collect();
                let _ = reply.send(crate::console::ok(&rows));
                slot.process = Some(NodeProcess::External);
                self.slots.push(slot);
                continue;
            }
            match self
                .starter
                .start(node, total, &entry, gateway, (&program, &args, &env))
            {
                Ok(process) => slot.process = Some(process),
                Err(e) => {
                    let why = format!("cannot start {}: {e}", program.display());
                    slot.exit = Some(NodeExit::Code(127));
                    slot.excused = true;
                    slot.killed = Some(why.clone());
                    failures.push(why);
                }
            }
            self.slots.push(slot);
        }
        for (i, why) in self.slots[first as usize..]
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.exit.map(|_| (i, s.killed.clone().unwrap_or_default())))
            .collect::<Vec<_>>()
        {
            let node = first + i as u32;
            self.send_all(&Control::PeerLost { node, cause: why });
        }
        on_event(&Event::Machine(format!(
            "{requester} adds {count} node{}: {}",
            if count == 1 { "" } else { "s" },
            placed.join(", ")
        )));
        self.batch = Some(Batch {
            first,
            count,
            requester,
            deadline: Instant::now() + JOIN_TIMEOUT,
            directory_sent: false,
            failures,
        });
        self.batch_progress(on_event);
        Ok(())
    }

    /// Steps 3 and 4, as registrations, joins and exits come in.
    pub(crate) fn batch_progress(&mut self, on_event: &mut impl FnMut(&Event)) {
        let Some(batch) = &self.batch else {
            return;
        };
        let members = batch.members();
        let total = batch.first + batch.count;
        if !batch.directory_sent {
            let registered = self.slots[members.clone()]
                .iter()
                .all(|s| s.addr.is_some() || s.exit.is_some());
            if !registered {
                return;
            }
            let directory = self.directory(total, true);
            let hosts = self.hosts.control();
            for node in members.clone() {
                self.send_to(node as u32, &directory);
                self.send_to(node as u32, &hosts);
                self.slots[node].directed = true;
            }
            if let Some(b) = &mut self.batch {
                b.directory_sent = true;
            }
        }
        let done = self.slots[members.clone()]
            .iter()
            .all(|s| s.joined || s.exit.is_some());
        if !done {
            return;
        }
        let batch = self.batch.take().expect("checked above");
        self.send_all(&Control::Grown { nodes: total });
        // A node that joined counts though it may have ended since (a PVM
        // task that sends its parent one message and exits): it was
        // started, and its end is told as any node's is.
        let joined: Vec<u32> = members
            .filter(|&n| self.slots[n].joined)
            .map(|n| n as u32)
            .collect();
        let answer = match (joined.is_empty(), batch.failures.is_empty()) {
            (false, _) => VmAnswer::Nodes(joined.clone()),
            (true, false) => VmAnswer::Refused(batch.failures.join("; ")),
            (true, true) => VmAnswer::Refused("no added node joined".into()),
        };
        let said = match &answer {
            VmAnswer::Nodes(n) => format!("{} of {} joined", n.len(), batch.count),
            VmAnswer::Refused(why) => format!("none joined: {why}"),
        };
        on_event(&Event::Machine(format!(
            "{}'s request for {} node{}: {said}",
            batch.requester,
            batch.count,
            if batch.count == 1 { "" } else { "s" }
        )));
        self.answer(batch.requester, answer);
        if let Some((requester, op)) = self.queued.pop_front() {
            self.on_vm(requester, op, on_event);
        }
    }

    /// An added node ended before it joined (step 4).
    pub(crate) fn batch_failed(
        &mut self,
        node: u32,
        cause: String,
        on_event: &mut impl FnMut(&Event),
    ) {
        if let Some(b) = &mut self.batch {
            b.failures.push(format!("n{node}: {cause}"));
        }
        self.batch_progress(on_event);
    }

    /// The batch's time is up: its stragglers are killed (step 4); their
    /// exits finish it.
    pub(crate) fn batch_timed_out(&mut self, on_event: &mut impl FnMut(&Event)) {
        let Some(batch) = &mut self.batch else {
            return;
        };
        batch.deadline = Instant::now() + JOIN_TIMEOUT;
        let members = batch.members();
        let first = members.start;
        let secs = JOIN_TIMEOUT.as_secs();
        let mut outside = Vec::new();
        for (i, s) in self.slots[members].iter_mut().enumerate() {
            if s.joined || s.exit.is_some() {
                continue;
            }
            s.killed = Some(format!("did not join within {secs} s and was killed"));
            s.excused = true;
            match &s.process {
                // Not ours to kill, and with no connection to end: it is
                // given up here.
                Some(NodeProcess::External) if !s.control_open => outside.push((first + i) as u32),
                Some(process) => {
                    tracing::warn!("launcher: added node n{} did not join; killing it", i);
                    process.kill();
                }
                None => {}
            }
        }
        for node in outside {
            self.on_exit(node, NodeExit::Code(127), on_event);
        }
        self.batch_progress(on_event);
    }

    /// The number of `name` in the host table, adding it if it is not
    /// there.
    fn host_index(
        &mut self,
        name: &str,
        on_event: &mut impl FnMut(&Event),
    ) -> Result<usize, String> {
        let host: Host = name.parse().map_err(|e| format!("{e}"))?;
        if let Some(h) = self.hosts.find(&host) {
            return Ok(h);
        }
        self.add_hosts(&[name.to_string()], on_event)?;
        Ok(self.hosts.find(&host).expect("just added"))
    }

    /// Step 5: adds the hosts not present yet.
    fn add_hosts(
        &mut self,
        names: &[String],
        on_event: &mut impl FnMut(&Event),
    ) -> Result<(), String> {
        let mut new = Vec::new();
        for name in names {
            let host: Host = name.parse().map_err(|e| format!("{e}"))?;
            if self.hosts.find(&host).is_some() || new.iter().any(|e: &Entry| e.host == host) {
                continue;
            }
            let gateway = host.gateway().map_err(|e| e.to_string())?;
            if let Some(g) = gateway.filter(|&g| !self.starter.reachable_from(g)) {
                return Err(format!(
                    "{host} reaches this host at {g}, but the job listens on {} only: start it with a namespace among its hosts or with --bind {g}",
                    self.spec.bind
                ));
            }
            new.push(Entry {
                host,
                gateway,
                present: true,
            });
        }
        if new.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = new.iter().map(|e| e.host.to_string()).collect();
        self.hosts.entries.extend(new);
        on_event(&Event::Machine(format!(
            "hosts added: {}",
            names.join(", ")
        )));
        let table = self.hosts.control();
        self.send_all(&table);
        Ok(())
    }

    /// Step 5: removes hosts, killing their nodes; those nodes' numbers.
    /// A node may not remove its own host; the console may remove any.
    fn remove_hosts(
        &mut self,
        requester: Option<u32>,
        names: &[String],
        on_event: &mut impl FnMut(&Event),
    ) -> Result<Vec<u32>, String> {
        let mut gone = Vec::new();
        for name in names {
            let host: Host = name.parse().map_err(|e| format!("{e}"))?;
            let h = self
                .hosts
                .find(&host)
                .ok_or_else(|| format!("{host} is not a host of this job"))?;
            if requester
                .and_then(|node| self.slots.get(node as usize))
                .is_some_and(|s| s.host == h)
            {
                return Err(format!("{host} is the asking node's own host"));
            }
            gone.push(h);
        }
        let mut killed = Vec::new();
        for &h in &gone {
            self.hosts.entries[h].present = false;
            let name = self.hosts.entries[h].host.to_string();
            for (node, s) in self.slots.iter_mut().enumerate() {
                if s.host != h || s.exit.is_some() {
                    continue;
                }
                s.killed = Some(format!("node n{node}'s host {name} was removed"));
                s.excused = true;
                s.host_removed = true;
                killed.push(node as u32);
            }
        }
        // The others hear the cause before the broken connections tell
        // them of the deaths (first cause wins, mostly this one).
        for &node in &killed {
            let cause = self.slots[node as usize].killed.clone().unwrap_or_default();
            self.send_all(&Control::PeerLost { node, cause });
        }
        for &node in &killed {
            if let Some(process) = &self.slots[node as usize].process {
                process.kill();
            }
        }
        for &h in &gone {
            if let Host::Ssh(name) = &self.hosts.entries[h].host {
                self.starter.proxies.end_host(name);
            }
        }
        let names: Vec<String> = gone
            .iter()
            .map(|&h| self.hosts.entries[h].host.to_string())
            .collect();
        on_event(&Event::Machine(format!(
            "hosts removed: {}; nodes killed: {}",
            names.join(", "),
            killed
                .iter()
                .map(|n| format!("n{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
        let table = self.hosts.control();
        self.send_all(&table);
        Ok(killed)
    }
}
