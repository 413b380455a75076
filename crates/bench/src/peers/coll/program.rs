//! Building `coll.c` and launching it: steps 1–4 of the module docs of
//! [`crate::peers::coll`]. The build and the launch under a deadline are
//! not coll.c's alone: [`Program::build_from`] and [`Program::launch_with`]
//! serve every MPI program of the peers (`bench flood`'s `flood.c`).

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::{rows, Configuration, Error, Measured, Mpi, Operation, Options, WaitPolicy, SOURCE};
use crate::peers::process::{self, Group};
use crate::peers::ScratchDir;

/// How long the compiler may take.
const BUILD_DEADLINE: Duration = Duration::from_secs(120);
/// Lines of a log quoted in an error.
const LOG_TAIL_LINES: usize = 12;

/// `coll.c` (or another MPI program, [`Program::build_from`]) built with
/// one MPI, in a scratch directory removed on drop.
pub struct Program {
    mpi: Mpi,
    dir: ScratchDir,
    executable: PathBuf,
}

/// Builds of this process so far, for unique directory names.
static BUILDS: AtomicU32 = AtomicU32::new(0);

impl Program {
    /// Step 1 of the module docs.
    pub fn build(mpi: Mpi) -> Result<Program, Error> {
        Program::build_from(mpi, "coll", SOURCE, &["-O2", "-fopenmp"])
    }

    /// Step 1 for any MPI program: `source` written as `NAME.c` to a
    /// scratch directory and built there with `flags` into `NAME`.
    pub(crate) fn build_from(
        mpi: Mpi,
        name: &'static str,
        source: &str,
        flags: &[&str],
    ) -> Result<Program, Error> {
        Program::build_linked(mpi, name, source, flags, &[])
    }

    /// [`build_from`](Self::build_from), linking `libraries` (`-lNAME`
    /// arguments, which must follow the source).
    pub(crate) fn build_linked(
        mpi: Mpi,
        name: &'static str,
        source: &str,
        flags: &[&str],
        libraries: &[&str],
    ) -> Result<Program, Error> {
        process::require(&[mpi.compiler(), mpi.launcher()], mpi.packages())
            .map_err(|_| missing_program(mpi))?;
        let dir_name = format!(
            "{name}-{}-{}",
            mpi.compiler(),
            BUILDS.fetch_add(1, Ordering::Relaxed)
        );
        let dir = ScratchDir::named(&dir_name).map_err(|source| Error::Io {
            what: "creating a scratch directory",
            source,
        })?;
        let source_file = dir.0.join(format!("{name}.c"));
        std::fs::write(&source_file, source).map_err(|source| Error::Io {
            what: "writing an MPI program's source",
            source,
        })?;
        let executable = dir.0.join(name);
        let log = dir.0.join("build.txt");
        let mut cmd = Command::new(mpi.compiler());
        cmd.args(flags)
            .arg("-o")
            .arg(&executable)
            .arg(&source_file)
            .args(libraries);
        let mut compiler = Group::spawn(cmd, &log, &log).map_err(from_peer)?;
        let status = wait(&mut compiler, Instant::now() + BUILD_DEADLINE, &log)?;
        if !status.success() {
            let log = log_tail(&log);
            if log.contains("mpi.h: No such file") {
                return Err(Error::Missing {
                    program: "mpi.h",
                    packages: mpi.packages(),
                });
            }
            return Err(Error::Build {
                compiler: mpi.compiler(),
                program: name,
                status,
                log,
            });
        }
        Ok(Program {
            mpi,
            dir,
            executable,
        })
    }

    /// The MPI it was built with.
    pub fn mpi(&self) -> Mpi {
        self.mpi
    }

    /// Steps 2–4 of the module docs for `operation` in `configuration`,
    /// by [`Options::deadline`].
    pub fn run(
        &self,
        configuration: Configuration,
        operation: Operation,
        options: &Options,
    ) -> Outcome {
        let deadline = Instant::now() + options.deadline(configuration, operation);
        self.run_until(configuration, operation, options, deadline)
    }

