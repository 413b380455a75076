//! A real Slurm cluster on this machine, for tests and benchmarks: Debian's
//! `slurmctld`, one `slurmd` per emulated host and a `munged`, all private
//! to the cluster, torn down when it is dropped.
//!
//! ```no_run
//! use std::time::Duration;
//! use threadwire_testbed::slurm::{SlurmCluster, SlurmPlan};
//!
//! let cluster = match SlurmCluster::start(&SlurmPlan::new(3)) {
//!     Ok(cluster) => cluster,
//!     Err(e) if e.is_unavailable() => return Ok(eprintln!("SKIPPED: {e}")),
//!     Err(e) => return Err(e.into()),
//! };
//! let out = cluster.srun(&["-N", "3", "-n", "3", "hostname"], Duration::from_secs(30))?;
//! assert!(out.status.success());
//! // node0, node1, node2, in some order.
//! println!("{}", String::from_utf8_lossy(&out.stdout));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bring-up
//!
//! [`SlurmCluster::start`], for a plan of K hosts:
//!
//! 1. Check for root and find every program (munged, slurmctld, slurmd,
//!    srun, sbatch, salloc, sinfo, scontrol, scancel); check that a UTS
//!    namespace can be made and, for K > 1, network namespaces. Any of
//!    these missing is an error for which [`SlurmError::is_unavailable`]
//!    holds, and nothing has run.
//! 2. Name the cluster `sl<pid>x<n>` (n counts this process's clusters),
//!    so that clusters of parallel tests share nothing.
//! 3. For K > 1, emulated hosts ([`ScopedNet`], prefix the cluster's
//!    name): node `i` is namespace `…h{i}` at `10.77.N.{i+1}`, and
//!    slurmctld, in the root namespace, is reached at the bridge's
//!    `10.77.N.254`. For K = 1 the one slurmd runs in the root namespace
//!    and everything is at `127.0.0.1`.
//! 4. A scratch directory `$TMPDIR/threadwire-slurm-<name>` (mode 0711,
//!    removed on SIGINT too, [`crate::interrupt`]) holding everything: a
//!    fresh munge key (1 KiB of random bytes, mode 0400), the socket, pid,
//!    log and seed files of munged, `slurm.conf`, the state and spool
//!    directories, logs, batch scripts and their output.
//! 5. `munged --foreground` on that key and socket; wait until the socket
//!    appears (inotify on the directory).
//! 6. Two free ports; write `slurm.conf` (its choices are documented in
//!    `config.rs`): `SlurmctldHost=controller(<address>)`, nodes `node0`
//!    … `node{K-1}`, each with the plan's CPUs, one partition `all`.
//! 7. `slurmctld -D -f slurm.conf`, in a UTS namespace named
//!    `controller`; wait until its port accepts a connection.
//! 8. Per node, `slurmd -D -N node{i} -f slurm.conf`, in the node's
//!    network namespace (K > 1) and in a UTS namespace whose host name is
//!    the node's, so `hostname` in a task says where it runs.
//! 9. Wait until `sinfo` lists every node idle, asking every 20 ms
//!    ([`crate::retry`]: nothing announces a node's registration), until
//!    slurmctld ends or the plan's deadline passes; the error then holds
//!    the tail of every daemon's log.
//!
//! Every daemon is a [`ProcessGroup`], killed with its descendants on a
//! signal ([`crate::interrupt`]) as when the cluster is dropped, and
//! killed by the kernel when the thread that started the cluster ends
//! (`PR_SET_PDEATHSIG`; a test killed by a timeout drops nothing, and
//! only a step running then outlives it, until its tasks end): keep a
//! cluster on the thread that started it.
//!
//! # Teardown
//!
//! Dropping the cluster, also while a failed test unwinds:
//!
//! 1. `scancel --partition=all`, at most 5 s, so that steps end cleanly.
//! 2. Kill each slurmd's process group with every descendant, then
//!    slurmctld's, then munged's.
//! 3. Kill the slurmstepds with their tasks: slurmd starts them through a
//!    child that exits at once, so they are not its descendants, but they
//!    work in the scratch directory (slurmd's), and every process working
//!    there is killed with its process group and descendants. (On a
//!    signal, [`crate::interrupt`] does the same: the cluster registers
//!    this step there.)
//! 4. Remove the emulated hosts (K > 1), then the scratch directory.
//!
//! # Using it
//!
//! [`SlurmCluster::srun`] and [`SlurmCluster::sbatch`] with
//! [`SlurmCluster::wait_job`] run jobs with a deadline. For the first 3 s
//! slurmctld's scheduler has not yet made its first pass, and a job that
//! cannot start at once waits for it; [`SlurmCluster::wait_scheduler`]
//! waits for that pass (a benchmark's first timings would be off).
//! Steps in an allocation ([`SlurmCluster::allocate`], then `srun
//! --jobid`) need no scheduling at all: what a benchmark timing `srun`
//! should run. To run a client
//! yourself (a benchmark timing `srun`), take [`SlurmCluster::command`],
//! or set [`SlurmCluster::env`] (just `SLURM_CONF`) on your own command.
//! Clients run in the root namespace; tasks in the nodes' namespaces
//! reach them, and slurmctld, through the bridge. A client started so is
//! the caller's to end: one whose step was running when the cluster went
//! down tries the gone slurmctld for some 20 s.

