//! The report of `bench pvm`: per placement and measure, one line per
//! size (or count) with each runtime's median (min–max) and threadwire's
//! median over each PVM row's.

use super::{Encoding, Measure, Placement, Row, Runtime, Skipped};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;

/// Everything [`run`](super::run) measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// The encoding of every message.
    pub encoding: Encoding,
    /// Runs of the program per row.
    pub repetitions: u32,
    /// How long each measurement lasted inside the program.
    pub per_measurement: Duration,
    /// Placement-major, then by measure, size and runtime.
    pub rows: Vec<Row>,
    /// Rows not measured, and why.
    pub skipped: Vec<Skipped>,
}

/// `--json`.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    program: &'static str,
    encoding: &'static str,
    repetitions: u32,
    ms_per_measurement: u64,
    rows: Vec<JsonRow>,
    skipped: Vec<JsonSkipped<'a>>,
}

/// A row of the JSON and of the CSV.
#[derive(Serialize)]
struct JsonRow {
    placement: &'static str,
    link: Option<&'static str>,
    measure: &'static str,
    runtime: &'static str,
    size: usize,
    unit: &'static str,
    median: Figure,
    min: Figure,
    max: Figure,
}

#[derive(Serialize)]
struct JsonSkipped<'a> {
    rows: &'a str,
    reason: &'a str,
}

/// `--csv`: one line per row.
pub const CSV_HEADER: [&str; 9] = [
    "placement",
    "link",
    "measure",
    "runtime",
    "size",
    "unit",
    "median",
    "min",
    "max",
];

/// The program's path in the repository, as the report names it.
const PROGRAM: &str = "bench-peers/pvm/pvmbench.c";

impl Report {
    fn serializable_rows(&self) -> impl Iterator<Item = JsonRow> + '_ {
        self.rows.iter().map(|row| JsonRow {
            placement: match row.placement {
                Placement::OneHost => "one_host",
                Placement::TwoHosts(_) => "two_hosts",
            },
            link: match row.placement {
                Placement::OneHost => None,
                Placement::TwoHosts(link) => Some(link.name()),
            },
            measure: row.measure.name(),
            runtime: row.runtime.name(),
            size: row.size,
            unit: row.measure.unit(),
            median: Figure(row.figure.median),
            min: Figure(row.figure.min),
            max: Figure(row.figure.max),
        })
    }

    /// The rows of `placement` and `measure`.
    fn rows_of(&self, placement: Placement, measure: Measure) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(move |r| r.placement == placement && r.measure == measure)
    }
}

/// The table's title of a measure.
fn title(measure: Measure) -> &'static str {
    match measure {
        Measure::RoundTrip => "round trip, µs (tw ÷ PVM below 1: threadwire faster)",
        Measure::Bandwidth => "one-way bandwidth, MB/s (tw ÷ PVM above 1: threadwire faster)",
        Measure::Spawn => {
            "pvm_spawn until a message from each task, ms (tw ÷ PVM below 1: threadwire faster)"
        }
    }
}

/// A size as the table gives it: `8 B`, `100 kB`, `1 MB`; a count of tasks.
fn size_label(measure: Measure, size: usize) -> String {
    match measure {
        Measure::Spawn if size == 1 => "1 task".to_string(),
        Measure::Spawn => format!("{size} tasks"),
        _ if size >= 1_000_000 && size.is_multiple_of(1_000_000) => {
            format!("{} MB", size / 1_000_000)
        }
        _ if size >= 1000 && size.is_multiple_of(1000) => format!("{} kB", size / 1000),
        _ => format!("{size} B"),
    }
}

const CELL: usize = 24;

