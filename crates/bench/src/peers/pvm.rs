//! PVM 3.4, the 1998 peer: NetPIPE's `NPpvm` beside the ping-pong and the
//! time of `pvm_spawn` beside `bench spawn`, each under a private virtual
//! machine started for the run and always stopped after it.
//!
//! # A private virtual machine
//!
//! [`Daemon`] runs `$PVM_ROOT/lib/pvmd` (`PVM_ROOT` from the environment,
//! else Debian's `/usr/lib/pvm3`) with a scratch directory of its own,
//! `$TMPDIR/threadwire-pvm-<pid>-<n>`, as `PVM_TMP` and `HOME`. PVM 3.4.6
//! keeps everything that names a virtual machine under `PVM_TMP`: the
//! daemon's address file `pvmd.<uid>`, its log `pvml.<uid>` and the tasks'
//! sockets `pvmtmp<pid>.<n>`. So a pvmd of the same user elsewhere, found
//! through `/tmp/pvmd.<uid>`, and this one never meet, and `PVM_VMID` is
//! not needed; it is removed with every other inherited `PVM_*` variable.
//! `HOME` keeps the user's `~/.pvmrc` and `~/pvm3/bin` out.
//! `PVM_ALLOW_ROOT=yes` lets the daemon and its tasks run as root, which PVM
//! refuses by default (for the sake of rsh to other hosts, unused here).
//!
//! 1. Start: pvmd in a process group of its own, its stdout to a file. It
//!    is ready once it has printed its socket's path, one line. A pvmd that
//!    exits first is [`Error::Failed`]; one not ready by the deadline is
//!    killed, [`Error::TimedOut`].
//! 2. Run: tasks get the daemon's environment ([`Daemon::command`]).
//!    Tasks that pvmd forks itself (`pvm_spawn`) stay in its process group.
//! 3. Stop ([`Daemon::stop`], and `Drop`, so an error or a timeout anywhere
//!    stops the machine too): the console `pvm` is sent `halt`, on which
//!    pvmd kills its tasks and removes its files; after at most
//!    [`HALT_GRACE`], SIGKILL goes to the daemon's process group (the
//!    daemon if it did not halt, and any task it left), and the directory
//!    is removed.
//!
//! # NPpvm
//!
//! NetPIPE 3.7.2's PVM module does not spawn its partner: both sides are
//! started by hand and enroll with `pvm_mytid`; the receiver waits for any
//! message, and the transmitter (`-h`, whose host name PVM ignores) takes
//! the other task from `pvm_tasks` and exits with "Start a clean machine"
//! unless the virtual machine holds exactly two tasks. So [`netpipe`] starts
//! the receiver, waits until pvmd logs its enrollment (pvmd runs with debug
//! mask 4, which logs "new task"), and only then starts the transmitter:
//! retrying a transmitter that came too early could let the next one see
//! the dying one as its partner. NetPIPE sets `PvmRouteDirect`, so the
//! messages go task to task over TCP: the figures are PVM's packing and its
//! direct route, not the daemons'.
//!
//! **Across emulated hosts** ([`Placement::Namespaces`]): a virtual machine
//! of two hosts, one pvmd in each namespace.
//!
//! 1. The master pvmd starts in the transmitter's namespace with
//!    `-n<transmitter's address>`: it takes its own address from that name,
//!    not from the host name, which every namespace shares and which
//!    resolves to loopback.
//! 2. The console `add`s the receiver's address. pvmd starts a pvmd there
//!    as `$PVM_RSH HOST COMMAND`; `PVM_RSH` is a script in the scratch
//!    directory that refuses any other host and runs the command with `ip
//!    netns exec` in the receiver's namespace, with `PVM_TMP` a
//!    subdirectory of its own (two pvmds of one user in one `PVM_TMP`
//!    would take each other's address file). That pvmd is a child of the
//!    master's and stays in its process group, so stopping the machine
//!    stops both.
//! 3. The receiver runs in its namespace against the second pvmd, the
//!    transmitter in its own against the first; `-h` gets the receiver's
//!    address, which PVM ignores.
//!
//! # pvm_spawn
//!
//! [`spawn_times`] measures what the 1998 figure (57.75 ms to start one
//! process) measured: a PVM parent task spawns N tasks with one `pvm_spawn`
//! (`PvmTaskDefault`, on this host) and receives one message from each.
//! Timed per repetition: from the call of `pvm_spawn` until the N-th message
//! has been received, by the parent's monotonic clock; that covers pvmd
//! forking and exec'ing each task, the task's start and enrollment
//! (`pvm_mytid`) and one message to the parent. One untimed warm-up comes
//! first. The daemon's start and stop are not timed.
//!
//! libpvm3 is loaded at run time with `libloading` (`libpvm3.so.3`, Debian's
//! `libpvm3`, which `pvm` depends on), so threadwire builds and runs where
//! PVM is absent and then reports it missing. The parent and the tasks are
//! the caller's own program run again ([`Task`]), which must call
//! [`task_main`] first: it acts on `THREADWIRE_PVM_TASK`, set by
//! [`spawn_times`] for the parent and by the daemon's environment for the
//! tasks. This beats the alternatives: a C helper compiled at run time needs
//! a compiler and `pvm-dev` on the machine, and loading libpvm3 into the
//! calling process would need PVM's variables in its environment, which a
//! multithreaded process cannot safely change. The functions used take and
//! return `int`s and C strings only, which their prototypes in `pvm3.h` fix.

