//! Finding the programs and starting the daemons of a cluster: munged,
//! slurmctld and one slurmd per host, each in a process group of its own
//! ([`ProcessGroup`]), its output in a file of the cluster directory.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::config::Paths;
use super::error::{io_error, SlurmErrorKind};
use super::SlurmError;
use crate::group::ProcessGroup;
use crate::watch::{wait_until, Watched};

/// Where the programs of a cluster are, found once before anything runs.
#[derive(Clone, Debug)]
pub(super) struct Programs {
    pub(super) munged: PathBuf,
    pub(super) slurmctld: PathBuf,
    pub(super) slurmd: PathBuf,
    pub(super) srun: PathBuf,
    pub(super) sbatch: PathBuf,
    pub(super) salloc: PathBuf,
    pub(super) sinfo: PathBuf,
    pub(super) scontrol: PathBuf,
    pub(super) scancel: PathBuf,
}

impl Programs {
    /// Every program, or the first one missing.
    pub(super) fn find() -> Result<Programs, SlurmError> {
        Ok(Programs {
            munged: find("munged", "munge")?,
            slurmctld: find("slurmctld", "slurmctld")?,
            slurmd: find("slurmd", "slurmd")?,
            srun: find("srun", "slurm-client")?,
            sbatch: find("sbatch", "slurm-client")?,
            salloc: find("salloc", "slurm-client")?,
            sinfo: find("sinfo", "slurm-client")?,
            scontrol: find("scontrol", "slurm-client")?,
            scancel: find("scancel", "slurm-client")?,
        })
    }
}

/// `program` in `PATH`, or in the system directories a non-login shell
/// may leave out of it.
fn find(program: &'static str, package: &'static str) -> Result<PathBuf, SlurmError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| SlurmErrorKind::MissingProgram { program, package }.into())
}

/// Writes a fresh munge key: 1 KiB from the kernel's random source, mode
/// 0400, owned by the caller (root), as `mungekey` makes one.
pub(super) fn write_munge_key(path: &Path) -> Result<(), SlurmError> {
    let mut key = [0u8; 1024];
    File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut key))
        .map_err(io_error("reading /dev/urandom for the munge key"))?;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(path)
        .and_then(|mut file| file.write_all(&key))
        .map_err(io_error(format!("writing {}", path.display())))
}

/// Starts munged on the cluster's key and socket and waits until the
/// socket is there (munged creates it once it serves).
pub(super) fn start_munged(
    programs: &Programs,
    dir: &Path,
    deadline: Instant,
) -> Result<ProcessGroup, SlurmError> {
    let socket = Paths::new(dir).munge_socket;
    let mut cmd = Command::new(&programs.munged);
    cmd.arg("--foreground")
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--key-file={}", dir.join("munge.key").display()))
        .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
        .arg(format!("--log-file={}", dir.join("munged.log").display()))
        .arg(format!("--seed-file={}", dir.join("munged.seed").display()));
    let munged = spawn_daemon(cmd, dir, "munged")?;
    let ready = wait_until(dir, || socket.exists(), Some(munged.pidfd()), deadline)
        .map_err(io_error("waiting for munged's socket"))?;
    match ready {
        Watched::Ready => Ok(munged),
        Watched::ProcessExited | Watched::TimedOut => Err(SlurmErrorKind::DaemonExited {
            daemon: "munged (its socket never appeared)".into(),
            logs: tail(&dir.join("munged.stderr")),
        }
        .into()),
    }
}

/// Why a daemon cannot have a UTS namespace of its own here, if it cannot
/// (a container without CAP_SYS_ADMIN): tried with `true`.
pub(super) fn uts_unavailable() -> Option<String> {
    let mut probe = Command::new("true");
    if let Err(e) = with_host_name(&mut probe, "probe") {
        return Some(e.to_string());
    }
    match probe.status() {
        Ok(_) => None,
        Err(e) => Some(format!("unshare(CLONE_NEWUTS): {e}")),
    }
}

/// Starts slurmctld in a UTS namespace of its own named `host_name`, the
/// name `SlurmctldHost=` gives it: slurmctld serves only on the host that
/// configuration names, and the machine's own name may be anything.
pub(super) fn start_slurmctld(
    programs: &Programs,
    dir: &Path,
    host_name: &str,
) -> Result<ProcessGroup, SlurmError> {
    let mut cmd = Command::new(&programs.slurmctld);
    cmd.arg("-D").arg("-f").arg(Paths::new(dir).conf);
    with_host_name(&mut cmd, host_name)?;
    spawn_daemon(cmd, dir, "slurmctld")
}

