//! How the command shows events, tables and node-side output.

use anyhow::Result;
use std::io::Write;
use std::time::Duration;
use threadwire_bench::fit::Fit;
use threadwire_bench::pingpong::{self, Budget, Sample};
use threadwire_bench::rate;
use threadwire_bench::threads;
use threadwire_launch::{Event, JobReport, OutputStream};

pub fn event(ev: &Event, verbose: bool) {
    match ev {
        Event::Output {
            node,
            stream: OutputStream::Stdout,
            line,
        } => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "[n{node}] {line}");
        }
        Event::Output {
            node,
            stream: OutputStream::Stderr,
            line,
        } => eprintln!("[n{node}] {line}"),
        Event::Exited { .. } => {}
        Event::NodeFailed {
            cause,
            aborting: true,
            ..
        } => eprintln!("threadwire: {cause}; ending the job"),
        Event::NodeFailed {
            cause,
            aborting: false,
            ..
        } => eprintln!("threadwire: {cause}; the other nodes run on"),
        Event::TimedOut => eprintln!("threadwire: the job ran past its timeout; killing it"),
        Event::Channels { node, routes } if verbose => {
            for (peer, route) in routes.iter().enumerate() {
                if peer as u32 != *node {
                    eprintln!("threadwire: n{node} -> n{peer}: {route}");
                }
            }
        }
        _ => {}
    }
}

pub fn stats(report: &JobReport) {
    println!(
        "{:>5} {:>12} {:>14} {:>12} {:>14} {:>11}",
        "node", "msgs sent", "bytes sent", "msgs recv", "bytes recv", "mean size"
    );
    for (node, s) in report.stats.iter().enumerate() {
        match s {
            Some(s) => println!(
                "{:>5} {:>12} {:>14} {:>12} {:>14} {:>11.1}",
                format!("n{node}"),
                s.messages_sent,
                s.bytes_sent,
                s.messages_received,
                s.bytes_received,
                s.mean_sent_size()
            ),
            None => println!("{:>5} {:>12}", format!("n{node}"), "(no report)"),
        }
    }
}

pub fn matmul_node(size: usize, threads: u32) -> Result<i32> {
    let ep = threadwire::init()?;
    let cfg = threadwire_apps::matmul::Config {
        size,
        threads,
        ..Default::default()
    };
    if let Some(r) = threadwire_apps::matmul::run(&ep, cfg)? {
        println!(
            "matmul {n}x{n}: {w} worker threads on {k} nodes; verified (A x I = A, max error {e:.1e}); {ms:.1} ms, {g:.2} GFLOP/s",
            n = r.size,
            w = r.workers,
            k = ep.node().nodes(),
            e = r.max_error,
            ms = r.elapsed.as_secs_f64() * 1e3,
            g = r.gflops()
        );
    }
    Ok(0)
}

const RESULT: &str = "pingpong-result";

/// Node side of `bench pingpong`: thread to thread inside node 0 (path
/// `thread`), then node 0 to node 1 over the job's channel (path `shm` or
/// `tcp`, as the launcher set `THREADWIRE_CHANNEL`); node 0 prints
/// machine-readable lines.
pub fn pingpong_node(sizes: &[usize], paths: &[String], budget: Budget) -> Result<i32> {
    let ep = threadwire::init()?;
    let node = ep.node().clone();
    let me = ep.address();
    let channel = paths.iter().find(|p| *p != "thread");
    if me.node == 0 && paths.iter().any(|p| p == "thread") {
        let sizes_owned = sizes.to_vec();
        let partner = node.spawn(move |ep| {
            pingpong::run(
                &ep,
                threadwire::Address::new(0, 0),
                false,
                &sizes_owned,
                budget,
            )
        });
        // A size at a time, each printed at once: the launcher shows
        // progress as the lines come.
        for &size in sizes {
            let local = pingpong::run(&ep, partner.address(), true, &[size], budget)?;
            print_samples("thread", &local);
        }
        partner.join().expect("partner thread panicked")?;
    }
    if let Some(channel) = channel {
        if me.node == 0 {
            for &size in sizes {
                let remote =
                    pingpong::run(&ep, threadwire::Address::new(1, 0), true, &[size], budget)?;
                print_samples(channel, &remote);
            }
        } else if me.node == 1 {
            pingpong::run(&ep, threadwire::Address::new(0, 0), false, sizes, budget)?;
        }
    }
    Ok(0)
}