mod client;
mod config;
mod daemons;
mod error;
mod jobs;

pub use config::SlurmNode;
pub use error::SlurmError;
pub use jobs::{FinishedJob, JobId, JobState};

use std::ffi::OsStr;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use client::{command_line, Clients};
use config::{slurm_conf, ConfigPlan, Paths};
use daemons::{
    start_munged, start_slurmctld, start_slurmd, tail, uts_unavailable, write_munge_key, Programs,
};
use error::{io_error, SlurmErrorKind};
use jobs::{all_idle, field, parse_allocation, parse_job_id};

use crate::group::ProcessGroup;
use crate::interrupt::{registry, Registry, Removable, GROUPS_GRACE};
use crate::net::{Link, Net, NetConfig, ScopedNet};
use crate::watch::{wait_until, Watched};

/// The host name of slurmctld's UTS namespace, and `SlurmctldHost=`.
const CONTROLLER: &str = "controller";
/// How long teardown waits for `scancel`.
const CANCEL_DEADLINE: Duration = Duration::from_secs(5);
/// How long a query made by this module (`sinfo`, `scontrol`) may take.
const QUERY_DEADLINE: Duration = Duration::from_secs(10);

/// What [`SlurmCluster::start`] brings up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmPlan {
    /// Hosts, one slurmd each: 1 runs it in the root namespace, more each
    /// in a network namespace of its own (at most 253).
    pub hosts: u32,
    /// CPUs each node claims (`CPUs=`), whatever the machine has, so that
    /// many tasks fit on few cores.
    pub cpus_per_host: u32,
    /// How long bring-up may take, until every node is idle.
    pub start_timeout: Duration,
}

impl SlurmPlan {
    /// `hosts` hosts of 64 CPUs each, 60 s to come up.
    pub fn new(hosts: u32) -> SlurmPlan {
        SlurmPlan {
            hosts,
            cpus_per_host: 64,
            start_timeout: Duration::from_secs(60),
        }
    }
}

/// A running Slurm cluster, torn down when dropped (module docs).
#[derive(Debug)]
pub struct SlurmCluster {
    // Dropped in this order, after `Drop::drop` cancelled the jobs:
    // daemons, steps and their tasks, hosts, directory (teardown).
    daemons: Daemons,
    net: Option<ScopedNet>,
    dir: ScratchDir,
    name: String,
    nodes: Vec<SlurmNode>,
    programs: Programs,
    clients: Clients,
    scripts: AtomicU32,
    started_in: Duration,
}

/// The daemons and the steps they started, killed when dropped
/// (teardown, steps 2 and 3).
#[derive(Debug)]
struct Daemons {
    slurmds: Vec<ProcessGroup>,
    slurmctld: Option<ProcessGroup>,
    munged: Option<ProcessGroup>,
    steps: Steps,
}

impl Drop for Daemons {
    fn drop(&mut self) {
        // The slurmds first, which start steps, while slurmctld and
        // munged, which they may still call, live; the steps once no
        // slurmd can start another.
        let daemons = self.slurmds.iter_mut();
        for daemon in daemons.chain(&mut self.slurmctld).chain(&mut self.munged) {
            daemon.kill();
        }
        self.steps.kill_and_unregister();
    }
}

