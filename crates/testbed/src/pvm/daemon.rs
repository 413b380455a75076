//! A private virtual machine: pvmd started, watched until ready, halted
//! and killed (steps 1 to 3 of the module docs).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::{io, pvm_root, scratch_prefix, Error, Task, HALT_GRACE, PACKAGES, RSH};
use crate::group::ProcessGroup;
use crate::interrupt::{create_scratch_dir, remove_scratch_dir};
use crate::process::{
    descendants, is_executable, last_lines, on_path, wait_all_exited, Finished, Pidfd,
};
use crate::watch::{wait_until, Watched};

/// How a [`Daemon`] is started; the default is a plain pvmd on this host.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// pvmd's options, such as `-d0x4` (log each task's enrollment) or
    /// `-n<address>` (the address to take, not the host name's).
    pub options: Vec<String>,
    /// A network namespace to start pvmd in, with `PVM_RSH` = [`RSH`] in
    /// the directory, for the hosts it adds.
    pub namespace: Option<String>,
    /// Where `pvm_spawn` looks for programs: written to a host file as
    /// `* ep=<dirs>` (module docs, step 1); empty, pvmd's own default.
    pub search_path: Vec<PathBuf>,
    /// Variables for pvmd alone: the tasks it forks inherit them, and the
    /// commands of [`Daemon::command`] have them removed.
    pub daemon_env: Vec<(OsString, OsString)>,
}

/// A private PVM virtual machine of one host: a pvmd, stopped when dropped.
pub struct Daemon {
    pvmd: ProcessGroup,
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
    daemon_only: Vec<OsString>,
    stopped: bool,
}

impl Daemon {
    /// Starts a pvmd in a new scratch directory (module docs, step 1).
    pub fn start(deadline: Instant) -> Result<Daemon, Error> {
        Daemon::start_with(&Config::default(), deadline)
    }

