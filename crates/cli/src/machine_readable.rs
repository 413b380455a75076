//! `--json` and `--csv` of `bench pingpong`, `bench rate`, `bench
//! encodings`, `bench comm`, `bench threads`, `bench spawn` and `bench
//! floors`: the rows of their tables on stdout, for programs rather than
//! people.
//!
//! Units are in the names: one-way times and times per operation in
//! nanoseconds (`_ns`), start-up times in milliseconds (`_ms`), bandwidth in MB/s (10^6 bytes per second, `_mbps`),
//! sizes in bytes; rates in messages per second over all threads; `bench
//! floors` mixes times and bandwidths, so each row names its `unit`. A figure
//! that could not be read or does not exist (no fit below two sizes, no r∞
//! for a falling line, no 1998 figure) is `null` in JSON and an empty field
//! in CSV. The CSV has one header line and one line per row; the pingpong
//! fit and the threads idle cost are in the JSON only, as a CSV holds one
//! table.

use crate::render::{self, Row};
use std::fmt::Write;
use threadwire_bench::comm;
use threadwire_bench::encodings;
use threadwire_bench::floors;
use threadwire_bench::peers::Report;
use threadwire_bench::rate;
use threadwire_bench::spawn;
use threadwire_bench::threads;

/// `bench pingpong --json`: `rows` (path, size, median, min and max
/// one-way ns, MB/s at the median), per path the Hockney `fits` and, with
/// `--peers`, the `peers`: per peer its `error` (null when it ran) and per
/// size of ours the peer's row there or the nearest (`peer_size`, `exact`),
/// its best one-way ns and MB/s, our fastest repetition and
/// `threadwire_over_peer`, our time ÷ the peer's (per byte if not exact).
pub fn pingpong_json(rows: &[Row], peers: &[Report]) {
    let mut out = String::from("{\n  \"benchmark\": \"pingpong\",\n  \"rows\": [");
    for (i, r) in rows.iter().enumerate() {
        let s = &r.sample;
        let _ = write!(
            out,
            "{}\n    {{\"path\": {}, \"size\": {}, \"median_ns\": {}, \"min_ns\": {}, \
             \"max_ns\": {}, \"mbps\": {}}}",
            if i == 0 { "" } else { "," },
            string(&r.path),
            s.size,
            s.one_way.as_nanos(),
            s.min.as_nanos(),
            s.max.as_nanos(),
            number(s.mbps())
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
        let s = &r.sample;
        let _ = writeln!(
            out,
            "{}{},{},{},{},{},{}",
            source("threadwire"),
            field(&r.path),
            s.size,
            s.one_way.as_nanos(),
            s.min.as_nanos(),
            s.max.as_nanos(),
            csv_number(s.mbps())
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

/// `bench comm --json`: the repetitions asked for, then per path its
/// `cells`, per size measured the one-way ns, median, min and max, the
/// repetitions they are of and the 1998 figure of the same kind
/// (`reference_1998_ns`); a path without figures has no cells and says
/// why in `missing` (null otherwise).
pub fn comm_json(report: &comm::Report) {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"benchmark\": \"comm\",\n  \"repetitions\": {},\n  \"seconds_per_size\": {},\n  \
         \"rows\": [",
        report.repetitions,
        number(report.per_size.as_secs_f64())
    );
    for (i, row) in report.rows.iter().enumerate() {
        let (cells, missing) = comm_cells(row);
        let _ = write!(
            out,
            "{}\n    {{\"path\": {}, \"missing\": {}, \"cells\": [",
            if i == 0 { "" } else { "," },
            string(&row.path.name()),
            missing.map_or_else(|| "null".to_string(), string)
        );
        for (j, c) in cells.iter().enumerate() {
            let s = &c.sample;
            let _ = write!(
                out,
                "{}\n      {{\"size\": {}, \"median_ns\": {}, \"min_ns\": {}, \"max_ns\": {}, \
                 \"repetitions\": {}, \"reference_1998_ns\": {}}}",
                if j == 0 { "" } else { "," },
                s.size,
                s.one_way.as_nanos(),
                s.min.as_nanos(),
                s.max.as_nanos(),
                c.repetitions,
                number(comm_reference_ns(row.path, s.size))
            );
        }
        out.push_str("\n    ]}");
    }
    out.push_str("\n  ]\n}");
    println!("{out}");
}

/// `bench comm --csv`: a line per path and size measured; a path without
/// figures is one line with only the path and, last, why it is `missing`.
pub fn comm_csv(report: &comm::Report) {
    let mut out =
        String::from("path,size,median_ns,min_ns,max_ns,repetitions,reference_1998_ns,missing\n");
    for row in &report.rows {
        let path = field(&row.path.name());
        let (cells, missing) = comm_cells(row);
        if let Some(why) = missing {
            let _ = writeln!(out, "{path},,,,,,,{}", field(why));
        }
        for c in cells {
            let s = &c.sample;
            let _ = writeln!(
                out,
                "{path},{},{},{},{},{},{},",
                s.size,
                s.one_way.as_nanos(),
                s.min.as_nanos(),
                s.max.as_nanos(),
                c.repetitions,
                csv_number(comm_reference_ns(row.path, s.size))
            );
        }
    }
    print!("{out}");
}

/// A comm row's cells, or none and why.
fn comm_cells(row: &comm::Row) -> (&[comm::Cell], Option<&str>) {
    match &row.measured {
        comm::Measured::Cells(cells) => (cells, None),
        comm::Measured::Missing(why) => (&[], Some(why)),
    }
}

/// The 1998 figure of `path` at `size` in whole nanoseconds; NaN if none.
fn comm_reference_ns(path: comm::Path, size: usize) -> f64 {
    comm::reference_1998_ms(path, size).map_or(f64::NAN, |ms| (ms * 1e6).round())
}

/// `bench threads --json`: per row the fiber and OS columns (operations
/// per repetition, ns per operation: median, min, max), OS time over fiber
/// time at the medians, the 1998 figure and the note; then the idle cost.
pub fn threads_json(options: &threads::Options, report: &threads::Report) {
    let column = |t: &threads::Timing| {
        format!(
            "{{\"ops\": {}, \"median_ns\": {}, \"min_ns\": {}, \"max_ns\": {}}}",
            t.ops,
            number(t.median_ns),
            number(t.min_ns),
            number(t.max_ns)
        )
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"benchmark\": \"threads\",\n  \"unit\": \"ns per operation\",\n  \
         \"repetitions\": {},\n  \"rows\": [",
        options.repetitions.max(1)
    );
    for (i, row) in report.rows.iter().enumerate() {
        let _ = write!(
            out,
            "{}\n    {{\"measurement\": {}, \"fibers\": {}, \"os\": {}, \
             \"os_over_fibers\": {}, \"reference_1998_ns\": {}, \"note\": {}}}",
            if i == 0 { "" } else { "," },
            string(row.measurement.name()),
            column(&row.fibers),
            column(&row.os),
            number(row.ratio()),
            number(row.measurement.reference_1998_ns().unwrap_or(f64::NAN)),
            row.note
                .as_deref()
                .map_or_else(|| "null".to_string(), string)
        );
    }
    let idle = &report.idle;
    let _ = write!(
        out,
        "\n  ],\n  \"idle\": {{\"fibers\": {}, \"window_ns\": {}, \"cpu_ns\": {}, \
         \"percent_of_core\": {}}}\n}}",
        idle.fibers,
        idle.window.as_nanos(),
        idle.cpu.as_nanos(),
        number(idle.percent_of_core())
    );
    println!("{out}");
}

/// `bench threads --csv`: the table's rows, ns per operation.
pub fn threads_csv(report: &threads::Report) {
    let mut out = String::from(
        "measurement,fibers_ops,fibers_median_ns,fibers_min_ns,fibers_max_ns,\
         os_ops,os_median_ns,os_min_ns,os_max_ns,os_over_fibers,reference_1998_ns,note\n",
    );
    let column = |t: &threads::Timing| {
        format!(
            "{},{},{},{}",
            t.ops,
            csv_number(t.median_ns),
            csv_number(t.min_ns),
            csv_number(t.max_ns)
        )
    };
    for row in &report.rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{}",
            field(row.measurement.name()),
            column(&row.fibers),
            column(&row.os),
            csv_number(row.ratio()),
            csv_number(row.measurement.reference_1998_ns().unwrap_or(f64::NAN)),
            row.note.as_deref().map_or_else(String::new, field)
        );
    }
    print!("{out}");
}

/// `bench spawn --json`: per kind and N the ms until all joined and, for
/// processes, until the job finished and the timeline's stages, each
/// median, min and max; the 1998 figure at N = 1; and `pvm`: whether the
/// pvm_spawn rows were measured, and why not (`null` when they were).
pub fn spawn_json(report: &spawn::Report) {
    let spread = |m: Option<&spawn::Millis>| match m {
        Some(m) => format!(
            "{{\"median\": {}, \"min\": {}, \"max\": {}}}",
            number(m.median),
            number(m.min),
            number(m.max)
        ),
        None => "null".to_string(),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"benchmark\": \"spawn\",\n  \"unit\": \"ms\",\n  \"repetitions\": {},\n  \"rows\": [",
        report.repetitions
    );
    for (i, row) in report.rows.iter().enumerate() {
        let _ = write!(
            out,
            "{}\n    {{\"kind\": {}, \"count\": {}, \"joined_ms\": {}, \"finished_ms\": {}, \
             \"code_running_ms\": {}, \"past_init_ms\": {}, \"reference_1998_ms\": {}}}",
            if i == 0 { "" } else { "," },
            string(row.kind.name()),
            row.count,
            spread(Some(&row.joined)),
            spread(row.finished.as_ref()),
            spread(row.timeline.as_ref().map(|t| &t.running)),
            spread(row.timeline.as_ref().map(|t| &t.initialized)),
            number(spawn_reference(row.count, row.kind))
        );
    }
    let why = match &report.pvm {
        spawn::Pvm::Measured => "null".to_string(),
        spawn::Pvm::NotMeasured(e) => string(&e.to_string()),
    };
    let _ = write!(
        out,
        "\n  ],\n  \"pvm\": {{\"measured\": {}, \"not_measured_because\": {}}}\n}}",
        matches!(report.pvm, spawn::Pvm::Measured),
        why
    );
    println!("{out}");
}

/// `bench spawn --csv`: the table's rows, medians and spreads in ms; where
/// pvm_spawn was not measured, one `pvm_spawn` row with only its kind.
pub fn spawn_csv(report: &spawn::Report) {
    let mut out = String::from(
        "kind,count,joined_median_ms,joined_min_ms,joined_max_ms,\
         finished_median_ms,finished_min_ms,finished_max_ms,\
         code_running_median_ms,past_init_median_ms,reference_1998_ms\n",
    );
    let cells = |m: Option<&spawn::Millis>| match m {
        Some(m) => format!(
            "{},{},{}",
            csv_number(m.median),
            csv_number(m.min),
            csv_number(m.max)
        ),
        None => ",,".to_string(),
    };
    for row in &report.rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            field(row.kind.name()),
            row.count,
            cells(Some(&row.joined)),
            cells(row.finished.as_ref()),
            csv_number(row.timeline.as_ref().map_or(f64::NAN, |t| t.running.median)),
            csv_number(
                row.timeline
                    .as_ref()
                    .map_or(f64::NAN, |t| t.initialized.median)
            ),
            csv_number(spawn_reference(row.count, row.kind))
        );
    }
    if let spawn::Pvm::NotMeasured(_) = report.pvm {
        out.push_str("pvm_spawn,,,,,,,,,,\n");
    }
    print!("{out}");
}

