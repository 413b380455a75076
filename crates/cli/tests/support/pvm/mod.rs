//! Running the programs of Debian's `pvm-examples` as the [`catalog`]
//! says, under a private real pvmd or under `threadwire pvm`, and making
//! a transcript of each run that another run can be compared with.
//!
//! 1. Each step of an example is started with its stdin; the run goes on
//!    as the step's [`Until`] says (its end, a text it prints, at once).
//! 2. Every step must end by itself before the deadline; one that does
//!    not is killed with its process group, and the run fails with what
//!    it printed until then.
//! 3. The transcript: a block per step (`$ command`, stdout, stderr lines
//!    after `! `, `= exit N`), normalized with one
//!    [`Normalizer`] so a tid has one name throughout; then what the
//!    tasks the steps spawned printed (`--- tasks`): pvmd's log under real
//!    PVM, the steps' stderr lines after a tid under threadwire.

pub mod catalog;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use catalog::{Example, Run, Step, Until};
use threadwire_testbed::process::Finished;
use threadwire_testbed::pvm::normalize::Normalizer;
use threadwire_testbed::pvm::{line_buffered, task_lines, Config, Daemon, Ran, Task};

/// Where Debian installs the examples, which `pvm_spawn` must search.
pub const EXAMPLES: &str = "/usr/bin";
/// The Debian packages the test needs.
pub const PACKAGES: &str = "pvm pvm-examples";

/// A run's transcript (module docs, step 3).
pub struct Transcript {
    /// The blocks of the steps.
    pub steps: String,
    /// What the tasks that the steps spawned printed.
    pub tasks: String,
}

impl Transcript {
    /// All of it, as the catalog's `expected` holds it.
    pub fn text(&self) -> String {
        match self.tasks.is_empty() {
            true => self.steps.clone(),
            false => format!("{}--- tasks\n{}", self.steps, self.tasks),
        }
    }
}

/// Why PVM cannot be tested here, if it cannot.
pub fn missing() -> Option<String> {
    let pvmd = threadwire_testbed::pvm::pvm_root().join("lib/pvmd");
    if !threadwire_testbed::process::is_executable(&pvmd) {
        return Some(format!("{} missing", pvmd.display()));
    }
    if !threadwire_testbed::process::on_path("pvm") {
        return Some("the PVM console `pvm` missing".into());
    }
    let hello = Path::new(EXAMPLES).join("hello.pvm");
    if !threadwire_testbed::process::is_executable(&hello) {
        return Some(format!("{} missing", hello.display()));
    }
    None
}

/// The programs that the installed `pvm-examples` puts in `/usr/bin`,
/// if dpkg knows the package.
pub fn installed_programs() -> Option<Vec<String>> {
    let out = Command::new("dpkg")
        .args(["-L", "pvm-examples"])
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut programs: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("/usr/bin/"))
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(str::to_string)
        .collect();
    programs.sort();
    Some(programs)
}

/// This machine's host name, which the examples print.
pub fn host_names() -> Vec<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    let short = name.split('.').next().unwrap_or_default();
    vec![name.to_string(), short.to_string()]
}

/// Runs `example` against a private real pvmd (module docs).
pub fn run_under_pvm(example: &Example, deadline: Instant) -> Result<Transcript, String> {
    let Run::Steps(steps) = example.run else {
        return Err(format!("{} is not run on its own", example.program));
    };
    let config = Config {
        search_path: vec![EXAMPLES.into()],
        ..Config::default()
    };
    let daemon = Daemon::start_with(&config, deadline).map_err(|e| format!("pvmd: {e}"))?;
    let ran = run_steps(
        steps,
        |argv, _| {
            let mut cmd = daemon.command(Path::new(EXAMPLES).join(argv[0]));
            cmd.args(&argv[1..]);
            cmd
        },
        daemon.directory(),
        deadline,
    );
    let settled = daemon.settle(deadline);
    let log = daemon.log();
    daemon.stop();
    let ran = ran?;
    settled.map_err(|e| format!("the tasks it spawned: {e}\n--- pvmd's log\n{log}"))?;
    let mut normalizer = Normalizer::new(example.rules, host_names());
    let steps = transcript(example, steps, &ran, &mut normalizer);
    let tasks = normalizer.normalize(&by_task(&without_noise(&task_lines(&log))), false);
    Ok(Transcript { steps, tasks })
}

/// Runs `example` with each step as `threadwire pvm -- <step>`, in a
/// scratch directory `dir` (module docs). What the tasks it spawns print
/// comes on the step's stderr, each line after the task's tid
/// (`[t80001] ...`, docs/PVM.md): those lines make the transcript's
/// tasks, as pvmd's log does under real PVM.
pub fn run_under_threadwire(
    example: &Example,
    threadwire: &Path,
    hosts: Option<&Path>,
    dir: &Path,
    deadline: Instant,
) -> Result<Transcript, String> {
    let Run::Steps(steps) = example.run else {
        return Err(format!("{} is not run on its own", example.program));
    };
    let mut ran = run_steps(
        steps,
        |argv, joins| {
            let mut cmd = super::command::command(threadwire);
            cmd.arg("pvm");
            // A program started while an earlier step's runs enrolls in its
            // machine, as under PVM: it joins that job.
            if joins {
                cmd.arg("--join");
            }
            if let Some(file) = hosts.filter(|_| !joins) {
                cmd.arg("--hosts").arg(file);
            }
            cmd.arg("--")
                .arg(Path::new(EXAMPLES).join(argv[0]))
                .args(&argv[1..])
                .current_dir(dir)
                // A console directory of the example's own: `--join` then
                // finds this example's job, never another threadwire job
                // running on the machine meanwhile (one once took a
                // dbwtest's partner).
                .env("THREADWIRE_CONSOLE_DIR", dir.join("console"));
            cmd
        },
        dir,
        deadline,
    )?;
    let mut tasks = String::new();
    for ran in &mut ran {
        let (theirs, own): (Vec<&str>, Vec<&str>) =
            ran.stderr.lines().partition(|line| is_task_line(line));
        for line in theirs {
            tasks += line;
            tasks.push('\n');
        }
        ran.stderr = own.iter().map(|line| format!("{line}\n")).collect();
    }
    let mut normalizer = Normalizer::new(example.rules, host_names());
    let steps = transcript(example, steps, &ran, &mut normalizer);
    let tasks = normalizer.normalize(&by_task(&without_noise(&tasks)), false);
    Ok(Transcript { steps, tasks })
}