impl crate::report::Report for Report {
    /// Per placement and measure: a line per size with each runtime's
    /// median (min–max) and tw ÷ each PVM row (medians); then what was
    /// skipped and why.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{PROGRAM} (PVM 3.4's pvm3.h, -lpvm3) under threadwire's libpvm3 and PVM 3.4.6, \
             {}, {} runs alternating, {} ms per measurement: median (min–max)",
            self.encoding.name(),
            self.repetitions,
            self.per_measurement.as_millis()
        )?;
        let mut placements: Vec<Placement> = self.rows.iter().map(|r| r.placement).collect();
        placements.dedup();
        for placement in placements {
            for measure in Measure::ALL {
                let mut sizes: Vec<usize> =
                    self.rows_of(placement, measure).map(|r| r.size).collect();
                sizes.sort_unstable();
                sizes.dedup();
                if sizes.is_empty() {
                    continue;
                }
                let runtimes = measure.runtimes();
                writeln!(out, "\n{placement}: {}", title(measure))?;
                write!(out, "{:<10}", "")?;
                for runtime in runtimes {
                    write!(out, " {:<CELL$}", runtime.name())?;
                }
                for runtime in &runtimes[1..] {
                    let short = match runtime {
                        Runtime::PvmDirect => "tw ÷ direct",
                        _ => "tw ÷ via pvmd",
                    };
                    write!(out, " {short:>15}")?;
                }
                writeln!(out)?;
                let figure = three_figures;
                for size in sizes {
                    let find = |runtime: Runtime| {
                        self.rows_of(placement, measure)
                            .find(|r| r.size == size && r.runtime == runtime)
                    };
                    write!(out, "{:<10}", size_label(measure, size))?;
                    for &runtime in runtimes {
                        let cell = find(runtime).map_or_else(
                            || "–".to_string(),
                            |r| {
                                let s = r.figure;
                                format!(
                                    "{} ({}–{})",
                                    figure(s.median),
                                    figure(s.min),
                                    figure(s.max)
                                )
                            },
                        );
                        write!(out, " {cell:<CELL$}")?;
                    }
                    let ours = find(Runtime::Threadwire).map(|r| r.figure.median);
                    for &runtime in &runtimes[1..] {
                        let ratio = match (ours, find(runtime).map(|r| r.figure.median)) {
                            (Some(ours), Some(theirs)) if theirs > 0.0 => {
                                three_figures(ours / theirs)
                            }
                            _ => "–".to_string(),
                        };
                        write!(out, " {ratio:>15}")?;
                    }
                    writeln!(out)?;
                }
            }
        }
        if !self.skipped.is_empty() {
            writeln!(out)?;
        }
        for skipped in &self.skipped {
            writeln!(out, "skipped: {}: {}", skipped.rows, skipped.reason)?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "pvm",
            program: PROGRAM,
            encoding: self.encoding.name(),
            repetitions: self.repetitions,
            ms_per_measurement: self.per_measurement.as_millis() as u64,
            rows: self.serializable_rows().collect(),
            skipped: self
                .skipped
                .iter()
                .map(|s| JsonSkipped {
                    rows: &s.rows,
                    reason: &s.reason,
                })
                .collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        write_csv(out, &CSV_HEADER, self.serializable_rows())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pvm::Spread;
    use crate::report::Report as _;

    fn row(measure: Measure, runtime: Runtime, size: usize, median: f64) -> Row {
        Row {
            placement: Placement::OneHost,
            measure,
            runtime,
            size,
            figure: Spread {
                median,
                min: median / 2.0,
                max: median * 2.0,
            },
        }
    }

    #[test]
    fn the_table_gives_every_runtime_and_the_ratios() {
        let report = Report {
            encoding: Encoding::Raw,
            repetitions: 3,
            per_measurement: Duration::from_millis(50),
            rows: vec![
                row(Measure::RoundTrip, Runtime::Threadwire, 8, 2.0),
                row(Measure::RoundTrip, Runtime::PvmDirect, 8, 20.0),
                row(Measure::RoundTrip, Runtime::PvmDaemon, 8, 40.0),
                row(Measure::Spawn, Runtime::Threadwire, 16, 30.0),
            ],
            skipped: vec![Skipped {
                rows: "two hosts, fast100".into(),
                reason: "not root".into(),
            }],
        };
        let mut out = Vec::new();
        report.table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = text.lines().find(|l| l.starts_with("8 B")).unwrap();
        assert!(line.contains("2.00 (1.00–4.00)"), "{text}");
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[words.len() - 2..], ["0.100", "0.0500"], "{text}");
        let spawn = text.lines().find(|l| l.starts_with("16 tasks")).unwrap();
        assert!(spawn.contains('–'), "{text}");
        assert!(
            text.contains("skipped: two hosts, fast100: not root"),
            "{text}"
        );
        let mut csv = Vec::new();
        report.csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert_eq!(
            csv.lines().nth(1),
            Some("one_host,,round_trip,threadwire libpvm3,8,us,2,1,4")
        );
    }
}
