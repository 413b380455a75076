//! The `threadwire` command: parses arguments ([`args`]), calls the
//! libraries and writes what they return.

mod args;
mod bench;
mod progress;
mod render;
mod suite;

use anyhow::{Context, Result};
use args::{App, Cli, Command, JobArgs, Net, Prefix};
use bench::Outcome;
use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use threadwire_launch::{FailurePolicy, JobSpec};

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("THREADWIRE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let code = match dispatch(Cli::parse()) {
        Ok(Outcome::Exit(code)) => code,
        Ok(Outcome::Report(report, format)) => {
            let mut out = std::io::stdout().lock();
            match report.write(format, &mut out).and_then(|()| out.flush()) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("threadwire: writing the report: {e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("threadwire: {e:#}");
            1
        }
    };
    // After a signal, the exit status is the interrupt thread's (128 + it).
    threadwire_testbed::interrupt::exit(code);
}

fn dispatch(cli: Cli) -> Result<Outcome> {
    let exit = |code| Ok(Outcome::Exit(code));
    match cli.command {
        Command::Run(args) => {
            let mut program = args.program.into_iter();
            let exe = PathBuf::from(program.next().context("no program given")?);
            exit(launch(&args.job, exe, program.collect())?)
        }
        Command::Apps(App::Matmul { job }) => {
            if bench::under_launcher() {
                let cfg = threadwire_apps::matmul::Config {
                    size: job.size,
                    threads: job.threads,
                    ..Default::default()
                };
                if let Some(report) = threadwire_apps::matmul::node(cfg)? {
                    println!("{report}");
                }
                return exit(0);
            }
            let spec = JobArgs {
                nodes: job.nodes,
                stats: true,
                ..JobArgs::default()
            };
            let (size, threads) = (job.size.to_string(), job.threads.to_string());
            let args = ["apps", "matmul", "--size", &size, "--threads", &threads];
            let args = args.map(OsString::from).to_vec();
            exit(launch(&spec, std::env::current_exe()?, args)?)
        }
        Command::Bench(command) => bench::run(command),
        Command::Net(Net::Up {
            hosts,
            link,
            prefix,
        }) => {
            let prefix = prefix.prefix;
            let config = threadwire_testbed::net::NetConfig {
                hosts,
                link,
                prefix,
            };
            render::net(&threadwire_testbed::net::up(&config)?);
            exit(0)
        }
        Command::Net(Net::Down(Prefix { prefix })) => {
            threadwire_testbed::net::down(&prefix)?;
            exit(0)
        }
        Command::Net(Net::Show(Prefix { prefix })) => {
            match threadwire_testbed::net::current(&prefix)? {
                Some(net) => {
                    render::net(&net);
                    exit(0)
                }
                None => {
                    println!("no net with prefix {prefix}");
                    exit(1)
                }
            }
        }
        Command::Info => {
            println!("threadwire {}", env!("CARGO_PKG_VERSION"));
            println!("environment contract: see the threadwire::env module docs");
            match threadwire::env::JobEnv::from_env() {
                Ok(env) => println!("launched: {env:?}"),
                Err(e) => println!("not launched: {e}"),
            }
            exit(0)
        }
    }
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
    spec.max_nodes = job.max_nodes;
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
