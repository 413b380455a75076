//! The report of `bench flood`: per source (threadwire, then the peers)
//! and path, both ends' peak resident sets, the sender's time for its
//! sends, the receiver's for the flood after it started, and the count.
//!
//! Memory is in bytes in JSON and CSV (`_bytes`), in MiB (2^20) in the
//! table; times in seconds (`_seconds`). A peer that could not run is in
//! the JSON's `peers` with its error, and a CSV line with only its source
//! and path.

use super::Side;
use crate::pingpong::Receive;
use crate::report::{mbps, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;

/// The source of our rows.
pub const THREADWIRE: &str = "threadwire";

/// One source and path.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `threadwire`, or the peer (`Open MPI`).
    pub source: String,
    /// `shm`, `tcp`.
    pub path: String,
    /// Node 0 (rank 0).
    pub sender: Side,
    /// Node 1 (rank 1).
    pub receiver: Side,
}

impl Row {
    /// The flood's bandwidth after the receiver started, MB/s.
    pub fn mbps(&self, size: usize) -> f64 {
        self.receiver.messages as f64 * size as f64 / self.receiver.time.as_secs_f64() / 1e6
    }
}

/// A peer that has no row for a path, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerError {
    /// The peer.
    pub peer: &'static str,
    /// The path.
    pub path: String,
    /// Why.
    pub error: String,
}

/// The result of `bench flood`.
#[derive(Clone, Debug)]
pub struct Report {
    /// Messages sent.
    pub count: u64,
    /// Bytes per message.
    pub size: usize,
    /// How late the receiver started.
    pub delay: Duration,
    /// How the receiver received (our rows; MPI_Recv is into a buffer).
    pub receive: Receive,
    /// Ours per path, then the peers'.
    pub rows: Vec<Row>,
    /// The peers that could not run.
    pub peer_errors: Vec<PeerError>,
}

/// `--json`: the flood's parameters, then a row per source and path with
/// each end's messages, time and peak resident set before and after, and
/// `peers` (with `--peers`): each peer and path that has no row, and why.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    count: u64,
    size: usize,
    delay_seconds: f64,
    receive: &'static str,
    rows: Vec<JsonRow<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    peers: Vec<JsonPeerError<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    source: &'a str,
    path: &'a str,
    flood_seconds: f64,
    mbps: Figure,
    sender: JsonSide,
    receiver: JsonSide,
}

#[derive(Serialize)]
struct JsonSide {
    messages: u64,
    seconds: f64,
    start_bytes: u64,
    peak_bytes: u64,
}

impl From<&Side> for JsonSide {
    fn from(side: &Side) -> JsonSide {
        JsonSide {
            messages: side.messages,
            seconds: side.time.as_secs_f64(),
            start_bytes: side.start_bytes,
            peak_bytes: side.peak_bytes,
        }
    }
}

#[derive(Serialize)]
struct JsonPeerError<'a> {
    peer: &'a str,
    path: &'a str,
    error: &'a str,
}

/// `--csv`: a line per source and path, as the table.
#[derive(Serialize)]
struct CsvRow<'a> {
    source: &'a str,
    path: &'a str,
    messages: Option<u64>,
    sender_start_bytes: Option<u64>,
    sender_peak_bytes: Option<u64>,
    sender_seconds: Option<f64>,
    receiver_start_bytes: Option<u64>,
    receiver_peak_bytes: Option<u64>,
    flood_seconds: Option<f64>,
    mbps: Figure,
}

/// The CSV header.
pub const CSV_HEADER: [&str; 10] = [
    "source",
    "path",
    "messages",
    "sender_start_bytes",
    "sender_peak_bytes",
    "sender_seconds",
    "receiver_start_bytes",
    "receiver_peak_bytes",
    "flood_seconds",
    "mbps",
];

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "flood: node 0 sends {} × {} B from one buffer (blocking send, borrowed bytes) \
             to node 1, whose receiving thread starts {} s late ({} receives; MPI_Recv into \
             one buffer)",
            self.count,
            self.size,
            self.delay.as_secs_f64(),
            self.receive.name()
        )?;
        writeln!(
            out,
            "peak = VmHWM at the end, start = VmHWM before the flood; MiB = 2^20 B; the flood \
             is timed from the receiver's start to its last receive"
        )?;
        writeln!(
            out,
            "{:<11} {:<5} {:>15} {:>12} {:>17} {:>12} {:>9} {:>8} {:>10} {:>8}",
            "source",
            "path",
            "sender peak MiB",
            "(start MiB)",
            "receiver peak MiB",
            "(start MiB)",
            "sends s",
            "flood s",
            "MB/s",
            "messages"
        )?;
        for r in &self.rows {
            writeln!(
                out,
                "{:<11} {:<5} {:>15.1} {:>12} {:>17.1} {:>12} {:>9.3} {:>8.3} {:>10} {:>8}",
                r.source,
                r.path,
                mib(r.sender.peak_bytes),
                format!("({:.1})", mib(r.sender.start_bytes)),
                mib(r.receiver.peak_bytes),
                format!("({:.1})", mib(r.receiver.start_bytes)),
                r.sender.time.as_secs_f64(),
                r.receiver.time.as_secs_f64(),
                mbps(r.mbps(self.size)),
                r.receiver.messages
            )?;
        }
        for e in &self.peer_errors {
            writeln!(out, "{:<11} {:<5} {}", e.peer, e.path, e.error)?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "flood",
            count: self.count,
            size: self.size,
            delay_seconds: self.delay.as_secs_f64(),
            receive: self.receive.name(),
            rows: self
                .rows
                .iter()
                .map(|r| JsonRow {
                    source: &r.source,
                    path: &r.path,
                    flood_seconds: r.receiver.time.as_secs_f64(),
                    mbps: Figure(r.mbps(self.size)),
                    sender: (&r.sender).into(),
                    receiver: (&r.receiver).into(),
                })
                .collect(),
            peers: self
                .peer_errors
                .iter()
                .map(|e| JsonPeerError {
                    peer: e.peer,
                    path: &e.path,
                    error: &e.error,
                })
                .collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let rows = self.rows.iter().map(|r| CsvRow {
            source: &r.source,
            path: &r.path,
            messages: Some(r.receiver.messages),
            sender_start_bytes: Some(r.sender.start_bytes),
            sender_peak_bytes: Some(r.sender.peak_bytes),
            sender_seconds: Some(r.sender.time.as_secs_f64()),
            receiver_start_bytes: Some(r.receiver.start_bytes),
            receiver_peak_bytes: Some(r.receiver.peak_bytes),
            flood_seconds: Some(r.receiver.time.as_secs_f64()),
            mbps: Figure(r.mbps(self.size)),
        });
        let errors = self.peer_errors.iter().map(|e| CsvRow {
            source: e.peer,
            path: &e.path,
            messages: None,
            sender_start_bytes: None,
            sender_peak_bytes: None,
            sender_seconds: None,
            receiver_start_bytes: None,
            receiver_peak_bytes: None,
            flood_seconds: None,
            mbps: Figure(f64::NAN),
        });
        write_csv(out, &CSV_HEADER, rows.chain(errors))
    }
}
