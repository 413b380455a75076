//! The command line: clap's types, as the user types them; `main` turns
//! them into the libraries' options.

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use threadwire_bench::report::Format;
use threadwire_testbed::net::{Delay, Link, Load, Loss};

mod bench;

pub use bench::*;

#[derive(Parser)]
#[command(
    name = "threadwire",
    version,
    about = "Thread-addressed message passing: run jobs, applications and benchmarks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Start N nodes of a program on this host and wait for them.
    Run(RunArgs),
    /// Run a PVM 3.4 program, unchanged, on threadwire's libpvm3.so.3: no
    /// pvmd; tasks it spawns join the job. Its output is as under PVM;
    /// spawned tasks' lines follow on stderr after their tids.
    Pvm(PvmArgs),
    /// Run a bundled application as a job.
    #[command(subcommand)]
    Apps(crate::apps::App),
    /// Measure threadwire.
    #[command(subcommand)]
    Bench(Bench),
    /// Print version and the environment contract.
    Info,
    /// Emulated hosts: network namespaces on a bridge, links shaped with tc (needs root).
    #[command(subcommand)]
    Net(Net),
    /// See and change a running job's machine, as PVM's console: without a
    /// request, list this user's running jobs.
    Vm(VmArgs),
    /// A job's proxy on an ssh host, started by the launcher over ssh; it
    /// speaks the launcher's protocol on standard input and output
    /// (threadwire_launch::proxy), so it is not for typing.
    #[command(hide = true)]
    Proxy,
}

#[derive(Args)]
#[command(after_help = "\
Every job `threadwire run` starts opens a console: a Unix-domain socket named by
its job id in a directory of this user's alone ($THREADWIRE_CONSOLE_DIR, else
$XDG_RUNTIME_DIR/threadwire, else /tmp/threadwire-<uid>; mode 0700, sockets
0600), removed when the job ends. `threadwire vm` talks to it; so may anything
that writes one request line to the socket (threadwire_launch::console has the
protocol).

Examples:
  threadwire vm                                 # running jobs of this user
  threadwire vm nodes                           # the one running job's nodes
  threadwire vm --job 3f2a hosts                # a job named by an id prefix
  threadwire vm add-hosts netns:twh1
  threadwire vm add-nodes 2 --host netns:twh1  # 2 more of the job's program
  threadwire vm add-nodes 1 -- ./worker --fast  # another program, its arguments
  threadwire vm remove-hosts netns:twh1        # kills the nodes on it")]
pub struct VmArgs {
    /// The job to talk to: its id as `threadwire vm` lists it (16 hex
    /// digits, THREADWIRE_JOB), or a prefix of it; needed when several jobs
    /// run.
    #[arg(long, value_name = "ID", global = true)]
    pub job: Option<String>,
    #[command(subcommand)]
    pub request: Option<VmRequest>,
}

#[derive(Subcommand, Clone)]
pub enum VmRequest {
    /// The job's host table: number, name, present or removed, and the
    /// live nodes on each (PVM's `conf`).
    Hosts,
    /// Every node: number, host, pid, threads started, listen address and
    /// state — joining, running, finished, failed (with the cause) or
    /// killed (host removed) (PVM's `ps -a`). A node that does not say its
    /// thread count within 1 s shows `?`.
    Nodes,
    /// Add hosts (`local`, `netns:NAME`, `ssh:HOST`) to the job's host
    /// table; one present already is left as it is (PVM's `add`).
    AddHosts {
        #[arg(required = true, value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// Remove hosts from the job, killing the nodes that run on them; their
    /// peers are told, the job goes on (PVM's `delete`).
    RemoveHosts {
        #[arg(required = true, value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// Start N processes that join the job — of its program and arguments,
    /// or of PROGRAM ARGS — on its hosts in turn or on --host, and print
    /// their node numbers once all have joined (PVM's `spawn`).
    AddNodes {
        /// How many.
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        count: u32,
        /// On this host (added to the job's if it is not there).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Another program than the job's (a path every host has), and its
        /// arguments.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "PROGRAM ARGS"
        )]
        program: Vec<OsString>,
    },
}

