//! How the command shows a job's events, its counters, a running job's
//! machine (`threadwire vm`) and a net of emulated hosts; the benchmarks' reports write themselves
//! (`threadwire_bench::report`).

use std::io::Write;
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
        Event::Exited { node, exit } if verbose => eprintln!("threadwire: n{node} left: {exit}"),
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
        Event::Machine(what) if verbose => eprintln!("threadwire: {what}"),
        Event::Channels { node, routes } | Event::Routes { node, routes } if verbose => {
            if matches!(ev, Event::Channels { .. }) {
                eprintln!("threadwire: n{node} joined");
            }
            // Pairs connect on first use: only those made so far.
            for (peer, route) in routes.iter().enumerate() {
                if peer as u32 != *node && route != "not connected" {
                    eprintln!("threadwire: n{node} -> n{peer}: {route}");
                }
            }
        }
        _ => {}
    }
}

/// A PVM job's event (`threadwire pvm`): the tasks started from the
/// command line (nodes below `founders`) write straight to stdout and
/// stderr, as under PVM; spawned tasks' lines go to stderr after their
/// tids, as `pvm_catchout` shows them, so that stdout is what the program
/// prints under PVM.
pub fn pvm_event(ev: &Event, founders: u32, verbose: bool) {
    match ev {
        Event::Output { node, stream, line } if *node < founders => match stream {
            OutputStream::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
            OutputStream::Stderr => eprintln!("{line}"),
        },
        Event::Output { node, line, .. } => {
            eprintln!("[t{:x}] {line}", threadwire_launch::pvm::task_of(*node))
        }
        // A task's end, even by pvm_kill, is not the job's failure.
        Event::NodeFailed {
            aborting: false, ..
        } if !verbose => {}
        _ => event(ev, verbose),
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
    // The counters of datagram channels: per UDP pair, and each node's
    // multicast stream.
    for (node, routes) in report.routes.iter().enumerate() {
        for (peer, route) in routes.iter().flatten().enumerate() {
            if peer == node && route != "-" {
                println!("n{node} multicast stream: {route}");
            } else if route.starts_with("udp (") {
                println!("n{node} -> n{peer}: {route}");
            }
        }
    }
}

/// Shows an event that is not a result as [`event`] does, but a node's
/// stray stdout line (or unreadable report) on stderr: stdout carries the results alone, which
/// `--json` and `--csv` rely on.
pub fn aside(ev: &Event) {
    match ev {
        Event::Output {
            node,
            stream: OutputStream::Stdout,
            line,
        } => eprintln!("[n{node}] {line}"),
        Event::Report { node, data } => eprintln!(
            "[n{node}] a report that is not a result of this benchmark ({} bytes)",
            data.len()
        ),
        _ => event(ev, false),
    }
}

/// A net of emulated hosts, and the host file that runs a job on it.
pub fn net(net: &threadwire_testbed::net::Net, delay_queue_drops: &[u64]) {
    println!(
        "bridge {} {} — link {}",
        net.bridge, net.bridge_addr, net.link
    );
    let mut impairments = Vec::new();
    if let Some(loss) = net.loss {
        impairments.push(format!("loss {loss} (random, of what each host receives)"));
    }
    if let Some(delay) = net.delay {
        let dropped: u64 = delay_queue_drops.iter().sum();
        impairments.push(format!(
            "delay {delay} (each host's receive side; {dropped} packets dropped over the \
             queues' limit of {})",
            threadwire_testbed::net::DELAY_QUEUE_LIMIT
        ));
    }
    if let Some(load) = net.load {
        impairments.push(format!(
            "load {load} of the rate on each host's receive link (UDP from {}load)",
            net.prefix
        ));
    }
    for line in impairments {
        println!("impairment: {line}");
    }
    for h in &net.hosts {
        println!("host {} {}", h.name, h.addr);
    }
    println!("host file for `threadwire run --hosts FILE`:");
    for h in &net.hosts {
        println!("netns:{}", h.name);
    }
}

/// Rows under headers, each column as wide as its widest cell; the last
/// column is not padded.
fn table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            match i + 1 == cells.len() {
                true => text += cell,
                false => text += &format!("{cell:<w$}  "),
            }
        }
        println!("{}", text.trim_end());
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// A cell of an answer row, `?` where the row is short.
fn cell(row: &[String], i: usize) -> String {
    row.get(i).cloned().unwrap_or_else(|| "?".into())
}

/// `threadwire vm`: the running jobs, from their consoles' `job` rows.
pub fn vm_jobs(rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let up = cell(r, 5).parse::<u64>().map_or_else(
                |_| "?".to_string(),
                |s| match s {
                    0..=59 => format!("{s}s"),
                    60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
                    _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
                },
            );
            let nodes = format!("{} of {}", cell(r, 2), cell(r, 3));
            vec![cell(r, 0), nodes, cell(r, 4), up, cell(r, 1)]
        })
        .collect();
    table(&["JOB", "LIVE NODES", "HOSTS", "UP", "PROGRAM"], &rows);
}

/// `threadwire vm hosts`.
pub fn vm_hosts(rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![cell(r, 0), cell(r, 1), cell(r, 2), cell(r, 3)])
        .collect();
    table(&["HOST", "NAME", "STATE", "NODES"], &rows);
}

/// `threadwire vm nodes`: the state last, as it may be long.
pub fn vm_nodes(rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let node = format!("n{}", cell(r, 0));
            vec![
                node,
                cell(r, 1),
                cell(r, 2),
                cell(r, 5),
                cell(r, 4),
                cell(r, 3),
            ]
        })
        .collect();
    table(
        &["NODE", "HOST", "PID", "THREADS", "ADDRESS", "STATE"],
        &rows,
    );
}

/// Node numbers of an answer's rows, as `n4 n5`, or `none`.
pub fn node_list(rows: &[Vec<String>]) -> String {
    let nodes: Vec<String> = rows.iter().map(|r| format!("n{}", cell(r, 0))).collect();
    match nodes.is_empty() {
        true => "none".into(),
        false => nodes.join(" "),
    }
}
