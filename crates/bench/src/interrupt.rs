//! Leaving nothing behind when a benchmark is interrupted by SIGINT,
//! SIGTERM or SIGHUP: not the emulated hosts of a `--link` run, nor the
//! peers' process groups, nor their scratch directories.
//!
//! Their owners remove them when dropped ([`ScopedNet`], the peers'
//! process groups and directories), but a signal's default action ends the
//! process at once, running no drop; and a peer in a process group of its
//! own does not even get a terminal's Ctrl-C. So each of them is also
//! registered here while it exists, and [`install`] starts a thread that
//! undoes whatever is registered when one of the signals arrives:
//!
//! 1. [`install`], on the main thread before it starts any other, blocks the
//!    three signals there; threads started later inherit the mask, so a
//!    signal stays pending until the interrupt thread takes it with
//!    `sigwait`. (Children start with an empty mask: std clears it before
//!    exec.)
//! 2. The thread records the signal, so that a net being built ([`net::up`])
//!    stops before its next command and removes what it built.
//! 3. It takes the registry's lock and keeps it: it waits for a net change,
//!    a spawn or a reap under way, and no owner changes anything after.
//! 4. Every process of a registered group, and every descendant of one
//!    whatever its group (Open MPI's orted and ranks, Hydra's proxies and
//!    ranks take groups of their own), is stopped, scanning again until no
//!    new one turns up, then killed (SIGKILL); then a wait (at most
//!    [`GROUPS_GRACE`]) until none is left but zombies, so that none
//!    writes into a directory being removed.
//! 5. Every registered scratch directory is removed, then every registered
//!    net ([`net::down`] of its prefix).
//! 6. One line on stderr says what was removed, and the process exits with
//!    status 128 + signal. The launcher's nodes, started with
//!    `PR_SET_PDEATHSIG`, die with it.
//!
//! A second signal during this stays pending and changes nothing.
//!
//! # The lock
//!
//! One mutex guards the [`Registry`]. Its rules keep the interrupt thread
//! and an owner's drop safe against each other:
//!
//! 1. Something to undo is registered before it exists (a net's prefix, a
//!    directory) or in the critical section that creates it (a peer is
//!    spawned holding the lock): nothing to undo exists unregistered.
//! 2. A process group's leader is reaped only holding the lock, in the
//!    critical section that unregisters its group: as the unreaped leader
//!    (a zombie at worst) keeps its id from reuse, SIGKILL to a registered
//!    group reaches the peer and nothing else.
//! 3. [`net::up`] and [`net::down`] hold the lock while they change the
//!    system, and a [`ScopedNet`] is unregistered in the critical section
//!    that removes it: the interrupt thread never removes a net half-way
//!    through being built.
//! 4. The interrupt thread never releases the lock: an owner dropped after
//!    it took it waits there until the process exits. A net that the
//!    signal stopped half-way (step 2) and the program's own end
//!    ([`exit`]) wait for that exit too, so the status is 128 + signal.
//!
//! [`ScopedNet`]: crate::net::ScopedNet

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, Instant};

use crate::net;

/// How long step 4 waits for the killed process groups to be gone.
pub const GROUPS_GRACE: Duration = Duration::from_secs(2);

/// How many times step 4 scans for processes forked since the last scan.
const MAX_SCANS: usize = 10;

pub(crate) const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// What the interrupt thread would undo now.
#[derive(Debug)]
pub(crate) struct Registry {
    /// Process groups of live peers, by their leader's id.
    groups: Vec<libc::pid_t>,
    /// Prefixes of live [`ScopedNet`](crate::net::ScopedNet)s.
    nets: Vec<String>,
    /// Scratch directories of live peers.
    dirs: Vec<PathBuf>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: Vec::new(),
    nets: Vec::new(),
    dirs: Vec::new(),
});

/// The signal the interrupt thread took, 0 before one came (step 2).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Starts the interrupt thread (module docs). Call it once, early, on the
/// main thread of a program that builds nets or runs peers, before it
/// starts any other thread: a thread started before does not block the
/// signals, and one that lands there still ends the process at once.
/// Later calls do nothing.
pub fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let threads = std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count());
        if threads > 1 {
            tracing::warn!(
                "interrupt::install with {threads} threads running: \
                 a signal that reaches another ends the process at once"
            );
        }
        let set = signal_set();
        // SAFETY: `set` is initialised; SIG_BLOCK is a valid `how`.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        let spawned = std::thread::Builder::new()
            .name("interrupt".into())
            .spawn(move || clean_up_on_signal(set));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the interrupt thread: {e}");
            // SAFETY: as above; the signals end the process again.
            unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
        }
    });
}

