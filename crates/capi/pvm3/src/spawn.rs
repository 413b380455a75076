//! Tasks coming and going: `pvm_spawn` of programs (new nodes joining the
//! running job), a task's parent and siblings, `pvm_kill`.
//!
//! # Spawning a program
//!
//! A name the program exported with `threadwire_pvm_export` starts
//! threads instead (`threads` module).
//!
//! 1. The program is looked for as PVM 3.4 does, then where threadwire
//!    users keep programs: a name with a `/` as it is; else in each
//!    directory of `THREADWIRE_PVM_PATH` (colon-separated), then
//!    `$HOME/pvm3/bin/$PVM_ARCH` and `$PVM_ROOT/bin/$PVM_ARCH` (PVM's
//!    default `ep=`), the directory of the spawning program, and `PATH`.
//!    Not found: every tid is `PvmNoFile`.
//! 2. The launcher starts `ntask` processes of it as new nodes of the job
//!    (`Endpoint::add_nodes`), on the host `where` names with
//!    `PvmTaskHost`, else on the job's hosts in turn, with the spawner's
//!    tid in `THREADWIRE_PVM_PARENT` and the batch's size in
//!    `THREADWIRE_PVM_SPAWNED`.
//! 3. `pvm_spawn` returns once every new node has joined: a message sent
//!    to one of them right after goes at once. The new tasks are each
//!    node's first thread.
//!    The spawner's current context goes in `THREADWIRE_PVM_CONTEXT`: the
//!    new task starts in it, as PVM's do.
//! 4. A new task's parent is the tid in its environment; its siblings are
//!    the batch — the last `THREADWIRE_PVM_SPAWNED` nodes of the job as
//!    it stood when the task started (the launcher numbers a batch
//!    consecutively).

use crate::consts::*;
use crate::task::Task;
use crate::tid;
use std::path::{Path, PathBuf};
use threadwire::{AddNodes, Address, Node};

/// Environment variable holding a spawned task's parent's tid.
pub const PARENT: &str = "THREADWIRE_PVM_PARENT";
/// Environment variable holding the number of tasks spawned together.
pub const SPAWNED: &str = "THREADWIRE_PVM_SPAWNED";
/// Environment variable holding the context a spawned task starts in:
/// its parent's at the time of the spawn, as PVM's tasks inherit it.
pub const CONTEXT: &str = "THREADWIRE_PVM_CONTEXT";
/// Extra directories to look for programs in.
pub const PATH: &str = "THREADWIRE_PVM_PATH";
/// The active message that ends a node's process (`pvm_kill`).
const KILL: &str = "threadwire.pvm.kill";
/// The active message by which a task asks a founding node's first task
/// to tell it of that task's exit itself (`task` rule 4).
const WATCH: &str = "threadwire.pvm.watch";

