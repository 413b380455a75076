//! The `threadwire` command: parses arguments and calls the libraries.

mod machine_readable;
mod progress;
mod render;
mod suite;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use progress::Progress;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use threadwire_bench::threads;
use threadwire_launch::{FailurePolicy, JobSpec};

#[derive(Parser)]
#[command(
    name = "threadwire",
    version,
    about = "Thread-addressed message passing: run jobs, applications and benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start N nodes of a program on this host and wait for them.
    Run(RunArgs),
    /// Run a bundled application as a job.
    #[command(subcommand)]
    Apps(App),
    /// Measure threadwire.
    #[command(subcommand)]
    Bench(Bench),
    /// Print version and the environment contract.
    Info,
    /// Emulated hosts: network namespaces on a bridge, links shaped with tc (needs root).
    #[command(subcommand)]
    Net(Net),
}

#[derive(Subcommand)]
enum Net {
    /// Create K hosts (namespaces PREFIXh0…) on a bridge, each link shaped to
    /// the given rate; replaces an existing net of the same prefix.
    Up {
        /// Number of hosts.
        #[arg(long, default_value_t = 2)]
        hosts: u32,
        /// ethernet10, fast100, atm155, gige or none.
        #[arg(long, default_value = "none")]
        link: threadwire_testbed::net::Link,
        /// Name prefix of the namespaces, veths and bridge.
        #[arg(long, default_value = "tw")]
        prefix: String,
    },
    /// Remove the net of this prefix (nothing to do is fine).
    Down {
        /// Name prefix of the namespaces, veths and bridge.
        #[arg(long, default_value = "tw")]
        prefix: String,
    },
    /// Describe the net of this prefix.
    Show {
        /// Name prefix of the namespaces, veths and bridge.
        #[arg(long, default_value = "tw")]
        prefix: String,
    },
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    job: JobArgs,
    /// The program and its arguments.
    #[arg(required = true, last = true)]
    program: Vec<OsString>,
}

#[derive(Args, Clone)]
struct JobArgs {
    /// Number of nodes.
    #[arg(short = 'n', long = "nodes", default_value_t = 2)]
    nodes: u32,
    /// Kill the job after this many seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Print per-node message and byte counts at the end.
    #[arg(long)]
    stats: bool,
    /// When a node fails, tell the others but let them run on.
    #[arg(long)]
    keep_going: bool,
    /// Start a communication thread in every node (THREADWIRE_PROGRESS=thread).
    #[arg(long)]
    progress_thread: bool,
    /// Channel between nodes on one host: auto (shared memory), tcp or shm
    /// (THREADWIRE_CHANNEL).
    #[arg(long, value_parser = ["auto", "tcp", "shm"])]
    channel: Option<String>,
    /// Print the channel each node uses to each peer.
    #[arg(short, long)]
    verbose: bool,
    /// Run the nodes on the hosts this file lists, one per line: `local`,
    /// `netns:NAME` (a namespace of `threadwire net up`) or `ssh:HOST`;
    /// node i on line i modulo their number.
    #[arg(long, value_name = "FILE")]
    hosts: Option<PathBuf>,
    /// Address of this host that the nodes reach the launcher at (default
    /// 127.0.0.1; `ssh:` hosts need one they can reach).
    #[arg(long, value_name = "ADDR")]
    bind: Option<std::net::IpAddr>,
}

#[derive(Subcommand)]
enum App {
    /// Host–node matrix multiply: node 0 distributes, worker threads compute, node 0 verifies.
    Matmul {
        #[command(flatten)]
        job: MatmulJob,
    },
}

#[derive(Args, Clone)]
struct MatmulJob {
    /// Number of nodes.
    #[arg(short = 'n', long = "nodes", default_value_t = 4)]
    nodes: u32,
    /// Matrix size.
    #[arg(long, default_value_t = 512)]
    size: usize,
    /// Worker threads per worker node.
    #[arg(long, default_value_t = 2)]
    threads: u32,
}