#[derive(Subcommand)]
pub enum Net {
    /// Create K hosts (namespaces PREFIXh0…) on a bridge, each link shaped to
    /// the given rate, and optionally lossy, slow or loaded; replaces an
    /// existing net of the same prefix.
    #[command(after_help = "\
Impairments act on what each host receives on eth0 (never on loopback), so
a path between two hosts has them once each way, and so does the path
between a host and this machine (a launcher on the bridge address):

  --loss 1         each host drops 1% of the packets it receives at random
                   (iptables' statistic match); a round trip loses ~2%
  --delay 5ms/1ms  each host holds what it receives 5 ms ± 1 ms (uniform,
                   never reordered) in a delay queue, a helper process
                   reading NFQUEUE 0 in the namespace: a ping's round trip
                   grows by ~10 ms. At most 4096 packets held per host,
                   more are dropped (counted by the kernel, see `net show`);
                   if the queue process dies, packets pass undelayed
                   (--queue-bypass)
  --load 0.5       a source in namespace PREFIXload (10.77.N.253) sends
                   every host UDP at half its link's rate, which competes
                   with the job's packets on the host's receive link and is
                   dropped on arrival; needs a shaped --link

`net down` stops the helper processes and removes all of it; so does a
Ctrl-C during `net up`. Needs iptables for --loss, --delay and --load.

Examples:
  threadwire net up --hosts 4 --link fast100 --loss 0.5
  threadwire net up --link atm155 --delay 5ms/1ms --load 0.2")]
    Up {
        /// Number of hosts.
        #[arg(long, default_value_t = 2)]
        hosts: u32,
        /// ethernet10, fast100, atm155 (its 135.6 Mbit/s payload rate),
        /// gige or none.
        #[arg(long, default_value = "none")]
        link: Link,
        /// Percent of received packets each host drops at random (1, 0.5).
        #[arg(long, value_name = "P")]
        loss: Option<Loss>,
        /// One-way delay each host adds to what it receives, with an
        /// optional jitter (5ms, 5ms/1ms; us, ms or s).
        #[arg(long, value_name = "D[/J]")]
        delay: Option<Delay>,
        /// Background UDP on each host's receive link, as a fraction of
        /// the link's rate (0.2, 0.5, 0.9); needs a shaped --link.
        #[arg(long, value_name = "F")]
        load: Option<Load>,
        #[command(flatten)]
        prefix: Prefix,
    },
    /// Remove the net of this prefix (nothing to do is fine).
    Down(Prefix),
    /// Describe the net of this prefix.
    Show(Prefix),
    /// A host's delay queue, started by `net up --delay`.
    #[command(hide = true)]
    DelayQueue(Helper),
    /// The load's source, started by `net up --load`.
    #[command(hide = true)]
    LoadSource(Helper),
}

/// A helper's arguments, as `net up` writes them
/// (threadwire_testbed::net::serve_helper).
#[derive(Args)]
pub struct Helper {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Args)]
pub struct Prefix {
    /// Name prefix of the namespaces, veths and bridge.
    #[arg(long, default_value = "tw")]
    pub prefix: String,
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// The program and its arguments.
    #[arg(required = true, last = true)]
    pub program: Vec<OsString>,
}

