//! The report of `bench rate`: one row per kind and thread count of ours
//! (`source` threadwire), then with `--peers` one per thread count of
//! Open MPI's msgrate (`source` Open MPI, kind `os`: its pthreads), whose
//! single timed round gives median = min = max and `repetitions` 1. Our
//! rows then carry `end_to_end_ratio`, ours ÷ Open MPI's end-to-end rate
//! at the same T, and the peer's rows the thread level it was `provided`.
//! A thread count the peer could not run is in the JSON's `peers` with its
//! error, and a CSV line with only its source and threads.

use super::{Rate, Sample, ThreadKind};
use crate::peers::rate::{Measured, Provided};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};

/// The source of our rows.
pub const THREADWIRE: &str = "threadwire";

/// The result of `bench rate`, with the options that shape its heading.
#[derive(Clone, Debug)]
pub struct Report {
    /// Messages per thread per repetition.
    pub messages: u64,
    /// Sends (receives) completed together.
    pub window: usize,
    /// Timed repetitions per thread count.
    pub repetitions: u32,
    /// Whether our receivers took owned messages (`irecv`) rather than
    /// receiving into reused buffers (`irecv_into`).
    pub owned: bool,
    /// One per kind and thread count, kind-major.
    pub samples: Vec<Sample>,
    /// The peer's, one per thread count it ran.
    pub peer_samples: Vec<PeerSample>,
    /// The thread counts the peer could not run.
    pub peer_errors: Vec<PeerError>,
}

/// A peer's figures at one thread count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerSample {
    /// The peer (`Open MPI`).
    pub peer: &'static str,
    /// What msgrate printed.
    pub measured: Measured,
}

/// A thread count a peer has no row for, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerError {
    /// The peer.
    pub peer: &'static str,
    /// T.
    pub threads: u32,
    /// Why.
    pub error: String,
}

/// One line of the table, JSON or CSV: ours or a peer's.
struct Line<'a> {
    source: &'a str,
    kind: ThreadKind,
    threads: u32,
    messages: u64,
    repetitions: u32,
    send: Rate,
    end_to_end: Rate,
    provided: Option<Provided>,
    end_to_end_ratio: Option<f64>,
}

impl Report {
    /// Ours, then the peers'.
    fn lines(&self) -> impl Iterator<Item = Line<'_>> {
        let ours = self.samples.iter().map(|s| Line {
            source: THREADWIRE,
            kind: s.kind,
            threads: s.threads,
            messages: s.messages,
            repetitions: self.repetitions.max(1),
            send: s.send,
            end_to_end: s.end_to_end,
            provided: None,
            end_to_end_ratio: self
                .peer_samples
                .iter()
                .find(|p| p.measured.threads == s.threads)
                .map(|p| s.end_to_end.median / p.measured.end_to_end),
        });
        let one = |x: f64| Rate {
            median: x,
            min: x,
            max: x,
        };
        let peers = self.peer_samples.iter().map(move |p| Line {
            source: p.peer,
            kind: ThreadKind::Os,
            threads: p.measured.threads,
            messages: p.measured.messages,
            repetitions: 1,
            send: one(p.measured.send),
            end_to_end: one(p.measured.end_to_end),
            provided: Some(p.measured.provided),
            end_to_end_ratio: None,
        });
        ours.chain(peers)
    }

    /// Whether the peers were run (a row or an error).
    fn with_peers(&self) -> bool {
        !self.peer_samples.is_empty() || !self.peer_errors.is_empty()
    }
}

/// `--json`: the options, then per source, kind and thread count the
/// send-side and end-to-end rates, median, min and max; `peers` (with
/// `--peers`): each thread count the peer has no row for, and why.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    unit: &'static str,
    message_size: usize,
    window: usize,
    repetitions: u32,
    owned: bool,
    rows: Vec<JsonRow<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    peers: Vec<JsonPeerError<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    source: &'a str,
    kind: &'a str,
    threads: u32,
    messages: u64,
    repetitions: u32,
    send: Spread,
    end_to_end: Spread,
    #[serde(skip_serializing_if = "Option::is_none")]
    provided: Option<Provided>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_to_end_ratio: Option<Figure>,
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

#[derive(Serialize)]
struct JsonPeerError<'a> {
    peer: &'a str,
    threads: u32,
    error: &'a str,
}

/// `--csv`: the table's rows, rates in messages per second; a peer's
/// missing thread count has only its source and threads.
#[derive(Serialize)]
struct CsvRow<'a> {
    source: &'a str,
    kind: Option<&'a str>,
    threads: u32,
    messages: Option<u64>,
    repetitions: Option<u32>,
    send_median: Figure,
    send_min: Figure,
    send_max: Figure,
    end_to_end_median: Figure,
    end_to_end_min: Figure,
    end_to_end_max: Figure,
    provided: Option<Provided>,
    end_to_end_ratio: Figure,
}