    /// [`start`](Self::start) as `config` says.
    pub fn start_with(config: &Config, deadline: Instant) -> Result<Daemon, Error> {
        if !on_path("pvm") {
            return Err(Error::Missing {
                program: "pvm",
                packages: PACKAGES,
            });
        }
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
        let mut cmd = match &config.namespace {
            Some(namespace) => {
                env.push(("PVM_RSH".into(), dir.join(RSH).into_os_string()));
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", namespace]).arg(&pvmd);
                cmd
            }
            None => Command::new(&pvmd),
        };
        cmd.args(&config.options);
        let daemon_only: Vec<OsString> = config.daemon_env.iter().map(|(k, _)| k.clone()).collect();
        apply(&mut cmd, &env, &daemon_only, &dir);
        cmd.envs(config.daemon_env.iter().map(|(k, v)| (k, v)));
        let out = dir.join("pvmd.out");
        let started = spawn_pvmd(cmd, config, &dir, &out);
        let pvmd = match started {
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
            daemon_only,
            stopped: false,
        };
        let started = Instant::now();
        // Ready once it has printed its socket's path, one line (step 1).
        let ready = || std::fs::read_to_string(&out).is_ok_and(|text| text.contains('\n'));
        let pidfd = daemon.pvmd.pidfd();
        match wait_until(&daemon.dir, ready, Some(pidfd), deadline) {
            Ok(Watched::Ready) => Ok(daemon),
            Ok(Watched::ProcessExited) => match daemon.pvmd.wait_deadline(deadline) {
                Ok(Some(status)) => Err(daemon.failed(status)),
                Ok(None) => Err(Error::TimedOut(started.elapsed())),
                Err(source) => Err(Error::Io {
                    what: "waiting for pvmd",
                    source,
                }),
            },
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
        apply(&mut cmd, &self.env, &self.daemon_only, &self.dir);
        cmd
    }

    /// Starts `cmd` (from [`command`](Self::command)) with `input` as its
    /// standard input and its output captured (module docs, step 2).
    pub fn start_task(&self, cmd: Command, input: &[u8]) -> Result<Task, Error> {
        Task::start(cmd, input, &self.dir)
    }

    /// Waits until every task that pvmd forked has ended (but the group
    /// server, which lives as long as the daemon), and then until pvmd has
    /// logged what they printed: a console command's answer comes from
    /// pvmd's loop, which reads the tasks' output first (module docs,
    /// step 2). Past `deadline`, [`Error::TimedOut`]: a task hangs.
    pub fn settle(&self, deadline: Instant) -> Result<(), Error> {
        let started = Instant::now();
        let group = libc::pid_t::try_from(self.pvmd.id()).unwrap_or(libc::pid_t::MAX);
        let tasks: Vec<Pidfd> = descendants(&[group])
            .into_iter()
            .filter(|&pid| pid != group && !is_group_server(pid))
            .filter_map(|pid| Pidfd::open(u32::try_from(pid).ok()?).ok())
            .collect();
        match wait_all_exited(&tasks, deadline) {
            Ok(true) => {}
            Ok(false) => return Err(Error::TimedOut(started.elapsed())),
            Err(source) => {
                return Err(Error::Io {
                    what: "waiting for pvmd's tasks",
                    source,
                })
            }
        }
        let console = self.start_task(self.command("pvm"), b"conf\nquit\n")?;
        match console.finish(deadline)?.finished {
            Finished::Exited(_) => Ok(()),
            Finished::Stopped => Err(Error::TimedOut(started.elapsed())),
        }
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
        if !self.pvmd.has_exited() {
            let mut console = self.command("pvm");
            console
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Ok(mut console) = ProcessGroup::spawn(console) {
                if let Some(mut stdin) = console.take_stdin() {
                    let _ = stdin.write_all(b"halt\n");
                }
                self.pvmd.wait_exited(Instant::now() + HALT_GRACE);
                console.kill();
            }
        }
        self.pvmd.kill();
        let _ = remove_scratch_dir(&self.dir);
    }

    /// pvmd's log, `pvml.<uid>`: the lines of the tasks it forked among
    /// its own ([`task_lines`]).
    pub fn log(&self) -> String {
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

/// The log, `pvml.<uid>`, of the pvmd whose `PVM_TMP` is `dir`.
pub fn log_in(dir: &Path) -> String {
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

/// Whether `pid` is PVM's group server, `pvmgs`.
fn is_group_server(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|name| name.trim() == "pvmgs")
}

/// What the tasks that pvmd forked printed, in the order it logged it:
/// each log line `[t80040000] <date> <time> [t<tid>] <text>` as
/// `[t<tid>] <text>`; pvmd's own lines are left out.
pub fn task_lines(log: &str) -> String {
    let mut lines = String::new();
    for line in log.lines() {
        // pvmd's prefix, then the date and the time.
        let mut rest = line;
        for _ in 0..3 {
            rest = rest.split_once(' ').map_or("", |(_, rest)| rest);
        }
        if rest.starts_with("[t") && rest.contains("] ") {
            lines.push_str(rest);
            lines.push('\n');
        }
    }
    lines
}

/// Starts pvmd, with a host file if `config` has a search path.
fn spawn_pvmd(
    mut cmd: Command,
    config: &Config,
    dir: &Path,
    out: &Path,
) -> Result<ProcessGroup, Error> {
    if !config.search_path.is_empty() {
        let hosts = dir.join("hosts");
        let path = std::env::join_paths(&config.search_path).map_err(|e| Error::Io {
            what: "writing pvmd's host file",
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        })?;
        let mut line = b"* ep=".to_vec();
        line.extend_from_slice(path.as_bytes());
        line.push(b'\n');
        std::fs::write(&hosts, line).map_err(io("writing pvmd's host file"))?;
        cmd.arg(hosts);
    }
    let out = File::create(out).map_err(io("creating a log file"))?;
    let err = File::create(dir.join("pvmd.err")).map_err(io("creating a log file"))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    ProcessGroup::spawn(cmd).map_err(io("starting pvmd"))
}

/// PVM's variables replace every inherited `PVM_*` one; `daemon_only`
/// are pvmd's alone.
fn apply(cmd: &mut Command, env: &[(OsString, OsString)], daemon_only: &[OsString], dir: &Path) {
    for (name, _) in std::env::vars_os() {
        if name.as_bytes().starts_with(b"PVM_") {
            cmd.env_remove(name);
        }
    }
    for name in daemon_only {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v))).current_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::task_lines;

    #[test]
    fn task_lines_are_the_tasks_own_without_pvmds() {
        let log = "[t80040000] 11/27 10:12:52 vm (127.0.0.1:53337) LINUX64 3.4.6\n\
                   [t80040000] 11/27 10:16:07 [t40023]       262179  received no-more-work flag\n\
                   [t80040000] 11/27 10:16:30 loclinput() marking t40027 dead\n\
                   [t80040000] 11/27 10:16:31 [t40003] libpvm [t40003]: \n";
        assert_eq!(
            task_lines(log),
            "[t40023]       262179  received no-more-work flag\n[t40003] libpvm [t40003]: \n"
        );
    }
}
