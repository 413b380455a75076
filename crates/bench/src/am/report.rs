//! The report of `bench am`: two tables from the same jobs.
//!
//! - **Round trip**: a row per path, size and handler (inline, fiber):
//!   the active message's round trip, the ping-pong's measured beside it
//!   and `ratio` = am ÷ ping-pong, against [`ROUND_TRIP_GOAL`].
//! - **Rate**: a row per path, kind and thread count: one-way messages
//!   per second, send-side and end to end, and `lci_ratio` = end to end
//!   ÷ [`LCI_RATE`], LCI's published figure, printed beside them as a
//!   constant reference (not run here).
//!
//! JSON: `round_trip` and `rate` arrays, times in nanoseconds (`_ns`),
//! rates in messages per second; `reference` names LCI's figure. CSV: one
//! line per row of either table, told apart by `measurement`
//! (`round_trip`, in ns; `rate` end to end and `rate_send` send-side, in
//! messages per second), the ratio last.

use super::{Method, RateSample, RoundTrip, Times, LCI_RATE, RATE_SIZE, ROUND_TRIP_GOAL};
use crate::rate::Rate;
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;

/// Who published the reference rate, as the report cites it.
pub const LCI_SOURCE: &str = "LCI, published";

/// The result of `bench am`, with the options that shape its headings.
#[derive(Clone, Debug)]
pub struct Report {
    /// Round-trip repetitions per size.
    pub repetitions: u32,
    /// Their length.
    pub per_repetition: Duration,
    /// One-way messages per thread per repetition of the rate.
    pub messages: u64,
    /// Repetitions of the rate.
    pub rate_repetitions: u32,
    /// Per path, one per size.
    pub round_trips: Vec<(String, RoundTrip)>,
    /// Per path, one per kind and thread count.
    pub rates: Vec<(String, RateSample)>,
}

/// One round-trip row: an active-message handler's times beside the
/// ping-pong's.
struct RoundTripLine<'a> {
    path: &'a str,
    size: usize,
    handler: Method,
    am: Times,
    pingpong: Times,
    ratio: f64,
}

impl Report {
    fn round_trip_lines(&self) -> impl Iterator<Item = RoundTripLine<'_>> {
        self.round_trips.iter().flat_map(|(path, r)| {
            [Method::Inline, Method::Fiber].map(|handler| {
                let am = *r.of(handler);
                RoundTripLine {
                    path,
                    size: r.size,
                    handler,
                    am,
                    pingpong: r.pingpong,
                    ratio: am.median.as_secs_f64() / r.pingpong.median.as_secs_f64(),
                }
            })
        })
    }
}

fn micros(d: Duration) -> String {
    three_figures(d.as_secs_f64() * 1e6)
}

fn spread_micros(t: &Times) -> String {
    format!("{} ({}–{})", micros(t.median), micros(t.min), micros(t.max))
}

/// Millions, to three significant digits.
fn millions(per_second: f64) -> String {
    three_figures(per_second / 1e6)
}

fn spread_millions(r: &Rate, repetitions: u32) -> String {
    match repetitions {
        1 => millions(r.median),
        _ => format!(
            "{} ({}–{})",
            millions(r.median),
            millions(r.min),
            millions(r.max)
        ),
    }
}

#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    repetitions: u32,
    ms_per_repetition: u128,
    round_trip_goal: f64,
    round_trip: Vec<JsonRoundTrip<'a>>,
    message_size: usize,
    messages: u64,
    rate_repetitions: u32,
    rate_unit: &'static str,
    rate: Vec<JsonRate<'a>>,
    reference: Reference,
}

#[derive(Serialize)]
struct JsonRoundTrip<'a> {
    path: &'a str,
    size: usize,
    handler: &'static str,
    am: Nanos,
    pingpong: Nanos,
    ratio: Figure,
}

#[derive(Serialize)]
struct Nanos {
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl From<&Times> for Nanos {
    fn from(t: &Times) -> Nanos {
        let ns = |d: Duration| d.as_nanos() as u64;
        Nanos {
            median_ns: ns(t.median),
            min_ns: ns(t.min),
            max_ns: ns(t.max),
        }
    }
}

#[derive(Serialize)]
struct JsonRate<'a> {
    path: &'a str,
    kind: &'static str,
    threads: u32,
    messages: u64,
    send: Spread,
    end_to_end: Spread,
    lci_ratio: Figure,
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
struct Reference {
    source: &'static str,
    processes: u32,
    messages_per_second: Figure,
}

/// The CSV header.
pub const CSV_HEADER: [&str; 14] = [
    "measurement",
    "path",
    "size",
    "handler",
    "kind",
    "threads",
    "unit",
    "median",
    "min",
    "max",
    "pingpong_median",
    "pingpong_min",
    "pingpong_max",
    "ratio",
];

#[derive(Serialize)]
struct CsvRow<'a> {
    measurement: &'static str,
    path: &'a str,
    size: usize,
    handler: &'static str,
    kind: &'static str,
    threads: Option<u32>,
    unit: &'static str,
    median: Figure,
    min: Figure,
    max: Figure,
    pingpong_median: Figure,
    pingpong_min: Figure,
    pingpong_max: Figure,
    ratio: Figure,
}

