//! The time of `pvm_spawn` ("pvm_spawn" in the module docs): the parent
//! and the tasks, this program run again, and libpvm3 loaded at run time.

use std::ffi::{c_char, c_int, CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use threadwire_testbed::pvm::{Config, Daemon};

use super::{LIBRARY, PACKAGES};
use crate::peers::process::{io, require, Group};
use crate::peers::Error;

/// Makes [`task_main`] act: `parent COUNT REPETITIONS` or `child`.
const TASK: &str = "THREADWIRE_PVM_TASK";
/// Where the parent writes its times: a JSON array of nanoseconds.
const RESULTS: &str = "THREADWIRE_PVM_RESULTS";
/// [`task_main`]'s exit status when libpvm3 cannot be loaded: PVM is
/// missing, which is not a failure of the run.
const NO_LIBRARY: i32 = 3;
/// The tag of the tasks' messages to the parent.
const TAG: c_int = 7;
/// `pvm3.h`: PvmTaskDefault, PvmDataDefault.
const TASK_DEFAULT: c_int = 0;
const DATA_DEFAULT: c_int = 0;

/// The program that [`spawn_times`] runs as the parent and spawns as the
/// tasks: it must call [`task_main`] before anything else.
#[derive(Clone, Debug)]
pub struct Task {
    /// Its path.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// Times `repetitions` spawns of `count` tasks (module docs: from the call
/// of `pvm_spawn` until a message from each has reached the parent), after
/// one untimed warm-up, under a private virtual machine.
pub fn spawn_times(
    task: &Task,
    count: usize,
    repetitions: usize,
    deadline: Instant,
) -> Result<Vec<Duration>, Error> {
    require(&["pvm"], PACKAGES)?;
    let count = count.max(1);
    let repetitions = repetitions.max(1);
    // Tasks forked by pvmd get its environment: they are children.
    let config = Config {
        daemon_env: vec![(TASK.into(), "child".into())],
        ..Config::default()
    };
    let daemon = Daemon::start_with(&config, deadline)?;
    let out = daemon.directory().join("parent.out");
    let err = daemon.directory().join("parent.err");
    let results = daemon.directory().join("parent.json");
    let mut parent = daemon.command(&task.program);
    parent
        .args(&task.args)
        .env(TASK, format!("parent {count} {repetitions}"))
        .env(RESULTS, &results);
    let status = Group::spawn(parent, &out, &err)?.wait(deadline)?;
    if status.code() == Some(NO_LIBRARY) {
        return Err(Error::Missing {
            program: LIBRARY,
            packages: PACKAGES,
        });
    }
    if !status.success() {
        return Err(Group::failed_log(status, &err));
    }
    let text =
        std::fs::read_to_string(&results).map_err(io("reading the pvm_spawn parent's results"))?;
    let times: Vec<Duration> = serde_json::from_str::<Vec<u64>>(&text)
        .unwrap_or_default()
        .into_iter()
        .map(Duration::from_nanos)
        .collect();
    daemon.stop();
    match times.len() == repetitions {
        true => Ok(times),
        false => Err(Error::Empty),
    }
}

/// The parent or a task of [`spawn_times`], if this process is one: does
/// its part and returns how that went, for `main` to report and exit with
/// [`TaskError::exit_status`]. `None` in any other process, which goes on
/// as usual.
pub fn task_main() -> Option<Result<(), TaskError>> {
    let role = std::env::var(TASK).ok()?;
    let words: Vec<&str> = role.split_whitespace().collect();
    let result = match words[..] {
        ["child"] => child(),
        ["parent", count, repetitions] => match (count.parse(), repetitions.parse()) {
            (Ok(count), Ok(repetitions)) => parent(count, repetitions),
            _ => Err(TaskError::Role(role.clone())),
        },
        _ => Err(TaskError::Role(role.clone())),
    };
    Some(result)
}

/// Why the parent or a task of [`spawn_times`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// libpvm3 could not be loaded: PVM is missing.
    #[error("loading {LIBRARY}: {0}")]
    Load(#[from] libloading::Error),
    /// A PVM call failed.
    #[error("{function} returned {code}")]
    Call {
        /// The call.
        function: &'static str,
        /// Its (negative) result.
        code: c_int,
    },
    /// The task's role variable makes no sense.
    #[error("{TASK}={0:?} is not `parent COUNT REPETITIONS` or `child`")]
    Role(String),
    /// The parent was not told where to write its times.
    #[error("{RESULTS} is not set: nowhere to write the times")]
    NoResults,
    /// An argument cannot be passed to C.
    #[error("an argument holds a NUL byte")]
    Nul(#[from] std::ffi::NulError),
    /// This program or the results file cannot be reached.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl TaskError {
    /// The status the task exits with: PVM missing is not a failure of
    /// the run, and the parent's caller tells it from the others.
    pub fn exit_status(&self) -> i32 {
        match self {
            TaskError::Load(_) => NO_LIBRARY,
            _ => 1,
        }
    }
}

/// The functions of libpvm3 used here, with their `pvm3.h` prototypes.
struct Library {
    mytid: unsafe extern "C" fn() -> c_int,
    parent: unsafe extern "C" fn() -> c_int,
    spawn: unsafe extern "C" fn(
        *mut c_char,
        *mut *mut c_char,
        c_int,
        *mut c_char,
        c_int,
        *mut c_int,
    ) -> c_int,
    initsend: unsafe extern "C" fn(c_int) -> c_int,
    pkint: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int,
    send: unsafe extern "C" fn(c_int, c_int) -> c_int,
    recv: unsafe extern "C" fn(c_int, c_int) -> c_int,
    exit: unsafe extern "C" fn() -> c_int,
    // Last: the pointers above are valid while it is loaded.
    _library: libloading::Library,
}

impl Library {
    fn load() -> Result<Library, TaskError> {
        // SAFETY: libpvm3 has no load-time constructors. Each symbol is
        // given the type of its prototype in pvm3.h (PVM 3.4), and the
        // pointers are kept in the same struct as the library, which is
        // dropped last.
        unsafe {
            let library = libloading::Library::new(LIBRARY)?;
            Ok(Library {
                mytid: *library.get(b"pvm_mytid\0")?,
                parent: *library.get(b"pvm_parent\0")?,
                spawn: *library.get(b"pvm_spawn\0")?,
                initsend: *library.get(b"pvm_initsend\0")?,
                pkint: *library.get(b"pvm_pkint\0")?,
                send: *library.get(b"pvm_send\0")?,
                recv: *library.get(b"pvm_recv\0")?,
                exit: *library.get(b"pvm_exit\0")?,
                _library: library,
            })
        }
    }
}

/// A negative PVM result is an error code.
fn checked(function: &'static str, code: c_int) -> Result<c_int, TaskError> {
    match code < 0 {
        true => Err(TaskError::Call { function, code }),
        false => Ok(code),
    }
}

fn parent(count: usize, repetitions: usize) -> Result<(), TaskError> {
    let pvm = Library::load()?;
    let program = CString::new(std::env::current_exe()?.as_os_str().as_bytes())?;
    let args: Vec<CString> = std::env::args_os()
        .skip(1)
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()?;
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let anywhere = CString::default();
    let ntask = c_int::try_from(count).unwrap_or(c_int::MAX);
    let mut tids: Vec<c_int> = vec![0; count];
    // SAFETY: no arguments; enrolls this process in the virtual machine.
    checked("pvm_mytid", unsafe { (pvm.mytid)() })?;
    let mut once = || -> Result<Duration, TaskError> {
        let start = Instant::now();
        // SAFETY: `program` and every `argv` entry are NUL-terminated
        // strings alive across the call, `argv` ends in a null pointer,
        // `anywhere` is an empty string (any host), and `tids` has room for
        // `ntask` ids. PVM reads the strings and does not keep them.
        let started = unsafe {
            (pvm.spawn)(
                program.as_ptr().cast_mut(),
                argv.as_mut_ptr(),
                TASK_DEFAULT,
                anywhere.as_ptr().cast_mut(),
                ntask,
                tids.as_mut_ptr(),
            )
        };
        if started != ntask {
            let code = tids.iter().copied().find(|&t| t < 0).unwrap_or(started);
            return Err(TaskError::Call {
                function: "pvm_spawn",
                code,
            });
        }
        for _ in 0..count {
            // SAFETY: plain integers; -1 is any sender.
            checked("pvm_recv", unsafe { (pvm.recv)(-1, TAG) })?;
        }
        Ok(start.elapsed())
    };
    let result = (|| {
        once()?;
        let mut nanos = Vec::with_capacity(repetitions);
        for _ in 0..repetitions {
            nanos.push(once()?.as_nanos() as u64);
        }
        let results = std::env::var_os(RESULTS).ok_or(TaskError::NoResults)?;
        let json = serde_json::to_vec(&nanos).expect("a list of integers serializes");
        std::fs::write(results, json)?;
        Ok(())
    })();
    // SAFETY: no arguments; leaves the virtual machine.
    unsafe { (pvm.exit)() };
    result
}

fn child() -> Result<(), TaskError> {
    let pvm = Library::load()?;
    // SAFETY: no arguments; enrolls this process in the virtual machine.
    let mut me = checked("pvm_mytid", unsafe { (pvm.mytid)() })?;
    // SAFETY: no arguments.
    let parent = checked("pvm_parent", unsafe { (pvm.parent)() })?;
    // SAFETY: `me` is one writable int for pvm_pkint to pack (it reads
    // it); the other calls take plain integers.
    let result = unsafe {
        checked("pvm_initsend", (pvm.initsend)(DATA_DEFAULT))
            .and_then(|_| checked("pvm_pkint", (pvm.pkint)(&mut me, 1, 1)))
            .and_then(|_| checked("pvm_send", (pvm.send)(parent, TAG)))
    };
    // SAFETY: no arguments; leaves the virtual machine.
    unsafe { (pvm.exit)() };
    result.map(|_| ())
}
