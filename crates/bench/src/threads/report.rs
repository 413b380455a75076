//! The report of `bench threads`: one row per measurement, fibers beside
//! OS threads, then the idle cost.

use super::{Report, Timing};
use crate::report::{write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};

/// `--json`: per row the fiber and OS columns (operations per repetition,
/// ns per operation: median, min, max), OS time over fiber time at the
/// medians, the 1998 figure and the note; then the idle cost.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    unit: &'static str,
    repetitions: u32,
    rows: Vec<JsonRow<'a>>,
    idle: JsonIdle,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    measurement: &'static str,
    fibers: Column,
    os: Column,
    os_over_fibers: Figure,
    reference_1998_ns: Figure,
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct Column {
    ops: u64,
    median_ns: Figure,
    min_ns: Figure,
    max_ns: Figure,
}

impl From<&Timing> for Column {
    fn from(t: &Timing) -> Column {
        Column {
            ops: t.ops,
            median_ns: Figure(t.median_ns),
            min_ns: Figure(t.min_ns),
            max_ns: Figure(t.max_ns),
        }
    }
}

#[derive(Serialize)]
struct JsonIdle {
    fibers: usize,
    window_ns: u64,
    cpu_ns: u64,
    percent_of_core: Figure,
}

/// `--csv`: the table's rows, ns per operation.
pub const CSV_HEADER: [&str; 12] = [
    "measurement",
    "fibers_ops",
    "fibers_median_ns",
    "fibers_min_ns",
    "fibers_max_ns",
    "os_ops",
    "os_median_ns",
    "os_min_ns",
    "os_max_ns",
    "os_over_fibers",
    "reference_1998_ns",
    "note",
];

impl crate::report::Report for Report {
    /// One row per measurement, then the idle cost.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        let spread = |t: &Timing| format!("{:.1} ({:.1}–{:.1})", t.median_ns, t.min_ns, t.max_ns);
        writeln!(
            out,
            "{:<22}  {:>26}  {:>26}  {:>8}  {:>9}  note",
            "ns per operation", "fibers (min–max)", "OS threads (min–max)", "OS/fiber", "1998"
        )?;
        for row in &self.rows {
            writeln!(
                out,
                "{:<22}  {:>26}  {:>26}  {:>7.1}×  {:>9}  {}",
                row.measurement.name(),
                spread(&row.fibers),
                spread(&row.os),
                row.ratio(),
                row.measurement
                    .reference_1998_ns()
                    .map_or_else(|| "–".to_string(), |ns| format!("{ns:.0}")),
                row.note.as_deref().unwrap_or("")
            )?;
        }
        let idle = &self.idle;
        writeln!(
            out,
            "idle: {} parked fibers, no traffic: {:.2}% of a core ({:.1} ms CPU in {:.1} s, whole process)",
            idle.fibers,
            idle.percent_of_core(),
            idle.cpu.as_secs_f64() * 1e3,
            idle.window.as_secs_f64()
        )
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let idle = &self.idle;
        let document = Document {
            benchmark: "threads",
            unit: "ns per operation",
            repetitions: self.repetitions,
            rows: self
                .rows
                .iter()
                .map(|row| JsonRow {
                    measurement: row.measurement.name(),
                    fibers: (&row.fibers).into(),
                    os: (&row.os).into(),
                    os_over_fibers: Figure(row.ratio()),
                    reference_1998_ns: Figure::of(row.measurement.reference_1998_ns()),
                    note: row.note.as_deref(),
                })
                .collect(),
            idle: JsonIdle {
                fibers: idle.fibers,
                window_ns: idle.window.as_nanos() as u64,
                cpu_ns: idle.cpu.as_nanos() as u64,
                percent_of_core: Figure(idle.percent_of_core()),
            },
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let rows = self.rows.iter().map(|row| {
            let column = |t: &Timing| {
                (
                    t.ops,
                    Figure(t.median_ns),
                    Figure(t.min_ns),
                    Figure(t.max_ns),
                )
            };
            (
                row.measurement.name(),
                column(&row.fibers),
                column(&row.os),
                Figure(row.ratio()),
                Figure::of(row.measurement.reference_1998_ns()),
                row.note.as_deref(),
            )
        });
        write_csv(out, &CSV_HEADER, rows)
    }
}
