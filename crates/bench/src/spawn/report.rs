//! The report of `bench spawn`: one row per kind and N, the peers' rows
//! (PVM's, the 1998 one, and Open MPI's), the thesis' Table 5.1 beside
//! ours, then where a process start goes.

use super::{CommSpawn, Kind, Millis, Pvm, Report};
use crate::report::{three_figures, write_csv, write_grid, write_json, Figure};
use crate::seeds;
use serde::Serialize;
use std::fmt;
use std::io::{self, Write};

/// `--json`: per kind and N the ms until all joined and, for processes,
/// until the job finished and the timeline's stages, each median, min and
/// max; Table 5.1's figure at that N (`reference_1998_ms`); `pvm`: whether the pvm_spawn rows
/// were measured, and why not (`null` when they were); and `comm_spawn`
/// likewise for Open MPI's rows, with the N whose launches hung or failed
/// and were run again.
#[derive(Serialize)]
struct Document {
    benchmark: &'static str,
    unit: &'static str,
    repetitions: u32,
    rows: Vec<JsonRow>,
    pvm: JsonPvm,
    comm_spawn: JsonCommSpawn,
    /// The remote rows' yardstick, in µs.
    am_round_trip_us: Option<Spread>,
    /// The launcher rows, if run.
    launchers: Option<super::launchers::report::JsonLaunchers>,
}

#[derive(Serialize)]
struct JsonRow {
    kind: &'static str,
    count: u32,
    joined_ms: Option<Spread>,
    finished_ms: Option<Spread>,
    code_running_ms: Option<Spread>,
    past_init_ms: Option<Spread>,
    reference_1998_ms: Figure,
}

#[derive(Serialize)]
struct Spread {
    median: Figure,
    min: Figure,
    max: Figure,
}

impl From<&Millis> for Spread {
    fn from(m: &Millis) -> Spread {
        Spread {
            median: Figure(m.median),
            min: Figure(m.min),
            max: Figure(m.max),
        }
    }
}

#[derive(Serialize)]
struct JsonPvm {
    measured: bool,
    not_measured_because: Option<String>,
}

#[derive(Serialize)]
struct JsonCommSpawn {
    measured: bool,
    not_measured_because: Option<String>,
    retried: Vec<JsonRetried>,
}

#[derive(Serialize)]
struct JsonRetried {
    count: u32,
    hung_launches: u32,
    failed_launches: u32,
}

/// `--csv`: the table's rows, medians and spreads in ms; where pvm_spawn
/// or comm_spawn was not measured, one row of that kind with only its
/// kind. The launcher rows follow, their launcher as the kind and their
/// wall time as *finished*; a launcher not measured likewise has one row
/// with only its kind.
pub const CSV_HEADER: [&str; 11] = [
    "kind",
    "count",
    "joined_median_ms",
    "joined_min_ms",
    "joined_max_ms",
    "finished_median_ms",
    "finished_min_ms",
    "finished_max_ms",
    "code_running_median_ms",
    "past_init_median_ms",
    "reference_1998_ms",
];

#[derive(Serialize)]
struct CsvRow {
    kind: &'static str,
    count: Option<u32>,
    joined_median_ms: Figure,
    joined_min_ms: Figure,
    joined_max_ms: Figure,
    finished_median_ms: Figure,
    finished_min_ms: Figure,
    finished_max_ms: Figure,
    code_running_median_ms: Figure,
    past_init_median_ms: Figure,
    reference_1998_ms: Figure,
}

/// Table 5.1's figure of `kind` at `count`, if it has that N.
fn reference(count: u32, kind: Kind) -> Figure {
    Figure::of(kind.seed_ms(count))
}

/// `median (min–max)`, each to three figures; padded as a whole.
impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&format!(
            "{} ({}–{})",
            three_figures(self.median),
            three_figures(self.min),
            three_figures(self.max)
        ))
    }
}

impl Report {
    /// Nodes added to a running job against the peers' processes started
    /// into theirs, at each N all three measured: median ÷ median.
    fn added_ratios(&self, out: &mut dyn Write) -> io::Result<()> {
        let median = |kind: Kind, count: u32| {
            self.rows
                .iter()
                .find(|r| r.kind == kind && r.count == count)
                .map(|r| r.joined.median)
        };
        for row in self.rows.iter().filter(|r| r.kind == Kind::AddedNodes) {
            let mut said = Vec::new();
            for peer in [Kind::PvmSpawn, Kind::CommSpawn] {
                if let Some(theirs) = median(peer, row.count) {
                    said.push(format!(
                        "{:.2}× {}'s",
                        row.joined.median / theirs,
                        peer.name()
                    ));
                }
            }
            if !said.is_empty() {
                writeln!(
                    out,
                    "added nodes: {} added to a running job in {} ms, {}",
                    row.count,
                    three_figures(row.joined.median),
                    said.join(", ")
                )?;
            }
        }
        Ok(())
    }

