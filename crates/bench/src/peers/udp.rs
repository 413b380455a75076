//! The UDP peers of the ping-pong (`bench pingpong --paths udp --peers`):
//! `sockperf`'s UDP ping-pong for latency and `iperf3 -u` as the raw
//! floor of bandwidth, run between the same two hosts as threadwire's
//! `udp` path (the two emulated hosts of `--link`, or loopback).
//!
//! 1. **sockperf.** `sockperf sr -i IP -p PORT` on the receiver's host;
//!    once it says it blocks on its socket, `sockperf pp -i IP -p PORT
//!    -t T -m M` on the transmitter's, once per message size M: each of
//!    our sizes up to [`SOCKPERF_LARGEST`], raised to sockperf's smallest
//!    message, [`SOCKPERF_SMALLEST`]. sockperf reports half the round
//!    trip; its median ("percentile 50.000") is what it is compared with.
//!    On a lossy link its ping-pong stalls at the first lost datagram (it
//!    blocks for the reply until its time is up), so there it runs
//!    `sockperf ul --reply-every 1 --mps R` instead: one message at a
//!    time, each answered, a lost one counted as dropped; `R` leaves
//!    about four round trips between messages ([`messages_per_second`]).
//! 2. **iperf3.** `iperf3 -s -1 --forceflush` on the receiver's host
//!    (`--forceflush`, or it says it listens only when it exits); once it
//!    listens, `iperf3 -u -c IP -b RATE -l 1472 -t T --json` on the
//!    transmitter's, `RATE` the link's nominal rate (`0`, unlimited, on
//!    loopback or an unshaped link). The floor is what the receiver got
//!    (`end.sum_received`, or `end.sum` before iperf3 3.10), and its loss.
//!
//! Every process runs in a process group of its own with a deadline
//! ([`process::Group`]): a server is killed when its runs are done.

use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use threadwire_testbed::watch::{wait_until, Watched};

use super::process::{self, Group};
use super::{in_namespace, Error, Placement, ScratchDir};

/// sockperf's smallest message (`-m`): its header.
pub const SOCKPERF_SMALLEST: usize = 14;
/// The largest size sockperf is run at: a UDP datagram holds 65507 bytes.
pub const SOCKPERF_LARGEST: usize = 65_000;
/// iperf3's datagram: the payload of one 1500-byte Ethernet frame.
const IPERF_DATAGRAM: usize = 1472;
/// What a run may take beyond its own time (start-up, warm-up).
const GRACE: Duration = Duration::from_secs(30);

/// How the UDP peers are run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Our sizes; sockperf runs at those up to [`SOCKPERF_LARGEST`].
    pub sizes: Vec<usize>,
    /// `-t`: seconds of each sockperf run and of iperf3's.
    pub seconds: u32,
    /// Where the two sides run.
    pub placement: Placement,
    /// The link's nominal rate, iperf3's `-b`; `None`: unlimited.
    pub rate_mbit: Option<f64>,
    /// Whether the link loses packets (`--loss`): sockperf runs under
    /// load, one message at a time, instead of its ping-pong.
    pub lossy: bool,
}

impl Options {
    /// Seconds per run for a `budget` per size: whole seconds, at least
    /// one (sockperf's `-t` takes no less) and at most ten.
    pub fn seconds_for(budget: Duration) -> u32 {
        budget.as_secs_f64().ceil().clamp(1.0, 10.0) as u32
    }
}

/// sockperf's figure at one of our sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Our size.
    pub size: usize,
    /// sockperf's message size (`-m`): ours, or its smallest.
    pub message: usize,
    /// Its median one-way time (half the round trip).
    pub one_way: Duration,
}

/// iperf3's achieved UDP bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Floor {
    /// What the client offered (`-b`), Mbit/s; `None`: unlimited.
    pub offered_mbit: Option<f64>,
    /// What the receiver got, Mbit/s (10^6 bit/s).
    pub received_mbit: f64,
    /// The share of datagrams lost, percent.
    pub lost_percent: f64,
}

/// The UDP peers' outcome beside a ping-pong sweep.
#[derive(Debug)]
pub struct Report {
    /// The ping-pong path they are compared with (`udp`, `udp/<link>`).
    pub path: String,
    /// sockperf's latencies, one per size of ours it ran at, or why none.
    pub sockperf: Result<Vec<Latency>, Error>,
    /// iperf3's floor, or why none.
    pub iperf: Result<Floor, Error>,
}

impl Report {
    /// sockperf's latencies, one per run (message size), ascending; none
    /// if it did not run.
    pub fn sockperf_runs(&self) -> Vec<Latency> {
        let mut runs = self.sockperf.as_ref().map_or(Vec::new(), |l| l.to_vec());
        // Ascending sizes share a message size (its smallest) only next
        // to each other.
        runs.dedup_by_key(|l| l.message);
        runs
    }
}