#[derive(Subcommand)]
enum Bench {
    /// Every benchmark, each run as its own command, into one report
    /// (OUT/README.md): the tables of docs/PERFORMANCE.md.
    Suite(suite::SuiteArgs),
    /// One-way latency and bandwidth, thread to thread in a node and node to node over TCP.
    Pingpong {
        /// Largest size as a power of two (default 24 = 16 MiB): the sweep
        /// is every power of two from 1 B and the classic sizes 8, 20, 100,
        /// 1000, 60000, 250000, 1000000 and 10000000 B up to it.
        #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=30))]
        max_power: u32,
        /// Sizes in bytes, comma-separated, instead of the sweep of --max-power.
        #[arg(long, value_delimiter = ',', conflicts_with = "max_power")]
        sizes: Option<Vec<usize>>,
        /// Paths to measure, comma-separated: `thread` (two fibers of one
        /// node), `shm` and `tcp` (node to node, one job each).
        #[arg(long, value_delimiter = ',', default_value = "thread,shm,tcp",
              value_parser = ["thread", "shm", "tcp"])]
        paths: Vec<String>,
        /// Repetitions per size.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        /// Milliseconds per repetition.
        #[arg(long, default_value_t = 100)]
        ms: u64,
        /// Also plot latency and bandwidth against size, with the 1998
        /// figures, into this directory (created if missing):
        /// pingpong-latency.svg/.png and pingpong-bandwidth.svg/.png.
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
        /// Also run NetPIPE, where installed, on the same paths and show
        /// its figures and our ratio to them: NPopenmpi and NPmpich2 beside
        /// shm, NPtcp and NPopenmpi over TCP beside tcp.
        #[arg(long)]
        peers: bool,
        #[command(flatten)]
        link: OnLink,
        #[command(flatten)]
        output: MachineReadable,
    },
    /// 8-byte message rate from T threads of node 0 to T threads of node 1 (as MPI's msgrate).
    Rate {
        /// Thread counts T, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1,2,4,8",
            value_parser = clap::value_parser!(u32).range(1..=64)
        )]
        threads: Vec<u32>,
        /// Messages per thread per repetition (msgrate.c's N is 200000).
        #[arg(long, default_value_t = 50_000)]
        messages: u64,
        /// Timed repetitions per thread count (after one untimed warm-up).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        /// Sends (receives) started before they are completed together.
        #[arg(long, default_value_t = 64)]
        window: usize,
        /// Kinds of threads to measure, comma-separated: os (as msgrate.c's pthreads), fibers.
        #[arg(long, value_delimiter = ',', default_value = "os")]
        kinds: Vec<threadwire_bench::rate::ThreadKind>,
        #[command(flatten)]
        link: OnLink,
        #[command(flatten)]
        output: MachineReadable,
    },
    /// Mutex, semaphore, switches, create+join and message round trip: fibers beside OS threads.
    Threads {
        /// Operations per repetition of the cheapest rows (costlier rows run a fixed fraction).
        #[arg(long, default_value_t = 200_000)]
        iterations: u64,
        /// Timed repetitions per row and column.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        #[command(flatten)]
        output: MachineReadable,
    },
    /// Start-up cost of N node processes, fibers and OS threads (1998: 57.75 ms pvm_spawn, 1.75 ms thread).
    Spawn {
        /// Numbers N to start, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1,4,8,16",
            value_parser = clap::value_parser!(u32).range(1..=64)
        )]
        counts: Vec<u32>,
        /// Timed repetitions per row (after one untimed warm-up).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        /// Start the node processes on two emulated hosts joined by this
        /// link, node i on host i mod 2 (needs root); the other rows stay
        /// on this host.
        #[arg(long)]
        link: Option<threadwire_testbed::net::Link>,
        #[command(flatten)]
        output: MachineReadable,
    },
    /// Communication time for 1 B, 1 KB, 32 KB and 1 MB between threads, nodes and
    /// emulated hosts: one-way ping-pong ms (1998: 5.53 ms Ethernet, 1.01 ms threads at 1 B).
    Comm {
        /// Links of the host-to-host rows, comma-separated, each built for its
        /// run and removed after (ethernet10, fast100, atm155, gige, none; root).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "ethernet10,fast100,atm155,gige"
        )]
        links: Vec<threadwire_testbed::net::Link>,
        /// Repetitions per size (fewer on slow links, to fit --seconds).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        /// Milliseconds per repetition, at least.
        #[arg(long, default_value_t = 50)]
        ms: u64,
        /// Seconds a size's repetitions may take on a link, by its rate
        /// (at least one repetition).
        #[arg(long, default_value_t = 7.0)]
        seconds: f64,
        #[command(flatten)]
        output: MachineReadable,
    },
    /// Ping-pong of f64 values packed and unpacked in each encoding (raw, portable,
    /// in-place, receiver-makes-right) between two nodes: one-way time and MB/s.
    Encodings {
        /// Largest size as a power of two (default 24 = 16 MiB), swept as
        /// `bench pingpong` does; sizes are rounded up to whole f64 values.
        #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=30))]
        max_power: u32,
        /// Sizes in bytes, comma-separated, instead of the sweep of --max-power.
        #[arg(long, value_delimiter = ',', conflicts_with = "max_power")]
        sizes: Option<Vec<usize>>,
        /// Repetitions per size and encoding.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        /// Milliseconds per repetition.
        #[arg(long, default_value_t = 100)]
        ms: u64,
        #[command(flatten)]
        link: OnLink,
        #[command(flatten)]
        output: MachineReadable,
    },
    /// The physical floors of this machine: a cache line between cores, a sleeping
    /// thread's wake-up, memcpy bandwidth and loopback TCP.
    Floors {
        /// Timed repetitions per row (after one untimed warm-up).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: u32,
        /// Milliseconds per repetition (iteration counts are calibrated to it).
        #[arg(long, default_value_t = 100)]
        ms: u64,
        #[command(flatten)]
        output: MachineReadable,
    },
}