impl SlurmCluster {
    /// Brings up the cluster `plan` describes (module docs, "Bring-up").
    pub fn start(plan: &SlurmPlan) -> Result<SlurmCluster, SlurmError> {
        let started = Instant::now();
        let deadline = started + plan.start_timeout;
        if !(1..=253).contains(&plan.hosts) {
            return Err(SlurmErrorKind::Plan("hosts must be 1 to 253").into());
        }
        if plan.cpus_per_host == 0 {
            return Err(SlurmErrorKind::Plan("cpus_per_host must be at least 1").into());
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(SlurmErrorKind::NotRoot.into());
        }
        let programs = Programs::find()?;
        if let Some(reason) = uts_unavailable() {
            return Err(SlurmErrorKind::NoNamespaces(reason).into());
        }
        let (name, net) = name_and_hosts(plan.hosts)?;
        let (controller_addr, nodes) = match &net {
            Some(net) => (
                net.bridge_addr,
                (0..)
                    .zip(&net.hosts)
                    .map(|(i, host)| SlurmNode {
                        name: format!("node{i}"),
                        addr: host.addr,
                    })
                    .collect(),
            ),
            None => (
                Ipv4Addr::LOCALHOST,
                vec![SlurmNode {
                    name: "node0".into(),
                    addr: Ipv4Addr::LOCALHOST,
                }],
            ),
        };
        let dir = ScratchDir::create(&name)?;
        let mut daemons = Daemons {
            slurmds: Vec::new(),
            slurmctld: None,
            munged: None,
            steps: Steps::register(&dir.0),
        };
        let paths = Paths::new(&dir.0);
        for sub in [&paths.state, &paths.spool] {
            std::fs::create_dir_all(sub)
                .map_err(io_error(format!("creating {}", sub.display())))?;
        }
        let plugstack = dir.0.join("plugstack.conf");
        std::fs::write(&plugstack, "").map_err(io_error("writing plugstack.conf"))?;
        write_munge_key(&dir.0.join("munge.key"))?;
        daemons.munged = Some(start_munged(&programs, &dir.0, deadline)?);

        let (controller_port, slurmd_port) = free_ports()?;
        let conf = slurm_conf(&ConfigPlan {
            cluster: &name,
            dir: &dir.0,
            controller: (CONTROLLER, controller_addr),
            controller_port,
            slurmd_port,
            nodes: &nodes,
            cpus_per_host: plan.cpus_per_host,
        });
        std::fs::write(&paths.conf, conf).map_err(io_error("writing slurm.conf"))?;
        let slurmctld = start_slurmctld(&programs, &dir.0, CONTROLLER)?;
        let controller = SocketAddr::from((controller_addr, controller_port));
        let listening = crate::retry::retry_until(deadline, || {
            if slurmctld.has_exited() {
                return Some(false);
            }
            TcpStream::connect_timeout(&controller, Duration::from_millis(200))
                .ok()
                .map(|_| true)
        });
        daemons.slurmctld = Some(slurmctld);
        if listening != Some(true) {
            return Err(SlurmErrorKind::DaemonExited {
                daemon: format!("slurmctld (not listening on {controller})"),
                logs: daemon_logs(&dir.0, &nodes),
            }
            .into());
        }
        for (node, host) in nodes.iter().zip(0..) {
            let netns = net.as_ref().map(|net| net.hosts[host].name.as_str());
            daemons
                .slurmds
                .push(start_slurmd(&programs, &dir.0, &node.name, netns)?);
        }
        let clients = Clients::new(&dir.0, &paths.conf)?;
        let mut cluster = SlurmCluster {
            daemons,
            net,
            dir,
            name,
            nodes,
            programs,
            clients,
            scripts: AtomicU32::new(0),
            started_in: Duration::ZERO,
        };
        cluster.wait_idle(started, deadline)?;
        cluster.started_in = started.elapsed();
        Ok(cluster)
    }

    /// Bring-up, step 9.
    fn wait_idle(&self, started: Instant, deadline: Instant) -> Result<(), SlurmError> {
        let slurmctld = self.daemons.slurmctld.as_ref().expect("started");
        let mut listing = String::new();
        // Nothing announces a node's registration: slurmctld logs it only
        // at debug level (where it logs every sinfo too) and saves node
        // states lazily, so this asks (a few dozen times, < 1 s in all).
        let idle = crate::retry::retry_until(deadline, || {
            if slurmctld.has_exited() {
                return Some(false);
            }
            let query_deadline = deadline.min(Instant::now() + QUERY_DEADLINE);
            listing = self
                .clients
                .stdout(
                    &self.programs.sinfo,
                    &["-h", "-N", "-o", "%N %T"],
                    query_deadline,
                )
                .unwrap_or_else(|e| e.to_string());
            all_idle(&listing, self.nodes.len()).then_some(true)
        });
        match idle {
            Some(true) => Ok(()),
            _ => Err(SlurmErrorKind::NotReady {
                waited: started.elapsed(),
                states: listing.trim().to_string(),
                logs: daemon_logs(&self.dir.0, &self.nodes),
            }
            .into()),
        }
    }