/// Runs sockperf, then iperf3, with `options`; `path` names the path of
/// ours they are compared with.
pub fn run_beside(path: String, options: &Options) -> Report {
    Report {
        path,
        sockperf: sockperf(options),
        iperf: iperf(options),
    }
}

/// A server started in `namespace` with `args`, once its log in `dir`
/// shows `ready`; killed when dropped.
fn start_server(
    namespace: Option<&str>,
    args: &[String],
    dir: &Path,
    ready: &str,
    deadline: Instant,
) -> Result<Group, Error> {
    let log = dir.join("server.txt");
    let server = Group::spawn(in_namespace(namespace, args), &log, &log)?;
    let shows_ready = || std::fs::read_to_string(&log).is_ok_and(|text| text.contains(ready));
    match wait_until(dir, shows_ready, Some(server.process().pidfd()), deadline)
        .map_err(process::io("waiting for a peer's server"))?
    {
        Watched::Ready => Ok(server),
        Watched::ProcessExited => {
            let mut server = server;
            let status = server.wait(deadline)?;
            Err(server.failed(status))
        }
        Watched::TimedOut => Err(Error::TimedOut(GRACE)),
    }
}

/// Runs a client to its end, its standard output into `out`.
fn run_client(
    namespace: Option<&str>,
    args: &[String],
    out: &Path,
    err: &Path,
    deadline: Instant,
) -> Result<String, Error> {
    let mut client = Group::spawn(in_namespace(namespace, args), out, err)?;
    let status = client.wait(deadline)?;
    if !status.success() {
        return Err(client.failed(status));
    }
    std::fs::read_to_string(out).map_err(process::io("reading a peer's output"))
}

/// A UDP port that was free a moment ago on this host (a namespace of
/// its own has every port free).
fn free_udp_port() -> Result<u16, Error> {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(process::io("finding a free port"))
}

/// Step 1: sockperf's median one-way time at each size it can run.
fn sockperf(options: &Options) -> Result<Vec<Latency>, Error> {
    process::require(&["sockperf"], "sockperf")?;
    let dir = ScratchDir::named("sockperf").map_err(process::io("creating a scratch directory"))?;
    let (server_ns, addr, client_ns) = options.placement.sides();
    let (addr, port) = (addr.to_string(), free_udp_port()?.to_string());
    let mut messages: Vec<usize> = options
        .sizes
        .iter()
        .filter(|&&size| size <= SOCKPERF_LARGEST)
        .map(|&size| size.max(SOCKPERF_SMALLEST))
        .collect();
    messages.dedup();
    if messages.is_empty() {
        return Err(Error::Unsupported("sockperf runs at sizes up to 65000 B"));
    }
    let run_time = Duration::from_secs(options.seconds.into());
    let deadline = Instant::now() + GRACE;
    let server_args = ["sockperf", "sr", "-i", &addr, "-p", &port].map(String::from);
    let mut server = start_server(server_ns, &server_args, &dir.0, "using", deadline)?;
    let mut medians = Vec::new();
    for message in messages {
        let mut client_args: Vec<String> = [
            "sockperf",
            if options.lossy { "ul" } else { "pp" },
            "-i",
            &addr,
            "-p",
            &port,
            "-t",
            &options.seconds.to_string(),
            "-m",
            &message.to_string(),
        ]
        .map(String::from)
        .into();
        if options.lossy {
            let rate = messages_per_second(message, options.rate_mbit).to_string();
            client_args.extend(["--reply-every", "1", "--mps", &rate].map(String::from));
        }
        let out = dir.0.join(format!("pp-{message}.txt"));
        let deadline = Instant::now() + run_time + GRACE;
        let text = run_client(client_ns, &client_args, &out, &out, deadline)?;
        let one_way = sockperf_median(&text).ok_or(Error::Unreadable("sockperf's median"))?;
        medians.push((message, one_way));
    }
    server.kill();
    Ok(options
        .sizes
        .iter()
        .filter_map(|&size| {
            let message = size.max(SOCKPERF_SMALLEST);
            let &(_, one_way) = medians.iter().find(|(m, _)| *m == message)?;
            Some(Latency {
                size,
                message,
                one_way,
            })
        })
        .collect())
}

