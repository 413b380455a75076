//! `--json` and `--csv` of `bench pingpong`, `bench rate` and `bench
//! encodings`: the rows of their tables on stdout, for programs rather than
//! people.
//!
//! Units are in the names: one-way times in nanoseconds (`_ns`), bandwidth
//! in MB/s (10^6 bytes per second, `_mbps`), sizes in bytes; rates in
//! messages per second over all threads. A figure that could not be read or
//! does not exist (no fit below two sizes, no r∞ for a falling line) is
//! `null` in JSON and an empty field in CSV. The CSV has one header line and
//! one line per row; the pingpong fit is in the JSON only, as a CSV holds
//! one table.

use crate::render::{self, Row};
use std::fmt::Write;
use threadwire_bench::encodings;
use threadwire_bench::peers::Report;
use threadwire_bench::rate;

/// `bench pingpong --json`: `rows` (path, size, median, min and max
/// one-way ns, MB/s at the median), per path the Hockney `fits` and, with
/// `--peers`, the `peers`: per peer its `error` (null when it ran) and per
/// size of ours the peer's row there or the nearest (`peer_size`, `exact`),
/// its best one-way ns and MB/s, our fastest repetition and
/// `threadwire_over_peer`, our time ÷ the peer's (per byte if not exact).
pub fn pingpong_json(rows: &[Row], peers: &[Report]) {
    let mut out = String::from("{\n  \"benchmark\": \"pingpong\",\n  \"rows\": [");
    for (i, r) in rows.iter().enumerate() {
        let mbps = r.size as f64 / (r.ns[0] / 1e9) / 1e6;
        let _ = write!(
            out,
            "{}\n    {{\"path\": {}, \"size\": {}, \"median_ns\": {}, \"min_ns\": {}, \
             \"max_ns\": {}, \"mbps\": {}}}",
            if i == 0 { "" } else { "," },
            string(&r.path),
            r.size,
            number(r.ns[0]),
            number(r.ns[1]),
            number(r.ns[2]),
            number(mbps)
        );
    }
    out.push_str("\n  ],\n  \"fits\": [");
    for (i, (path, fit)) in render::pingpong_fits(rows).into_iter().enumerate() {
        let figure = |f: fn(&threadwire_bench::fit::Fit) -> Option<f64>| {
            number(fit.as_ref().and_then(f).unwrap_or(f64::NAN))
        };
        let _ = write!(
            out,
            "{}\n    {{\"path\": {}, \"sizes\": {}, \"startup_ns\": {}, \"ns_per_byte\": {}, \
             \"bandwidth_mbps\": {}, \"half_bandwidth_bytes\": {}, \"rms_relative_error\": {}}}",
            if i == 0 { "" } else { "," },
            string(path),
            fit.map_or(0, |f| f.points),
            figure(|f| Some(f.startup_seconds * 1e9)),
            figure(|f| Some(f.seconds_per_byte * 1e9)),
            figure(|f| f.bandwidth().map(|b| b / 1e6)),
            figure(|f| f.half_bandwidth_size()),
            figure(|f| Some(f.rms_relative_error))
        );
    }
    out.push_str("\n  ]");
    if !peers.is_empty() {
        out.push_str(",\n  \"peers\": [");
        for (i, report) in peers.iter().enumerate() {
            let error = report
                .result
                .as_ref()
                .err()
                .map_or_else(|| "null".to_string(), |e| string(&e.to_string()));
            let _ = write!(
                out,
                "{}\n    {{\"peer\": {}, \"path\": {}, \"error\": {}, \"rows\": [",
                if i == 0 { "" } else { "," },
                string(report.peer.name()),
                string(&report.path),
                error
            );
            for (j, line) in render::peer_rows(rows, report).iter().enumerate() {
                let point = line.peer.point;
                let _ = write!(
                    out,
                    "{}\n      {{\"size\": {}, \"peer_size\": {}, \"exact\": {}, \"one_way_ns\": {}, \
                     \"mbps\": {}, \"threadwire_min_ns\": {}, \"threadwire_over_peer\": {}}}",
                    if j == 0 { "" } else { "," },
                    line.size,
                    point.size,
                    line.peer.exact,
                    number(point.one_way.as_secs_f64() * 1e9),
                    number(point.mbps()),
                    number(line.ours_ns),
                    number(line.ratio)
                );
            }
            out.push_str("\n    ]}");
        }
        out.push_str("\n  ]");
    }
    out.push_str("\n}");
    println!("{out}");
}

