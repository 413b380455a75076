//! The report of `bench threads`: one row per measurement, fibers beside
//! SCALE threads and OS threads beside Solaris threads (SCALE's Table 1),
//! then the idle cost.

use super::{Report, Timing};
use crate::report::{write_csv, write_json, Figure};
use crate::seeds;
use serde::Serialize;
use std::io::{self, Write};

/// `--json`: per row the fiber and OS columns (operations per repetition,
/// ns per operation: median, min, max), OS time over fiber time at the
/// medians, SCALE Threads' figure (`reference_1998_ns`) and Solaris
/// threads' (`solaris_1998_ns`, `solaris_1998_approximate` where the
/// paper estimates it) from SCALE's Table 1, and the note; then the idle
/// cost.
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
    solaris_1998_ns: Figure,
    solaris_1998_approximate: Option<bool>,
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

/// `--csv`: the table's rows, ns per operation (the SCALE and Solaris
/// figures too).
pub const CSV_HEADER: [&str; 14] = [
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
    "solaris_1998_ns",
    "solaris_1998_approximate",
    "note",
];

/// Solaris threads' figure of `row` in ns, and whether it is an estimate.
fn solaris(row: &super::Row) -> (Figure, Option<bool>) {
    let seed = row.measurement.seed().map(|s| s.solaris_us);
    (
        Figure::of(seed.map(|q| (q.value * 1e3).round())),
        seed.map(|q| q.approximate),
    )
}

impl crate::report::Report for Report {
    /// One row per measurement, SCALE's Table 1 beside, then the idle cost.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        let spread = |t: &Timing| format!("{:.1} ({:.1}–{:.1})", t.median_ns, t.min_ns, t.max_ns);
        let seed = |q: Option<seeds::Quoted>| q.map_or_else(|| "–".to_string(), |q| q.to_string());
        writeln!(
            out,
            "{:<22}  {:>26}  {:>16}  {:>26}  {:>18}  {:>8}  note",
            "ns per operation",
            "fibers (min–max)",
            "SCALE threads µs",
            "OS threads (min–max)",
            "Solaris threads µs",
            "OS/fiber"
        )?;
        for row in &self.rows {
            let paper = row.measurement.seed();
            writeln!(
                out,
                "{:<22}  {:>26}  {:>16}  {:>26}  {:>18}  {:>7.1}×  {}",
                row.measurement.name(),
                spread(&row.fibers),
                seed(paper.map(|r| r.scale_us)),
                spread(&row.os),
                seed(paper.map(|r| r.solaris_us)),
                row.ratio(),
                row.note.as_deref().unwrap_or("")
            )?;
        }
        writeln!(
            out,
            "SCALE threads, Solaris threads: SCALE Suite's Table 1 (1998, a 167-MHz \
             UltraSPARC-1), µs as printed; ≈: the paper's estimate"
        )?;
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
                    solaris_1998_ns: solaris(row).0,
                    solaris_1998_approximate: solaris(row).1,
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
                solaris(row).0,
                solaris(row).1,
                row.note.as_deref(),
            )
        });
        write_csv(out, &CSV_HEADER, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{IdleCost, Measurement, Row};
    use super::*;
    use crate::report::Report as _;
    use std::time::Duration;

    fn report() -> Report {
        let timing = |ns| Timing {
            ops: 10,
            median_ns: ns,
            min_ns: ns,
            max_ns: ns,
        };
        Report {
            rows: Measurement::ALL
                .iter()
                .map(|&measurement| Row {
                    measurement,
                    fibers: timing(20.0),
                    os: timing(400.0),
                    note: None,
                })
                .collect(),
            idle: IdleCost {
                fibers: 10,
                window: Duration::from_secs(1),
                cpu: Duration::from_millis(1),
            },
            repetitions: 1,
        }
    }

    #[test]
    fn scale_and_solaris_threads_sit_beside_fibers_and_os_threads() {
        let mut out = Vec::new();
        report().table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row = |name: &str| -> Vec<String> {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap();
            line[name.len()..]
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        // fibers, (min–max), SCALE, OS threads, (min–max), Solaris, ratio.
        let seeds = |name| {
            let r = row(name);
            (r[2].clone(), r[5].clone())
        };
        assert_eq!(seeds("mutex"), ("0.126".into(), "0.706".into()), "{text}");
        assert_eq!(seeds("semaphore"), ("0.354".into(), "5.82".into()));
        assert_eq!(seeds("context switch"), ("0.81".into(), "21.7".into()));
        assert_eq!(seeds("thread switch"), ("2.33".into(), "≈22".into()));
        let sync = seeds("thread synchronization");
        assert_eq!(sync, ("2.54".into(), "44.79".into()));
        assert_eq!(seeds("create + join"), ("–".into(), "–".into()));
        assert_eq!(row("mutex")[6], "20.0×");
    }

    #[test]
    fn the_solaris_estimate_is_marked_in_json() {
        let mut out = Vec::new();
        report().json(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r#""solaris_1998_ns": 22000, "solaris_1998_approximate": true"#),
            "{text}"
        );
        assert!(text.contains(r#""solaris_1998_ns": 706, "#), "{text}");
    }
}