/// The CSV header.
pub const CSV_HEADER: [&str; 13] = [
    "source",
    "kind",
    "threads",
    "messages",
    "repetitions",
    "send_median",
    "send_min",
    "send_max",
    "end_to_end_median",
    "end_to_end_min",
    "end_to_end_max",
    "provided",
    "end_to_end_ratio",
];

impl crate::report::Report for Report {
    /// One row per source, kind and thread count, in millions of messages
    /// per second over all threads.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "8-byte messages, T threads of n0 -> T threads of n1: {} per thread, windows of {}, \
             median (min–max) of {} repetitions; received {}",
            self.messages,
            self.window,
            self.repetitions.max(1),
            if self.owned {
                "as owned messages (irecv)"
            } else {
                "into reused buffers (irecv_into, as msgrate's MPI_Irecv)"
            }
        )?;
        if self.with_peers() {
            writeln!(
                out,
                "Open MPI: bench-peers/shm/msgrate.c, MPI_THREAD_MULTIPLE, pthreads, shared \
                 memory, one timed round per T; ratio = ours ÷ Open MPI end to end"
            )?;
        }
        let ratio_heading = if self.with_peers() { "  ratio" } else { "" };
        writeln!(
            out,
            "{:<10} {:<7} {:>7}  {:>30}  {:>30}{ratio_heading}",
            "source",
            "kind",
            "threads",
            "send-side Mmsg/s (min–max)",
            "end-to-end Mmsg/s (min–max)"
        )?;
        // Millions, to three significant digits, so that a slow rate shows
        // as small rather than as zero.
        let millions = |per_second: f64| three_figures(per_second / 1e6);
        let spread = |r: &Rate, repetitions: u32| match repetitions {
            1 => millions(r.median),
            _ => format!(
                "{} ({}–{})",
                millions(r.median),
                millions(r.min),
                millions(r.max)
            ),
        };
        for line in self.lines() {
            let last = match (line.end_to_end_ratio, line.provided) {
                (Some(ratio), _) => format!("  {}", three_figures(ratio)),
                (None, Some(Provided::Lower)) => "  provided below MPI_THREAD_MULTIPLE".into(),
                _ => String::new(),
            };
            writeln!(
                out,
                "{:<10} {:<7} {:>7}  {:>30}  {:>30}{last}",
                line.source,
                line.kind.name(),
                line.threads,
                spread(&line.send, line.repetitions),
                spread(&line.end_to_end, line.repetitions)
            )?;
        }
        for e in &self.peer_errors {
            writeln!(
                out,
                "{:<10} {:<7} {:>7}  {}",
                e.peer, "", e.threads, e.error
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
            owned: self.owned,
            rows: self
                .lines()
                .map(|l| JsonRow {
                    source: l.source,
                    kind: l.kind.name(),
                    threads: l.threads,
                    messages: l.messages,
                    repetitions: l.repetitions,
                    send: (&l.send).into(),
                    end_to_end: (&l.end_to_end).into(),
                    provided: l.provided,
                    end_to_end_ratio: l.end_to_end_ratio.map(Figure),
                })
                .collect(),
            peers: self
                .peer_errors
                .iter()
                .map(|e| JsonPeerError {
                    peer: e.peer,
                    threads: e.threads,
                    error: &e.error,
                })
                .collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let rows = self.lines().map(|l| CsvRow {
            source: l.source,
            kind: Some(l.kind.name()),
            threads: l.threads,
            messages: Some(l.messages),
            repetitions: Some(l.repetitions),
            send_median: Figure(l.send.median),
            send_min: Figure(l.send.min),
            send_max: Figure(l.send.max),
            end_to_end_median: Figure(l.end_to_end.median),
            end_to_end_min: Figure(l.end_to_end.min),
            end_to_end_max: Figure(l.end_to_end.max),
            provided: l.provided,
            end_to_end_ratio: Figure::of(l.end_to_end_ratio),
        });
        let errors = self.peer_errors.iter().map(|e| CsvRow {
            source: e.peer,
            kind: None,
            threads: e.threads,
            messages: None,
            repetitions: None,
            send_median: Figure(f64::NAN),
            send_min: Figure(f64::NAN),
            send_max: Figure(f64::NAN),
            end_to_end_median: Figure(f64::NAN),
            end_to_end_min: Figure(f64::NAN),
            end_to_end_max: Figure(f64::NAN),
            provided: None,
            end_to_end_ratio: Figure(f64::NAN),
        });
        write_csv(out, &CSV_HEADER, rows.chain(errors))
    }
}