/// The 1998 figure, which is for one process or thread.
fn spawn_reference(count: u32, kind: spawn::Kind) -> f64 {
    match count {
        1 => kind.reference_1998_ms(),
        _ => f64::NAN,
    }
}

/// `bench floors --json`: per floor its `unit` (`ns` one-way, or `MB/s`),
/// median, min and max over the repetitions, the iterations per
/// repetition, why it is `missing` (null when measured) and its `note`.
pub fn floors_json(report: &floors::Report) {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"benchmark\": \"floors\",\n  \"repetitions\": {},\n  \"ms_per_repetition\": {},\n  \
         \"rows\": [",
        report.repetitions,
        number(report.per_repetition.as_secs_f64() * 1e3)
    );
    for (i, row) in report.rows.iter().enumerate() {
        let (figures, missing) = floors_figures(row);
        let figure = |f: fn(&floors::Figures) -> f64| number(figures.map_or(f64::NAN, f));
        let _ = write!(
            out,
            "{}\n    {{\"floor\": {}, \"unit\": {}, \"median\": {}, \"min\": {}, \"max\": {}, \
             \"iterations\": {}, \"missing\": {}, \"note\": {}}}",
            if i == 0 { "" } else { "," },
            string(&row.floor.name()),
            string(row.floor.unit().symbol()),
            figure(|f| f.median),
            figure(|f| f.min),
            figure(|f| f.max),
            figure(|f| f.iterations as f64),
            missing.map_or_else(|| "null".to_string(), string),
            string(&row.note)
        );
    }
    out.push_str("\n  ]\n}");
    println!("{out}");
}

/// `bench floors --csv`: the table's rows, times in ns.
pub fn floors_csv(report: &floors::Report) {
    let mut out = String::from("floor,unit,median,min,max,iterations,missing,note\n");
    for row in &report.rows {
        let (figures, missing) = floors_figures(row);
        let figure = |f: fn(&floors::Figures) -> f64| csv_number(figures.map_or(f64::NAN, f));
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            field(&row.floor.name()),
            field(row.floor.unit().symbol()),
            figure(|f| f.median),
            figure(|f| f.min),
            figure(|f| f.max),
            figure(|f| f.iterations as f64),
            missing.map_or_else(String::new, field),
            field(&row.note)
        );
    }
    print!("{out}");
}

/// A floor's figures, or none and why.
fn floors_figures(row: &floors::Row) -> (Option<&floors::Figures>, Option<&str>) {
    match &row.measured {
        floors::Measured::Figures(f) => (Some(f), None),
        floors::Measured::Missing(why) => (None, Some(why)),
    }
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