use super::process::{io, is_executable, last_lines, require, Group};
use super::{Error, Options, Placement};
use std::ffi::{c_char, c_int, CString, OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use threadwire_testbed::interrupt::{create_scratch_dir, remove_scratch_dir};
use threadwire_testbed::watch::{wait_until, Watched};

/// The Debian package of the daemon, its console and (by dependency) libpvm3.
pub const PACKAGES: &str = "pvm";
/// The library [`task_main`] loads.
pub const LIBRARY: &str = "libpvm3.so.3";
/// How long `halt` may take before the daemon's group is killed.
pub const HALT_GRACE: Duration = Duration::from_secs(2);

/// Makes [`task_main`] act: `parent COUNT REPETITIONS` or `child`.
const TASK: &str = "THREADWIRE_PVM_TASK";
/// The first word of each of the parent's lines: `pvm-spawn-ns NANOSECONDS`.
const SPAWNED: &str = "pvm-spawn-ns";
/// [`task_main`]'s exit status when libpvm3 cannot be loaded: PVM is
/// missing, which is not a failure of the run.
const NO_LIBRARY: i32 = 3;
/// The tag of the tasks' messages to the parent.
const TAG: c_int = 7;
/// `pvm3.h`: PvmTaskDefault, PvmDataDefault.
const TASK_DEFAULT: c_int = 0;
const DATA_DEFAULT: c_int = 0;

/// The start of the names of this process's scratch directories, under
/// [`std::env::temp_dir`]: `threadwire-pvm-<pid>-`. A test looks for them
/// (and for pvmds whose `PVM_TMP` starts so) to see that nothing is left.
pub fn scratch_prefix() -> String {
    format!("threadwire-pvm-{}-", std::process::id())
}

/// A private PVM virtual machine of one host: a pvmd, stopped when dropped.
pub struct Daemon {
    pvmd: Group,
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
    stopped: bool,
}

impl Daemon {
    /// Starts a pvmd in a new scratch directory (module docs, step 1).
    pub fn start(deadline: Instant) -> Result<Daemon, Error> {
        Daemon::start_with(&[], None, deadline)
    }

    /// [`start`](Self::start) with options of pvmd's, in a network
    /// namespace if given (with `PVM_RSH` = [`RSH`] in the directory, for
    /// the hosts it adds).
    fn start_with(
        options: &[String],
        namespace: Option<&str>,
        deadline: Instant,
    ) -> Result<Daemon, Error> {
        require(&["pvm"], PACKAGES)?;
        let pvmd = pvm_root().join("lib/pvmd");
        if !is_executable(&pvmd) {
            return Err(Error::Missing {
                program: "pvmd",
                packages: PACKAGES,
            });
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "{}{}",
            scratch_prefix(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        create_scratch_dir(&dir).map_err(io("creating PVM's scratch directory"))?;
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PVM_ROOT".into(), pvm_root().into_os_string()),
            ("PVM_TMP".into(), dir.clone().into_os_string()),
            ("HOME".into(), dir.clone().into_os_string()),
            ("PVM_ALLOW_ROOT".into(), "yes".into()),
        ];
        let mut cmd = match namespace {
            Some(namespace) => {
                env.push(("PVM_RSH".into(), dir.join(RSH).into_os_string()));
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", namespace]).arg(&pvmd);
                cmd
            }
            None => Command::new(&pvmd),
        };
        cmd.args(options);
        apply(&mut cmd, &env, &dir);
        // Tasks forked by pvmd get its environment: they are children.
        cmd.env(TASK, "child");
        let out = dir.join("pvmd.out");
        let pvmd = match Group::spawn(cmd, &out, &dir.join("pvmd.err")) {
            Ok(pvmd) => pvmd,
            Err(e) => {
                let _ = remove_scratch_dir(&dir);
                return Err(e);
            }
        };
        let mut daemon = Daemon {
            pvmd,
            dir,
            env,
            stopped: false,
        };
        let started = Instant::now();
        // Ready once it has printed its socket's path, one line (step 1).
        let ready = || std::fs::read_to_string(&out).is_ok_and(|text| text.contains('\n'));
        let pidfd = daemon.pvmd.process().pidfd();
        match wait_until(&daemon.dir, ready, Some(pidfd), deadline) {
            Ok(Watched::Ready) => Ok(daemon),
            Ok(Watched::ProcessExited) => {
                let status = daemon.pvmd.wait(deadline)?;
                Err(daemon.failed(status))
            }
            Ok(Watched::TimedOut) => Err(Error::TimedOut(started.elapsed())),
            Err(source) => Err(Error::Io {
                what: "waiting for pvmd",
                source,
            }),
        }
    }

    /// A command for a task of this virtual machine: PVM's variables set,
    /// run in the scratch directory.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        apply(&mut cmd, &self.env, &self.dir);
        cmd
    }

    /// The scratch directory (`PVM_TMP`), removed on [`stop`](Self::stop).
    pub fn directory(&self) -> &Path {
        &self.dir
    }

    /// Halts the virtual machine and removes its files (module docs, step 3).
    pub fn stop(mut self) {
        self.stop_ref();
    }

    fn stop_ref(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        if !self.pvmd.process().has_exited() {
            let mut console = self.command("pvm");
            console
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Ok(mut console) = Group::start(console, PathBuf::new()) {
                if let Some(mut stdin) = console.take_stdin() {
                    let _ = stdin.write_all(b"halt\n");
                }
                self.pvmd.process().wait_exited(Instant::now() + HALT_GRACE);
                console.kill();
            }
        }
        self.pvmd.kill();
        let _ = remove_scratch_dir(&self.dir);
    }

    /// pvmd's log, `pvml.<uid>`.
    fn log(&self) -> String {
        log_in(&self.dir)
    }

    fn failed(&self, status: ExitStatus) -> Error {
        let text = std::fs::read_to_string(self.dir.join("pvmd.err")).unwrap_or_default();
        Error::Failed {
            status,
            output: last_lines(&(text + &self.log())),
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop_ref();
    }
}

/// Runs NetPIPE's `NPpvm` with `-u options.upper_bound -n options.repeats
/// -o output` under a private virtual machine, the transmitter's output in
/// `log` (module docs).
pub fn netpipe(
    options: &Options,
    output: &Path,
    log: &Path,
    deadline: Instant,
) -> Result<(), Error> {
    require(&["NPpvm", "pvm"], super::Peer::Pvm.packages())?;
    let started = Instant::now();
    // Debug mask 4 logs each task's enrollment ("new task"), which the
    // transmitter must not precede; tasks talk to each other directly, so
    // the log is off the measured path.
    let mut pvmd_options = vec!["-d0x4".to_string()];
    let (daemon, receiver_ns, receiver_host, transmitter_ns) = match &options.placement {
        Placement::Local => (
            Daemon::start_with(&pvmd_options, None, deadline)?,
            None,
            "receiver".to_string(),
            None,
        ),
        Placement::Namespaces {
            receiver,
            transmitter,
            ..
        } => {
            // The master pvmd takes its address from this name, not from
            // the host name, which resolves to loopback in every namespace.
            pvmd_options.push(format!("-n{}", transmitter.addr));
            let daemon = Daemon::start_with(&pvmd_options, Some(&transmitter.name), deadline)?;
            add_host(&daemon, &receiver.name, receiver.addr, deadline)?;
            (
                daemon,
                Some(receiver.name.as_str()),
                receiver.addr.to_string(),
                Some(transmitter.name.as_str()),
            )
        }
    };
    // The receiver's pvmd: this one, or the one `add_host` started.
    let receiver_dir = match receiver_ns {
        Some(_) => daemon.directory().join(RECEIVER),
        None => daemon.directory().to_path_buf(),
    };
    let sizes = [
        "-u".to_string(),
        options.upper_bound.to_string(),
        "-n".to_string(),
        options.repeats.to_string(),
    ];
    let receiver_log = daemon.directory().join("receiver.txt");
    let mut receiver = in_namespace(&daemon, receiver_ns, "NPpvm");
    receiver.args(&sizes).env("PVM_TMP", &receiver_dir);
    let mut receiver = Group::spawn(receiver, &receiver_log, &receiver_log)?;
    let enrolled = || log_in(&receiver_dir).contains("new task");
    match wait_until(
        &receiver_dir,
        enrolled,
        Some(receiver.process().pidfd()),
        deadline,
    ) {
        Ok(Watched::Ready) => {}
        Ok(Watched::ProcessExited) => {
            let status = receiver.wait(deadline)?;
            return Err(receiver.failed(status));
        }
        Ok(Watched::TimedOut) => return Err(Error::TimedOut(started.elapsed())),
        Err(source) => {
            return Err(Error::Io {
                what: "waiting for the NPpvm receiver to enroll",
                source,
            })
        }
    }
    let mut transmitter = in_namespace(&daemon, transmitter_ns, "NPpvm");
    transmitter
        .args(&sizes)
        .args(["-h", &receiver_host, "-o"])
        .arg(output);
    let status = Group::spawn(transmitter, log, log)?.wait(deadline)?;
    if !status.success() {
        return Err(Group::failed_log(status, log));
    }
    let status = receiver.wait(deadline)?;
    if !status.success() {
        return Err(receiver.failed(status));
    }
    daemon.stop();
    Ok(())
}

/// The script pvmd runs as `PVM_RSH HOST COMMAND` to start a pvmd on an
/// emulated host, in the daemon's directory.
const RSH: &str = "rsh";
/// The receiver's pvmd's `PVM_TMP`, in the daemon's directory.
const RECEIVER: &str = "receiver";

/// A task's command, in `namespace` if given.
fn in_namespace(daemon: &Daemon, namespace: Option<&str>, program: &str) -> Command {
    match namespace {
        Some(namespace) => {
            let mut cmd = daemon.command("ip");
            cmd.args(["netns", "exec", namespace, program]);
            cmd
        }
        None => daemon.command(program),
    }
}

/// Adds the receiver's host to the virtual machine: writes the [`RSH`]
/// script, which runs pvmd's command in `namespace` with its own
/// `PVM_TMP` and refuses any other host, and has the console `add` it.
fn add_host(
    daemon: &Daemon,
    namespace: &str,
    address: std::net::Ipv4Addr,
    deadline: Instant,
) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let dir = daemon.directory().join(RECEIVER);
    std::fs::create_dir_all(&dir).map_err(io("creating PVM's scratch directory"))?;
    let quoted = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let script = format!(
        "#!/bin/sh\n\
         # pvmd starts a pvmd on another host as `PVM_RSH HOST COMMAND`.\n\
         [ \"$1\" = {address} ] || {{ echo \"unknown host $1\" >&2; exit 1; }}\n\
         for command; do :; done\n\
         exec ip netns exec {namespace} env PVM_TMP={dir} sh -c \"$command\"\n",
        namespace = quoted(namespace),
        dir = quoted(&dir.to_string_lossy()),
    );
    let rsh = daemon.directory().join(RSH);
    std::fs::write(&rsh, script).map_err(io("writing PVM's rsh script"))?;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o700))
        .map_err(io("writing PVM's rsh script"))?;
    let commands = daemon.directory().join("add.pvm");
    std::fs::write(&commands, format!("add {address}\nquit\n"))
        .map_err(io("writing the PVM console's commands"))?;
    let input = File::open(&commands).map_err(io("writing the PVM console's commands"))?;
    let log = daemon.directory().join("add.txt");
    let status =
        Group::spawn_with_input(daemon.command("pvm"), input.into(), &log, &log)?.wait(deadline)?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    match status.success() && text.contains("1 successful") {
        true => Ok(()),
        false => Err(Group::failed_log(status, &log)),
    }
}

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
    let daemon = Daemon::start(deadline)?;
    let out = daemon.directory().join("parent.out");
    let err = daemon.directory().join("parent.err");
    let mut parent = daemon.command(&task.program);
    parent
        .args(&task.args)
        .env(TASK, format!("parent {count} {repetitions}"));
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
        std::fs::read_to_string(&out).map_err(io("reading the pvm_spawn parent's output"))?;
    let times: Vec<Duration> = text
        .lines()
        .filter_map(|l| l.strip_prefix(SPAWNED)?.trim().parse().ok())
        .map(Duration::from_nanos)
        .collect();
    daemon.stop();
    match times.len() == repetitions {
        true => Ok(times),
        false => Err(Error::Empty),
    }
}

