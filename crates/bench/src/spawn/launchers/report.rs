//! The launcher rows in `bench spawn`'s report: their table, the ratios
//! to the fastest MPI launcher and to pvm_spawn, issue 15's goals, and
//! their JSON and CSV pieces.

use super::{Launcher, Report, Row};
use crate::report::three_figures;
use serde::Serialize;
use std::io::{self, Write};

/// Issue 15's goal for 256 nodes, in ms.
pub const GOAL_256_MS: f64 = 3000.0;

/// `--json`'s `launchers`: the rows, and every launcher whether measured
/// or not (so the document's shape is the same on every machine).
#[derive(Serialize)]
pub(crate) struct JsonLaunchers {
    repetitions: u32,
    rows: Vec<JsonRow>,
    launchers: Vec<JsonLauncher>,
}

#[derive(Serialize)]
struct JsonRow {
    launcher: &'static str,
    count: u32,
    finished_ms: Spread,
}

#[derive(Serialize)]
struct Spread {
    median: crate::report::Figure,
    min: crate::report::Figure,
    max: crate::report::Figure,
}

#[derive(Serialize)]
struct JsonLauncher {
    name: &'static str,
    measured: bool,
    not_measured_because: Option<String>,
    failed_at: Option<u32>,
    failed_because: Option<String>,
}

/// How a threadwire launcher fares against the goals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goals {
    /// The N at which it was measured beside an MPI launcher.
    pub compared: usize,
    /// Of those, the N at which it was at least as fast as the fastest.
    pub as_fast: usize,
    /// Its median for 256 nodes, if measured.
    pub nodes_256_ms: Option<f64>,
}