    /// Runs `srun args` to its end, at most `timeout`, and returns what it
    /// printed and its status, whatever the status.
    pub fn srun<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        timeout: Duration,
    ) -> Result<Output, SlurmError> {
        self.clients
            .output(&self.programs.srun, args, Instant::now() + timeout)
            .map_err(|e| e.with_logs(|| daemon_logs(&self.dir.0, &self.nodes)))
    }

    /// Submits `script` as a batch job (`#!/bin/sh` is put first if it has
    /// no `#!` line; `#SBATCH` lines set options) and returns its id. Its
    /// standard output and error go to one file, which
    /// [`wait_job`](Self::wait_job) reads.
    pub fn sbatch(&self, script: &str) -> Result<JobId, SlurmError> {
        let jobs = self.jobs_dir();
        std::fs::create_dir_all(&jobs).map_err(io_error("creating the jobs directory"))?;
        let n = self.scripts.fetch_add(1, Ordering::Relaxed);
        let path = jobs.join(format!("script-{n}.sh"));
        let text = match script.starts_with("#!") {
            true => script.to_string(),
            false => format!("#!/bin/sh\n{script}"),
        };
        std::fs::write(&path, text).map_err(io_error(format!("writing {}", path.display())))?;
        let args = [
            "--parsable".into(),
            format!("--output={}/slurm-%j.out", jobs.display()),
            format!("--chdir={}", jobs.display()),
            path.display().to_string(),
        ];
        let deadline = Instant::now() + QUERY_DEADLINE;
        let printed = self
            .clients
            .stdout(&self.programs.sbatch, &args, deadline)?;
        parse_job_id(&printed).ok_or_else(|| {
            SlurmErrorKind::Output {
                line: command_line(&self.programs.sbatch, &args),
                output: printed,
            }
            .into()
        })
    }

    /// Allocates resources with `salloc --no-shell args` (`-N 3 -n 12`,
    /// say) and returns the allocation's job id, which holds them until
    /// it is cancelled or the cluster goes. Steps run in it with
    /// `srun --jobid=ID`, and need no scheduling: a benchmark timing
    /// `srun` runs it so (measured, back-to-back `srun -N 3 -n 4 true`
    /// took 134-162 ms each in an allocation, and 0.15-1.2 s each without,
    /// as each new job waits for the nodes of the one before to finish
    /// completing).
    pub fn allocate<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<JobId, SlurmError> {
        let mut all: Vec<&OsStr> = vec![OsStr::new("--no-shell")];
        all.extend(args.iter().map(AsRef::as_ref));
        let deadline = Instant::now() + QUERY_DEADLINE;
        let output = self.clients.output(&self.programs.salloc, &all, deadline)?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        match parse_allocation(&stderr) {
            Some(job) if output.status.success() => Ok(job),
            _ => Err(SlurmErrorKind::Command {
                line: command_line(&self.programs.salloc, &all),
                status: output.status,
                stderr: stderr.trim().to_string(),
            }
            .into()),
        }
    }

    /// Waits until job `job` has ended, at most `timeout`, and returns how
    /// it ended and its output file. Checked whenever a file in the
    /// cluster directory changes, not on a timer: slurmctld logs
    /// `_job_complete` there as a job ends. The job may then still be
    /// completing (its nodes' epilogs), which ends with no file changed;
    /// from then on this asks every 20 ms ([`crate::retry`]).
    pub fn wait_job(&self, job: JobId, timeout: Duration) -> Result<FinishedJob, SlurmError> {
        let started = Instant::now();
        let deadline = started + timeout;
        let slurmctld = self.daemons.slurmctld.as_ref().expect("started");
        // `JobState=` and `ExitCode=` last seen, or why none was.
        let mut last = (String::new(), String::new());
        let ask = |last: &mut (String, String)| {
            let query_deadline = deadline.min(Instant::now() + QUERY_DEADLINE);
            *last = self
                .job_state(job, query_deadline)
                .unwrap_or_else(|e| (e.to_string(), String::new()));
            JobState::ended(&last.0)
        };
        let mut ended = None;
        let ended_or_completing = || {
            ended = ask(&mut last);
            ended.is_some() || last.0 == "COMPLETING"
        };
        wait_until(
            &self.dir.0,
            ended_or_completing,
            Some(slurmctld.pidfd()),
            deadline,
        )
        .map_err(io_error(format!("waiting for job {job}")))?;
        if ended.is_none() && last.0 == "COMPLETING" {
            ended = crate::retry::retry_until(deadline, || ask(&mut last));
        }
        let Some(state) = ended else {
            return Err(SlurmErrorKind::JobTimeout {
                job: job.0,
                after: started.elapsed(),
                state: last.0,
                logs: daemon_logs(&self.dir.0, &self.nodes),
            }
            .into());
        };
        let exit_code = last.1;
        let out = self.jobs_dir().join(format!("slurm-{job}.out"));
        let output = std::fs::read_to_string(&out)
            .map_err(io_error(format!("reading {}", out.display())))?;
        Ok(FinishedJob {
            state,
            exit_code,
            output,
        })
    }

    /// Waits until slurmctld's scheduler has made its first pass, some
    /// 3 s after slurmctld started, at most `timeout`. Until then a job
    /// that cannot start at once (its nodes still finishing the previous
    /// job) waits for that pass: measured, the second of back-to-back
    /// `srun -N 3` took 3.0 s against 0.2 s. A benchmark timing `srun`
    /// calls this first. Woken by slurmctld's log, which the pass writes
    /// (`SchedulerParameters=…`).
    pub fn wait_scheduler(&self, timeout: Duration) -> Result<(), SlurmError> {
        let log = Paths::controller_log(&self.dir.0);
        let passed = || {
            std::fs::read_to_string(&log).is_ok_and(|text| text.contains("SchedulerParameters="))
        };
        let slurmctld = self.daemons.slurmctld.as_ref().expect("started");
        let deadline = Instant::now() + timeout;
        let watched = wait_until(&self.dir.0, passed, Some(slurmctld.pidfd()), deadline)
            .map_err(io_error("waiting for slurmctld's scheduler"))?;
        match watched {
            Watched::Ready => Ok(()),
            Watched::ProcessExited | Watched::TimedOut => Err(SlurmErrorKind::DaemonExited {
                daemon: format!("slurmctld (no scheduler pass within {timeout:?})"),
                logs: daemon_logs(&self.dir.0, &self.nodes),
            }
            .into()),
        }
    }

    /// The environment a Slurm client needs to use this cluster: only
    /// `SLURM_CONF` (the munge socket is named in the configuration).
    /// Also remove an outer job's `SLURM_JOB_ID` and the like, as
    /// [`command`](Self::command) does.
    pub fn env(&self) -> Vec<(String, PathBuf)> {
        self.clients.env()
    }

    /// `program` (`srun`, `sbatch`, …) as a command set up for this
    /// cluster ([`env`](Self::env)), for a caller that runs and times it
    /// itself.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        self.clients.command(program)
    }

    /// The nodes, `node0` … in host order.
    pub fn nodes(&self) -> &[SlurmNode] {
        &self.nodes
    }

    /// The emulated hosts of a cluster of several: node `i` runs in the
    /// network namespace of host `i`. `None` for one host (no namespace).
    pub fn net(&self) -> Option<&Net> {
        self.net.as_deref()
    }

    /// The cluster's name (`ClusterName=`, and its emulated net's prefix).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The scratch directory holding the configuration, logs and job
    /// output; removed with the cluster.
    pub fn dir(&self) -> &Path {
        &self.dir.0
    }

    /// How long [`start`](Self::start) took, until every node was idle.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// `JobState=` and `ExitCode=` of `scontrol show job`.
    fn job_state(&self, job: JobId, deadline: Instant) -> Result<(String, String), SlurmError> {
        let args = [
            "-o".to_string(),
            "show".into(),
            "job".into(),
            job.to_string(),
        ];
        let line = self
            .clients
            .stdout(&self.programs.scontrol, &args, deadline)?;
        let value = |key| field(&line, key).unwrap_or("?").to_string();
        Ok((value("JobState"), value("ExitCode")))
    }

    fn jobs_dir(&self) -> PathBuf {
        self.dir.0.join("jobs")
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        let slurmctld_runs = self
            .daemons
            .slurmctld
            .as_ref()
            .is_some_and(|c| !c.has_exited());
        if slurmctld_runs {
            let deadline = Instant::now() + CANCEL_DEADLINE;
            let cancel = ["--partition=all", "--full"];
            if let Err(e) = self
                .clients
                .stdout(&self.programs.scancel, &cancel, deadline)
            {
                tracing::warn!("cancelling the jobs of Slurm cluster {}: {e}", self.name);
            }
        }
        // The fields do the rest (their order).
    }
}