/// The registry, locked (the rules are in the module docs).
pub(crate) fn registry() -> MutexGuard<'static, Registry> {
    // Every change to the registry is a single push or remove: a panic
    // elsewhere under the lock leaves it whole.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The signal being handled, once the interrupt thread has taken one.
pub(crate) fn signal() -> Option<libc::c_int> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Ends the process with status `code`, unless the interrupt thread has
/// taken a signal: then waits for it to end the process, with 128 + the
/// signal, once it has undone everything (a program that calls
/// [`install`] ends so, lest an error the signal caused end it first).
pub fn exit(code: i32) -> ! {
    if signal().is_some() {
        wait_for_exit();
    }
    std::process::exit(code)
}

/// Waits for the interrupt thread, which has taken a signal, to end the
/// process. Holding the registry's lock here would deadlock.
pub(crate) fn wait_for_exit() -> ! {
    loop {
        std::thread::park();
    }
}

/// Creates a scratch directory (and its parents), registered (rule 1).
pub(crate) fn create_scratch_dir(dir: &Path) -> std::io::Result<()> {
    let mut registry = registry();
    std::fs::create_dir_all(dir)?;
    registry.add_dir(dir);
    Ok(())
}

/// Removes a scratch directory made by [`create_scratch_dir`], and its
/// registration.
pub(crate) fn remove_scratch_dir(dir: &Path) -> std::io::Result<()> {
    let mut registry = registry();
    registry.remove_dir(dir);
    std::fs::remove_dir_all(dir)
}

impl Registry {
    /// Registers the process group led by `leader`.
    pub(crate) fn add_group(&mut self, leader: u32) {
        if let Ok(id) = libc::pid_t::try_from(leader) {
            self.groups.push(id);
        }
    }

    pub(crate) fn remove_group(&mut self, leader: u32) {
        if let Ok(id) = libc::pid_t::try_from(leader) {
            remove_one(&mut self.groups, &id);
        }
    }

    pub(crate) fn add_net(&mut self, prefix: &str) {
        self.nets.push(prefix.to_string());
    }

    pub(crate) fn remove_net(&mut self, prefix: &str) {
        if let Some(i) = self.nets.iter().position(|p| p == prefix) {
            self.nets.swap_remove(i);
        }
    }

    pub(crate) fn add_dir(&mut self, dir: &Path) {
        self.dirs.push(dir.to_path_buf());
    }

    pub(crate) fn remove_dir(&mut self, dir: &Path) {
        remove_one(&mut self.dirs, &dir.to_path_buf());
    }

    /// Step 4; returns how many processes it killed. Stopped first, none
    /// forks a child that a later scan would miss once it is orphaned.
    fn kill_peers(&self) -> usize {
        let mut stopped: Vec<libc::pid_t> = Vec::new();
        for _ in 0..MAX_SCANS {
            let mut fresh = peer_processes(&self.groups);
            fresh.retain(|pid| !stopped.contains(pid));
            if fresh.is_empty() {
                break;
            }
            for &pid in &fresh {
                // SAFETY: kill(2) takes no pointers; `pid` was a live
                // descendant of an unreaped group leader's group a moment
                // ago (rule 2).
                unsafe { libc::kill(pid, libc::SIGSTOP) };
            }
            stopped.extend(fresh);
        }
        for &group in &self.groups {
            // SAFETY: kill(2) takes no pointers; the group's leader is
            // not reaped (rule 2), so the id is still the peer's group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        for &pid in &stopped {
            // SAFETY: as for SIGSTOP above; a stopped process cannot exit
            // by itself, so the id is still the one found.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let deadline = Instant::now() + GROUPS_GRACE;
        while stopped.iter().any(|&pid| is_live(pid)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        stopped.len()
    }

    /// Steps 4 and 5: what was removed, and what could not be, as phrases.
    fn undo(&self) -> Vec<String> {
        let mut done = Vec::new();
        if !self.groups.is_empty() {
            let killed = self.kill_peers();
            done.push(format!(
                "killed {} ({})",
                count(
                    self.groups.len(),
                    "peer process group",
                    "peer process groups"
                ),
                count(killed, "process", "processes")
            ));
        }
        let mut dirs = 0;
        for dir in &self.dirs {
            match std::fs::remove_dir_all(dir) {
                Ok(()) => dirs += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => done.push(format!("could not remove {}: {e}", dir.display())),
            }
        }
        if dirs > 0 {
            let dirs = count(dirs, "scratch directory", "scratch directories");
            done.push(format!("removed {dirs}"));
        }
        for prefix in &self.nets {
            match net::down_locked(prefix, self) {
                Ok(()) => done.push(format!("removed net {prefix}")),
                Err(e) => done.push(format!("could not remove net {prefix}: {e}")),
            }
        }
        done
    }
}

/// The interrupt thread: steps 2 to 6.
fn clean_up_on_signal(set: libc::sigset_t) {
    let signal = loop {
        let mut signal = 0;
        // SAFETY: `set` is initialised and `signal` is a valid place for
        // the result; every thread blocks the set (step 1).
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            break signal;
        }
    };
    SIGNAL.store(signal, Ordering::SeqCst);
    let registry = registry();
    let done = registry.undo();
    let done = match done.is_empty() {
        true => "nothing to remove".to_string(),
        false => done.join(", "),
    };
    // SAFETY: isatty takes no pointers.
    let on_terminal = unsafe { libc::isatty(libc::STDERR_FILENO) } == 1;
    // On a terminal, first erase a progress bar's line.
    let erase = if on_terminal { "\r\x1b[2K" } else { "" };
    eprintln!("{erase}threadwire: {}: {done}", signal_name(signal));
    std::process::exit(128 + signal);
    // `registry` is never dropped: rule 4.
}

pub(crate) fn signal_set() -> libc::sigset_t {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the whole set; then each signal
    // number is valid.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        for signal in SIGNALS {
            libc::sigaddset(set.as_mut_ptr(), signal);
        }
        set.assume_init()
    }
}

fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// The fields of a `/proc/<pid>/stat` used here.
struct ProcessStat {
    pid: libc::pid_t,
    parent: libc::pid_t,
    group: libc::pid_t,
    /// Neither a zombie nor dead.
    live: bool,
}

fn process_stat(pid: libc::pid_t) -> Option<ProcessStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and ')'.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    Some(ProcessStat {
        pid,
        parent: fields.next()?.parse().ok()?,
        group: fields.next()?.parse().ok()?,
        live: !matches!(state, "Z" | "X"),
    })
}

/// Whether `pid` runs: false once it has ended (a zombie) or is gone.
pub(crate) fn is_live(pid: libc::pid_t) -> bool {
    process_stat(pid).is_some_and(|p| p.live)
}

/// The live processes of `groups` and their descendants in any group.
fn peer_processes(groups: &[libc::pid_t]) -> Vec<libc::pid_t> {
    let table: Vec<ProcessStat> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| process_stat(entry.file_name().to_str()?.parse().ok()?))
        .collect();
    let mut found: Vec<libc::pid_t> = table
        .iter()
        .filter(|p| groups.contains(&p.group))
        .map(|p| p.pid)
        .collect();
    // Children of found processes, until a pass finds none.
    loop {
        let before = found.len();
        for p in &table {
            if found.contains(&p.parent) && !found.contains(&p.pid) {
                found.push(p.pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.retain(|&pid| table.iter().any(|p| p.pid == pid && p.live));
    found
}

fn remove_one<T: PartialEq>(list: &mut Vec<T>, item: &T) {
    if let Some(i) = list.iter().position(|x| x == item) {
        list.swap_remove(i);
    }
}

/// `n` and the noun in the number it takes.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_removed_one_at_a_time() {
        let mut registry = Registry {
            groups: Vec::new(),
            nets: Vec::new(),
            dirs: Vec::new(),
        };
        registry.add_net("tw1");
        registry.add_net("tw1");
        registry.remove_net("tw1");
        assert_eq!(registry.nets, ["tw1"]);
        registry.add_group(7);
        registry.remove_group(8);
        registry.remove_group(7);
        assert!(registry.groups.is_empty());
        registry.add_dir(Path::new("/tmp/a"));
        registry.remove_dir(Path::new("/tmp/a"));
        assert!(registry.dirs.is_empty());
    }

    #[test]
    fn a_group_and_its_descendants_in_other_groups_are_found() {
        use std::os::unix::process::CommandExt;
        // sh leads the group; its child `setsid sleep` takes a session
        // (and group) of its own, as Open MPI's ranks take a group.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = child.id() as libc::pid_t;
        let deadline = Instant::now() + Duration::from_secs(10);
        let found = loop {
            let found = peer_processes(&[group]);
            if found.len() == 2 || Instant::now() > deadline {
                break found;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        for &pid in &found {
            // SAFETY: kill(2) takes no pointers; these are this test's.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        child.wait().unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.contains(&group));
        while found.iter().any(|&pid| is_live(pid)) {
            assert!(Instant::now() < deadline, "{found:?} outlived SIGKILL");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn counts_take_their_number() {
        assert_eq!(count(1, "process", "processes"), "1 process");
        assert_eq!(count(3, "process", "processes"), "3 processes");
    }
}
