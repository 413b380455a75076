//! The report of `bench rate`: one row per kind and thread count.

use super::{Rate, Sample};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};

/// The result of `bench rate`, with the options that shape its heading.
#[derive(Clone, Debug)]
pub struct Report {
    /// Messages per thread per repetition.
    pub messages: u64,
    /// Sends (receives) completed together.
    pub window: usize,
    /// Timed repetitions per thread count.
    pub repetitions: u32,
    /// One per kind and thread count, kind-major.
    pub samples: Vec<Sample>,
}

/// `--json`: the options, then per kind and thread count the send-side and
/// end-to-end rates, median, min and max.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    unit: &'static str,
    message_size: usize,
    window: usize,
    repetitions: u32,
    rows: Vec<JsonRow<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    kind: &'a str,
    threads: u32,
    messages: u64,
    send: Spread,
    end_to_end: Spread,
}

#[derive(Serialize)]
struct Spread {
    median: Figure,
    min: Figure,
    max: Figure,
}

impl From<&Rate> for Spread {
    fn from(r: &Rate) -> Spread {
        Spread {
            median: Figure(r.median),
            min: Figure(r.min),
            max: Figure(r.max),
        }
    }
}

/// `--csv`: the table's rows, rates in messages per second.
pub const CSV_HEADER: [&str; 9] = [
    "kind",
    "threads",
    "messages",
    "send_median",
    "send_min",
    "send_max",
    "end_to_end_median",
    "end_to_end_min",
    "end_to_end_max",
];

impl crate::report::Report for Report {
    /// One row per kind and thread count, in millions of messages per
    /// second over all threads.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "8-byte messages, T threads of n0 -> T threads of n1: {} per thread, windows of {}, \
             median (min–max) of {} repetitions",
            self.messages,
            self.window,
            self.repetitions.max(1)
        )?;
        writeln!(
            out,
            "{:<7} {:>7}  {:>30}  {:>30}",
            "kind", "threads", "send-side Mmsg/s (min–max)", "end-to-end Mmsg/s (min–max)"
        )?;
        // Millions, to three significant digits, so that a slow rate shows
        // as small rather than as zero.
        let millions = |per_second: f64| three_figures(per_second / 1e6);
        let spread = |r: &Rate| {
            format!(
                "{} ({}–{})",
                millions(r.median),
                millions(r.min),
                millions(r.max)
            )
        };
        for s in &self.samples {
            writeln!(
                out,
                "{:<7} {:>7}  {:>30}  {:>30}",
                s.kind.name(),
                s.threads,
                spread(&s.send),
                spread(&s.end_to_end)
            )?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "rate",
            unit: "messages/s",
            message_size: super::SIZE,
            window: self.window,
            repetitions: self.repetitions.max(1),
            rows: self
                .samples
                .iter()
                .map(|s| JsonRow {
                    kind: s.kind.name(),
                    threads: s.threads,
                    messages: s.messages,
                    send: (&s.send).into(),
                    end_to_end: (&s.end_to_end).into(),
                })
                .collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let rows = self.samples.iter().map(|s| {
            (
                s.kind.name(),
                s.threads,
                s.messages,
                Figure(s.send.median),
                Figure(s.send.min),
                Figure(s.send.max),
                Figure(s.end_to_end.median),
                Figure(s.end_to_end.min),
                Figure(s.end_to_end.max),
            )
        });
        write_csv(out, &CSV_HEADER, rows)
    }
}