/// Starts the slurmd of `node`, in network namespace `netns` if given,
/// and in a UTS namespace of its own named after the node.
///
/// The namespace is entered with setns(2) before exec, not by `ip netns
/// exec`, whose private mount of `/sys` hides `/sys/fs/cgroup`: slurmd
/// 22.05 loads its cgroup plugin even with `proctrack/linuxproc`, and
/// fails without one.
///
/// slurmd starts each slurmstepd through a child that exits at once, so
/// the slurmstepds are orphans, out of reach of the kill of slurmd's
/// process group; they work in the cluster directory (slurmd's), where
/// teardown finds them.
pub(super) fn start_slurmd(
    programs: &Programs,
    dir: &Path,
    node: &str,
    netns: Option<&str>,
) -> Result<ProcessGroup, SlurmError> {
    let spool = Paths::new(dir).spool.join(node);
    std::fs::create_dir_all(&spool).map_err(io_error(format!("creating {}", spool.display())))?;
    let mut cmd = Command::new(&programs.slurmd);
    cmd.args(["-D", "-N", node, "-f"]).arg(Paths::new(dir).conf);
    // Opened here, closed on exec (std opens files close-on-exec).
    let namespace = match netns {
        Some(ns) => {
            let path = Path::new("/run/netns").join(ns);
            Some(File::open(&path).map_err(io_error(format!("opening {}", path.display())))?)
        }
        None => None,
    };
    if let Some(namespace) = namespace {
        let fd = namespace.as_raw_fd();
        // SAFETY: setns is async-signal-safe; `fd` stays open until the
        // exec, as the closure owns `namespace`.
        unsafe {
            cmd.pre_exec(move || {
                let _keep_open = &namespace;
                match libc::setns(fd, libc::CLONE_NEWNET) {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                }
            });
        }
    }
    with_host_name(&mut cmd, node)?;
    spawn_daemon(cmd, dir, &format!("slurmd-{node}"))
}

/// Runs `cmd` in a new UTS namespace with this host name.
fn with_host_name(cmd: &mut Command, host_name: &str) -> Result<(), SlurmError> {
    let name = CString::new(host_name).map_err(|_| SlurmErrorKind::Plan("a NUL in a host name"))?;
    // SAFETY: the closure makes only async-signal-safe system calls on
    // memory it owns (`name`), and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUTS) != 0
                || libc::sethostname(name.as_ptr(), name.as_bytes().len()) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Spawns a daemon in the cluster directory, its standard output and
/// error in `{name}.stderr` there (what it says before its log is open).
///
/// It gets SIGKILL when the thread that started it ends
/// (`PR_SET_PDEATHSIG`): a test killed by its harness's timeout, which
/// drops nothing, leaves no daemon behind.
fn spawn_daemon(mut cmd: Command, dir: &Path, name: &str) -> Result<ProcessGroup, SlurmError> {
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(
            || match libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            },
        );
    }
    let output = dir.join(format!("{name}.stderr"));
    let file = File::create(&output).map_err(io_error(format!("creating {}", output.display())))?;
    let copy = file
        .try_clone()
        .map_err(io_error(format!("opening {}", output.display())))?;
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(copy);
    ProcessGroup::spawn(cmd).map_err(io_error(format!("starting {name}")))
}

/// The last lines of a log, for an error message.
pub(super) fn tail(path: &Path) -> String {
    const LINES: usize = 15;
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(LINES);
            let mut out = format!("--- {} (last {} lines)\n", path.display(), LINES);
            for line in &lines[start..] {
                out.push_str(line);
                out.push('\n');
            }
            out
        }
        Err(e) => format!("--- {}: {e}\n", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_makes_the_cluster_unavailable() {
        let missing = find("threadwire-no-such-daemon", "threadwire-nothing").unwrap_err();
        assert!(missing.is_unavailable());
        assert!(
            missing.to_string().contains("`threadwire-nothing`"),
            "{missing}"
        );
        assert!(find("sh", "dash").unwrap().is_file());
    }

    #[test]
    fn a_munge_key_is_fresh_and_readable_by_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("threadwire-mungekey-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.key"), dir.join("b.key"));
        write_munge_key(&a).unwrap();
        write_munge_key(&b).unwrap();
        let mode = std::fs::metadata(&a).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o400);
        let (a_bytes, b_bytes) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(a_bytes.len(), 1024);
        assert_ne!(a_bytes, b_bytes);
        // Never overwritten: a key in use stays the one munged read.
        assert!(write_munge_key(&a).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