fn print_samples(path: &str, samples: &[Sample]) {
    for s in samples {
        println!(
            "{RESULT} {path} {} {} {} {}",
            s.size,
            s.one_way.as_nanos(),
            s.min.as_nanos(),
            s.max.as_nanos()
        );
    }
}

/// One `pingpong-result` line: a path's sample of one size.
pub struct Row {
    pub path: String,
    pub sample: Sample,
}

/// Takes a `pingpong-result` line into `rows`: whether `ev` was one (if
/// not, it is the caller's to show).
pub fn collect_results(ev: &Event, rows: &mut Vec<Row>) -> bool {
    if let Event::Output { line, .. } = ev {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 6 && f[0] == RESULT {
            let ns = |s: &str| s.parse().ok().map(Duration::from_nanos);
            if let (Ok(size), Some(one_way), Some(min), Some(max)) =
                (f[2].parse(), ns(f[3]), ns(f[4]), ns(f[5]))
            {
                rows.push(Row {
                    path: f[1].to_string(),
                    sample: Sample {
                        size,
                        one_way,
                        min,
                        max,
                    },
                });
                return true;
            }
        }
    }
    false
}

/// Shows an event that is not a result as [`event`] does, but a node's
/// stray stdout line on stderr: stdout carries the results alone, which
/// `--json` and `--csv` rely on.
pub fn aside(ev: &Event) {
    match ev {
        Event::Output {
            node,
            stream: OutputStream::Stdout,
            line,
        } => eprintln!("[n{node}] {line}"),
        _ => event(ev, false),
    }
}

/// Each path of `rows`, in the order they first appear, with the line
/// t(n) = α + β·n through its medians (`None` below two sizes).
pub fn pingpong_fits(rows: &[Row]) -> Vec<(&str, Option<Fit>)> {
    let mut paths: Vec<&str> = Vec::new();
    for r in rows {
        if !paths.contains(&r.path.as_str()) {
            paths.push(&r.path);
        }
    }
    paths
        .into_iter()
        .map(|path| {
            let samples: Vec<Sample> = rows
                .iter()
                .filter(|r| r.path == path)
                .map(|r| r.sample)
                .collect();
            (path, pingpong::fit(&samples))
        })
        .collect()
}

pub fn pingpong_table(rows: &[Row]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{:<12} {:>10} {:>12} {:>22} {:>12}",
        "path", "size (B)", "one-way µs", "min–max µs", "MB/s"
    );
    for r in rows {
        println!(
            "{:<12} {:>10} {:>12.3} {:>22} {:>12}",
            r.path,
            r.sample.size,
            us(r.sample.one_way),
            format!("{:.3}–{:.3}", us(r.sample.min), us(r.sample.max)),
            mbps(r.sample.mbps())
        );
    }
    println!(
        "Hockney's t(n) = α + β·n, least squares over all sizes weighted by 1/t² \
         (threadwire_bench::fit):"
    );
    println!(
        "{:<12} {:>16} {:>18} {:>14} {:>10}",
        "path", "start-up α µs", "r∞ = 1/β MB/s", "n½ = α/β B", "rms error"
    );
    let or_dash = |x: Option<f64>, decimals: usize| {
        x.map_or_else(|| "–".to_string(), |x| format!("{x:.decimals$}"))
    };
    for (path, fit) in pingpong_fits(rows) {
        match fit {
            Some(f) => println!(
                "{path:<12} {:>16.3} {:>18} {:>14} {:>8.1} %",
                f.startup_seconds * 1e6,
                or_dash(f.bandwidth().map(|b| b / 1e6), 1),
                or_dash(f.half_bandwidth_size(), 0),
                f.rms_relative_error * 100.0
            ),
            None => println!("{path:<12} {:>16}", "(needs two sizes)"),
        }
    }
}