/// `--link` of the benchmarks between two nodes.
#[derive(Args, Clone, Copy)]
struct OnLink {
    /// Run the two nodes on two emulated hosts joined by this link
    /// (ethernet10, fast100, atm155, gige or none; needs root), built for
    /// the run and removed after it.
    #[arg(long)]
    link: Option<threadwire_testbed::net::Link>,
}

impl OnLink {
    /// The emulated hosts, if asked for: node 0 on the first, node 1 on
    /// the second.
    fn net(&self) -> Result<Option<threadwire_testbed::net::ScopedNet>> {
        let Some(link) = self.link else {
            return Ok(None);
        };
        threadwire_testbed::net::ScopedNet::up_with_free_prefix("twb", 2, link)
            .map(Some)
            .context("building the emulated hosts for --link")
    }
}

/// `--json` / `--csv` of the benchmarks that print a table.
#[derive(Args, Clone, Copy)]
struct MachineReadable {
    /// Print the results on stdout as one JSON document instead of the table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print the results on stdout as CSV, a header and one line per row, instead of the table.
    #[arg(long)]
    csv: bool,
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("THREADWIRE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let code = match dispatch(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("threadwire: {e:#}");
            1
        }
    };
    // After a signal, the exit status is the interrupt thread's (128 + it).
    threadwire_testbed::interrupt::exit(code);
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(args) => {
            let mut program = args.program.into_iter();
            let exe = PathBuf::from(program.next().context("no program given")?);
            launch(&args.job, exe, program.collect())
        }
        Command::Apps(App::Matmul { job }) => {
            if under_launcher() {
                return render::matmul_node(job.size, job.threads);
            }
            let spec = JobArgs {
                nodes: job.nodes,
                timeout: None,
                stats: true,
                keep_going: false,
                progress_thread: false,
                channel: None,
                verbose: false,
                hosts: None,
                bind: None,
            };
            let args = vec![
                "apps".into(),
                "matmul".into(),
                "--size".into(),
                job.size.to_string().into(),
                "--threads".into(),
                job.threads.to_string().into(),
            ];
            launch(&spec, std::env::current_exe()?, args)
        }
        Command::Bench(Bench::Pingpong {
            max_power,
            sizes,
            paths,
            repetitions,
            ms,
            plot,
            peers,
            link,
            output,
        }) => {
            let budget = threadwire_bench::pingpong::Budget {
                repetitions,
                per_repetition: Duration::from_millis(ms),
            };
            let sizes = match sizes {
                Some(mut list) => {
                    list.sort_unstable();
                    list.dedup();
                    list
                }
                None => threadwire_bench::pingpong::sizes(max_power),
            };
            if under_launcher() {
                return render::pingpong_node(&sizes, &paths, budget);
            }
            // Before any thread starts: a signal then removes the emulated
            // hosts and peers too. Not in the nodes, nor in PVM's tasks.
            threadwire_testbed::interrupt::install(progress::report_interrupt);
            let net = link.net()?;
            if net.is_some() && paths.iter().any(|p| p == "shm") {
                bail!(
                    "--link puts the two nodes on two emulated hosts: measure --paths thread,tcp"
                );
            }
            // One job per channel, the thread path in the first.
            let mut results: Vec<render::Row> = Vec::new();
            let progress = Progress::new("bench pingpong", sizes.len() * paths.len());
            let channels = paths.iter().filter(|p| *p != "thread");
            let jobs: Vec<(String, Vec<&str>)> = match paths.iter().any(|p| p == "thread") {
                true if paths.len() == 1 => vec![("shm".into(), vec!["thread"])],
                with_thread => channels
                    .enumerate()
                    .map(|(i, c)| {
                        let mut measured = vec![c.as_str()];
                        if with_thread && i == 0 {
                            measured.insert(0, "thread");
                        }
                        (c.clone(), measured)
                    })
                    .collect(),
            };
            for (channel, measured) in jobs {
                let args = [
                    "bench",
                    "pingpong",
                    "--sizes",
                    &sizes
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    "--repetitions",
                    &repetitions.to_string(),
                    "--ms",
                    &ms.to_string(),
                    "--paths",
                    &measured.join(","),
                ];
                let mut spec = JobSpec::new(2, std::env::current_exe()?)
                    .args(args)
                    .env(threadwire::env::CHANNEL, channel);
                if let Some(net) = &net {
                    spec = spec.hosts(net.launch_hosts());
                }
                let report = threadwire_launch::run(&spec, |ev| {
                    match render::collect_results(ev, &mut results) {
                        true => progress.step(),
                        false => progress.aside(ev),
                    }
                })?;
                if report.status != 0 {
                    bail!("the benchmark job failed with status {}", report.status);
                }
            }
            drop(progress);
            if let Some(link) = link.link {
                for row in results.iter_mut().filter(|r| r.path == "tcp") {
                    row.path = format!("tcp/{link}");
                }
            }
            let peers = match peers {
                true => run_peers(&paths, &sizes, budget, &results, net.as_deref(), link.link),
                false => Vec::new(),
            };
            if output.json {
                machine_readable::pingpong_json(&results, &peers);
            } else if output.csv {
                machine_readable::pingpong_csv(&results, &peers);
            } else {
                render::pingpong_table(&results);
                render::peers_table(&results, &peers);
            }
            if let Some(dir) = plot {
                let points: Vec<_> = results
                    .iter()
                    .map(|r| threadwire_bench::plot::Point {
                        path: &r.path,
                        size: r.sample.size,
                        one_way_seconds: r.sample.one_way.as_secs_f64(),
                    })
                    .collect();
                let labels: Vec<(String, &threadwire_bench::peers::Measured)> = peers
                    .iter()
                    .filter_map(|p| {
                        let measured = p.result.as_ref().ok()?;
                        Some((format!("{} ({})", p.peer.name(), p.path), measured))
                    })
                    .collect();
                let largest = sizes.iter().copied().max().unwrap_or(0);
                let peer_points: Vec<_> = labels
                    .iter()
                    .flat_map(|(label, measured)| {
                        measured
                            .points
                            .iter()
                            .filter(|p| p.size <= largest + largest / 2)
                            .map(|p| threadwire_bench::plot::Point {
                                path: label,
                                size: p.size,
                                one_way_seconds: p.one_way.as_secs_f64(),
                            })
                    })
                    .collect();
                // stderr: stdout carries the results alone (--json, --csv).
                for file in threadwire_bench::plot::pingpong(&dir, &points, &peer_points)? {
                    eprintln!("threadwire: wrote {}", file.display());
                }
            }
            Ok(0)
        }
        Command::Bench(Bench::Rate {
            threads,
            messages,
            repetitions,
            window,
            kinds,
            link,
            output,
        }) => {
            let options = threadwire_bench::rate::Options {
                threads,
                messages,
                repetitions,
                window,
                kinds,
                ..threadwire_bench::rate::Options::default()
            };
            if under_launcher() {
                return render::rate_node(&options);
            }
            threadwire_testbed::interrupt::install(progress::report_interrupt);
            let args: Vec<OsString> = std::env::args_os().skip(1).collect();
            let net = link.net()?;
            let mut spec = JobSpec::new(2, std::env::current_exe()?).args(args);
            if let Some(net) = &net {
                spec = spec.hosts(net.launch_hosts());
            }
            let mut results = Vec::new();
            let progress = Progress::new("bench rate", threadwire_bench::rate::samples(&options));
            let report = threadwire_launch::run(&spec, |ev| {
                match render::collect_rate_results(ev, &mut results) {
                    true => progress.step(),
                    false => progress.aside(ev),
                }
            })?;
            drop(progress);
            if report.status != 0 {
                bail!("the benchmark job failed with status {}", report.status);
            }
            if output.json {
                machine_readable::rate_json(&options, &results);
            } else if output.csv {
                machine_readable::rate_csv(&results);
            } else {
                render::rate_table(&options, &results);
            }
            Ok(0)
        }
        Command::Bench(Bench::Suite(args)) => suite::run(&args),
        Command::Bench(Bench::Threads {
            iterations,
            repetitions,
            output,
        }) => {
            let options = threads::Options {
                iterations: iterations.max(1),
                repetitions: repetitions.max(1),
                ..threads::Options::default()
            };
            let ep = threads::node_config()
                .init()
                .context("starting a standalone node")?;
            let progress = Progress::new("bench threads", threads::STEPS);
            let report = threads::run(&ep, &options, || progress.step())?;
            drop(progress);
            if output.json {
                machine_readable::threads_json(&options, &report);
            } else if output.csv {
                machine_readable::threads_csv(&report);
            } else {
                render::threads_table(&report);
            }
            Ok(0)
        }
        Command::Bench(Bench::Comm {
            links,
            repetitions,
            ms,
            seconds,
            output,
        }) => {
            use threadwire_bench::comm;
            let args: Vec<OsString> = std::env::args_os().skip(1).collect();
            let options = comm::Options {
                links,
                repetitions,
                per_repetition: Duration::from_millis(ms),
                per_size: Duration::try_from_secs_f64(seconds).context("--seconds")?,
                ..comm::Options::new(std::env::current_exe()?, args)
            };
            if under_launcher() {
                comm::node(&options)?;
                return Ok(0);
            }
            threadwire_testbed::interrupt::install(progress::report_interrupt);
            let progress = Progress::new("bench comm", comm::cells(&options));
            let report = comm::run(&options, |ev| match comm::is_result(ev) {
                true => progress.step(),
                false => progress.aside(ev),
            })?;
            drop(progress);
            if output.json {
                machine_readable::comm_json(&report);
            } else if output.csv {
                machine_readable::comm_csv(&report);
            } else {
                render::comm_table(&report);
            }
            Ok(0)
        }
        Command::Bench(Bench::Encodings {
            max_power,
            sizes,
            repetitions,
            ms,
            link,
            output,
        }) => {
            use threadwire_bench::encodings;
            let options = encodings::Options {
                sizes: sizes.unwrap_or_else(|| threadwire_bench::pingpong::sizes(max_power)),
                budget: threadwire_bench::pingpong::Budget {
                    repetitions,
                    per_repetition: Duration::from_millis(ms),
                },
                program: std::env::current_exe()?,
                args: std::env::args_os().skip(1).collect(),
            };
            if under_launcher() {
                encodings::node(&options)?;
                return Ok(0);
            }
            threadwire_testbed::interrupt::install(progress::report_interrupt);
            let net = link.net()?;
            let progress = Progress::new("bench encodings", encodings::rows(&options));
            let on_event = |ev: &_| match encodings::is_result(ev) {
                true => progress.step(),
                false => progress.aside(ev),
            };
            let report = encodings::run(&options, net.as_deref(), on_event)?;
            drop(progress);
            if output.json {
                machine_readable::encodings_json(&report);
            } else if output.csv {
                machine_readable::encodings_csv(&report);
            } else {
                render::encodings_table(&report);
            }
            Ok(0)
        }
        Command::Bench(Bench::Spawn {
            counts,
            repetitions,
            link,
            output,
        }) => {
            use threadwire_bench::spawn;
            // The pvm_spawn rows run this command again as PVM tasks.
            if let Some(code) = threadwire_bench::peers::pvm::task_main() {
                return Ok(code);
            }
            if under_launcher() {
                spawn::node()?;
                return Ok(0);
            }
            threadwire_testbed::interrupt::install(progress::report_interrupt);
            let node_args = vec!["bench".into(), "spawn".into()];
            let net = OnLink { link }.net()?;
            let options = spawn::Options {
                counts,
                repetitions,
                hosts: net.as_ref().map_or(Vec::new(), |n| n.launch_hosts()),
                ..spawn::Options::new(std::env::current_exe()?, node_args)
            };
            let ep = spawn::node_config()
                .init()
                .context("starting a standalone node")?;
            let progress = Progress::new("bench spawn", spawn::steps(&options));
            let report = spawn::run(
                &ep,
                &options,
                |ev| progress.aside(ev),
                |_, _| progress.step(),
            )?;
            drop(progress);
            if output.json {
                machine_readable::spawn_json(&report);
            } else if output.csv {
                machine_readable::spawn_csv(&report);
            } else {
                render::spawn_table(&report);
                if let (Some(net), Some(link)) = (&net, link) {
                    println!(
                        "processes: node i on emulated host i mod 2 ({}, {}), joined over {link}",
                        net.hosts[0].name, net.hosts[1].name
                    );
                }
            }
            Ok(0)
        }
        Command::Bench(Bench::Floors {
            repetitions,
            ms,
            output,
        }) => {
            use threadwire_bench::floors;
            let options = floors::Options {
                repetitions,
                per_repetition: Duration::from_millis(ms),
                ..floors::Options::default()
            };
            let progress = Progress::new("bench floors", floors::steps(&options));
            let report = floors::run(&options, || progress.step());
            drop(progress);
            if output.json {
                machine_readable::floors_json(&report);
            } else if output.csv {
                machine_readable::floors_csv(&report);
            } else {
                render::floors_table(&report);
            }
            Ok(0)
        }
        Command::Net(Net::Up {
            hosts,
            link,
            prefix,
        }) => {
            let net = threadwire_testbed::net::up(&threadwire_testbed::net::NetConfig {
                hosts,
                link,
                prefix,
            })?;
            render::net(&net);
            Ok(0)
        }
        Command::Net(Net::Down { prefix }) => {
            threadwire_testbed::net::down(&prefix)?;
            Ok(0)
        }
        Command::Net(Net::Show { prefix }) => match threadwire_testbed::net::current(&prefix)? {
            Some(net) => {
                render::net(&net);
                Ok(0)
            }
            None => {
                println!("no net with prefix {prefix}");
                Ok(1)
            }
        },
        Command::Info => {
            println!("threadwire {}", env!("CARGO_PKG_VERSION"));
            println!("environment contract: see the threadwire::env module docs");
            match threadwire::env::JobEnv::from_env() {
                Ok(env) => println!("launched: {env:?}"),
                Err(e) => println!("not launched: {e}"),
            }
            Ok(0)
        }
    }
}