    /// [`run`](Self::run), killed at `deadline`.
    pub fn run_until(
        &self,
        configuration: Configuration,
        operation: Operation,
        options: &Options,
        deadline: Instant,
    ) -> Outcome {
        let (sizes, skipped) = options.split_sizes(configuration, operation);
        let result = match sizes.is_empty() {
            true => Ok(Vec::new()),
            false => self.launch(configuration, operation, options, &sizes, deadline),
        };
        Outcome {
            mpi: self.mpi,
            configuration,
            operation,
            result,
            skipped,
        }
    }

    fn launch(
        &self,
        configuration: Configuration,
        operation: Operation,
        options: &Options,
        sizes: &[usize],
        deadline: Instant,
    ) -> Result<Vec<Measured>, Error> {
        let name = format!(
            "{}-{}x{}",
            operation.name(),
            configuration.ranks,
            configuration.threads
        );
        let text = self.launch_with(
            configuration.ranks,
            &[],
            &options.args(configuration, operation, sizes),
            &name,
            deadline,
            |cmd| {
                if configuration.threads > 1 {
                    cmd.env("OMP_NUM_THREADS", configuration.threads.to_string());
                    match options.openmp_wait_policy {
                        WaitPolicy::Default => cmd.env_remove("OMP_WAIT_POLICY"),
                        WaitPolicy::Passive => cmd.env("OMP_WAIT_POLICY", "passive"),
                        WaitPolicy::Active => cmd.env("OMP_WAIT_POLICY", "active"),
                    };
                }
            },
        )?;
        let rows = rows::parse(&text, self.mpi, configuration)?;
        let expected = operation.sizes(sizes);
        let found: Vec<(Operation, usize)> = rows.iter().map(|r| (r.operation, r.size)).collect();
        if found != expected.iter().map(|&s| (operation, s)).collect::<Vec<_>>() {
            return Err(Error::Incomplete {
                expected: expected.len(),
                found: rows.len(),
            });
        }
        Ok(rows)
    }
}

impl Program {
    /// The launcher's command for `ranks` ranks of the program with
    /// `launcher_args` and the program's `args`, run in its scratch
    /// directory: for a caller that watches the run itself.
    pub(crate) fn command(&self, ranks: u32, launcher_args: &[&str], args: &[String]) -> Command {
        let mut all = self.mpi.launch(Configuration::ranks(ranks));
        all.extend(launcher_args.iter().map(|a| a.to_string()));
        all.push(self.executable.display().to_string());
        all.extend(args.iter().cloned());
        let mut cmd = Command::new(&all[0]);
        cmd.args(&all[1..]).current_dir(&self.dir.0);
        cmd
    }

    /// The output and log files of a launch named `name`, in the scratch
    /// directory.
    pub(crate) fn files(&self, name: &str) -> (PathBuf, PathBuf) {
        (
            self.dir.0.join(format!("{name}.out")),
            self.dir.0.join(format!("{name}.log")),
        )
    }

    /// Steps 2–3 for any program built here: `ranks` ranks of it under
    /// the MPI's launcher with `launcher_args` (MCA settings, say) and the
    /// program's `args`, `environment` adjusting the command, killed at
    /// `deadline`; returns the ranks' standard output. `name` names its
    /// output and log files in the scratch directory.
    pub(crate) fn launch_with(
        &self,
        ranks: u32,
        launcher_args: &[&str],
        args: &[String],
        name: &str,
        deadline: Instant,
        environment: impl FnOnce(&mut Command),
    ) -> Result<String, Error> {
        let mut cmd = self.command(ranks, launcher_args, args);
        environment(&mut cmd);
        let (output, log) = self.files(name);
        let mut launcher = Group::spawn(cmd, &output, &log).map_err(from_peer)?;
        let status = wait(&mut launcher, deadline, &log)?;
        if !status.success() {
            return Err(Error::Failed {
                launcher: self.mpi.launcher(),
                status,
                log: log_tail(&log),
            });
        }
        std::fs::read_to_string(&output).map_err(|source| Error::Io {
            what: "reading an MPI program's output",
            source,
        })
    }
}