    /// The thesis' Table 5.1 as printed, each column beside our rows of
    /// its kind at its N: medians, and ours ÷ 1998 in brackets; nothing
    /// if none of those rows ran at any of its N.
    fn table_5_1(&self, out: &mut dyn Write) -> io::Result<()> {
        let grid = self.table_5_1_grid();
        if grid.len() < 2 {
            return Ok(());
        }
        writeln!(
            out,
            "the thesis' Table 5.1 (1998): ms to spawn N on one host, processes (fork) and \
             threads (thr_create), beside ours (medians, all joined; ours ÷ 1998)"
        )?;
        write_grid(out, &grid)
    }

    fn table_5_1_grid(&self) -> Vec<Vec<String>> {
        const BESIDE_PROCESSES: [Kind; 2] = [Kind::Processes, Kind::PvmSpawn];
        const BESIDE_THREADS: [Kind; 2] = [Kind::Fibers, Kind::OsThreads];
        let ours = |kind: Kind, count: u32| {
            self.rows
                .iter()
                .find(|r| r.kind == kind && r.count == count)
                .map(|r| r.joined.median)
        };
        let beside = |kind: Kind, count: u32, seed: f64| {
            ours(kind, count).map_or_else(
                || "–".to_string(),
                |ms| format!("{} ({}×)", three_figures(ms), three_figures(ms / seed)),
            )
        };
        let mut header = vec!["N".to_string(), "1998 processes".to_string()];
        header.extend(BESIDE_PROCESSES.map(|k| k.name().to_string()));
        header.push("1998 threads".to_string());
        header.extend(BESIDE_THREADS.map(|k| k.name().to_string()));
        let mut grid = vec![header];
        for seed in &seeds::THESIS_TABLE_5_1 {
            let n = seed.spawned;
            let kinds = BESIDE_PROCESSES.iter().chain(&BESIDE_THREADS);
            if kinds.clone().all(|&k| ours(k, n).is_none()) {
                continue;
            }
            let mut line = vec![n.to_string(), seed.processes_ms.to_string()];
            line.extend(BESIDE_PROCESSES.map(|k| beside(k, n, seed.processes_ms.value)));
            line.push(seed.threads_ms.to_string());
            line.extend(BESIDE_THREADS.map(|k| beside(k, n, seed.threads_ms.value)));
            grid.push(line);
        }
        grid
    }