/// The parent or a task of [`spawn_times`], if this process is one: does
/// its part and returns the exit status for `main` to exit with. `None`
/// in any other process, which goes on as usual.
pub fn task_main() -> Option<i32> {
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
    Some(match result {
        Ok(()) => 0,
        Err(e @ TaskError::Load(_)) => {
            eprintln!("threadwire pvm task: {e}");
            NO_LIBRARY
        }
        Err(e) => {
            eprintln!("threadwire pvm task: {e}");
            1
        }
    })
}

/// Why the parent or a task failed.
#[derive(Debug, thiserror::Error)]
enum TaskError {
    #[error("loading {LIBRARY}: {0}")]
    Load(#[from] libloading::Error),
    #[error("{function} returned {code}")]
    Call { function: &'static str, code: c_int },
    #[error("{TASK}={0:?} is not `parent COUNT REPETITIONS` or `child`")]
    Role(String),
    #[error("an argument holds a NUL byte")]
    Nul(#[from] std::ffi::NulError),
    #[error("finding this program: {0}")]
    Exe(#[from] std::io::Error),
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
        for _ in 0..repetitions {
            println!("{SPAWNED} {}", once()?.as_nanos());
        }
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

/// The log, `pvml.<uid>`, of the pvmd whose `PVM_TMP` is `dir`.
fn log_in(dir: &Path) -> String {
    let mut text = String::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("pvml.") {
                text += &std::fs::read_to_string(entry.path()).unwrap_or_default();
            }
        }
    }
    text
}

fn pvm_root() -> PathBuf {
    std::env::var_os("PVM_ROOT")
        .filter(|r| !r.is_empty())
        .map_or_else(|| PathBuf::from("/usr/lib/pvm3"), PathBuf::from)
}

/// PVM's variables replace every inherited `PVM_*` one.
fn apply(cmd: &mut Command, env: &[(OsString, OsString)], dir: &Path) {
    for (name, _) in std::env::vars_os() {
        if name.as_bytes().starts_with(b"PVM_") {
            cmd.env_remove(name);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove(TASK)
        .current_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_the_packages() {
        let e = require(
            &["threadwire-no-such-program"],
            crate::peers::Peer::Pvm.packages(),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("threadwire-no-such-program missing")
                && text.contains("apt-get install netpipe-pvm pvm"),
            "{text}"
        );
    }
}
