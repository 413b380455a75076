//! The `threadwire` command: parses arguments ([`args`]), calls the
//! libraries and writes what they return.

mod apps;
mod apps_matmul;
mod apps_splash;
mod args;
mod bench;
mod progress;
mod render;
mod suite;

use anyhow::{Context, Result};
use args::{Cli, Command, JobArgs, Net, Prefix, VmArgs, VmRequest};
use bench::Outcome;
use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use threadwire_launch::console::{self, RunningJob};
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
        Command::Pvm(args) => exit(pvm(args)?),
        Command::Apps(app) => apps::run(app),
        Command::Bench(command) => bench::run(command),
        Command::Net(Net::Up {
            hosts,
            link,
            loss,
            delay,
            load,
            prefix,
        }) => {
            let config = threadwire_testbed::net::NetConfig {
                prefix: prefix.prefix,
                loss,
                delay,
                load,
                ..threadwire_testbed::net::NetConfig::new(hosts, link)
            };
            let net = threadwire_testbed::net::up(&config)?;
            render::net(&net, &threadwire_testbed::net::delay_queue_drops(&net)?);
            exit(0)
        }
        Command::Net(Net::DelayQueue(helper)) => {
            let args = [&["delay-queue".to_string()], &helper.args[..]].concat();
            threadwire_testbed::net::serve_helper(&args, &mut std::io::stdout())?;
            exit(0)
        }
        Command::Net(Net::LoadSource(helper)) => {
            let args = [&["load-source".to_string()], &helper.args[..]].concat();
            threadwire_testbed::net::serve_helper(&args, &mut std::io::stdout())?;
            exit(0)
        }
        Command::Net(Net::Down(Prefix { prefix })) => {
            threadwire_testbed::net::down(&prefix)?;
            exit(0)
        }
        Command::Net(Net::Show(Prefix { prefix })) => {
            match threadwire_testbed::net::current(&prefix)? {
                Some(net) => {
                    render::net(&net, &threadwire_testbed::net::delay_queue_drops(&net)?);
                    exit(0)
                }
                None => {
                    println!("no net with prefix {prefix}");
                    exit(1)
                }
            }
        }
        Command::Vm(args) => exit(vm(args)?),
        Command::Proxy => {
            threadwire_launch::proxy::serve(std::io::stdin().lock(), std::io::stdout())
                .context("the proxy's connection to its launcher")?;
            exit(0)
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
    let spec = configure(job, JobSpec::new(job.nodes, program).args(args))?;
    let verbose = job.verbose;
    let report = threadwire_launch::run(&spec, |e| render::event(e, verbose))
        .with_context(|| format!("starting {}", spec.program.display()))?;
    if job.stats {
        render::stats(&report);
    }
    Ok(report.status)
}

/// `threadwire pvm`: the program on threadwire's libpvm3
/// (`threadwire_launch::pvm`, steps 1–3).
fn pvm(args: args::PvmArgs) -> Result<i32> {
    let exe = std::env::current_exe().context("finding the threadwire binary")?;
    let built = exe.parent().context("the threadwire binary's directory")?;
    let dir = threadwire_launch::pvm::library_dir(built)?;
    if args.library_dir {
        println!("{}", dir.display());
        return Ok(0);
    }
    let mut program = args.program.iter().cloned();
    let exe = PathBuf::from(program.next().context("no program given")?);
    if args.join {
        return pvm_join(args.job_id.as_deref(), exe, program.collect(), &dir);
    }
    let job = args.job();
    let spec = threadwire_launch::pvm::job(job.nodes, exe, program.collect(), &dir);
    let spec = configure(&job, spec)?;
    let report = threadwire_launch::run(&spec, |e| render::pvm_event(e, job.nodes, job.verbose))
        .with_context(|| format!("starting {}", spec.program.display()))?;
    // The program's own status, as the shell would give it under PVM.
    Ok(match report.exits.first() {
        _ if report.timed_out => report.status,
        Some(threadwire_launch::NodeExit::Code(c)) => *c,
        Some(threadwire_launch::NodeExit::Signal(s)) => 128 + s,
        None => report.status,
    })
}

