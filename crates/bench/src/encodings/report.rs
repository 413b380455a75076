//! The report of `bench encodings`: per size, one row per encoding.

use super::{name, Report};
use crate::report::{mbps, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;
use threadwire::Encoding;

/// `--json`: the path between the nodes, then per size and encoding the
/// one-way ns, median, min and max, and MB/s of the values' bytes at the
/// median.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    path: &'a str,
    value: &'static str,
    repetitions: u32,
    rows: Vec<Row>,
}

/// A row of the JSON; of the CSV too, after the path.
#[derive(Serialize)]
struct Row {
    encoding: &'static str,
    size: usize,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    mbps: Figure,
}

/// `--csv`: the table's rows.
pub const CSV_HEADER: [&str; 7] = [
    "path",
    "encoding",
    "size",
    "median_ns",
    "min_ns",
    "max_ns",
    "mbps",
];

impl Report {
    fn serializable_rows(&self) -> impl Iterator<Item = Row> + '_ {
        let nanos = |d: Duration| d.as_nanos() as u64;
        self.rows.iter().map(move |row| Row {
            encoding: name(row.encoding),
            size: row.sample.size,
            median_ns: nanos(row.sample.one_way),
            min_ns: nanos(row.sample.min),
            max_ns: nanos(row.sample.max),
            mbps: Figure(row.sample.mbps()),
        })
    }
}

impl crate::report::Report for Report {
    /// Per size, one row per encoding with the one-way time in µs, median
    /// (min–max), MB/s of the values' bytes at the median, and its median
    /// over raw's at that size.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "f64 values packed by the sender, unpacked into a Vec<f64> by the receiver, node to \
             node over {}: one-way time (half a round trip), median (min–max) of {} repetitions",
            self.path, self.repetitions
        )?;
        writeln!(
            out,
            "{:>10} {:<21} {:>34} {:>10} {:>7}",
            "size (B)", "encoding", "one-way µs (min–max)", "MB/s", "÷ raw"
        )?;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        for row in &self.rows {
            let s = &row.sample;
            let raw = self
                .rows
                .iter()
                .find(|r| r.encoding == Encoding::Raw && r.sample.size == s.size)
                .map(|r| r.sample.one_way.as_secs_f64());
            let ratio = raw.map_or_else(
                || "–".to_string(),
                |raw| format!("{:.2}", s.one_way.as_secs_f64() / raw),
            );
            writeln!(
                out,
                "{:>10} {:<21} {:>34} {:>10} {:>7}",
                s.size,
                name(row.encoding),
                format!("{:.3} ({:.3}–{:.3})", us(s.one_way), us(s.min), us(s.max)),
                mbps(s.mbps()),
                ratio
            )?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "encodings",
            path: &self.path,
            value: "f64",
            repetitions: self.repetitions,
            rows: self.serializable_rows().collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let path = self.path.as_str();
        let rows = self.serializable_rows().map(|row| (path, row));
        write_csv(out, &CSV_HEADER, rows)
    }
}