impl Report {
    fn median(&self, launcher: Launcher, count: u32) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.launcher == launcher && r.count == count)
            .map(|r| r.finished.median)
    }

    /// The fastest MPI launcher at `count` and its median.
    pub fn fastest_mpi(&self, count: u32) -> Option<(Launcher, f64)> {
        Launcher::ALL
            .into_iter()
            .filter(|l| l.is_mpi())
            .filter_map(|l| Some((l, self.median(l, count)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// `launcher` against issue 15's goals.
    pub fn goals(&self, launcher: Launcher) -> Goals {
        let mut goals = Goals {
            compared: 0,
            as_fast: 0,
            nodes_256_ms: self.median(launcher, 256),
        };
        for row in self.rows.iter().filter(|r| r.launcher == launcher) {
            if let Some((_, fastest)) = self.fastest_mpi(row.count) {
                goals.compared += 1;
                goals.as_fast += usize::from(row.finished.median <= fastest);
            }
        }
        goals
    }

    /// The rows' table, then per threadwire launcher and N its ratio to
    /// the fastest MPI launcher and to `pvm_spawn` (its median at N, from
    /// the report's own rows, if measured), then the goals.
    pub(crate) fn table(
        &self,
        out: &mut dyn Write,
        pvm_spawn: impl Fn(u32) -> Option<f64>,
    ) -> io::Result<()> {
        writeln!(
            out,
            "jobs under launchers: ms from starting the launcher until it exits, N processes \
             that each init, pass one message round a ring and exit; median (min–max) of {} \
             repetitions after one warm-up, launchers alternating",
            self.repetitions
        )?;
        writeln!(
            out,
            "{:<26} {:>4}  {:>28}",
            "launcher", "N", "job finished (min–max)"
        )?;
        for row in &self.rows {
            writeln!(
                out,
                "{:<26} {:>4}  {:>28}",
                row.launcher.name(),
                row.count,
                row.finished
            )?;
        }
        for (launcher, e) in &self.not_measured {
            writeln!(out, "{}: not measured: {e}", launcher.name())?;
        }
        for f in &self.failed {
            writeln!(
                out,
                "{}: failed at N={}, no rows from there on: {}",
                f.launcher.name(),
                f.count,
                f.error
            )?;
        }
        let ours = Launcher::ALL.into_iter().filter(|l| !l.is_mpi());
        for row in self.rows.iter().filter(|r| !r.launcher.is_mpi()) {
            let mut said = Vec::new();
            if let Some((fastest, theirs)) = self.fastest_mpi(row.count) {
                said.push(format!(
                    "{:.2}× the fastest MPI launcher's, {} ({} ms)",
                    row.finished.median / theirs,
                    fastest.name(),
                    three_figures(theirs)
                ));
            }
            if let Some(pvm) = pvm_spawn(row.count) {
                said.push(format!(
                    "{:.2}× pvm_spawn's ({} ms)",
                    row.finished.median / pvm,
                    three_figures(pvm)
                ));
            }
            if !said.is_empty() {
                writeln!(
                    out,
                    "{} N={}: {} ms, {}",
                    row.launcher.name(),
                    row.count,
                    three_figures(row.finished.median),
                    said.join(", ")
                )?;
            }
        }
        for launcher in ours {
            let goals = self.goals(launcher);
            if goals.compared == 0 && goals.nodes_256_ms.is_none() {
                continue;
            }
            let nodes_256 = match goals.nodes_256_ms {
                Some(ms) => format!(
                    "256 nodes in {} ms, {} 3 s",
                    three_figures(ms),
                    if ms < GOAL_256_MS {
                        "under"
                    } else {
                        "not under"
                    }
                ),
                None => "256 nodes not measured".to_string(),
            };
            writeln!(
                out,
                "issue 15: {} at least as fast as the fastest MPI launcher at {} of {} N; {}",
                launcher.name(),
                goals.as_fast,
                goals.compared,
                nodes_256
            )?;
        }
        Ok(())
    }

    pub(crate) fn json(&self) -> JsonLaunchers {
        let figure = crate::report::Figure;
        JsonLaunchers {
            repetitions: self.repetitions,
            rows: self
                .rows
                .iter()
                .map(|r: &Row| JsonRow {
                    launcher: r.launcher.name(),
                    count: r.count,
                    finished_ms: Spread {
                        median: figure(r.finished.median),
                        min: figure(r.finished.min),
                        max: figure(r.finished.max),
                    },
                })
                .collect(),
            launchers: Launcher::ALL
                .into_iter()
                .map(|launcher| {
                    let skipped = self.not_measured.iter().find(|(l, _)| *l == launcher);
                    let failed = self.failed.iter().find(|f| f.launcher == launcher);
                    JsonLauncher {
                        name: launcher.name(),
                        measured: skipped.is_none(),
                        not_measured_because: skipped.map(|(_, e)| e.to_string()),
                        failed_at: failed.map(|f| f.count),
                        failed_because: failed.map(|f| f.error.to_string()),
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spawn::Millis;

    fn row(launcher: Launcher, count: u32, median: f64) -> Row {
        Row {
            launcher,
            count,
            finished: Millis {
                median,
                min: median,
                max: median,
            },
        }
    }

    #[test]
    fn ratios_are_to_the_fastest_mpi_and_goals_count_them() {
        let report = Report {
            repetitions: 1,
            rows: vec![
                row(Launcher::Run, 1, 50.0),
                row(Launcher::Run, 256, 2500.0),
                row(Launcher::OpenMpi, 1, 100.0),
                row(Launcher::OpenMpi, 256, 2000.0),
                row(Launcher::Mpich, 1, 80.0),
            ],
            not_measured: Vec::new(),
            failed: Vec::new(),
        };
        assert_eq!(report.fastest_mpi(1), Some((Launcher::Mpich, 80.0)));
        assert_eq!(
            report.goals(Launcher::Run),
            Goals {
                compared: 2,
                as_fast: 1,
                nodes_256_ms: Some(2500.0)
            }
        );
        let mut text = Vec::new();
        report.table(&mut text, |_| Some(25.0)).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(
                "threadwire run N=1: 50.0 ms, 0.62× the fastest MPI launcher's, \
                 mpiexec.hydra (MPICH) (80.0 ms), 2.00× pvm_spawn's (25.0 ms)"
            ),
            "{text}"
        );
        assert!(
            text.contains("at 1 of 2 N; 256 nodes in 2500 ms, under 3 s"),
            "{text}"
        );
    }
}