const RATE_RESULT: &str = "rate-result";

/// Node side of `bench rate`: node 0 sends and prints one machine-readable
/// line per kind and thread count as each is measured (the launcher shows
/// progress as the lines come), node 1 receives.
pub fn rate_node(options: &rate::Options) -> Result<i32> {
    let ep = threadwire::init()?;
    let (side, partner) = match ep.address().node {
        0 => (rate::Side::Sender, threadwire::Address::new(1, 0)),
        1 => (rate::Side::Receiver, threadwire::Address::new(0, 0)),
        _ => return Ok(0),
    };
    rate::run(&ep, partner, side, options, |s| {
        println!(
            "{RATE_RESULT} {} {} {} {} {} {} {} {} {}",
            s.kind,
            s.threads,
            s.messages,
            s.send.median,
            s.send.min,
            s.send.max,
            s.end_to_end.median,
            s.end_to_end.min,
            s.end_to_end.max
        );
    })?;
    Ok(0)
}

/// Takes a `bench rate` result line into `samples`: whether `ev` was one
/// (if not, it is the caller's to show).
pub fn collect_rate_results(ev: &Event, samples: &mut Vec<rate::Sample>) -> bool {
    if let Event::Output { line, .. } = ev {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 10 && f[0] == RATE_RESULT {
            if let (Ok(kind), Ok(threads), Ok(messages)) =
                (f[1].parse(), f[2].parse(), f[3].parse())
            {
                let p = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
                let r = |i: usize| rate::Rate {
                    median: p(f[i]),
                    min: p(f[i + 1]),
                    max: p(f[i + 2]),
                };
                samples.push(rate::Sample {
                    kind,
                    threads,
                    messages,
                    send: r(4),
                    end_to_end: r(7),
                });
                return true;
            }
        }
    }
    false
}

/// `bench rate`: one row per kind and thread count, in millions of
/// messages per second over all threads.
pub fn rate_table(options: &rate::Options, samples: &[rate::Sample]) {
    println!(
        "8-byte messages, T threads of n0 -> T threads of n1: {} per thread, windows of {}, \
         median (min–max) of {} repetitions",
        options.messages,
        options.window,
        options.repetitions.max(1)
    );
    println!(
        "{:<7} {:>7}  {:>30}  {:>30}",
        "kind", "threads", "send-side Mmsg/s (min–max)", "end-to-end Mmsg/s (min–max)"
    );
    let spread = |r: &rate::Rate| {
        format!(
            "{} ({}–{})",
            millions(r.median),
            millions(r.min),
            millions(r.max)
        )
    };
    for s in samples {
        println!(
            "{:<7} {:>7}  {:>30}  {:>30}",
            s.kind.name(),
            s.threads,
            spread(&s.send),
            spread(&s.end_to_end)
        );
    }
}

/// Messages per second in millions, to three significant digits, so that a
/// slow rate shows as small rather than as zero.
fn millions(per_second: f64) -> String {
    three_figures(per_second / 1e6)
}

/// `bench threads`: one row per measurement, then the idle cost.
pub fn threads_table(report: &threads::Report) {
    let spread =
        |t: &threads::Timing| format!("{:.1} ({:.1}–{:.1})", t.median_ns, t.min_ns, t.max_ns);
    println!(
        "{:<22}  {:>26}  {:>26}  {:>8}  {:>9}  note",
        "ns per operation", "fibers (min–max)", "OS threads (min–max)", "OS/fiber", "1998"
    );
    for row in &report.rows {
        println!(
            "{:<22}  {:>26}  {:>26}  {:>7.1}×  {:>9}  {}",
            row.measurement.name(),
            spread(&row.fibers),
            spread(&row.os),
            row.ratio(),
            row.measurement
                .reference_1998_ns()
                .map_or_else(|| "–".to_string(), |ns| format!("{ns:.0}")),
            row.note.as_deref().unwrap_or("")
        );
    }
    let idle = &report.idle;
    println!(
        "idle: {} parked fibers, no traffic: {:.2}% of a core ({:.1} ms CPU in {:.1} s, whole process)",
        idle.fibers,
        idle.percent_of_core(),
        idle.cpu.as_secs_f64() * 1e3,
        idle.window.as_secs_f64()
    );
}