impl crate::report::Report for Report {
    /// The round-trip table in µs, then the rate table in millions of
    /// messages per second over all threads, LCI's figure last.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "Round trip: am_request to a handler that answers with the payload, beside \
             threadwire's ping-pong (send, recv; echoed by the partner) in the same job, \
             repetitions interleaved; median (min–max) of {} × {} ms; goal am ÷ ping-pong ≤ {:.2}",
            self.repetitions,
            self.per_repetition.as_millis(),
            ROUND_TRIP_GOAL
        )?;
        writeln!(
            out,
            "{:<5} {:>5}  {:<7}  {:>27}  {:>27}  {:>7}",
            "path", "size", "handler", "am µs (min–max)", "ping-pong µs (min–max)", "ratio"
        )?;
        for l in self.round_trip_lines() {
            writeln!(
                out,
                "{:<5} {:>5}  {:<7}  {:>27}  {:>27}  {:>7}",
                l.path,
                l.size,
                l.handler.name(),
                spread_micros(&l.am),
                spread_micros(&l.pingpong),
                three_figures(l.ratio)
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "Rate: one-way {RATE_SIZE}-byte active messages from T threads of n0 to a counting \
             inline handler of n1, {} per thread then one flush request each; median (min–max) \
             of {} repetitions; ratio = end to end ÷ {LCI_SOURCE}",
            self.messages, self.rate_repetitions
        )?;
        writeln!(
            out,
            "{:<5} {:<7} {:>7}  {:>30}  {:>30}  {:>7}",
            "path",
            "kind",
            "threads",
            "send-side Mmsg/s (min–max)",
            "end-to-end Mmsg/s (min–max)",
            "ratio"
        )?;
        for (path, r) in &self.rates {
            writeln!(
                out,
                "{:<5} {:<7} {:>7}  {:>30}  {:>30}  {:>7}",
                path,
                r.kind.name(),
                r.threads,
                spread_millions(&r.send, self.rate_repetitions),
                spread_millions(&r.end_to_end, self.rate_repetitions),
                three_figures(r.end_to_end.median / LCI_RATE)
            )?;
        }
        writeln!(
            out,
            "{LCI_SOURCE}: {} M msgs/s between 2 processes (a constant, not run here)",
            millions(LCI_RATE)
        )
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "am",
            repetitions: self.repetitions,
            ms_per_repetition: self.per_repetition.as_millis(),
            round_trip_goal: ROUND_TRIP_GOAL,
            round_trip: self
                .round_trip_lines()
                .map(|l| JsonRoundTrip {
                    path: l.path,
                    size: l.size,
                    handler: l.handler.name(),
                    am: (&l.am).into(),
                    pingpong: (&l.pingpong).into(),
                    ratio: Figure(l.ratio),
                })
                .collect(),
            message_size: RATE_SIZE,
            messages: self.messages,
            rate_repetitions: self.rate_repetitions,
            rate_unit: "messages/s",
            rate: self
                .rates
                .iter()
                .map(|(path, r)| JsonRate {
                    path,
                    kind: r.kind.name(),
                    threads: r.threads,
                    messages: r.messages,
                    send: (&r.send).into(),
                    end_to_end: (&r.end_to_end).into(),
                    lci_ratio: Figure(r.end_to_end.median / LCI_RATE),
                })
                .collect(),
            reference: Reference {
                source: LCI_SOURCE,
                processes: 2,
                messages_per_second: Figure(LCI_RATE),
            },
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let ns = |d: Duration| Figure(d.as_nanos() as f64);
        let round_trips = self.round_trip_lines().map(|l| CsvRow {
            measurement: "round_trip",
            path: l.path,
            size: l.size,
            handler: l.handler.name(),
            kind: "",
            threads: None,
            unit: "ns",
            median: ns(l.am.median),
            min: ns(l.am.min),
            max: ns(l.am.max),
            pingpong_median: ns(l.pingpong.median),
            pingpong_min: ns(l.pingpong.min),
            pingpong_max: ns(l.pingpong.max),
            ratio: Figure(l.ratio),
        });
        let rates = self.rates.iter().flat_map(|(path, r)| {
            [("rate", r.end_to_end), ("rate_send", r.send)].map(|(measurement, rate)| CsvRow {
                measurement,
                path,
                size: RATE_SIZE,
                handler: Method::Inline.name(),
                kind: r.kind.name(),
                threads: Some(r.threads),
                unit: "messages/s",
                median: Figure(rate.median),
                min: Figure(rate.min),
                max: Figure(rate.max),
                pingpong_median: Figure(f64::NAN),
                pingpong_min: Figure(f64::NAN),
                pingpong_max: Figure(f64::NAN),
                ratio: Figure(rate.median / LCI_RATE),
            })
        });
        write_csv(out, &CSV_HEADER, round_trips.chain(rates))
    }
}