/// The cluster's name, unique in this process and among processes
/// (bring-up, step 2), and its emulated hosts for `hosts` > 1. A net is
/// tried under a few names, as the name picks its subnet, which another
/// net may hold.
fn name_and_hosts(hosts: u32) -> Result<(String, Option<ScopedNet>), SlurmError> {
    static CLUSTERS: AtomicU32 = AtomicU32::new(0);
    let next_name = || {
        let n = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        format!("sl{}x{n}", std::process::id() % 100_000)
    };
    if hosts == 1 {
        return Ok((next_name(), None));
    }
    let name = next_name();
    if let Some(reason) = crate::net::unavailable(&name) {
        return Err(SlurmErrorKind::NoNamespaces(reason).into());
    }
    let mut tried = 0;
    let mut name = name;
    loop {
        let config = NetConfig {
            prefix: name.clone(),
            ..NetConfig::new(hosts, Link::Unshaped)
        };
        match ScopedNet::up(&config) {
            Ok(net) => return Ok((name, Some(net))),
            Err(e) if tried == 4 => return Err(SlurmErrorKind::Net(e).into()),
            Err(_) => {
                tried += 1;
                name = next_name();
            }
        }
    }
}

/// Two ports free on every address now (bring-up, step 6). Another
/// process may take one before slurmctld or slurmd binds it; the daemon
/// then fails and bring-up says so.
fn free_ports() -> Result<(u16, u16), SlurmError> {
    let bind =
        || TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(io_error("finding a free port"));
    // Both held open until both are known, so they differ.
    let (first, second) = (bind()?, bind()?);
    let port = |l: &TcpListener| {
        l.local_addr()
            .map(|a| a.port())
            .map_err(io_error("finding a free port"))
    };
    Ok((port(&first)?, port(&second)?))
}

