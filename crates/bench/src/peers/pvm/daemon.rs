//! A private virtual machine: pvmd started, watched until ready, halted
//! and killed (steps 1 to 3 of the module docs).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use threadwire_testbed::interrupt::{create_scratch_dir, remove_scratch_dir};
use threadwire_testbed::watch::{wait_until, Watched};

use super::netpipe::RSH;
use super::spawn::TASK;
use super::{scratch_prefix, HALT_GRACE, PACKAGES};
use crate::peers::process::{io, is_executable, last_lines, require, Group};
use crate::peers::Error;

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
    pub(super) fn start_with(
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

/// The log, `pvml.<uid>`, of the pvmd whose `PVM_TMP` is `dir`.
pub(super) fn log_in(dir: &Path) -> String {
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