/// The tasks to tell when this node's first task ends: address and the
/// threadwire tag of their subscription.
static WATCHERS: std::sync::Mutex<Vec<(Address, u32)>> = std::sync::Mutex::new(Vec::new());
/// The tid of this node's first task once it has ended (0 before).
static ENDED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// What every node serves for the others' PVM calls.
pub fn serve(node: &Node) {
    crate::mailbox::serve(node);
    let _ = node.register_inline(WATCH, |am| {
        let bytes = am.payload().to_vec();
        if let [a, b, c, d, e, f, g, h, i, j, k, l] = bytes[..] {
            let node = u32::from_le_bytes([a, b, c, d]);
            let thread = u32::from_le_bytes([e, f, g, h]);
            let key = u32::from_le_bytes([i, j, k, l]);
            let mut watchers = WATCHERS.lock().unwrap_or_else(|e| e.into_inner());
            // Under the lock that `tell_watchers` takes: a watcher is
            // either told by it or answered that the task has ended.
            let ended = ENDED.load(std::sync::atomic::Ordering::Acquire);
            if ended == 0 {
                watchers.push((Address::new(node, thread), key));
            }
            drop(watchers);
            let _ = am.reply(ended.to_le_bytes().to_vec());
        }
    });
    let _ = node.register_inline(KILL, |_| {
        // As pvmd does: SIGTERM, which the program may catch.
        // SAFETY: kill(2) on this process has no memory effects.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    });
}

/// Step 1.
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let arch = std::env::var("PVM_ARCH").unwrap_or_else(|_| "LINUX64".into());
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(extra) = std::env::var(PATH) {
        dirs.extend(std::env::split_paths(&extra));
    }
    if let Ok(home) = std::env::var("HOME") {
        dirs.push(Path::new(&home).join("pvm3/bin").join(&arch));
    }
    let root = std::env::var("PVM_ROOT").unwrap_or_else(|_| "/usr/lib/pvm3".into());
    dirs.push(Path::new(&root).join("bin").join(&arch));
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    if let Ok(path) = std::env::var("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The host entry `where` names: as the host table writes it, or a bare
/// name of a namespace or ssh host, or this machine's host name.
fn host_named(task: &Task, name: &str) -> Option<String> {
    let hosts = task.ep.hosts();
    let present = || hosts.iter().filter(|h| h.present);
    if let Some(h) = present().find(|h| {
        h.name == name
            || h.name.strip_prefix("netns:") == Some(name)
            || h.name.strip_prefix("ssh:") == Some(name)
    }) {
        return Some(h.name.clone());
    }
    let local = hostname();
    (name == local || name == "localhost").then(|| "local".to_string())
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Steps 1–3: the tids of the tasks started, or one error code for all.
pub fn spawn(
    task: &mut Task,
    name: &str,
    args: Vec<String>,
    flag: i32,
    place: Option<&str>,
    count: u32,
) -> Result<Vec<i32>, i32> {
    if crate::threads::is_exported(name) {
        return crate::threads::spawn(task, name, &args, count);
    }
    let program = find_program(name).ok_or(PVM_NO_FILE)?;
    let mut nodes = AddNodes::new(count).program(program).args(args);
    if flag & NO_SPAWN_PARENT == 0 {
        nodes = nodes.env(PARENT, task.tid.to_string());
    }
    nodes = nodes.env(SPAWNED, count.to_string());
    nodes = nodes.env(CONTEXT, task.ctx.to_string());
    match (flag & TASK_HOST != 0, place) {
        (true, Some(p)) if !p.is_empty() => {
            let host = host_named(task, p).ok_or(PVM_NO_HOST)?;
            nodes = nodes.host(host);
        }
        (true, _) => return Err(PVM_NO_HOST),
        (false, _)
            if flag & TASK_ARCH != 0
                && !place.is_some_and(|a| a.is_empty() || a == "LINUX64" || a == "LINUX") =>
        {
            return Err(PVM_NO_HOST);
        }
        _ => {}
    }
    let added = task.ep.add_nodes(&nodes).map_err(|e| {
        eprintln!("libpvm [t{:x}]: pvm_spawn(): {e}", task.tid);
        match e {
            threadwire::VmError::NotLaunched | threadwire::VmError::LauncherLost => PVM_SYS_ERR,
            threadwire::VmError::Refused(why) if why.contains("cannot start") => PVM_NO_FILE,
            _ => PVM_OUT_OF_RES,
        }
    })?;
    Ok(added
        .into_iter()
        .map(|n| tid::of(Address::new(n, 0)).unwrap_or(PVM_OUT_OF_RES))
        .collect())
}

/// The context a task starts in: its parent's at the spawn for a node's
/// first thread, else the base context.
pub fn inherited_context(me: Address) -> i32 {
    match me.thread {
        0 => std::env::var(CONTEXT)
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(BASE_CONTEXT),
        _ => BASE_CONTEXT,
    }
}

/// Step 4: the parent's tid, or `PvmNoParent`.
pub fn parent(task: &Task) -> i32 {
    if let Some(p) = task.parent {
        return p;
    }
    if task.ep.address().thread != 0 {
        return PVM_NO_PARENT;
    }
    std::env::var(PARENT)
        .ok()
        .and_then(|p| p.parse().ok())
        .filter(|&p: &i32| p > 0)
        .unwrap_or(PVM_NO_PARENT)
}

/// Step 4: the tids spawned together with this task (itself included).
pub fn siblings(task: &Task) -> Vec<i32> {
    let me = task.ep.address();
    let started_with = std::env::var(threadwire::env::NODES)
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(me.node + 1);
    let (first, end) = match std::env::var(SPAWNED)
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
    {
        Some(n) if me.thread == 0 => (started_with.saturating_sub(n), started_with),
        // Started from the command line: the job's founders.
        None if me.thread == 0 => (0, crate::task::founders()),
        _ => return vec![task.tid],
    };
    (first..end)
        .filter_map(|n| tid::of(Address::new(n, 0)))
        .collect()
}

/// Asks node `node`'s first task to tell this task of its exit itself
/// with threadwire tag `key`: the tid of that task if it has ended
/// already (the caller tells itself), else `None`.
pub fn watch(task: &Task, node: u32, key: u32) -> Option<i32> {
    let handler = task.node().handler(WATCH).ok()?;
    let me = task.ep.address();
    let mut payload = me.node.to_le_bytes().to_vec();
    payload.extend_from_slice(&me.thread.to_le_bytes());
    payload.extend_from_slice(&key.to_le_bytes());
    let reply = task
        .ep
        .am_request(node, &handler, payload)
        .wait()
        .ok()?
        .to_vec();
    let ended = i32::from_le_bytes(reply.get(..4)?.try_into().ok()?);
    (ended > 0).then_some(ended)
}

/// A founding node's first task ends (`task` rule 4): every task that
/// asked is sent the message of its `pvm_notify`, the tid that ended.
pub fn tell_watchers(task: &Task) {
    let watchers = {
        let mut w = WATCHERS.lock().unwrap_or_else(|e| e.into_inner());
        ENDED.store(task.tid, std::sync::atomic::Ordering::Release);
        std::mem::take(&mut *w)
    };
    for (to, key) in watchers {
        let notice = crate::buffer::Buffer::notice(task.tid, BASE_CONTEXT);
        let _ = task.ep.send(to, key, notice);
    }
}

/// `pvm_kill`: ends the process of the node that runs `target`.
pub fn kill(task: &Task, target: i32) -> Result<(), i32> {
    let to = tid::address(target).ok_or(PVM_BAD_PARAM)?;
    if to.node >= task.node().nodes() {
        return Err(PVM_NO_TASK);
    }
    let handler = task.node().handler(KILL).map_err(|_| PVM_SYS_ERR)?;
    task.ep
        .am_send(to.node, &handler, Vec::new())
        .map_err(|_| PVM_NO_TASK)
}
