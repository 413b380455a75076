//! `mpirun` of NetPIPE's MPI builds: two ranks on this host, or one on
//! each of two emulated hosts; and one rank on each of any number of
//! emulated hosts ([`across_hosts`], `bench bcast`'s MPI peers).
//!
//! Across emulated hosts ([`Placement::Namespaces`]) `mpirun` stays in the
//! root namespace and starts one rank in each host's namespace, the way it
//! would start them over ssh on two machines:
//!
//! 1. **An agent stands in for ssh.** A script in the peer's scratch
//!    directory takes `HOST COMMAND…`, as `ssh` does, and runs the command
//!    with `ip netns exec` in the namespace whose address is `HOST`. Open
//!    MPI gets it as `plm_rsh_agent`, MPICH's Hydra as `-launcher rsh
//!    -launcher-exec`.
//! 2. **Each host has its own name.** The agent runs the command under
//!    `unshare --uts` with the namespace's name as host name: both MPIs
//!    take ranks with the same host name for neighbours.
//! 3. **No shared memory between hosts.** The namespaces share this
//!    machine's boot id, `/dev/shm` and address space, so UCX (Open MPI's
//!    default selection and MPICH's ch4:ucx) would still reach the other
//!    rank through shared memory or cross-memory attach, faster than any
//!    link. Between two real machines only its TCP transport reaches, so
//!    the ranks get `UCX_TLS=tcp,self`, and MPICH `MPIR_CVAR_NOLOCAL=1`
//!    (each host has one rank). A ping-pong on a shaped link then stays
//!    within the link's rate, which is how this was checked.
//! 4. **No binding.** Every emulated host has the same two cores, and
//!    Open MPI binds the first rank of each host to core 0: both ranks on
//!    one core gave 4 ms a round trip. `--bind-to none`.
//! 5. **Hydra's control port.** Hydra's proxies connect back to `mpiexec`
//!    at its host name, which the namespaces cannot reach; `-localhost`
//!    gives the bridge's address instead, as the hosts see it.

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Error, Peer, Placement};

/// The command line of `mpirun` running `netpipe` (NetPIPE and its
/// arguments) as two ranks placed by `placement`; the agent script, if
/// one is needed, is written into `dir`.
pub(super) fn mpirun(
    peer: Peer,
    placement: &Placement,
    netpipe: Vec<String>,
    dir: &Path,
) -> Result<Vec<String>, Error> {
    let mut args: Vec<String> = match peer {
        Peer::Mpich => vec!["mpirun.mpich".into()],
        _ => ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"]
            .map(String::from)
            .to_vec(),
    };
    args.extend(["-np", "2"].map(String::from));
    if peer == Peer::OpenMpiTcp {
        args.extend(["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"].map(String::from));
        if matches!(placement, Placement::Local) {
            // Loopback, as threadwire's TCP on one host: left to itself
            // Open MPI tries every interface, and one that another job's
            // emulated hosts add or remove meanwhile (a bridge, a veth)
            // failed the run with MPI_ERRORS_ARE_FATAL.
            args.extend(
                [
                    "--mca",
                    "btl_tcp_if_include",
                    "lo",
                    "--mca",
                    "oob_tcp_if_include",
                    "lo",
                ]
                .map(String::from),
            );
        }
    }
    if let Placement::Namespaces {
        receiver,
        transmitter,
        gateway,
    } = placement
    {
        let mpich = peer == Peer::Mpich;
        args.extend(across_hosts(
            mpich,
            &[transmitter, receiver],
            *gateway,
            dir,
        )?);
    }
    args.extend(netpipe);
    Ok(args)
}

/// The launcher's arguments (Open MPI's, or MPICH's if `mpich`) that
/// start one rank on each of `hosts` in order, from the root namespace
/// (steps 1 to 5 of the module docs); the agent script and host file are
/// written into `dir`. `gateway` is the hosts' bridge.
pub(crate) fn across_hosts(
    mpich: bool,
    hosts: &[&threadwire_testbed::net::Host],
    gateway: std::net::Ipv4Addr,
    dir: &Path,
) -> Result<Vec<String>, Error> {
    let agent = dir.join("agent.sh");
    write_agent(&agent, hosts)?;
    let agent = agent.display().to_string();
    let addrs: Vec<String> = hosts.iter().map(|h| h.addr.to_string()).collect();
    if mpich {
        return Ok([
            "-launcher",
            "rsh",
            "-launcher-exec",
            &agent,
            "-localhost",
            &gateway.to_string(),
            "-hosts",
            &addrs.join(","),
            "-genv",
            "UCX_TLS",
            "tcp,self",
            "-genv",
            "MPIR_CVAR_NOLOCAL",
            "1",
        ]
        .map(String::from)
        .to_vec());
    }
    let hostfile = dir.join("hosts");
    let lines: String = addrs.iter().map(|a| format!("{a} slots=1\n")).collect();
    std::fs::write(&hostfile, lines).map_err(|source| Error::Io {
        what: "writing an MPI host file",
        source,
    })?;
    Ok([
        "--hostfile",
        &hostfile.display().to_string(),
        "--mca",
        "plm_rsh_agent",
        &agent,
        "--bind-to",
        "none",
        "-x",
        "UCX_TLS=tcp,self",
    ]
    .map(String::from)
    .to_vec())
}

/// Writes the ssh stand-in of step 1 for `hosts`.
fn write_agent(path: &Path, hosts: &[&threadwire_testbed::net::Host]) -> Result<(), Error> {
    let mut script = String::from(
        "#!/bin/sh\n\
         # ssh HOST COMMAND... for emulated hosts (threadwire bench --peers).\n\
         host=$1; shift\n\
         case \"$host\" in\n",
    );
    for h in hosts {
        // Namespace names are [a-z0-9]: made by `threadwire net up`.
        let _ = writeln!(script, "  {}) ns={} ;;", h.addr, h.name);
    }
    script.push_str(
        "  *) echo \"agent: no emulated host $host\" >&2; exit 255 ;;\n\
         esac\n\
         exec ip netns exec \"$ns\" unshare --uts sh -c 'hostname \"$0\" && exec sh -c \"$1\"' \"$ns\" \"$*\"\n",
    );
    let io = |source| Error::Io {
        what: "writing the MPI launch agent",
        source,
    };
    std::fs::write(path, script).map_err(io)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(io)
}