/// A net of emulated hosts, and the host file that runs a job on it.
pub fn net(net: &threadwire_testbed::net::Net) {
    println!(
        "bridge {} {} — link {}",
        net.bridge, net.bridge_addr, net.link
    );
    for h in &net.hosts {
        println!("host {} {}", h.name, h.addr);
    }
    println!("host file for `threadwire run --hosts FILE`:");
    for h in &net.hosts {
        println!("netns:{}", h.name);
    }
}

/// `bench spawn`: one row per kind and N, the 1998 peer's row, then where a
/// process start goes.
pub fn spawn_table(report: &threadwire_bench::spawn::Report) {
    use threadwire_bench::spawn::{Kind, Millis, Pvm, PVM_SPAWN_1998_MS};
    let spread = |m: &Millis| {
        format!(
            "{} ({}–{})",
            three_figures(m.median),
            three_figures(m.min),
            three_figures(m.max)
        )
    };
    let reference = |count: u32, ms: f64| match count {
        1 => format!("{ms:.2}"),
        _ => String::new(),
    };
    println!(
        "ms to start N, median (min–max) of {} repetitions after one warm-up",
        report.repetitions
    );
    println!(
        "{:<10} {:>3}  {:>28}  {:>28}  {:>10}",
        "started", "N", "all joined (min–max)", "job finished (min–max)", "1998 (N=1)"
    );
    for row in &report.rows {
        println!(
            "{:<10} {:>3}  {:>28}  {:>28}  {:>10}",
            row.kind.name(),
            row.count,
            spread(&row.joined),
            row.finished
                .as_ref()
                .map_or_else(|| "–".to_string(), spread),
            reference(row.count, row.kind.reference_1998_ms())
        );
    }
    if let Pvm::NotMeasured(_) = report.pvm {
        println!(
            "{:<10} {:>3}  {:>28}  {:>28}  {:>10}",
            "pvm_spawn",
            1,
            "–",
            "–",
            reference(1, PVM_SPAWN_1998_MS)
        );
    }
    println!("pvm_spawn: {}", report.pvm);
    println!(
        "processes: ms from launch::run until the last node's code runs, until it is past init \
         (node clocks), until the launcher reads its line, until run returns (medians)"
    );
    println!(
        "{:>3}  {:>12}  {:>10}  {:>10}  {:>12}",
        "N", "code running", "past init", "line read", "job finished"
    );
    for row in report.rows.iter().filter(|r| r.kind == Kind::Processes) {
        if let (Some(t), Some(f)) = (&row.timeline, &row.finished) {
            println!(
                "{:>3}  {:>12}  {:>10}  {:>10}  {:>12}",
                row.count,
                three_figures(t.running.median),
                three_figures(t.initialized.median),
                three_figures(row.joined.median),
                three_figures(f.median)
            );
        }
    }
}

/// A positive figure to three significant digits, so that a microsecond
/// shows in milliseconds as 0.00123 rather than as zero.
fn three_figures(x: f64) -> String {
    let decimals = if x > 0.0 && x.is_finite() {
        (2.0 - x.log10().floor()).clamp(0.0, 9.0) as usize
    } else {
        2
    };
    format!("{x:.decimals$}")
}

/// MB/s in a table: tenths from 100 up, else three significant digits, so
/// that 8 B in 187 µs shows as 0.0427 rather than as zero.
fn mbps(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.1}")
    } else {
        three_figures(x)
    }
}

