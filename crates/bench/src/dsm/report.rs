//! The report of `bench dsm`: per path, a row per operation and layout
//! with its time per operation; then Table 1's message sizes, the seed's
//! beside ours, and what the seed says of its Fig 13.

use super::{messages, Measured, Message, Report, Row, Sample, SEED_FIGURE_13, UNIT};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;

/// `--json`: the repetitions, the unit, then per path its `samples`, each
/// an operation and layout with ns per operation (median, min, max), the
/// operations per repetition and the bytes per message the engine
/// counted (null where it counts none); a path without figures has none
/// and says why in `missing`. Then `messages`, Table 1 beside ours, and
/// `seed_figure_13`, the seed's words on its Fig 13.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    repetitions: u32,
    unit_bytes: usize,
    rows: Vec<JsonRow<'a>>,
    messages: Vec<Message>,
    seed_figure_13: &'static str,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    path: String,
    missing: Option<&'a str>,
    samples: Vec<Line<'a>>,
}

/// One sample, as JSON and as a CSV line.
#[derive(Serialize)]
struct Line<'a> {
    path: String,
    operation: &'static str,
    nodes: Option<u32>,
    threads: Option<u32>,
    median_ns: Option<u64>,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    operations: Option<u32>,
    repetitions: Option<u32>,
    bytes: Figure,
    missing: Option<&'a str>,
}

/// `--csv`: a line per path, operation and layout; a path without figures
/// is one line with only the path and, last, why it is `missing`. The
/// message sizes are in the JSON and the table only (a CSV holds one
/// table).
pub const CSV_HEADER: [&str; 11] = [
    "path",
    "operation",
    "nodes",
    "threads",
    "median_ns",
    "min_ns",
    "max_ns",
    "operations",
    "repetitions",
    "bytes",
    "missing",
];

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// The lines of a row: one per sample, or one saying why it is missing.
fn lines(row: &Row) -> Vec<Line<'_>> {
    match &row.measured {
        Measured::Samples(samples) => samples
            .iter()
            .map(|s| Line {
                path: row.path.name(),
                operation: s.operation.name(),
                nodes: Some(s.nodes),
                threads: Some(s.threads),
                median_ns: Some(nanos(s.times.median)),
                min_ns: Some(nanos(s.times.min)),
                max_ns: Some(nanos(s.times.max)),
                operations: Some(s.operations),
                repetitions: Some(s.repetitions),
                bytes: Figure::of(s.bytes),
                missing: None,
            })
            .collect(),
        Measured::Missing(why) => vec![Line {
            path: row.path.name(),
            operation: "",
            nodes: None,
            threads: None,
            median_ns: None,
            min_ns: None,
            max_ns: None,
            operations: None,
            repetitions: None,
            bytes: Figure(f64::NAN),
            missing: Some(why),
        }],
    }
}

/// What the engine counted per message, in words.
fn bytes(s: &Sample) -> String {
    match s.bytes {
        Some(b) => match s.operation {
            super::Operation::RemoteReadFault => format!("{b:.0} per fetch"),
            _ => format!("{b:.0} per diff"),
        },
        None => String::new(),
    }
}

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "threadwire-dsm, µs per operation, median (min–max) of {} repetitions; {} KiB units",
            self.repetitions,
            UNIT / 1024
        )?;
        writeln!(
            out,
            "shm: the nodes on this host, shared memory; tcp/LINK: one emulated host per node, \
             joined by LINK; layout: nodes x threads"
        )?;
        writeln!(
            out,
            "{:<14} {:<24} {:>6} {:>26} {:>8}  engine's bytes",
            "path", "operation", "layout", "µs per operation", "per rep."
        )?;
        for row in &self.rows {
            let name = row.path.name();
            match &row.measured {
                Measured::Samples(samples) => {
                    for s in samples {
                        let us = |d: Duration| three_figures(d.as_secs_f64() * 1e6);
                        let t = &s.times;
                        let time = format!("{} ({}–{})", us(t.median), us(t.min), us(t.max));
                        writeln!(
                            out,
                            "{name:<14} {:<24} {:>6} {time:>26} {:>8}  {}",
                            s.operation.name(),
                            format!("{}x{}", s.nodes, s.threads),
                            s.operations,
                            bytes(s)
                        )?;
                    }
                }
                Measured::Missing(why) => writeln!(out, "{name:<14} missing: {why}")?,
            }
        }
        writeln!(out)?;
        writeln!(
            out,
            "message sizes in bytes, request / reply: Strings (seed Table 1, 8192-byte pages) beside \
             threadwire-dsm ({}-byte frame header and payload; a reply has one status byte more; \
             n, m: write notices of {} bytes)",
            super::messages::FRAME_HEADER,
            super::messages::NOTICE
        )?;
        writeln!(
            out,
            "{:<16} {:>16} {:>22}  our message",
            "event", "Strings", "threadwire-dsm"
        )?;
        for m in messages() {
            writeln!(
                out,
                "{:<16} {:>16} {:>22}  {}",
                m.event,
                format!("{} / {}", m.seed_request, m.seed_reply),
                format!("{} / {}", m.request, m.reply),
                m.ours
            )?;
        }
        writeln!(out, "{SEED_FIGURE_13}")
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "dsm",
            repetitions: self.repetitions,
            unit_bytes: UNIT,
            rows: self
                .rows
                .iter()
                .map(|row| {
                    let missing = match &row.measured {
                        Measured::Missing(why) => Some(why.as_str()),
                        Measured::Samples(_) => None,
                    };
                    JsonRow {
                        path: row.path.name(),
                        missing,
                        samples: match missing {
                            Some(_) => Vec::new(),
                            None => lines(row),
                        },
                    }
                })
                .collect(),
            messages: messages(),
            seed_figure_13: SEED_FIGURE_13,
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        write_csv(out, &CSV_HEADER, self.rows.iter().flat_map(lines))
    }
}