/// `bench pingpong --peers`: NetPIPE on the measured paths, after our
/// sweep, with its budget per size and its time at the largest size.
fn run_peers(
    paths: &[String],
    sizes: &[usize],
    budget: threadwire_bench::pingpong::Budget,
    results: &[render::Row],
    net: Option<&threadwire_testbed::net::Net>,
    link: Option<threadwire_testbed::net::Link>,
) -> Vec<threadwire_bench::peers::Report> {
    use threadwire_bench::peers::{self, Placement};
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let ours = |transport: peers::Transport| {
        let path = transport.name();
        results
            .iter()
            .find(|r| r.sample.size == largest && r.path.split('/').next() == Some(path))
            .map(|r| r.sample.one_way)
            .filter(|t| !t.is_zero())
    };
    let placement = net.map_or(Placement::Local, Placement::on);
    let link = link.map(|l| l.to_string());
    peers::run_beside(
        paths,
        sizes,
        budget.per_repetition * budget.repetitions.max(1),
        ours,
        &placement,
        link.as_deref(),
    )
}

fn under_launcher() -> bool {
    std::env::var_os(threadwire::env::JOB).is_some()
}

fn launch(job: &JobArgs, program: PathBuf, args: Vec<OsString>) -> Result<i32> {
    let mut spec = JobSpec::new(job.nodes, program).args(args);
    if let Some(t) = job.timeout {
        spec = spec.timeout(Duration::from_secs_f64(t));
    }
    if job.keep_going {
        spec = spec.on_failure(FailurePolicy::Continue);
    }
    if job.progress_thread {
        spec = spec.env(threadwire::env::PROGRESS, "thread");
    }
    if let Some(c) = &job.channel {
        spec = spec.env(threadwire::env::CHANNEL, c);
    }
    if let Some(addr) = job.bind {
        spec.bind = addr;
    }
    if let Some(file) = &job.hosts {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading host file {}", file.display()))?;
        let hosts = threadwire_launch::parse_host_file(&text)
            .with_context(|| format!("host file {}", file.display()))?;
        spec = spec.hosts(hosts);
    }
    let verbose = job.verbose;
    let report = threadwire_launch::run(&spec, |e| render::event(e, verbose))
        .with_context(|| format!("starting {}", spec.program.display()))?;
    if job.stats {
        render::stats(&report);
    }
    Ok(report.status)
}
