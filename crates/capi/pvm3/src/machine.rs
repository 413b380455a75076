//! Tasks and the virtual machine: enrolling, spawning, exiting, the
//! machine's hosts and tasks, notification, options and PVM's odds and
//! ends.

use crate::consts::*;
use crate::spawn;
use crate::task::{self, HostInfo, Subscription, TaskInfo, NOTIFY_TAG};
use crate::{call, call_quietly, error_text, not_implemented, put, text, tid};
use std::ffi::{c_char, c_int, CString};
use threadwire::{Address, Notify};

/// The architecture every host of a threadwire job reports.
const ARCH: &str = "LINUX64";
/// PVM's data signature of x86-64 Linux, as pvmd reports it.
const DSIG: c_int = 0x0040_8c41;

#[no_mangle]
pub extern "C" fn pvm_mytid() -> c_int {
    call("pvm_mytid", || task::with(|t| Ok(t.tid)))
}

#[no_mangle]
pub extern "C" fn pvm_parent() -> c_int {
    call_quietly("pvm_parent", || {
        task::with(|t| match spawn::parent(t) {
            PVM_NO_PARENT => Err(PVM_NO_PARENT),
            p => Ok(p),
        })
    })
}

/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvm_siblings(out: *mut *const c_int) -> c_int {
    call("pvm_siblings", || {
        task::with(|t| {
            t.kept_tids = spawn::siblings(t);
            // SAFETY: the caller vouches for `out`; the tids stay in the
            // task until its next call of this kind.
            unsafe { put(out, t.kept_tids.as_ptr()) };
            Ok(t.kept_tids.len() as c_int)
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_exit() -> c_int {
    call("pvm_exit", || {
        task::exit();
        Ok(0)
    })
}

/// # Safety
///
/// `name` is a string; `argv` is NULL or a NULL-terminated array of
/// strings; `place` is NULL or a string; `tids` is NULL or has room for
/// `count` tids.
#[no_mangle]
pub unsafe extern "C" fn pvm_spawn(
    name: *const c_char,
    argv: *const *const c_char,
    flag: c_int,
    place: *const c_char,
    count: c_int,
    tids: *mut c_int,
) -> c_int {
    call("pvm_spawn", || {
        // SAFETY: the caller vouches for the strings.
        let name = unsafe { text(name) }?;
        if count < 1 {
            return Err(PVM_BAD_PARAM);
        }
        let mut args = Vec::new();
        let mut at = argv;
        while !at.is_null() {
            // SAFETY: a NULL-terminated array, read up to its NULL.
            let arg = unsafe { at.read() };
            if arg.is_null() {
                break;
            }
            // SAFETY: each entry is a string.
            args.push(unsafe { text(arg) }?.to_string());
            // SAFETY: the entry was not the terminating NULL.
            at = unsafe { at.add(1) };
        }
        let place = match place.is_null() {
            true => None,
            // SAFETY: the caller vouches for the string.
            false => Some(unsafe { text(place) }?),
        };
        let result = task::with(|t| Ok(spawn::spawn(t, name, args, flag, place, count as u32)))?;
        let (started, codes) = match result {
            Ok(started) => (started.len() as c_int, started),
            Err(code) => (0, vec![code; count as usize]),
        };
        if !tids.is_null() {
            for (i, tid) in codes.iter().enumerate() {
                // SAFETY: the caller vouches for room for `count` tids.
                unsafe { tids.add(i).write(*tid) };
            }
        }
        match started {
            // PVM reports a failed spawn in the tids, and its count as a
            // negative code only when nothing could be tried.
            0 if codes.first() == Some(&PVM_SYS_ERR) => Err(PVM_SYS_ERR),
            n => Ok(n),
        }
    })
}

#[no_mangle]
pub extern "C" fn pvm_kill(target: c_int) -> c_int {
    call("pvm_kill", || {
        task::with(|t| spawn::kill(t, target).map(|()| 0))
    })
}

/// The job's hosts as PVM sees them: (dtid, name) of each present one;
/// this machine alone for a job without a host table.
fn hosts(t: &task::Task) -> Vec<(c_int, String)> {
    let table = t.ep.hosts();
    if table.is_empty() {
        return vec![(tid::of_host(0), spawn::hostname())];
    }
    table
        .iter()
        .enumerate()
        .filter(|(_, h)| h.present)
        .map(|(i, h)| {
            let name = match h.name.as_str() {
                "local" => spawn::hostname(),
                n => n
                    .trim_start_matches("netns:")
                    .trim_start_matches("ssh:")
                    .to_string(),
            };
            (tid::of_host(i), name)
        })
        .collect()
}

/// # Safety
///
/// Each out-pointer is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvm_config(
    nhost: *mut c_int,
    narch: *mut c_int,
    info: *mut *const HostInfo,
) -> c_int {
    call("pvm_config", || {
        task::with(|t| {
            let hosts = hosts(t);
            let arch = CString::new(ARCH).expect("no NUL");
            let names: Vec<CString> = hosts
                .iter()
                .map(|(_, n)| CString::new(n.as_str()).unwrap_or_default())
                .collect();
            let table: Vec<HostInfo> = hosts
                .iter()
                .zip(&names)
                .map(|((dtid, _), name)| HostInfo {
                    tid: *dtid,
                    name: name.as_ptr(),
                    arch: arch.as_ptr(),
                    speed: 1000,
                    dsig: DSIG,
                })
                .collect();
            let mut strings = names;
            strings.push(arch);
            t.kept_hosts = (table, strings);
            // SAFETY: the caller vouches for the out-pointers; the table
            // stays in the task until its next `pvm_config`.
            unsafe {
                put(nhost, t.kept_hosts.0.len() as c_int);
                put(narch, 1);
                put(info, t.kept_hosts.0.as_ptr());
            }
            Ok(0)
        })
    })
}

/// # Safety
///
/// Each out-pointer is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvm_tasks(
    which: c_int,
    ntask: *mut c_int,
    info: *mut *const TaskInfo,
) -> c_int {
    call("pvm_tasks", || {
        task::with(|t| {
            let hosts = t.ep.hosts();
            let mut rows: Vec<(c_int, c_int, c_int, String)> = Vec::new();
            for n in t.ep.machine() {
                if n.state != threadwire::NodeState::Alive {
                    continue;
                }
                let host = n
                    .host
                    .as_ref()
                    .and_then(|h| hosts.iter().position(|e| &e.name == h))
                    .unwrap_or(0);
                let dtid = tid::of_host(host);
                for thread in 0..n.threads.unwrap_or(1).max(1) {
                    let Some(tid) = tid::of(Address::new(n.node, thread)) else {
                        continue;
                    };
                    let pid = n.pid.unwrap_or(0) as c_int;
                    if which == 0 || which == tid || which == dtid {
                        rows.push((tid, dtid, pid, String::new()));
                    }
                }
            }
            if rows.is_empty() && which != 0 {
                return Err(PVM_BAD_PARAM);
            }
            let me = t.tid;
            let parent = spawn::parent(t).max(0);
            let names: Vec<CString> = rows
                .iter()
                .map(|r| {
                    let name = match r.0 == me {
                        true => std::env::current_exe()
                            .ok()
                            .and_then(|e| e.file_name().map(|f| f.to_string_lossy().into_owned()))
                            .unwrap_or_default(),
                        false => r.3.clone(),
                    };
                    CString::new(name).unwrap_or_default()
                })
                .collect();
            let table = rows
                .iter()
                .zip(&names)
                .map(|(r, name)| TaskInfo {
                    tid: r.0,
                    ptid: if r.0 == me { parent } else { 0 },
                    host: r.1,
                    flag: 0,
                    a_out: name.as_ptr(),
                    pid: r.2,
                })
                .collect();
            t.kept_tasks = (table, names);
            // SAFETY: as in `pvm_config`.
            unsafe {
                put(ntask, t.kept_tasks.0.len() as c_int);
                put(info, t.kept_tasks.0.as_ptr());
            }
            Ok(0)
        })
    })
}

/// Host names as a host file writes them: a bare name is tried as given.
///
/// # Safety
///
/// `names` holds `count` strings.
unsafe fn host_names(names: *const *const c_char, count: c_int) -> Result<Vec<String>, c_int> {
    if count < 1 || names.is_null() {
        return Err(PVM_BAD_PARAM);
    }
    (0..count as usize)
        // SAFETY: the caller vouches for `count` strings.
        .map(|i| unsafe { text(names.add(i).read()) }.map(str::to_string))
        .collect()
}

/// # Safety
///
/// `names` holds `count` strings; `infos` is NULL or has room for `count`.
#[no_mangle]
pub unsafe extern "C" fn pvm_addhosts(
    names: *const *const c_char,
    count: c_int,
    infos: *mut c_int,
) -> c_int {
    call("pvm_addhosts", || {
        // SAFETY: the caller vouches for the names.
        let names = unsafe { host_names(names, count) }?;
        task::with(|t| {
            let added = t.ep.add_hosts(&names);
            let table = t.ep.hosts();
            let mut good = 0;
            for (i, name) in names.iter().enumerate() {
                let at = table.iter().position(|h| &h.name == name);
                let code = match (&added, at) {
                    (Ok(()), Some(h)) => {
                        good += 1;
                        tid::of_host(h)
                    }
                    _ => PVM_NO_HOST,
                };
                if !infos.is_null() {
                    // SAFETY: the caller vouches for room for `count`.
                    unsafe { infos.add(i).write(code) };
                }
            }
            Ok(good)
        })
    })
}

/// # Safety
///
/// As [`pvm_addhosts`].
#[no_mangle]
pub unsafe extern "C" fn pvm_delhosts(
    names: *const *const c_char,
    count: c_int,
    infos: *mut c_int,
) -> c_int {
    call("pvm_delhosts", || {
        // SAFETY: the caller vouches for the names.
        let names = unsafe { host_names(names, count) }?;
        task::with(|t| {
            let mut good = 0;
            for (i, name) in names.iter().enumerate() {
                let code = match t.ep.remove_hosts(std::slice::from_ref(name)) {
                    Ok(_) => {
                        good += 1;
                        0
                    }
                    Err(_) => PVM_NO_HOST,
                };
                if !infos.is_null() {
                    // SAFETY: the caller vouches for room for `count`.
                    unsafe { infos.add(i).write(code) };
                }
            }
            Ok(good)
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_tidtohost(of: c_int) -> c_int {
    call("pvm_tidtohost", || {
        let a = tid::address(of).ok_or(PVM_BAD_PARAM)?;
        task::with(|t| {
            let hosts = t.ep.hosts();
            if hosts.is_empty() {
                return Ok(tid::of_host(0));
            }
            let info = t.ep.machine().into_iter().find(|n| n.node == a.node);
            let host = info
                .and_then(|n| n.host)
                .and_then(|h| hosts.iter().position(|e| e.name == h))
                .ok_or(PVM_NO_TASK)?;
            Ok(tid::of_host(host))
        })
    })
}

/// # Safety
///
/// `tids` holds `count` tids (for task exits and host deletions).
#[no_mangle]
pub unsafe extern "C" fn pvm_notify(
    what: c_int,
    tag: c_int,
    count: c_int,
    tids: *const c_int,
) -> c_int {
    call("pvm_notify", || {
        let cancel = what & NOTIFY_CANCEL != 0;
        let kind = what & !NOTIFY_CANCEL;
        let listed = match kind {
            NOTIFY_TASK_EXIT | NOTIFY_HOST_DELETE => {
                if count < 0 || (tids.is_null() && count > 0) {
                    return Err(PVM_BAD_PARAM);
                }
                match count {
                    0 => Vec::new(),
                    // SAFETY: the caller vouches for `count` tids.
                    n => unsafe { std::slice::from_raw_parts(tids, n as usize) }.to_vec(),
                }
            }
            NOTIFY_HOST_ADD => Vec::new(),
            _ => return Err(PVM_BAD_PARAM),
        };
        task::with(|t| {
            if cancel {
                t.subscriptions
                    .retain(|_, s| !(s.kind == kind && s.tag == tag));
                return Ok(0);
            }
            let ctx = t.ctx;
            let events: Vec<Notify> = match kind {
                NOTIFY_TASK_EXIT => listed
                    .iter()
                    .map(|&x| {
                        tid::address(x)
                            .map(|a| Notify::NodeExit(a.node))
                            .ok_or(PVM_BAD_PARAM)
                    })
                    .collect::<Result<_, _>>()?,
                NOTIFY_HOST_DELETE => listed
                    .iter()
                    .map(|&h| match h > 0 && h & 0x3ffff == 0 {
                        true => Ok(Notify::HostDelete(((h >> 18) - 1) as u32)),
                        false => Err(PVM_BAD_PARAM),
                    })
                    .collect::<Result<_, _>>()?,
                _ => vec![Notify::HostAdd],
            };
            for event in events {
                let key = NOTIFY_TAG + t.next_subscription % task::SUBSCRIPTION_KEYS;
                t.next_subscription += 1;
                if let Notify::NodeExit(node) = event {
                    if let Some(ended) = spawn::watch(t, node, key) {
                        // Its task has ended already: told at once.
                        t.told(tag, ctx, ended);
                        continue;
                    }
                }
                let handle = match t.ep.notify(event, key) {
                    Ok(h) => Some(h),
                    // Its own node: it cannot see itself exit.
                    Err(threadwire::NotifyError::OwnNode(_)) => None,
                    Err(threadwire::NotifyError::NoSuchNode(_)) => return Err(PVM_BAD_PARAM),
                    Err(_) => return Err(PVM_SYS_ERR),
                };
                t.subscriptions.insert(
                    key,
                    Subscription {
                        kind,
                        tag,
                        ctx,
                        _handle: handle,
                    },
                );
            }
            Ok(0)
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_setopt(what: c_int, value: c_int) -> c_int {
    call("pvm_setopt", || {
        if !(1..=25).contains(&what) {
            return Err(PVM_BAD_PARAM);
        }
        task::with(|t| {
            let before = t.option(what);
            t.options.insert(what, value);
            Ok(before)
        })
    })
}

#[no_mangle]
pub extern "C" fn pvm_getopt(what: c_int) -> c_int {
    call("pvm_getopt", || match (1..=25).contains(&what) {
        true => task::with(|t| Ok(t.option(what))),
        false => Err(PVM_BAD_PARAM),
    })
}

/// # Safety
///
/// `message` is NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_perror(message: *const c_char) -> c_int {
    // SAFETY: the caller vouches for the string.
    let message = unsafe { text(message) }.unwrap_or("");
    // SAFETY: a plain read of PVM's global.
    let code = unsafe { *std::ptr::addr_of!(crate::pvm_errno) };
    report_line(message, error_text(code));
    0
}

/// `libpvm [tTID]: MESSAGE: TEXT`.
fn report_line(message: &str, text: &str) {
    let who = match task::enrolled() {
        true => task::with(|t| Ok(format!("t{:x}", t.tid))).unwrap_or_default(),
        false => format!("pid{}", std::process::id()),
    };
    eprintln!("libpvm [{who}]: {message}: {text}");
}

/// # Safety
///
/// `arch` is NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn pvm_archcode(arch: *const c_char) -> c_int {
    call("pvm_archcode", || {
        // SAFETY: the caller vouches for the string.
        match unsafe { text(arch) }? {
            "LINUX64" | "LINUX" => Ok(1),
            _ => Err(PVM_NOT_FOUND),
        }
    })
}

/// `pvm_catchout`: children's output already reaches the terminal
/// through the launcher (`threadwire pvm` prints it prefixed with their
/// tids), so there is nothing to redirect.
#[no_mangle]
pub extern "C" fn pvm_catchout(_file: *mut libc::FILE) -> c_int {
    call("pvm_catchout", || task::with(|_| Ok(0)))
}

/// PVM's internal error printer, which some examples call:
/// `libpvm [tTID]: WHAT: TEXT`, returning `code`.
///
/// # Safety
///
/// `what` is NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn lpvmerr(what: *const c_char, code: c_int) -> c_int {
    // SAFETY: the caller vouches for the string.
    let what = unsafe { text(what) }.unwrap_or("");
    report_line(what.trim_start_matches('\n'), error_text(code));
    code
}

/// PVM's sleep, which some examples call.
#[no_mangle]
pub extern "C" fn pvmsleep(seconds: c_int) -> c_int {
    std::thread::sleep(std::time::Duration::from_secs(seconds.max(0) as u64));
    0
}

/// PVM's clock, which the bandwidth tests call.
///
/// # Safety
///
/// `tv` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pvmgetclock(tv: *mut libc::timeval) -> c_int {
    if tv.is_null() {
        return PVM_BAD_PARAM;
    }
    // SAFETY: checked non-NULL; gettimeofday writes one timeval.
    unsafe { libc::gettimeofday(tv, std::ptr::null_mut()) }
}

/// PVM's listing of message handlers, which `mhf_server` calls.
///
/// # Safety
///
/// `who` and `what` are NULL or strings.
#[no_mangle]
pub unsafe extern "C" fn pvmdisplaymhfinfo(
    who: *const c_char,
    what: *const c_char,
    me: c_int,
) -> c_int {
    // SAFETY: the caller vouches for the strings.
    let (who, what) = unsafe { (text(who).unwrap_or(""), text(what).unwrap_or("")) };
    let handlers = task::with(|t| Ok(t.handlers.clone())).unwrap_or_default();
    println!("{who}: t{me:x} {what}: {} message handlers", handlers.len());
    for h in handlers {
        println!("  mhf {}: src {} tag {} ctx {}", h.id, h.src, h.tag, h.ctx);
    }
    0
}

/// Calls this library cannot serve, each saying so by name.
macro_rules! unsupported {
    ($($name:ident ( $($arg:ident : $t:ty),* );)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name($(_: $t),*) -> c_int {
            not_implemented(stringify!($name))
        }
    )*};
}

unsupported! {
    pvm_reg_rm(info: *mut *mut HostInfo);
    pvm_reg_hoster();
    pvm_reg_tasker();
    pvm_start_pvmd(argc: c_int, argv: *mut *mut c_char, block: c_int);
    pvm_halt();
    pvm_getfds(fds: *mut *mut c_int);
    pvm_hostsync(host: c_int, local: *mut libc::timeval, delta: *mut libc::timeval);
    pvm_sendsig(tid: c_int, signal: c_int);
}
