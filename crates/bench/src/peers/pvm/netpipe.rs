//! NetPIPE's `NPpvm` under a private virtual machine, locally or across
//! two emulated hosts ("NPpvm" in the module docs).

use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::Instant;
use threadwire_testbed::net::Host;
use threadwire_testbed::pvm::{log_in, Config, Daemon, RSH};
use threadwire_testbed::watch::{wait_until, Watched};

use crate::peers::process::{io, require, Group};
use crate::peers::{Error, Options, Placement};

/// Runs NetPIPE's `NPpvm` with `-u options.upper_bound -n options.repeats
/// -o output` under a private virtual machine, the transmitter's output in
/// `log` (module docs).
pub fn netpipe(
    options: &Options,
    output: &Path,
    log: &Path,
    deadline: Instant,
) -> Result<(), Error> {
    require(&["NPpvm", "pvm"], crate::peers::Peer::Pvm.packages())?;
    let started = Instant::now();
    // Debug mask 4 logs each task's enrollment ("new task"), which the
    // transmitter must not precede; tasks talk to each other directly, so
    // the log is off the measured path.
    let config = Config {
        options: vec!["-d0x4".to_string()],
        ..Config::default()
    };
    let (daemon, receiver_ns, receiver_host, transmitter_ns) = match &options.placement {
        Placement::Local => (
            Daemon::start_with(&config, deadline)?,
            None,
            "receiver".to_string(),
            None,
        ),
        Placement::Namespaces {
            receiver,
            transmitter,
            ..
        } => {
            let daemon = two_hosts(config, transmitter, receiver, deadline)?;
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

/// A virtual machine of two emulated hosts (module docs, steps 1 and 2):
/// the master pvmd, started as `config` says, in `first`'s namespace, and
/// a pvmd in `second`'s, added by the console. Tasks of the second are
/// started by pvmd (`pvm_spawn` with `PvmTaskHost` and `second`'s address).
pub(crate) fn two_hosts(
    mut config: Config,
    first: &Host,
    second: &Host,
    deadline: Instant,
) -> Result<Daemon, Error> {
    // The master pvmd takes its address from this name, not from the host
    // name, which resolves to loopback in every namespace.
    config.options.push(format!("-n{}", first.addr));
    config.namespace = Some(first.name.clone());
    let daemon = Daemon::start_with(&config, deadline)?;
    add_host(&daemon, &second.name, second.addr, deadline)?;
    Ok(daemon)
}

/// The receiver's pvmd's `PVM_TMP`, in the daemon's directory.
const RECEIVER: &str = "receiver";

/// A task's command, in `namespace` if given.
pub(crate) fn in_namespace(
    daemon: &Daemon,
    namespace: Option<&str>,
    program: impl AsRef<std::ffi::OsStr>,
) -> Command {
    match namespace {
        Some(namespace) => {
            let mut cmd = daemon.command("ip");
            cmd.args(["netns", "exec", namespace]).arg(program);
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