/// `bench comm`: one row per path, one column per size, one-way ms; the
/// 1998 figures in a row under the path they compare with.
pub fn comm_table(report: &threadwire_bench::comm::Report) {
    use threadwire_bench::comm::{self, Measured, SIZES};
    let heading = |size: usize| match size {
        1_000_000.. => format!("{} MB", size / 1_000_000),
        1000.. => format!("{} KB", size / 1000),
        _ => format!("{size} B"),
    };
    println!(
        "one-way ping-pong time in ms (half a round trip), median (min–max) of {} repetitions",
        report.repetitions
    );
    println!(
        "thread: two fibers of one node; shm: two nodes of one host, shared memory; \
         tcp/LINK: two emulated hosts joined by LINK, TCP"
    );
    print!("{:<16}", "path");
    for size in SIZES {
        print!(" {:>29}", heading(size));
    }
    println!();
    let mut fewer = Vec::new();
    for row in &report.rows {
        let name = row.path.name();
        match &row.measured {
            Measured::Cells(cells) => {
                print!("{name:<16}");
                for size in SIZES {
                    match cells.iter().find(|c| c.sample.size == size) {
                        Some(c) => {
                            let ms = |d: std::time::Duration| three_figures(d.as_secs_f64() * 1e3);
                            let s = &c.sample;
                            let cell = format!("{} ({}–{})", ms(s.one_way), ms(s.min), ms(s.max));
                            print!(" {cell:>29}");
                            if c.repetitions < report.repetitions {
                                fewer.push(format!("{name} {}: {}", heading(size), c.repetitions));
                            }
                        }
                        None => print!(" {:>29}", "–"),
                    }
                }
                println!();
            }
            Measured::Missing(why) => println!("{name:<16} missing: {why}"),
        }
        if let Some(label) = comm::reference_1998_label(row.path) {
            print!("{label:<16}");
            for size in SIZES {
                let figure = comm::reference_1998_ms(row.path, size)
                    .map_or_else(|| "–".to_string(), three_figures);
                print!(" {figure:>29}");
            }
            println!();
        }
    }
    if !fewer.is_empty() {
        println!(
            "fewer repetitions, to fit {:.1} s per size at the link's rate: {}",
            report.per_size.as_secs_f64(),
            fewer.join(", ")
        );
    }
}

/// One line of the peers' table: a size of ours, the peer's row there
/// (or the nearest), our fastest repetition, and the ratio.
pub struct PeerRow {
    pub size: usize,
    pub peer: threadwire_bench::peers::Match,
    pub ours_ns: f64,
    /// threadwire's one-way time ÷ the peer's, per byte where the sizes differ.
    pub ratio: f64,
}

/// The lines of `report` beside our `rows` of its path.
pub fn peer_rows(rows: &[Row], report: &threadwire_bench::peers::Report) -> Vec<PeerRow> {
    let Ok(measured) = &report.result else {
        return Vec::new();
    };
    rows.iter()
        .filter(|r| r.path == report.path)
        .filter_map(|r| {
            let peer = measured.at(r.sample.size)?;
            let peer_ns_per_byte =
                peer.point.one_way.as_secs_f64() * 1e9 / peer.point.size.max(1) as f64;
            let ours_ns = r.sample.min.as_secs_f64() * 1e9;
            Some(PeerRow {
                size: r.sample.size,
                peer,
                ours_ns,
                ratio: ours_ns / r.sample.size.max(1) as f64 / peer_ns_per_byte,
            })
        })
        .collect()
}