/// Builds `source` as `NAME` with `mpi` ([`Program::build_from`]) once
/// and calls `launch` with it for each of `items`, one after the other: a
/// program of the peers that runs once per path or thread count. A build
/// that failed stands as each item's error. `on_step` is called after
/// each item, for progress.
pub(crate) fn build_and_launch_each<I, T, E: From<Error>>(
    mpi: Mpi,
    name: &'static str,
    source: &str,
    flags: &[&str],
    items: impl IntoIterator<Item = I>,
    mut launch: impl FnMut(&Program, &I) -> Result<T, E>,
    mut on_step: impl FnMut(),
) -> Vec<(I, Result<T, E>)> {
    let program = Program::build_from(mpi, name, source, flags);
    items
        .into_iter()
        .map(|item| {
            let result = match &program {
                Ok(program) => launch(program, &item),
                Err(e) => Err(E::from(e.again())),
            };
            on_step();
            (item, result)
        })
        .collect()
}

impl Error {
    /// A build's error again, for each launch it stands for (an
    /// [`io::Error`] is not `Clone`): [`Error::Missing`] as it is, any
    /// other as text.
    fn again(&self) -> Error {
        match self {
            Error::Missing { program, packages } => Error::Missing { program, packages },
            other => Error::Io {
                what: "building an MPI program",
                source: io::Error::other(other.to_string()),
            },
        }
    }
}

/// One launch's rows, or why there are none.
#[derive(Debug)]
pub struct Outcome {
    /// The MPI.
    pub mpi: Mpi,
    /// Ranks and threads.
    pub configuration: Configuration,
    /// The collective.
    pub operation: Operation,
    /// Its rows, ascending by size as given, or why there are none.
    pub result: Result<Vec<Measured>, Error>,
    /// Sizes not run: their buffers would pass [`Options::max_buffer_bytes`].
    pub skipped: Vec<usize>,
}

/// One MPI's outcomes, or why it could not be built.
#[derive(Debug)]
pub struct Report {
    /// The MPI.
    pub mpi: Mpi,
    /// One outcome per configuration and operation, or the build's error.
    pub result: Result<Vec<Outcome>, Error>,
}

/// Builds `coll.c` with each of `mpis` and runs every operation of
/// `operations` in every configuration of `configurations`, one launch
/// after the other; `progress` is called after each launch.
pub fn run_beside(
    mpis: &[Mpi],
    configurations: &[Configuration],
    operations: &[Operation],
    options: &Options,
    mut progress: impl FnMut(&Outcome),
) -> Vec<Report> {
    mpis.iter()
        .map(|&mpi| Report {
            mpi,
            result: Program::build(mpi).map(|program| {
                configurations
                    .iter()
                    .flat_map(|&c| operations.iter().map(move |&o| (c, o)))
                    .map(|(configuration, operation)| {
                        tracing::debug!(?mpi, %configuration, %operation, "running a collective peer");
                        let outcome = program.run(configuration, operation, options);
                        progress(&outcome);
                        outcome
                    })
                    .collect()
            }),
        })
        .collect()
}

fn missing_program(mpi: Mpi) -> Error {
    let program = [mpi.compiler(), mpi.launcher()]
        .into_iter()
        .find(|p| process::require(&[p], "").is_err())
        .unwrap_or(mpi.compiler());
    Error::Missing {
        program,
        packages: mpi.packages(),
    }
}

/// Waits for `group` until `deadline`, quoting `log` if it is killed.
fn wait(group: &mut Group, deadline: Instant, log: &Path) -> Result<ExitStatus, Error> {
    group.wait(deadline).map_err(|e| match e {
        crate::peers::Error::TimedOut(after) => Error::TimedOut {
            after,
            log: log_tail(log),
        },
        other => from_peer(other),
    })
}

/// The errors of [`Group`] other than a timeout: it fails only to start
/// or to wait ([`crate::peers::Error::Io`]).
fn from_peer(e: crate::peers::Error) -> Error {
    match e {
        crate::peers::Error::Io { what, source } => Error::Io { what, source },
        other => Error::Io {
            what: "running a peer",
            source: io::Error::other(other.to_string()),
        },
    }
}

/// The last [`LOG_TAIL_LINES`] non-blank lines of `log`.
pub(crate) fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}