/// `bench pingpong --csv`: the table's rows. With `--peers`, a first
/// column `source` (`threadwire` or the peer) and, per peer, the NetPIPE
/// rows taken for our sizes at the peer's own size, its best time as
/// `min_ns` (NetPIPE reports no median or maximum); a peer without figures
/// is one row with only source and path.
pub fn pingpong_csv(rows: &[Row], peers: &[Report]) {
    let source = |name: &str| match peers.is_empty() {
        true => String::new(),
        false => format!("{},", field(name)),
    };
    let mut out = format!(
        "{}path,size,median_ns,min_ns,max_ns,mbps\n",
        source("source")
    );
    for r in rows {
        let mbps = r.size as f64 / (r.ns[0] / 1e9) / 1e6;
        let _ = writeln!(
            out,
            "{}{},{},{},{},{},{}",
            source("threadwire"),
            field(&r.path),
            r.size,
            csv_number(r.ns[0]),
            csv_number(r.ns[1]),
            csv_number(r.ns[2]),
            csv_number(mbps)
        );
    }
    for report in peers {
        let lines = render::peer_rows(rows, report);
        if lines.is_empty() {
            let _ = writeln!(
                out,
                "{}{},,,,,",
                source(report.peer.name()),
                field(&report.path)
            );
        }
        let mut written = Vec::new();
        for point in lines.iter().map(|l| l.peer.point) {
            if written.contains(&point.size) {
                continue;
            }
            written.push(point.size);
            let _ = writeln!(
                out,
                "{}{},{},,{},,{}",
                source(report.peer.name()),
                field(&report.path),
                point.size,
                csv_number(point.one_way.as_secs_f64() * 1e9),
                csv_number(point.mbps())
            );
        }
    }
    print!("{out}");
}

/// `bench rate --json`: the options, then per kind and thread count the
/// send-side and end-to-end rates, median, min and max.
pub fn rate_json(options: &rate::Options, samples: &[rate::Sample]) {
    let spread = |r: &rate::Rate| {
        format!(
            "{{\"median\": {}, \"min\": {}, \"max\": {}}}",
            number(r.median),
            number(r.min),
            number(r.max)
        )
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"benchmark\": \"rate\",\n  \"unit\": \"messages/s\",\n  \"message_size\": 8,\n  \
         \"window\": {},\n  \"repetitions\": {},\n  \"rows\": [",
        options.window,
        options.repetitions.max(1)
    );
    for (i, s) in samples.iter().enumerate() {
        let _ = write!(
            out,
            "{}\n    {{\"kind\": {}, \"threads\": {}, \"messages\": {}, \"send\": {}, \
             \"end_to_end\": {}}}",
            if i == 0 { "" } else { "," },
            string(s.kind.name()),
            s.threads,
            s.messages,
            spread(&s.send),
            spread(&s.end_to_end)
        );
    }
    out.push_str("\n  ]\n}");
    println!("{out}");
}

/// `bench rate --csv`: the table's rows, rates in messages per second.
pub fn rate_csv(samples: &[rate::Sample]) {
    let mut out = String::from(
        "kind,threads,messages,send_median,send_min,send_max,\
         end_to_end_median,end_to_end_min,end_to_end_max\n",
    );
    for s in samples {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            field(s.kind.name()),
            s.threads,
            s.messages,
            csv_number(s.send.median),
            csv_number(s.send.min),
            csv_number(s.send.max),
            csv_number(s.end_to_end.median),
            csv_number(s.end_to_end.min),
            csv_number(s.end_to_end.max)
        );
    }
    print!("{out}");
}

/// `bench encodings --json`: the path between the nodes, then per size
/// and encoding the one-way ns, median, min and max, and MB/s of the
/// values' bytes at the median.
pub fn encodings_json(report: &encodings::Report) {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"benchmark\": \"encodings\",\n  \"path\": {},\n  \"value\": \"f64\",\n  \
         \"repetitions\": {},\n  \"rows\": [",
        string(&report.path),
        report.repetitions
    );
    for (i, row) in report.rows.iter().enumerate() {
        let s = &row.sample;
        let _ = write!(
            out,
            "{}\n    {{\"encoding\": {}, \"size\": {}, \"median_ns\": {}, \"min_ns\": {}, \
             \"max_ns\": {}, \"mbps\": {}}}",
            if i == 0 { "" } else { "," },
            string(encodings::name(row.encoding)),
            s.size,
            s.one_way.as_nanos(),
            s.min.as_nanos(),
            s.max.as_nanos(),
            number(s.mbps())
        );
    }
    out.push_str("\n  ]\n}");
    println!("{out}");
}

/// `bench encodings --csv`: the table's rows.
pub fn encodings_csv(report: &encodings::Report) {
    let mut out = String::from("path,encoding,size,median_ns,min_ns,max_ns,mbps\n");
    for row in &report.rows {
        let s = &row.sample;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            field(&report.path),
            encodings::name(row.encoding),
            s.size,
            s.one_way.as_nanos(),
            s.min.as_nanos(),
            s.max.as_nanos(),
            csv_number(s.mbps())
        );
    }
    print!("{out}");
}

/// A JSON number; `null` for NaN and infinities, which JSON lacks.
fn number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".to_string()
    }
}

/// A JSON string (RFC 8259 §7).
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A CSV number; empty for NaN and infinities.
fn csv_number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_json_lacks_are_null() {
        assert_eq!(number(312.0), "312");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(f64::NAN), "null");
        assert_eq!(number(f64::INFINITY), "null");
        assert_eq!(csv_number(f64::NAN), "");
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(string("shm"), "\"shm\"");
        assert_eq!(string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        assert_eq!(field("tcp"), "tcp");
        assert_eq!(field("a,\"b\""), "\"a,\"\"b\"\"\"");
    }
}