/// sockperf's rate under load (`--mps`) at `message` bytes on a link of
/// `rate_mbit`: a message every four round trips or so, guessed as the
/// message's time on the link both ways plus 100 µs, and at most 2000
/// a second, at least 5.
fn messages_per_second(message: usize, rate_mbit: Option<f64>) -> u32 {
    let on_link = rate_mbit.map_or(0.0, |rate| message as f64 * 8.0 / (rate * 1e6));
    let round_trip = 2.0 * on_link + 100e-6;
    (0.25 / round_trip).clamp(5.0, 2000.0) as u32
}

/// sockperf's `percentile 50.000 = X` line, X in µs.
fn sockperf_median(text: &str) -> Option<Duration> {
    let line = text.lines().find(|l| l.contains("percentile 50.000"))?;
    let micros: f64 = line.rsplit('=').next()?.trim().parse().ok()?;
    (micros.is_finite() && micros > 0.0).then(|| Duration::from_secs_f64(micros / 1e6))
}

/// Step 2: iperf3's UDP floor.
fn iperf(options: &Options) -> Result<Floor, Error> {
    process::require(&["iperf3"], "iperf3")?;
    let dir = ScratchDir::named("iperf3").map_err(process::io("creating a scratch directory"))?;
    let (server_ns, addr, client_ns) = options.placement.sides();
    // iperf3 takes a TCP port for its control connection and the same
    // UDP port for the datagrams.
    let port = super::free_port()?.to_string();
    let deadline = Instant::now() + GRACE;
    let server_args = ["iperf3", "-s", "-1", "--forceflush", "-p", &port].map(String::from);
    let mut server = start_server(server_ns, &server_args, &dir.0, "listening", deadline)?;
    let rate = options
        .rate_mbit
        .map_or("0".to_string(), |mbit| format!("{mbit}M"));
    let client_args = [
        "iperf3",
        "-u",
        "-c",
        &addr.to_string(),
        "-p",
        &port,
        "-b",
        &rate,
        "-l",
        &IPERF_DATAGRAM.to_string(),
        "-t",
        &options.seconds.to_string(),
        "--json",
    ]
    .map(String::from);
    let out = dir.0.join("client.json");
    let deadline = Instant::now() + Duration::from_secs(options.seconds.into()) + GRACE;
    let text = run_client(
        client_ns,
        &client_args,
        &out,
        &dir.0.join("client.txt"),
        deadline,
    )?;
    server.kill();
    let (received_mbit, lost_percent) =
        iperf_received(&text).ok_or(Error::Unreadable("iperf3's received bandwidth"))?;
    Ok(Floor {
        offered_mbit: options.rate_mbit,
        received_mbit,
        lost_percent,
    })
}

/// The receiver's Mbit/s and loss % in iperf3's `--json` document.
fn iperf_received(text: &str) -> Option<(f64, f64)> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    let end = doc.get("end")?;
    let sum = end.get("sum_received").or_else(|| end.get("sum"))?;
    let bits = sum.get("bits_per_second")?.as_f64()?;
    let lost = sum.get("lost_percent").and_then(serde_json::Value::as_f64);
    Some((bits / 1e6, lost.unwrap_or(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockperf_median_is_read_in_microseconds() {
        let text = "sockperf: ---> percentile 75.000 =   27.500\n\
                    sockperf: ---> percentile 50.000 =   25.718\n\
                    sockperf: ---> <MIN> observation =    8.978\n";
        assert_eq!(sockperf_median(text), Some(Duration::from_nanos(25_718)));
        assert_eq!(sockperf_median("sockperf: Test ended\n"), None);
    }

    #[test]
    fn iperf_received_prefers_the_receiver_and_reads_its_loss() {
        let text = r#"{"end": {
            "sum": {"bits_per_second": 99911367.0, "lost_percent": 1.5},
            "sum_received": {"bits_per_second": 98000000.0, "lost_percent": 1}}}"#;
        assert_eq!(iperf_received(text), Some((98.0, 1.0)));
        let old = r#"{"end": {"sum": {"bits_per_second": 5e6, "lost_percent": 0.5}}}"#;
        assert_eq!(iperf_received(old), Some((5.0, 0.5)));
        assert_eq!(iperf_received("{}"), None);
    }

    #[test]
    fn under_load_a_message_waits_for_about_four_round_trips() {
        assert_eq!(messages_per_second(14, Some(100.0)), 2000);
        assert_eq!(messages_per_second(65_000, Some(100.0)), 23);
        assert_eq!(messages_per_second(65_000, Some(10.0)), 5);
        assert_eq!(messages_per_second(65_000, None), 2000);
    }

    #[test]
    fn a_run_lasts_whole_seconds() {
        assert_eq!(Options::seconds_for(Duration::from_millis(20)), 1);
        assert_eq!(Options::seconds_for(Duration::from_millis(1500)), 2);
        assert_eq!(Options::seconds_for(Duration::from_secs(60)), 10);
    }
}
