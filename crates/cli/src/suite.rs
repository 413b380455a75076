//! `threadwire bench suite`: every benchmark, one after the other, each
//! run as the very command a user would type, into one report.
//!
//! 1. Each step is `threadwire bench …` started as a child of this
//!    process, its standard output (the table) kept in `OUT/NAME.txt` and
//!    its standard error in `OUT/NAME.log`; plots go to `OUT/NAME/`.
//! 2. Steps on emulated links need network namespaces (root); where they
//!    cannot be made, those steps are listed as skipped, with the reason,
//!    and the rest still run.
//! 3. A step that fails, or runs past an hour, does not stop the suite: the report says so, with
//!    the last lines it printed, and the suite exits with status 1.
//! 4. `OUT/README.md` gathers, per step, the command, how long it took and
//!    its table, in the order they ran: the raw material of
//!    `docs/PERFORMANCE.md`.
//!
//! `--quick` runs every step with tiny sizes and counts: it proves the
//! suite works and measures nothing.

use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use threadwire_testbed::net::Link;
use threadwire_testbed::wait_deadline;

/// `threadwire bench suite` arguments.
#[derive(clap::Args)]
pub struct SuiteArgs {
    /// Directory of the report: README.md (every table with its command),
    /// NAME.txt and NAME.log per step, plots in NAME/ (created if missing).
    #[arg(long, default_value = "bench-report")]
    out: PathBuf,
    /// Emulated links of the host-to-host steps, comma-separated (root).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ethernet10,fast100,atm155,gige,none"
    )]
    links: Vec<Link>,
    /// Leave out the peers (NetPIPE over TCP, Open MPI, MPICH, PVM).
    #[arg(long)]
    no_peers: bool,
    /// Tiny sizes and counts: proves every step runs, measures nothing.
    #[arg(long)]
    quick: bool,
}

/// One benchmark run of the suite.
struct Step {
    /// File stem of its outputs.
    name: String,
    /// Arguments after `threadwire`.
    args: Vec<String>,
    /// Why it cannot run here, if it cannot.
    skip: Option<String>,
}

/// What became of a step.
enum Outcome {
    Ran(Duration),
    Skipped(String),
    Failed { took: Duration, why: String },
}

/// The longest a step may run: the slowest, the ping-pong with its peers
/// on 10 Mbit/s, takes 13 minutes.
const STEP_DEADLINE: Duration = Duration::from_secs(60 * 60);

/// The largest size of the ping-pong on emulated links: the classic sizes
/// up to 1 MB, as 16 MiB would take half a minute a round trip on 10 Mbit/s.
const LINK_LARGEST: usize = 1_000_000;

/// Runs the suite; the process's exit status.
pub fn run(args: &SuiteArgs) -> Result<i32> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let exe = std::env::current_exe().context("finding this program")?;
    let steps = plan(args);
    let progress = crate::progress::Progress::new("bench suite", steps.len());
    progress.tick_steadily();
    let mut outcomes = Vec::with_capacity(steps.len());
    for step in &steps {
        progress.message(format!("bench suite: {}", step.name));
        let outcome = match &step.skip {
            Some(why) => Outcome::Skipped(why.clone()),
            None => run_step(&exe, step, &args.out)?,
        };
        outcomes.push(outcome);
        progress.step();
    }
    drop(progress);
    let report = report(&steps, &outcomes, &args.out);
    let path = args.out.join("README.md");
    std::fs::write(&path, report).with_context(|| format!("writing {}", path.display()))?;
    let failed = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Failed { .. }))
        .count();
    for (step, outcome) in steps.iter().zip(&outcomes) {
        let line = match outcome {
            Outcome::Ran(took) => format!("ran ({:.1} s)", took.as_secs_f64()),
            Outcome::Skipped(why) => format!("skipped: {why}"),
            Outcome::Failed { why, .. } => format!("FAILED: {why}"),
        };
        eprintln!("{:<24} {line}", step.name);
    }
    println!("report: {}", path.display());
    Ok(if failed == 0 { 0 } else { 1 })
}