/// `threadwire pvm --join`: the program runs here as a new node of a
/// running job, with the environment its console gives (the console's
/// `join`), its output on this terminal — as a PVM program started from a
/// shell enrolls in the running virtual machine. Exits with its status.
fn pvm_join(
    job: Option<&str>,
    exe: PathBuf,
    args: Vec<OsString>,
    dir: &std::path::Path,
) -> Result<i32> {
    // A job started at the same moment may not have opened its console yet.
    let wait = std::time::Instant::now() + Duration::from_secs(10);
    let jobs = console::await_running_jobs(wait).context("reading the console directory")?;
    let job = one_job(&jobs, job)?;
    let vars =
        console::ask(&job.socket, &["join"]).with_context(|| format!("job {:016x}", job.id))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(args);
    for row in vars {
        if let [key, value] = row.as_slice() {
            cmd.env(key, if value == "-" { "" } else { value });
        }
    }
    let spec = threadwire_launch::pvm::job(1, exe.clone(), Vec::new(), dir);
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    // Started from a shell: no parent, no siblings but itself.
    cmd.env("THREADWIRE_PVM_SPAWNED", "1");
    let status = cmd
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// The options every job takes, applied to `spec`.
fn configure(job: &JobArgs, mut spec: JobSpec) -> Result<JobSpec> {
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
    if job.verbose && std::env::var_os(threadwire::env::LOG).is_none() {
        spec = spec.env(threadwire::env::LOG, "warn,threadwire=info");
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
    Ok(spec)
}

/// `threadwire vm`: lists this user's running jobs, or sends one job's
/// console a request and shows the answer.
fn vm(args: VmArgs) -> Result<i32> {
    let dir = console::dir();
    let jobs = console::running_jobs()
        .with_context(|| format!("reading the console directory {}", dir.display()))?;
    let Some(request) = args.request else {
        let mut rows = Vec::new();
        for job in named_jobs(&jobs, args.job.as_deref())? {
            // A job that ends meanwhile is left out.
            if let Ok(mut answer) = console::ask(&job.socket, &["job"]) {
                rows.append(&mut answer);
            }
        }
        match rows.is_empty() {
            true => println!(
                "no running jobs of this user (consoles in {})",
                dir.display()
            ),
            false => render::vm_jobs(&rows),
        }
        return Ok(0);
    };
    let job = one_job(&jobs, args.job.as_deref())?;
    let mut fields: Vec<String> = match &request {
        VmRequest::Hosts => vec!["hosts".into()],
        VmRequest::Nodes => vec!["nodes".into()],
        VmRequest::AddHosts { hosts } => [vec!["add-hosts".into()], hosts.clone()].concat(),
        VmRequest::RemoveHosts { hosts } => [vec!["remove-hosts".into()], hosts.clone()].concat(),
        VmRequest::AddNodes { count, host, .. } => {
            let mut f = vec!["add-nodes".into(), count.to_string()];
            if let Some(h) = host {
                f.extend(["--host".into(), h.clone()]);
            }
            f
        }
    };
    if let VmRequest::AddNodes { program, .. } = &request {
        let mut program = program.iter();
        if let Some(exe) = program.next() {
            // The launcher runs elsewhere: a relative path is the user's.
            let exe = PathBuf::from(exe);
            let exe = match exe.is_relative() && exe.components().count() > 1 {
                true => std::env::current_dir()?.join(exe),
                false => exe,
            };
            fields.push("--".into());
            for f in std::iter::once(exe.into_os_string()).chain(program.cloned()) {
                let f = f
                    .into_string()
                    .map_err(|f| anyhow::anyhow!("{f:?} is not UTF-8 text"))?;
                fields.push(f);
            }
        }
    }
    let rows =
        console::ask(&job.socket, &fields).with_context(|| format!("job {:016x}", job.id))?;
    match request {
        VmRequest::Hosts => render::vm_hosts(&rows),
        VmRequest::Nodes => render::vm_nodes(&rows),
        VmRequest::AddHosts { hosts } => println!("hosts added: {}", hosts.join(" ")),
        VmRequest::RemoveHosts { hosts } => {
            println!("hosts removed: {}", hosts.join(" "));
            println!("nodes killed: {}", render::node_list(&rows));
        }
        VmRequest::AddNodes { .. } => println!("nodes added: {}", render::node_list(&rows)),
    }
    Ok(0)
}

/// The one running job `--job` names, or the only one running.
fn one_job(jobs: &[RunningJob], named: Option<&str>) -> Result<RunningJob> {
    match named_jobs(jobs, named)?.as_slice() {
        [] => anyhow::bail!(
            "no job of this user is running (no console in {})",
            console::dir().display()
        ),
        [one] => Ok(one.clone()),
        several => anyhow::bail!(
            "{} jobs are running ({}); name one with --job ID",
            several.len(),
            several
                .iter()
                .map(|j| format!("{:016x}", j.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The running jobs `--job` names: all of them without it, else those
/// whose id starts with it (an error if none does).
fn named_jobs(jobs: &[RunningJob], named: Option<&str>) -> Result<Vec<RunningJob>> {
    let Some(named) = named else {
        return Ok(jobs.to_vec());
    };
    let prefix = named.trim().to_ascii_lowercase();
    if prefix.is_empty() || prefix.len() > 16 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        anyhow::bail!("--job {named:?}: a job id is up to 16 hex digits");
    }
    let found: Vec<RunningJob> = jobs
        .iter()
        .filter(|j| format!("{:016x}", j.id).starts_with(&prefix))
        .cloned()
        .collect();
    if found.is_empty() {
        anyhow::bail!(
            "no running job of this user has id {prefix}{}",
            match jobs.is_empty() {
                true => String::new(),
                false => format!(
                    " (running: {})",
                    jobs.iter()
                        .map(|j| format!("{:016x}", j.id))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        );
    }
    Ok(found)
}
