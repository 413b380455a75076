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
    let (daemon, receiver_ns, receiver_host, transmitter_ns, receiver_dir) =
        match &options.placement {
            Placement::Local => {
                let daemon = Daemon::start_with(&config, deadline)?;
                let dir = daemon.directory().to_path_buf();
                (daemon, None, "receiver".to_string(), None, dir)
            }
            Placement::Namespaces {
                receiver,
                transmitter,
                ..
            } => {
                let daemon = two_hosts(config, transmitter, receiver, deadline)?;
                // The receiver's pvmd is the one `add_hosts` started.
                let dir = host_directory(&daemon, receiver);
                (
                    daemon,
                    Some(receiver.name.as_str()),
                    receiver.addr.to_string(),
                    Some(transmitter.name.as_str()),
                    dir,
                )
            }
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
    config: Config,
    first: &Host,
    second: &Host,
    deadline: Instant,
) -> Result<Daemon, Error> {
    virtual_machine(config, first, &[second], deadline)
}

/// [`two_hosts`] for any number of hosts: the master pvmd in `first`'s
/// namespace and one pvmd in each of `others`', each with a `PVM_TMP` of
/// its own ([`host_directory`]).
pub(crate) fn virtual_machine(
    mut config: Config,
    first: &Host,
    others: &[&Host],
    deadline: Instant,
) -> Result<Daemon, Error> {
    // The master pvmd takes its address from this name, not from the host
    // name, which resolves to loopback in every namespace.
    config.options.push(format!("-n{}", first.addr));
    config.namespace = Some(first.name.clone());
    let daemon = Daemon::start_with(&config, deadline)?;
    if !others.is_empty() {
        add_hosts(&daemon, others, deadline)?;
    }
    Ok(daemon)
}

/// The `PVM_TMP` of the pvmd that [`virtual_machine`] adds on `host`, in
/// the daemon's directory.
pub(crate) fn host_directory(daemon: &Daemon, host: &Host) -> std::path::PathBuf {
    daemon.directory().join(&host.name)
}

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

/// Adds `hosts` to the virtual machine: writes the [`RSH`] script, which
/// runs pvmd's command in the namespace of the host whose address it is
/// given, with that host's own `PVM_TMP`, and refuses any other host; and
/// has the console `add` them.
fn add_hosts(daemon: &Daemon, hosts: &[&Host], deadline: Instant) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let quoted = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut cases = String::new();
    for host in hosts {
        let dir = host_directory(daemon, host);
        std::fs::create_dir_all(&dir).map_err(io("creating PVM's scratch directory"))?;
        cases.push_str(&format!(
            "  {address}) ns={namespace}; dir={dir} ;;\n",
            address = host.addr,
            namespace = quoted(&host.name),
            dir = quoted(&dir.to_string_lossy()),
        ));
    }
    let script = format!(
        "#!/bin/sh\n\
         # pvmd starts a pvmd on another host as `PVM_RSH HOST COMMAND`.\n\
         case \"$1\" in\n{cases}  *) echo \"unknown host $1\" >&2; exit 1 ;;\nesac\n\
         for command; do :; done\n\
         exec ip netns exec \"$ns\" env PVM_TMP=\"$dir\" sh -c \"$command\"\n",
    );
    let rsh = daemon.directory().join(RSH);
    std::fs::write(&rsh, script).map_err(io("writing PVM's rsh script"))?;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o700))
        .map_err(io("writing PVM's rsh script"))?;
    let commands = daemon.directory().join("add.pvm");
    let addresses: Vec<String> = hosts.iter().map(|h| h.addr.to_string()).collect();
    std::fs::write(&commands, format!("add {}\nquit\n", addresses.join(" ")))
        .map_err(io("writing the PVM console's commands"))?;
    let input = File::open(&commands).map_err(io("writing the PVM console's commands"))?;
    let log = daemon.directory().join("add.txt");
    let status =
        Group::spawn_with_input(daemon.command("pvm"), input.into(), &log, &log)?.wait(deadline)?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let added = format!("{} successful", hosts.len());
    match status.success() && text.contains(&added) {
        true => Ok(()),
        false => Err(Group::failed_log(status, &log)),
    }
}