/// `bench pingpong --peers`: per peer and size of ours, NetPIPE's row at
/// that size (or the nearest, marked `*`) beside our fastest repetition,
/// and threadwire's time ÷ the peer's; a peer without figures says why.
pub fn peers_table(rows: &[Row], reports: &[threadwire_bench::peers::Report]) {
    if reports.is_empty() {
        return;
    }
    println!();
    println!(
        "peers: NetPIPE 3.7.2, best of its trials, beside threadwire's fastest repetition; \
         tw ÷ peer = threadwire's one-way time ÷ the peer's, per byte where the peer's size \
         differs (*): below 1, threadwire is faster"
    );
    println!(
        "{:<18} {:<12} {:>10} {:>11} {:>12} {:>12} {:>12} {:>9}",
        "peer", "path", "size (B)", "peer size", "one-way µs", "MB/s", "tw µs", "tw ÷ peer"
    );
    for report in reports {
        let name = report.peer.name();
        if let Err(e) = &report.result {
            println!("{name:<18} {:<12} {e}", report.path);
            continue;
        }
        for line in peer_rows(rows, report) {
            let point = line.peer.point;
            println!(
                "{name:<18} {:<12} {:>10} {:>11} {:>12.3} {:>12} {:>12.3} {:>9.2}",
                report.path,
                line.size,
                format!("{}{}", point.size, if line.peer.exact { "" } else { "*" }),
                point.one_way.as_secs_f64() * 1e6,
                mbps(point.mbps()),
                line.ours_ns / 1e3,
                line.ratio
            );
        }
    }
}

/// `bench encodings`: per size, one row per encoding with the one-way time
/// in µs, median (min–max), MB/s of the values' bytes at the median, and
/// its median over raw's at that size.
pub fn encodings_table(report: &threadwire_bench::encodings::Report) {
    use threadwire::Encoding;
    use threadwire_bench::encodings;
    println!(
        "f64 values packed by the sender, unpacked into a Vec<f64> by the receiver, node to \
         node over {}: one-way time (half a round trip), median (min–max) of {} repetitions",
        report.path, report.repetitions
    );
    println!(
        "{:>10} {:<21} {:>34} {:>10} {:>7}",
        "size (B)", "encoding", "one-way µs (min–max)", "MB/s", "÷ raw"
    );
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    for row in &report.rows {
        let s = &row.sample;
        let raw = report
            .rows
            .iter()
            .find(|r| r.encoding == Encoding::Raw && r.sample.size == s.size)
            .map(|r| r.sample.one_way.as_secs_f64());
        let ratio = raw.map_or_else(
            || "–".to_string(),
            |raw| format!("{:.2}", s.one_way.as_secs_f64() / raw),
        );
        println!(
            "{:>10} {:<21} {:>34} {:>10} {:>7}",
            s.size,
            encodings::name(row.encoding),
            format!("{:.3} ({:.3}–{:.3})", us(s.one_way), us(s.min), us(s.max)),
            mbps(s.mbps()),
            ratio
        );
    }
}

/// `bench floors`: one row per floor, median and min–max in the row's
/// unit (times of a microsecond or more in µs), and how it ran.
pub fn floors_table(report: &threadwire_bench::floors::Report) {
    use threadwire_bench::floors::{Measured, Unit};
    println!(
        "physical floors of this machine: median (min–max) of {} repetitions of ~{} ms, \
         after one warm-up",
        report.repetitions,
        report.per_repetition.as_millis()
    );
    println!(
        "{:<22} {:>10} {:>21}  {:<5} note",
        "floor", "median", "min–max", "unit"
    );
    for row in &report.rows {
        let name = row.floor.name();
        match &row.measured {
            Measured::Figures(f) => {
                let (unit, scale) = match row.floor.unit() {
                    Unit::Nanoseconds if f.median >= 1e3 => ("µs", 1e-3),
                    unit => (unit.symbol(), 1.0),
                };
                println!(
                    "{name:<22} {:>10} {:>21}  {unit:<5} {}",
                    three_figures(f.median * scale),
                    format!(
                        "{}–{}",
                        three_figures(f.min * scale),
                        three_figures(f.max * scale)
                    ),
                    row.note
                );
            }
            Measured::Missing(why) => println!(
                "{name:<22} {:>10} {:>21}  {:<5} missing: {why}; {}",
                "–", "–", "", row.note
            ),
        }
    }
}