/// The tails of every daemon's log and early output, for an error.
fn daemon_logs(dir: &Path, nodes: &[SlurmNode]) -> String {
    let mut files = vec![
        dir.join("munged.stderr"),
        dir.join("slurmctld.stderr"),
        Paths::controller_log(dir),
    ];
    for node in nodes {
        files.push(dir.join(format!("slurmd-{}.stderr", node.name)));
        files.push(Paths::slurmd_log(dir, &node.name));
    }
    files.iter().map(|f| tail(f)).collect()
}

/// The slurmstepds of a cluster and their tasks, killed with the daemons
/// (teardown, step 3) and on a signal: every process working in the
/// cluster directory, with its process group and descendants.
#[derive(Debug)]
struct Steps(PathBuf);

impl Steps {
    /// Registered with [`crate::interrupt`] before any daemon starts
    /// (its rule 1).
    fn register(dir: &Path) -> Steps {
        registry().add_removable(Box::new(Steps(dir.to_path_buf())));
        Steps(dir.to_path_buf())
    }

    fn kill(&self) -> usize {
        let groups = crate::process::groups_working_in(&self.0);
        crate::process::kill_groups_and_descendants(&groups, GROUPS_GRACE)
    }

    fn kill_and_unregister(&self) {
        let mut registry = registry();
        self.kill();
        registry.remove_removable(&self.name());
    }
}

impl Removable for Steps {
    fn name(&self) -> String {
        format!("slurm steps in {}", self.0.display())
    }

    fn remove(&self, _locked: &Registry) -> Result<(), Box<dyn std::error::Error>> {
        self.kill();
        Ok(())
    }
}

/// The cluster's scratch directory, registered with [`crate::interrupt`]
/// and removed when dropped.
#[derive(Debug)]
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn create(name: &str) -> Result<ScratchDir, SlurmError> {
        let path = std::env::temp_dir().join(format!("threadwire-slurm-{name}"));
        // Left by a killed run of a process with the same id.
        let _ = std::fs::remove_dir_all(&path);
        crate::interrupt::create_scratch_dir(&path)
            .map_err(io_error(format!("creating {}", path.display())))?;
        let dir = ScratchDir(path);
        // Searchable by all: munged warns of a socket others cannot reach.
        std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o711))
            .map_err(io_error(format!("setting the mode of {}", dir.0.display())))?;
        Ok(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(e) = crate::interrupt::remove_scratch_dir(&self.0) {
            tracing::warn!("removing {}: {e}", self.0.display());
        }
    }
}
