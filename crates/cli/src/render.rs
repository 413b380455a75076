//! How the command shows a job's events, its counters and a net of
//! emulated hosts; the benchmarks' reports write themselves
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
        Event::Channels { node, routes } if verbose => {
            eprintln!("threadwire: n{node} joined");
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
