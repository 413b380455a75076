//! `threadwire bench suite`: runs the steps of
//! [`threadwire_bench::suite`] one after the other, each as a child of
//! this process that may not outlive it nor run past
//! [`STEP_DEADLINE`](suite::STEP_DEADLINE), then writes the report; the
//! suite exits with status 1 if a step failed.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use threadwire_bench::suite::{self, Outcome, Step};
use threadwire_testbed::net::Link;
use threadwire_testbed::process::{run_supervised, Finished};

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

/// How long a step past its deadline has, after SIGTERM, to clean up.
const GRACE: Duration = Duration::from_secs(30);

/// Runs the suite; the process's exit status.
pub fn run(args: &SuiteArgs) -> Result<i32> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let exe = std::env::current_exe().context("finding this program")?;
    let steps = suite::plan(&suite::Options {
        out: args.out.clone(),
        links: args.links.clone(),
        peers: !args.no_peers,
        quick: args.quick,
    });
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
    let path = args.out.join("README.md");
    std::fs::write(&path, suite::markdown(&steps, &outcomes, &args.out))
        .with_context(|| format!("writing {}", path.display()))?;
    for (step, outcome) in steps.iter().zip(&outcomes) {
        let line = match outcome {
            Outcome::Ran(took) => format!("ran ({:.1} s)", took.as_secs_f64()),
            Outcome::Skipped(why) => format!("skipped: {why}"),
            Outcome::Failed { why, .. } => format!("FAILED: {why}"),
        };
        eprintln!("{:<24} {line}", step.name);
    }
    println!("report: {}", path.display());
    let failed = outcomes.iter().any(|o| matches!(o, Outcome::Failed { .. }));
    Ok(i32::from(failed))
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
    let deadline = started + suite::STEP_DEADLINE;
    let finished = run_supervised(&mut cmd, deadline, GRACE)
        .with_context(|| format!("running {}", step.name))?;
    let took = started.elapsed();
    Ok(match finished {
        Finished::Exited(status) if status.success() => Outcome::Ran(took),
        Finished::Exited(status) => {
            let log =
                std::fs::read_to_string(out.join(format!("{}.log", step.name))).unwrap_or_default();
            let why = suite::failure(status, &log);
            Outcome::Failed { took, why }
        }
        Finished::Stopped => Outcome::Failed {
            took,
            why: format!("still running after {:?}: stopped", suite::STEP_DEADLINE),
        },
    })
}