#[derive(Args)]
pub struct PvmArgs {
    /// Copies of the program to start (each a PVM task, siblings).
    #[arg(short = 'n', long = "nodes", default_value_t = 1)]
    pub nodes: u32,
    /// Kill the job after this many seconds.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// The virtual machine's hosts, as `threadwire run --hosts` takes them.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// Address of this host that the tasks reach the launcher at.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Channel between tasks: auto (shared memory on one host, TCP
    /// between hosts), tcp, shm, or udp (the reliable UDP channel between
    /// every pair).
    #[arg(long, value_parser = ["auto", "tcp", "shm", "udp"])]
    pub channel: Option<String>,
    /// Print tasks' joins and leaves and changes to the machine.
    #[arg(short, long)]
    pub verbose: bool,
    /// Join a running job of `threadwire pvm` instead of starting one: the
    /// program runs here as a new task of that machine, its output on this
    /// terminal, as a PVM program started from a shell enrolls in the
    /// running virtual machine.
    #[arg(long, conflicts_with_all = ["nodes", "hosts", "timeout", "library_dir"])]
    pub join: bool,
    /// With --join, when several jobs run: the job (a prefix of its id, as
    /// `threadwire vm` shows it).
    #[arg(long = "job", value_name = "ID", requires = "join")]
    pub job_id: Option<String>,
    /// Print the directory holding libpvm3.so.3 and libgpvm3.so.3 (for
    /// LD_LIBRARY_PATH) and exit.
    #[arg(long, conflicts_with = "program")]
    pub library_dir: bool,
    /// The program and its arguments.
    #[arg(required_unless_present = "library_dir", last = true)]
    pub program: Vec<OsString>,
}

impl PvmArgs {
    /// The options a job of any program takes.
    pub fn job(&self) -> JobArgs {
        JobArgs {
            nodes: self.nodes,
            timeout: self.timeout,
            keep_going: true,
            channel: self.channel.clone(),
            verbose: self.verbose,
            hosts: self.hosts.clone(),
            bind: self.bind,
            ..JobArgs::default()
        }
    }
}

#[derive(Args, Clone, Default)]
pub struct JobArgs {
    /// Number of nodes.
    #[arg(short = 'n', long = "nodes", default_value_t = 2)]
    pub nodes: u32,
    /// Kill the job after this many seconds.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Print per-node message and byte counts at the end.
    #[arg(long)]
    pub stats: bool,
    /// When a node fails, tell the others but let them run on.
    #[arg(long)]
    pub keep_going: bool,
    /// Start a communication thread in every node (THREADWIRE_PROGRESS=thread).
    #[arg(long)]
    pub progress_thread: bool,
    /// Channel between nodes: auto (shared memory on one host, TCP between
    /// hosts), tcp, shm, or udp (the reliable UDP channel between every
    /// pair) (THREADWIRE_CHANNEL).
    #[arg(long, value_parser = ["auto", "tcp", "shm", "udp"])]
    pub channel: Option<String>,
    /// Print each node's join with the channel it uses to each peer, each
    /// node's leave, and every change its nodes make to the machine (nodes
    /// and hosts added or removed); nodes that log (`Config::log`) also say
    /// how their broadcasts went (THREADWIRE_LOG=warn,threadwire=info
    /// unless set).
    #[arg(short, long)]
    pub verbose: bool,
    /// The most nodes the job may grow to when its nodes add more
    /// (`Endpoint::add_nodes`); default 1024, or -n if more.
    #[arg(long, value_name = "N")]
    pub max_nodes: Option<u32>,
    /// Run the nodes on the hosts this file lists, one per line: `local`,
    /// `netns:NAME` (a namespace of `threadwire net up`) or `ssh:HOST`;
    /// node i on line i modulo their number.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// Address of this host that the nodes reach the launcher at (default
    /// 127.0.0.1; `ssh:` hosts need one they can reach).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
}

/// `--link` of the benchmarks between two nodes.
#[derive(Args, Clone, Copy)]
pub struct OnLink {
    /// Run the two nodes on two emulated hosts joined by this link
    /// (ethernet10, fast100, atm155, gige or none; needs root), built for
    /// the run and removed after it.
    #[arg(long)]
    pub link: Option<Link>,
}

/// `--json` / `--csv` of the benchmarks that print a table.
#[derive(Args, Clone, Copy)]
pub struct MachineReadable {
    /// Print the results on stdout as one JSON document instead of the table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the results on stdout as CSV, a header and one line per row, instead of the table.
    #[arg(long)]
    pub csv: bool,
}

impl MachineReadable {
    /// The format asked for: the table unless `--json` or `--csv`.
    pub fn format(self) -> Format {
        match (self.json, self.csv) {
            (true, _) => Format::Json,
            (_, true) => Format::Csv,
            _ => Format::Table,
        }
    }
}