    /// The peers' kinds not measured at any N, which get a row with only
    /// their kind (a peer that failed at a later N keeps its rows).
    fn not_measured(&self) -> Vec<Kind> {
        [
            (matches!(self.pvm, Pvm::NotMeasured(_)), Kind::PvmSpawn),
            (
                matches!(self.comm_spawn, CommSpawn::NotMeasured(_)),
                Kind::CommSpawn,
            ),
        ]
        .into_iter()
        .filter(|&(failed, kind)| failed && !self.rows.iter().any(|r| r.kind == kind))
        .map(|(_, kind)| kind)
        .collect()
    }
}

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        let reference = |count: u32, kind: Kind| {
            kind.seed_ms(count)
                .map_or_else(String::new, |ms| format!("{ms:.2}"))
        };
        writeln!(
            out,
            "ms to start N, median (min–max) of {} repetitions after one warm-up",
            self.repetitions
        )?;
        writeln!(
            out,
            "{:<10} {:>3}  {:>28}  {:>28}  {:>10}",
            "started", "N", "all joined (min–max)", "job finished (min–max)", "1998 (5.1)"
        )?;
        for row in &self.rows {
            writeln!(
                out,
                "{:<10} {:>3}  {:>28}  {:>28}  {:>10}",
                row.kind.name(),
                row.count,
                row.joined,
                row.finished
                    .as_ref()
                    .map_or_else(|| "–".to_string(), Millis::to_string),
                reference(row.count, row.kind)
            )?;
        }
        for kind in self.not_measured() {
            writeln!(
                out,
                "{:<10} {:>3}  {:>28}  {:>28}  {:>10}",
                kind.name(),
                1,
                "–",
                "–",
                reference(1, kind)
            )?;
        }
        // Rows not asked for (`Options::kinds`) say nothing.
        let ran = |kind: Kind| self.rows.iter().any(|r| r.kind == kind);
        if ran(Kind::PvmSpawn) || matches!(self.pvm, Pvm::NotMeasured(_)) {
            writeln!(out, "pvm_spawn: {}", self.pvm)?;
        }
        if ran(Kind::CommSpawn) || matches!(self.comm_spawn, CommSpawn::NotMeasured(_)) {
            writeln!(out, "comm_spawn: {}", self.comm_spawn)?;
        }
        self.table_5_1(out)?;
        if ran(Kind::Processes) {
            // "line read": when the node's report reached the launcher.
            writeln!(
                out,
                "processes: ms from launch::run until the last node's code runs, until it is \
                 past init (node clocks), until the launcher reads its line, until run returns \
                 (medians)"
            )?;
            writeln!(
                out,
                "{:>3}  {:>12}  {:>10}  {:>10}  {:>12}",
                "N", "code running", "past init", "line read", "job finished"
            )?;
        }
        for row in self.rows.iter().filter(|r| r.kind == Kind::Processes) {
            if let (Some(t), Some(f)) = (&row.timeline, &row.finished) {
                writeln!(
                    out,
                    "{:>3}  {:>12}  {:>10}  {:>10}  {:>12}",
                    row.count,
                    three_figures(t.running.median),
                    three_figures(t.initialized.median),
                    three_figures(row.joined.median),
                    three_figures(f.median)
                )?;
            }
        }
        self.added_ratios(out)?;
        if let Some(am) = &self.am_round_trip_us {
            writeln!(
                out,
                "remote fibers: an active-message round trip between the two nodes takes {} µs",
                am
            )?;
            let one = self
                .rows
                .iter()
                .find(|r| r.kind == Kind::RemoteFibers && r.count == 1);
            if let Some(row) = one {
                let us = row.joined.median * 1e3;
                writeln!(
                    out,
                    "remote fibers: one started and joined in {} µs, {:.2}× the round trip \
                     (issue 14's goal: at most 2×)",
                    three_figures(us),
                    us / am.median
                )?;
            }
        }
        if let Some(hosts) = &self.emulated_hosts {
            writeln!(
                out,
                "processes: node i on emulated host i mod 2 ({}, {}), joined over {}",
                hosts.names[0], hosts.names[1], hosts.link
            )?;
        }
        if let Some(launchers) = &self.launchers {
            launchers.table(out, |count| {
                self.rows
                    .iter()
                    .find(|r| r.kind == Kind::PvmSpawn && r.count == count)
                    .map(|r| r.joined.median)
            })?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "spawn",
            unit: "ms",
            repetitions: self.repetitions,
            rows: self
                .rows
                .iter()
                .map(|row| JsonRow {
                    kind: row.kind.name(),
                    count: row.count,
                    joined_ms: Some((&row.joined).into()),
                    finished_ms: row.finished.as_ref().map(Spread::from),
                    code_running_ms: row.timeline.as_ref().map(|t| (&t.running).into()),
                    past_init_ms: row.timeline.as_ref().map(|t| (&t.initialized).into()),
                    reference_1998_ms: reference(row.count, row.kind),
                })
                .collect(),
            am_round_trip_us: self.am_round_trip_us.as_ref().map(Spread::from),
            launchers: self.launchers.as_ref().map(|l| l.json()),
            pvm: JsonPvm {
                measured: matches!(self.pvm, Pvm::Measured),
                not_measured_because: match &self.pvm {
                    Pvm::Measured => None,
                    Pvm::NotMeasured(e) => Some(e.to_string()),
                },
            },
            comm_spawn: match &self.comm_spawn {
                CommSpawn::Measured { retried } => JsonCommSpawn {
                    measured: true,
                    not_measured_because: None,
                    retried: retried
                        .iter()
                        .map(|r| JsonRetried {
                            count: r.count,
                            hung_launches: r.hung,
                            failed_launches: r.failed,
                        })
                        .collect(),
                },
                CommSpawn::NotMeasured(e) => JsonCommSpawn {
                    measured: false,
                    not_measured_because: Some(e.to_string()),
                    retried: Vec::new(),
                },
            },
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let missing = Figure(f64::NAN);
        let spread = |m: Option<&Millis>| {
            m.map_or([missing; 3], |m| {
                [Figure(m.median), Figure(m.min), Figure(m.max)]
            })
        };
        let mut lines: Vec<CsvRow> = self
            .rows
            .iter()
            .map(|row| {
                let [joined_median_ms, joined_min_ms, joined_max_ms] = spread(Some(&row.joined));
                let [finished_median_ms, finished_min_ms, finished_max_ms] =
                    spread(row.finished.as_ref());
                CsvRow {
                    kind: row.kind.name(),
                    count: Some(row.count),
                    joined_median_ms,
                    joined_min_ms,
                    joined_max_ms,
                    finished_median_ms,
                    finished_min_ms,
                    finished_max_ms,
                    code_running_median_ms: Figure::of(row.timeline.map(|t| t.running.median)),
                    past_init_median_ms: Figure::of(row.timeline.map(|t| t.initialized.median)),
                    reference_1998_ms: reference(row.count, row.kind),
                }
            })
            .collect();
        let only_kind = |kind| CsvRow {
            kind,
            count: None,
            joined_median_ms: missing,
            joined_min_ms: missing,
            joined_max_ms: missing,
            finished_median_ms: missing,
            finished_min_ms: missing,
            finished_max_ms: missing,
            code_running_median_ms: missing,
            past_init_median_ms: missing,
            reference_1998_ms: missing,
        };
        lines.extend(self.not_measured().into_iter().map(|k| only_kind(k.name())));
        if let Some(launchers) = &self.launchers {
            for row in &launchers.rows {
                let [finished_median_ms, finished_min_ms, finished_max_ms] =
                    spread(Some(&row.finished));
                lines.push(CsvRow {
                    count: Some(row.count),
                    finished_median_ms,
                    finished_min_ms,
                    finished_max_ms,
                    ..only_kind(row.launcher.name())
                });
            }
            let skipped = launchers.not_measured.iter();
            lines.extend(skipped.map(|(l, _)| only_kind(l.name())));
        }
        write_csv(out, &CSV_HEADER, lines)
    }
}