/// The steps, in the order they run (step 1 of the module docs).
fn plan(args: &SuiteArgs) -> Vec<Step> {
    let quick = args.quick;
    let peers = !args.no_peers;
    let out = |name: &str| args.out.join(name).display().to_string();
    let mut steps = Vec::new();
    let mut add = |name: &str, args: &[&str], skip: Option<String>| {
        steps.push(Step {
            name: name.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            skip,
        })
    };
    let tiny_timing: &[&str] = if quick {
        &["--repetitions", "1", "--ms", "5"]
    } else {
        &[]
    };
    add(
        "floors",
        &[&["bench", "floors"], tiny_timing].concat(),
        None,
    );
    let mut pingpong = vec!["bench", "pingpong"];
    if quick {
        pingpong.extend(["--sizes", "1,1000"]);
    }
    let plots = out("pingpong");
    pingpong.extend(tiny_timing);
    pingpong.extend(["--plot", &plots]);
    if peers {
        pingpong.push("--peers");
    }
    add("pingpong", &pingpong, None);
    let no_namespaces = threadwire_testbed::net::unavailable("tws");
    let link_names: Vec<String> = args.links.iter().map(|l| l.to_string()).collect();
    let link_sizes: Vec<String> = threadwire_bench::pingpong::CLASSIC_SIZES
        .iter()
        .filter(|&&n| n <= LINK_LARGEST)
        .map(usize::to_string)
        .collect();
    let link_sizes = link_sizes.join(",");
    for link in &link_names {
        let name = format!("pingpong-{link}");
        let plots = out(&name);
        let sizes = if quick { "8,1000" } else { &link_sizes };
        let mut a = vec!["bench", "pingpong", "--link", link, "--paths", "tcp"];
        a.extend(["--sizes", sizes, "--plot", &plots]);
        a.extend(tiny_timing);
        if peers {
            a.push("--peers");
        }
        add(&name, &a, no_namespaces.clone());
    }
    let encodings_sizes: &[&str] = if quick { &["--sizes", "8,1000"] } else { &[] };
    add(
        "encodings",
        &[&["bench", "encodings"], encodings_sizes, tiny_timing].concat(),
        None,
    );
    // Without root the link rows say why in the table; the rest still runs.
    let links = if link_names.is_empty() {
        "none".to_string()
    } else {
        link_names.join(",")
    };
    add(
        "comm",
        &[&["bench", "comm", "--links", &links], tiny_timing].concat(),
        None,
    );
    let spawn: &[&str] = if quick {
        &["--counts", "1", "--repetitions", "1"]
    } else {
        &[]
    };
    add("spawn", &[&["bench", "spawn"], spawn].concat(), None);
    let rate: &[&str] = if quick {
        &["--threads", "1", "--messages", "1000", "--repetitions", "1"]
    } else {
        &[]
    };
    add("rate", &[&["bench", "rate"], rate].concat(), None);
    if args.links.contains(&Link::Unshaped) {
        add(
            "rate-none",
            &[&["bench", "rate", "--link", "none"], rate].concat(),
            no_namespaces.clone(),
        );
    }
    let threads: &[&str] = if quick {
        &["--iterations", "1000", "--repetitions", "1"]
    } else {
        &[]
    };
    add("threads", &[&["bench", "threads"], threads].concat(), None);
    steps
}

/// Runs one step, its table into `NAME.txt` and its stderr into `NAME.log`.
fn run_step(exe: &Path, step: &Step, out: &Path) -> Result<Outcome> {
    let file = |ext: &str| {
        let path = out.join(format!("{}.{ext}", step.name));
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))
    };
    let started = Instant::now();
    let mut cmd = Command::new(exe);
    cmd.args(&step.args)
        .stdin(Stdio::null())
        .stdout(file("txt")?)
        .stderr(file("log")?);
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    // If the suite dies, the step gets SIGTERM and cleans up after itself
    // (its peers, its emulated hosts) instead of running on alone.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", step.name))?;
    let deadline = started + STEP_DEADLINE;
    let Some(status) = wait_deadline(&mut child, deadline).context("waiting for a step")? else {
        // SIGTERM first, so that it removes what it built.
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) takes no pointers; the child is not yet
            // reaped, so its id is still its own.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let grace = Instant::now() + Duration::from_secs(30);
        if wait_deadline(&mut child, grace)?.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        return Ok(Outcome::Failed {
            took: started.elapsed(),
            why: format!("still running after {STEP_DEADLINE:?}: stopped"),
        });
    };
    let took = started.elapsed();
    if status.success() {
        return Ok(Outcome::Ran(took));
    }
    let log = std::fs::read_to_string(out.join(format!("{}.log", step.name))).unwrap_or_default();
    let last: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    let why = format!(
        "{status}: {}",
        last[last.len().saturating_sub(3)..].join(" / ")
    );
    Ok(Outcome::Failed { took, why })
}

/// `README.md` of the report (step 4).
fn report(steps: &[Step], outcomes: &[Outcome], out: &Path) -> String {
    let mut md = String::from("# threadwire bench suite\n\n");
    let _ = writeln!(
        md,
        "threadwire {}, {} cores. Each section: the command, how long it took, its output.\n",
        env!("CARGO_PKG_VERSION"),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (step, outcome) in steps.iter().zip(outcomes) {
        let _ = writeln!(md, "## {}\n", step.name);
        let _ = writeln!(md, "```\nthreadwire {}\n```\n", step.args.join(" "));
        match outcome {
            Outcome::Skipped(why) => {
                let _ = writeln!(md, "Skipped: {why}.\n");
                continue;
            }
            Outcome::Failed { took, why } => {
                let _ = writeln!(md, "Failed after {:.1} s: {why}\n", took.as_secs_f64());
            }
            Outcome::Ran(took) => {
                let _ = writeln!(md, "Took {:.1} s.\n", took.as_secs_f64());
            }
        }
        let table =
            std::fs::read_to_string(out.join(format!("{}.txt", step.name))).unwrap_or_default();
        if !table.trim().is_empty() {
            let _ = writeln!(md, "```\n{}\n```\n", table.trim_end());
        }
        let svgs = threadwire_bench::plot::PINGPONG_FILES
            .iter()
            .filter(|f| f.ends_with(".svg"));
        for plot in svgs {
            if out.join(&step.name).join(plot).exists() {
                let _ = writeln!(md, "![{} {plot}]({}/{plot})\n", step.name, step.name);
            }
        }
    }
    md
}