/// Whether `line` is a task's, `[t<hex>] text`.
fn is_task_line(line: &str) -> bool {
    line.strip_prefix("[t")
        .and_then(|rest| rest.split_once("] "))
        .is_some_and(|(hex, _)| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Steps 1 and 2 of the module docs: each step's [`Ran`], in order.
fn run_steps(
    steps: &[Step],
    command: impl Fn(&[&str], bool) -> Command,
    dir: &Path,
    deadline: Instant,
) -> Result<Vec<Ran>, String> {
    let mut running: Vec<(usize, Task)> = Vec::new();
    let mut ran: Vec<Option<Ran>> = vec![None; steps.len()];
    let mut failure = None;
    for (i, step) in steps.iter().enumerate() {
        let mut cmd = command(step.argv, !running.is_empty());
        if let Until::Printed(_) = step.until {
            line_buffered(&mut cmd);
        }
        let task = Task::start(cmd, step.stdin.as_bytes(), dir)
            .map_err(|e| format!("starting {:?}: {e}", step.argv))?;
        match step.until {
            Until::Exit => {
                let done = task
                    .finish(deadline)
                    .map_err(|e| format!("{:?}: {e}", step.argv))?;
                if done.finished == Finished::Stopped {
                    failure = Some(hung(step, &done));
                }
                ran[i] = Some(done);
            }
            Until::Printed(text) => {
                match task.wait_for_output(text, deadline) {
                    Ok(true) => {}
                    Ok(false) => {
                        failure = Some(format!("{:?} ended before printing {text:?}", step.argv))
                    }
                    Err(e) => {
                        failure = Some(format!("{:?} never printed {text:?}: {e}", step.argv))
                    }
                }
                running.push((i, task));
            }
            Until::Started => running.push((i, task)),
        }
        if failure.is_some() {
            break;
        }
    }
    for (i, task) in running {
        let done = task
            .finish(deadline)
            .map_err(|e| format!("{:?}: {e}", steps[i].argv))?;
        if done.finished == Finished::Stopped && failure.is_none() {
            failure = Some(hung(&steps[i], &done));
        }
        ran[i] = Some(done);
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    Ok(ran.into_iter().flatten().collect())
}

fn hung(step: &Step, ran: &Ran) -> String {
    format!(
        "{:?} hung: killed at its deadline\n--- stdout\n{}--- stderr\n{}",
        step.argv,
        tail(&ran.stdout),
        tail(&ran.stderr)
    )
}

/// The last lines of `text`, enough to see where it stopped.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines[lines.len().saturating_sub(20)..].join("\n");
    out.push('\n');
    out
}

/// The steps' blocks (module docs, step 3).
fn transcript(
    example: &Example,
    steps: &[Step],
    ran: &[Ran],
    normalizer: &mut Normalizer,
) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for (step, ran) in steps.iter().zip(ran) {
        let mut fresh;
        let normalizer = match example.unordered_steps {
            true => {
                fresh = Normalizer::new(example.rules, host_names());
                &mut fresh
            }
            false => &mut *normalizer,
        };
        let mut block = format!("$ {}\n", step.argv.join(" "));
        block += &normalizer.normalize(&ran.stdout, example.sort_lines);
        for line in normalizer
            .normalize(&ran.stderr, example.sort_lines)
            .lines()
        {
            block += &format!("! {line}\n");
        }
        block += &match ran.finished {
            Finished::Exited(status) => match status.code() {
                Some(code) => format!("= exit {code}\n"),
                None => format!("= {status}\n"),
            },
            Finished::Stopped => "= killed at its deadline\n".to_string(),
        };
        if ran.truncated {
            block += "= output cut short\n";
        }
        blocks.push(block);
    }
    if example.unordered_steps {
        blocks.sort();
    }
    blocks.concat()
}

/// What libgpvm3 prints when two tasks that join groups at once both
/// start a group server, and the second one gives up: PVM's, not the
/// program's.
const GROUP_SERVER_RACE: &str = "Group Server already running?";

/// `lines` without those of a group server that lost the race of
/// [`GROUP_SERVER_RACE`]: all of its lines, since pvmd may log one line
/// of it in pieces.
fn without_noise(lines: &str) -> String {
    let tid = |line: &str| line.split_once(']').map(|(tid, _)| tid.to_string());
    let losers: Vec<String> = lines
        .lines()
        .filter(|line| line.contains(GROUP_SERVER_RACE))
        .filter_map(tid)
        .collect();
    lines
        .lines()
        .filter(|line| tid(line).is_none_or(|t| !losers.contains(&t)))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// pvmd's task lines, `[t<tid>] text`, grouped by task in order of tid,
/// each task's lines in the order it printed them.
fn by_task(lines: &str) -> String {
    let mut lines: Vec<&str> = lines.lines().collect();
    let tid = |line: &str| {
        line.strip_prefix("[t")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(hex, _)| u32::from_str_radix(hex, 16).ok())
            .unwrap_or(u32::MAX)
    };
    lines.sort_by_key(|line| tid(line));
    let mut out = lines.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}
