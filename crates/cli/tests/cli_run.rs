//! The `threadwire` command end to end: `run` with its options, `apps`,
//! `bench threads --json/--csv`, `bench rate`, `bench pingpong
//! --json/--csv/--plot`, `bench comm --json/--csv`, `bench encodings`,
//! `bench floors`, and what a node program says when started without it; no
//! benchmark draws its progress bar into a pipe.
//!
//! The node programs are examples of other workspace crates (`hello` of
//! threadwire-apps, `node-misbehave` of threadwire's tests), which
//! `cargo test --workspace` builds into `target/<profile>/examples/`.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::json;

/// Any command here that runs longer has hung.
const HANG: Duration = Duration::from_secs(60);

/// The path of a workspace example built for this test's profile:
/// `target/<profile>/deps/<test>-<hash>` → `target/<profile>/examples/<name>`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps")
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "example {} is missing; build it with `cargo test --workspace` \
         (or `cargo build --workspace --examples`) before running this test",
        path.display()
    );
    path
}

struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Standard output, a row of whitespace-separated words per line.
    fn rows(&self) -> Vec<Vec<&str>> {
        self.stdout
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect()
    }

    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    fn show(&self) -> String {
        format!(
            "{}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Checks that no progress bar was drawn: stderr is a pipe here, and the
/// bars are drawn only on a terminal.
fn assert_no_progress_bar(ran: &Ran) {
    assert!(
        !ran.stderr.contains('\r') && !ran.stderr.contains("bench "),
        "a progress bar on a pipe\n{}",
        ran.show()
    );
}

/// The fields of a CSV line, quoted ones unquoted (RFC 4180).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let (mut quoted, mut chars) = (false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// Checks a table cell pair `median` `(min–max)` of positive figures.
fn assert_spread(ran: &Ran, median: &str, cell: &str) {
    assert_positive(median.parse().ok(), median, ran);
    let (min, max) = cell
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .and_then(|c| c.split_once('–'))
        .unwrap_or_else(|| panic!("{cell:?} is not (min–max)\n{}", ran.show()));
    assert_positive(min.parse().ok(), min, ran);
    assert_positive(max.parse().ok(), max, ran);
}

/// A command with a predictable environment: not inside a job, warnings
/// logged, no panic backtraces.
fn command(program: impl Into<PathBuf>) -> Command {
    let mut cmd = Command::new(program.into());
    for var in [
        threadwire::env::JOB,
        threadwire::env::NODE,
        threadwire::env::NODES,
        threadwire::env::RENDEZVOUS,
        threadwire::env::SECRET,
        threadwire::env::BIND,
        threadwire::env::PROGRESS,
    ] {
        cmd.env_remove(var);
    }
    cmd.env(threadwire::env::LOG, "warn")
        .env("RUST_BACKTRACE", "0");
    cmd
}

fn threadwire() -> Command {
    command(env!("CARGO_BIN_EXE_threadwire"))
}

/// Runs `cmd` to its end; kills it and fails if it hangs.
fn run(cmd: &mut Command) -> Ran {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the command");
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + HANG;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} hung; killed after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

#[test]
fn run_hello_prefixes_every_line_with_its_node() {
    let ran = run(threadwire()
        .args(["run", "-n", "3", "--"])
        .arg(example("hello")));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    let lines: Vec<&str> = ran.stdout.lines().collect();
    for line in &lines {
        let node = line
            .strip_prefix("[n")
            .and_then(|r| r.split_once("] "))
            .map(|(n, _)| n);
        assert!(
            matches!(node, Some("0" | "1" | "2")),
            "line without a node prefix: {line:?}\n{}",
            ran.show()
        );
    }
    // n0.t0 is greeted by every other thread: 3 nodes × 4 threads − itself.
    let mut greeters: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("[n0] n0.t0 got: hello from "))
        .collect();
    greeters.sort();
    let mut expected: Vec<String> = (0..3)
        .flat_map(|n| (0..4).map(move |t| format!("n{n}.t{t}")))
        .filter(|a| a != "n0.t0")
        .collect();
    expected.sort();
    assert_eq!(greeters, expected, "{}", ran.show());
}

#[test]
fn failing_node_sets_the_status_and_is_named() {
    let ran = run(threadwire()
        .args(["run", "-n", "3", "--"])
        .arg(example("node-misbehave"))
        .args(["exit-on", "1", "3"]));
    assert_eq!(ran.code(), Some(3), "{}", ran.show());
    assert!(
        ran.stderr
            .lines()
            .any(|l| l.starts_with("threadwire: ") && l.contains("n1") && l.contains("status 3")),
        "no message naming the failed node:\n{}",
        ran.show()
    );
}

#[test]
fn keep_going_lets_the_others_finish() {
    let ran = run(threadwire()
        .args(["run", "-n", "3", "--keep-going", "--"])
        .arg(example("node-misbehave"))
        .args(["exit-on", "1", "3"]));
    assert_eq!(ran.code(), Some(3), "{}", ran.show());
    assert!(
        ran.stderr.contains("the other nodes run on"),
        "{}",
        ran.show()
    );
    for node in [0, 2] {
        assert!(
            ran.stdout
                .lines()
                .any(|l| l.starts_with(&format!("[n{node}] n{node}: receive: node n1"))),
            "n{node} did not see the loss of n1:\n{}",
            ran.show()
        );
    }
}

#[test]
fn timeout_ends_a_hung_job_with_status_124() {
    let ran = run(threadwire()
        .args(["run", "-n", "2", "--timeout", "1", "--"])
        .arg(example("node-misbehave"))
        .arg("sleep"));
    assert_eq!(ran.code(), Some(124), "{}", ran.show());
    assert!(ran.stderr.contains("timeout"), "{}", ran.show());
}

#[test]
fn stats_prints_one_row_per_node() {
    let ran = run(threadwire()
        .args(["run", "-n", "3", "--stats", "--"])
        .arg(example("hello")));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.contains("node") && l.contains("msgs sent") && l.contains("msgs recv")),
        "no table header:\n{}",
        ran.show()
    );
    // Columns: node, msgs sent, bytes sent, msgs recv, bytes recv, mean size.
    let row = |node: &str| -> Vec<f64> {
        let rows: Vec<Vec<&str>> = ran
            .rows()
            .into_iter()
            .filter(|w| w.first() == Some(&node))
            .collect();
        assert_eq!(rows.len(), 1, "rows for {node}:\n{}", ran.show());
        rows[0][1..]
            .iter()
            .map(|w| {
                w.parse()
                    .unwrap_or_else(|_| panic!("{node}: {w:?} is not a number\n{}", ran.show()))
            })
            .collect()
    };
    let (n0, n1, n2) = (row("n0"), row("n1"), row("n2"));
    assert_eq!(n0.len(), 5);
    // hello: every thread but n0.t0 greets n0.t0; a node has 4 threads.
    assert_eq!((n0[0], n0[2]), (3.0, 11.0), "n0 sends 3 and receives 11");
    assert_eq!((n1[0], n1[2]), (4.0, 0.0), "n1 sends 4 and receives none");
    assert_eq!((n2[0], n2[2]), (4.0, 0.0), "n2 sends 4 and receives none");
}

#[test]
fn apps_matmul_verifies() {
    let ran = run(threadwire().args(["apps", "matmul", "-n", "3", "--size", "64"]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert!(ran.stdout.contains("verified"), "{}", ran.show());
}

#[test]
fn a_node_program_alone_says_to_use_threadwire_run() {
    let ran = run(&mut command(example("hello")));
    assert_ne!(ran.code(), Some(0), "{}", ran.show());
    assert!(
        ran.stderr.contains("threadwire run"),
        "no hint to start it with `threadwire run`:\n{}",
        ran.show()
    );
}

#[test]
fn a_missing_program_is_an_error() {
    let ran = run(threadwire().args(["run", "-n", "2", "--", "/nonexistent/threadwire-node"]));
    assert_eq!(ran.code(), Some(1), "{}", ran.show());
    assert!(
        ran.stderr.contains("/nonexistent/threadwire-node"),
        "{}",
        ran.show()
    );
}

#[test]
fn bench_threads_prints_every_row() {
    let ran = run(threadwire().args([
        "bench",
        "threads",
        "--iterations",
        "1000",
        "--repetitions",
        "1",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    for row in [
        "mutex",
        "semaphore",
        "context switch",
        "thread switch",
        "thread synchronization",
        "create + join",
        "message round trip",
    ] {
        assert!(
            ran.stdout.lines().any(|l| l.starts_with(row)),
            "no {row:?} row:\n{}",
            ran.show()
        );
    }
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.starts_with("idle: 10000 parked fibers") && l.contains("% of a core")),
        "no idle line:\n{}",
        ran.show()
    );
}

#[test]
fn bench_rate_reports_every_kind_and_thread_count() {
    // 300 messages in windows of 64 end on a partial window.
    let ran = run(threadwire().args([
        "bench",
        "rate",
        "--threads",
        "1,3",
        "--messages",
        "300",
        "--repetitions",
        "2",
        "--kinds",
        "os,fibers",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    // Rows: kind, threads, send median, (min–max), end-to-end median, (min–max).
    let rows: Vec<Vec<&str>> = ran
        .rows()
        .into_iter()
        .filter(|w| matches!(w.first(), Some(&("os" | "fibers"))))
        .collect();
    let kinds: Vec<(&str, &str)> = rows.iter().map(|w| (w[0], w[1])).collect();
    assert_eq!(
        kinds,
        [("os", "1"), ("os", "3"), ("fibers", "1"), ("fibers", "3")],
        "{}",
        ran.show()
    );
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}\n{}", ran.show());
        assert_spread(&ran, row[2], row[3]);
        assert_spread(&ran, row[4], row[5]);
    }
}

/// `bench pingpong` with the smallest budget over one path.
fn bench_pingpong_shm(format: &str) -> Ran {
    let ran = run(threadwire().args([
        "bench",
        "pingpong",
        "--paths",
        "shm",
        "--sizes",
        "1,8,1000",
        "--repetitions",
        "2",
        "--ms",
        "5",
        format,
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    ran
}

fn assert_positive(figure: Option<f64>, what: &str, ran: &Ran) {
    assert!(
        figure.is_some_and(|x| x.is_finite() && x > 0.0),
        "{what} is {figure:?}, not a positive number\n{}",
        ran.show()
    );
}

#[test]
fn bench_pingpong_json_has_every_size_and_the_fit() {
    let ran = bench_pingpong_shm("--json");
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
    let sizes: Vec<Option<f64>> = rows.iter().map(|r| r.get("size")?.as_f64()).collect();
    assert_eq!(
        sizes,
        [Some(1.0), Some(8.0), Some(1000.0)],
        "{}",
        ran.show()
    );
    for row in rows {
        assert_eq!(row.get("path").and_then(|p| p.as_str()), Some("shm"));
        for key in ["median_ns", "min_ns", "max_ns", "mbps"] {
            assert_positive(row.get(key).and_then(|x| x.as_f64()), key, &ran);
        }
    }
    let fits = doc
        .get("fits")
        .and_then(|f| f.as_array())
        .unwrap_or_default();
    assert_eq!(fits.len(), 1, "one fit per path\n{}", ran.show());
    let fit = &fits[0];
    assert_eq!(fit.get("path").and_then(|p| p.as_str()), Some("shm"));
    assert_eq!(fit.get("sizes").and_then(|n| n.as_f64()), Some(3.0));
    assert_positive(fit.get("startup_ns").and_then(|x| x.as_f64()), "α", &ran);
    // β can come out at or below zero when three short messages take about
    // as long; then r∞ and n½ do not exist and are null.
    for key in [
        "ns_per_byte",
        "bandwidth_mbps",
        "half_bandwidth_bytes",
        "rms_relative_error",
    ] {
        let value = fit
            .get(key)
            .unwrap_or_else(|| panic!("the fit has no {key}\n{}", ran.show()));
        assert!(
            *value == json::Value::Null || value.as_f64().is_some_and(f64::is_finite),
            "{key} is {value:?}\n{}",
            ran.show()
        );
    }
}

#[test]
fn bench_pingpong_csv_has_a_header_and_every_size() {
    let ran = bench_pingpong_shm("--csv");
    let mut lines = ran.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("path,size,median_ns,min_ns,max_ns,mbps"),
        "{}",
        ran.show()
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let sizes: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(
        sizes,
        [("shm", "1"), ("shm", "8"), ("shm", "1000")],
        "{}",
        ran.show()
    );
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}\n{}", ran.show());
        for figure in &row[2..] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}

/// `bench pingpong --plot DIR` creates DIR and writes each chart as SVG
/// and PNG; what the charts show is not checked here.
#[test]
fn bench_pingpong_plot_writes_svg_and_png() {
    let dir = std::env::temp_dir()
        .join(format!("threadwire-plot-{}", std::process::id()))
        .join("missing");
    let ran = run(threadwire()
        .args([
            "bench",
            "pingpong",
            "--paths",
            "thread",
            "--sizes",
            "8,1000,100000",
            "--repetitions",
            "2",
            "--ms",
            "5",
            "--plot",
        ])
        .arg(&dir));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    for chart in ["latency", "bandwidth"] {
        let svg = dir.join(format!("pingpong-{chart}.svg"));
        let text = std::fs::read_to_string(&svg)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", svg.display(), ran.show()));
        assert!(
            text.starts_with("<svg") || text.starts_with("<?xml"),
            "{} is not SVG: {:?}",
            svg.display(),
            text.chars().take(80).collect::<String>()
        );
        let png = dir.join(format!("pingpong-{chart}.png"));
        let bytes = std::fs::read(&png)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", png.display(), ran.show()));
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} lacks the PNG signature",
            png.display()
        );
    }
    let _ = std::fs::remove_dir_all(dir.parent().expect("the temporary directory"));
}

#[test]
fn bench_rate_json_has_every_kind_and_thread_count() {
    let ran = run(threadwire().args([
        "bench",
        "rate",
        "--threads",
        "1,2",
        "--messages",
        "300",
        "--repetitions",
        "2",
        "--kinds",
        "os,fibers",
        "--json",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
    let kinds: Vec<(Option<&str>, Option<f64>)> = rows
        .iter()
        .map(|r| {
            let kind = r.get("kind").and_then(|k| k.as_str());
            (kind, r.get("threads").and_then(|t| t.as_f64()))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (Some("os"), Some(1.0)),
            (Some("os"), Some(2.0)),
            (Some("fibers"), Some(1.0)),
            (Some("fibers"), Some(2.0))
        ],
        "{}",
        ran.show()
    );
    for row in rows {
        for rate in ["send", "end_to_end"] {
            for figure in ["median", "min", "max"] {
                let value = row.get(rate).and_then(|r| r.get(figure)?.as_f64());
                assert_positive(value, &format!("{rate}.{figure}"), &ran);
            }
        }
    }
}

/// The launcher killed with SIGKILL while its nodes share memory: the nodes
/// notice, end, and leave no shared memory behind (regions are anonymous
/// memfds, freed with the last process that maps them).
#[test]
fn a_killed_launcher_leaves_no_shared_memory_behind() {
    use std::io::BufRead;
    let mut child = threadwire()
        .args(["run", "-n", "2", "--"])
        .arg(example("node-shm"))
        .arg("wait")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start threadwire run");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (mut pids, mut regions) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + HANG;
    while pids.len() < 2 && Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some((_, pid)) = line.split_once("ready pid=") {
            pids.push(pid.trim().parse::<u32>().expect("a pid"));
        }
        if let Some((_, name)) = line.split_once("region ") {
            regions.push(name.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    child.kill().expect("SIGKILL the launcher");
    let _ = child.wait();
    assert_eq!(pids.len(), 2, "both nodes get ready");
    assert!(!regions.is_empty(), "the nodes share memory");
    let alive = |pid: &u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&u32> = pids.iter().filter(|p| alive(p)).collect();
    for pid in &left {
        // SAFETY: kill(2) of a node process this test started.
        unsafe { libc::kill(**pid as i32, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "nodes {left:?} outlived their launcher");
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let maps = std::fs::read_to_string(entry.path().join("maps")).unwrap_or_default();
        for name in &regions {
            assert!(!maps.contains(name.as_str()), "{name} still mapped");
        }
    }
    let dev_shm: Vec<_> = std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("threadwire"))
        .collect();
    assert!(dev_shm.is_empty(), "{dev_shm:?}");
}

/// Checks that no network namespace named `prefix…` is left.
fn assert_no_namespaces_left(prefix: &str) {
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        !namespaces.lines().any(|l| l.starts_with(prefix)),
        "the benchmark's hosts were left behind: {namespaces}"
    );
}

/// Removes a test net however the test ends.
struct NetGuard(&'static str);

impl Drop for NetGuard {
    fn drop(&mut self) {
        let _ = run(threadwire().args(["net", "down", "--prefix", self.0]));
    }
}

/// Four nodes on two emulated hosts (`threadwire net up`, `run --hosts`):
/// nodes of one namespace share memory, nodes of different namespaces use
/// TCP over the bridge. Needs root and network namespaces; skips saying
/// why without them.
#[test]
fn nodes_on_namespace_hosts_share_memory_inside_and_use_tcp_between() {
    const PREFIX: &str = "twn1";
    let up = run(threadwire().args(["net", "up", "--hosts", "2", "--prefix", PREFIX]));
    if up.code() != Some(0) {
        eprintln!(
            "SKIPPED: cannot create network namespaces here: {}",
            up.stderr.trim()
        );
        return;
    }
    let _guard = NetGuard(PREFIX);
    let file = std::env::temp_dir().join(format!("threadwire-hosts-{}", std::process::id()));
    std::fs::write(&file, format!("netns:{PREFIX}h0\nnetns:{PREFIX}h1\n")).expect("host file");
    let ran = run(threadwire()
        .args(["run", "-n", "4", "-v", "--hosts"])
        .arg(&file)
        .arg("--")
        .arg(example("node-shm"))
        .arg("exchange"));
    let _ = std::fs::remove_file(&file);
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    // Node i runs on host i % 2: n0 and n2 on h0, n1 and n3 on h1.
    for (line, why) in [
        ("n0 -> n2: shm", "same namespace"),
        ("n1 -> n3: shm", "same namespace"),
        ("n0 -> n1: tcp", "different namespaces"),
        ("n2 -> n3: tcp", "different namespaces"),
    ] {
        assert!(
            ran.stderr.contains(line),
            "{why}: no {line:?}\n{}",
            ran.show()
        );
    }
    for node in 0..4 {
        assert!(
            ran.stdout.contains(&format!("[n{node}] shm n{node}: ok")),
            "{}",
            ran.show()
        );
    }
}

#[test]
fn bench_spawn_reports_every_kind_and_count() {
    let ran = run(threadwire().args(["bench", "spawn", "--counts", "1,2", "--repetitions", "2"]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    let positive = |figure: &str| assert_positive(figure.parse().ok(), figure, &ran);
    let spread = |median: &str, cell: &str| assert_spread(&ran, median, cell);
    // Rows: kind, N, all joined (min–max), job finished (min–max) or –, 1998 at N = 1.
    for kind in ["processes", "fibers", "OS threads"] {
        for count in ["1", "2"] {
            let row: Vec<&str> = ran
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix(kind))
                .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
                .find(|w| w.first() == Some(&count))
                .unwrap_or_else(|| panic!("no {kind} row for N = {count}\n{}", ran.show()));
            spread(row[1], row[2]);
            let rest = match kind {
                "processes" => {
                    spread(row[3], row[4]);
                    &row[5..]
                }
                _ => {
                    assert_eq!(row[3], "–", "{row:?}\n{}", ran.show());
                    &row[4..]
                }
            };
            match count {
                "1" => rest.iter().for_each(|r| positive(r)),
                _ => assert!(rest.is_empty(), "{row:?}\n{}", ran.show()),
            }
        }
    }
    assert!(
        ran.stdout.lines().any(|l| l.starts_with("pvm_spawn ")),
        "no pvm_spawn row\n{}",
        ran.show()
    );
    let pvm = ran
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("pvm_spawn: "))
        .unwrap_or_else(|| panic!("no pvm_spawn line\n{}", ran.show()));
    assert!(
        pvm.starts_with("measured") || pvm.contains("apt-get install pvm"),
        "{pvm:?} says neither that pvm_spawn was measured nor which package is missing\n{}",
        ran.show()
    );
    // The process timeline: N, then four milestones.
    for count in ["1", "2"] {
        let row: Vec<&str> = ran
            .rows()
            .into_iter()
            .find(|w| w.len() == 5 && w[0] == count)
            .unwrap_or_else(|| panic!("no timeline row for N = {count}\n{}", ran.show()));
        row[1..].iter().for_each(|f| positive(f));
    }
}

/// `bench pingpong --link` builds two emulated hosts for the run, measures
/// TCP between them and removes them. Needs root and network namespaces;
/// skips saying why without them.
#[test]
fn bench_pingpong_on_an_emulated_link_leaves_nothing_behind() {
    let ran = run(threadwire().args([
        "bench",
        "pingpong",
        "--link",
        "gige",
        "--paths",
        "tcp",
        "--sizes",
        "8,1000",
        "--repetitions",
        "2",
        "--ms",
        "5",
    ]));
    if ran.code() != Some(0) && ran.stderr.contains("emulated hosts") {
        eprintln!(
            "SKIPPED: cannot build emulated hosts here: {}",
            ran.stderr.trim()
        );
        return;
    }
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    for size in ["8", "1000"] {
        let row: Vec<&str> = ran
            .rows()
            .into_iter()
            .find(|w| w.len() >= 3 && w[0] == "tcp/gige" && w[1] == size)
            .unwrap_or_else(|| panic!("no tcp/gige row for {size} B\n{}", ran.show()));
        assert_positive(row[2].parse().ok(), row[2], &ran);
    }
    assert_no_namespaces_left("twb");
}

/// `bench comm`: a row per path with a median (min–max) per size; the link
/// row, built for the run and removed after, may instead say why it is
/// missing (not root, no namespaces).
#[test]
fn bench_comm_reports_every_path_and_size() {
    let _one_at_a_time = COMM_NETS.lock().unwrap_or_else(|e| e.into_inner());
    let ran = run(threadwire().args([
        "bench",
        "comm",
        "--links",
        "gige",
        "--repetitions",
        "2",
        "--ms",
        "5",
        "--seconds",
        "1",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    for path in ["thread", "shm", "tcp/gige"] {
        let row: Vec<&str> = ran
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(path).filter(|r| r.starts_with(' ')))
            .unwrap_or_else(|| panic!("no {path} row\n{}", ran.show()))
            .split_whitespace()
            .collect();
        if path == "tcp/gige" && row.first() == Some(&"missing:") {
            eprintln!("SKIPPED the link row: {}", row.join(" "));
            continue;
        }
        assert_eq!(row.len(), 8, "{path}: {row:?}\n{}", ran.show());
        for cell in row.chunks(2) {
            assert_spread(&ran, cell[0], cell[1]);
        }
    }
    assert_no_namespaces_left("twc");
}

/// `bench encodings`: per size, a row for each encoding with a positive
/// median (min–max), MB/s and ratio to raw.
#[test]
fn bench_encodings_reports_every_encoding_and_size() {
    let ran = run(threadwire().args([
        "bench",
        "encodings",
        "--sizes",
        "8,1000",
        "--repetitions",
        "2",
        "--ms",
        "5",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    // Rows: size, encoding, median, (min–max), MB/s, ÷ raw.
    let rows: Vec<Vec<&str>> = ran
        .rows()
        .into_iter()
        .filter(|w| w.first().is_some_and(|s| s.parse::<usize>().is_ok()))
        .collect();
    let cells: Vec<(&str, &str)> = rows.iter().map(|w| (w[0], w[1])).collect();
    let encodings = ["raw", "portable", "in-place", "receiver-makes-right"];
    let expected: Vec<(&str, &str)> = ["8", "1000"]
        .into_iter()
        .flat_map(|size| encodings.map(|e| (size, e)))
        .collect();
    assert_eq!(cells, expected, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}\n{}", ran.show());
        assert_spread(&ran, row[2], row[3]);
        assert_positive(row[4].parse().ok(), row[4], &ran);
        assert_positive(row[5].parse().ok(), row[5], &ran);
    }
}

/// `bench pingpong --peers`: each TCP peer either has a line per size with
/// positive figures or names the Debian packages that provide it.
#[test]
fn bench_pingpong_peers_have_figures_or_name_their_packages() {
    let ran = run(threadwire().args([
        "bench",
        "pingpong",
        "--paths",
        "tcp",
        "--sizes",
        "8,1000",
        "--repetitions",
        "2",
        "--ms",
        "5",
        "--peers",
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    let peers = [
        ("NPtcp", "netpipe-tcp"),
        ("NPopenmpi/ob1-tcp", "netpipe-openmpi openmpi-bin"),
        ("NPpvm", "netpipe-pvm pvm"),
    ];
    let table = ran
        .stdout
        .split_once("\npeers:")
        .unwrap_or_else(|| panic!("no peers table\n{}", ran.show()))
        .1;
    for (peer, packages) in peers {
        let lines: Vec<&str> = table
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(peer))
            .collect();
        assert!(!lines.is_empty(), "no line for {peer}\n{}", ran.show());
        if lines[0].contains("not installed") {
            assert!(lines[0].contains(packages), "{}\n{}", lines[0], ran.show());
            continue;
        }
        assert_eq!(
            lines.len(),
            2,
            "one line per size for {peer}\n{}",
            ran.show()
        );
        for line in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 8, "{line}\n{}", ran.show());
            for figure in &f[2..] {
                assert_positive(figure.trim_end_matches('*').parse().ok(), figure, &ran);
            }
        }
    }
}

/// The rows of `bench threads`, in order.
const THREADS_ROWS: [&str; 7] = [
    "mutex",
    "semaphore",
    "context switch",
    "thread switch",
    "thread synchronization",
    "create + join",
    "message round trip",
];

/// `bench threads` with the smallest budget, printed as `format`.
fn bench_threads_tiny(format: &str) -> Ran {
    let ran = run(threadwire().args([
        "bench",
        "threads",
        "--iterations",
        "1000",
        "--repetitions",
        "1",
        format,
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    ran
}

#[test]
fn bench_threads_json_has_every_row_and_the_idle_cost() {
    let ran = bench_threads_tiny("--json");
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
    let names: Vec<Option<&str>> = rows
        .iter()
        .map(|r| r.get("measurement")?.as_str())
        .collect();
    assert_eq!(names, THREADS_ROWS.map(Some), "{}", ran.show());
    for row in rows {
        for column in ["fibers", "os"] {
            for key in ["ops", "median_ns", "min_ns", "max_ns"] {
                let value = row.get(column).and_then(|c| c.get(key)?.as_f64());
                assert_positive(value, &format!("{column}.{key}"), &ran);
            }
        }
        let ratio = row.get("os_over_fibers").and_then(|x| x.as_f64());
        assert_positive(ratio, "os_over_fibers", &ran);
    }
    let idle = doc.get("idle");
    let figure = |key: &str| idle.and_then(|i| i.get(key)?.as_f64());
    assert_eq!(figure("fibers"), Some(10000.0), "{}", ran.show());
    assert_positive(figure("window_ns"), "idle.window_ns", &ran);
    assert!(
        figure("percent_of_core").is_some_and(|p| p >= 0.0),
        "{}",
        ran.show()
    );
}

#[test]
fn bench_threads_csv_has_a_header_and_every_row() {
    let ran = bench_threads_tiny("--csv");
    let mut lines = ran.stdout.lines();
    assert_eq!(
        lines.next(),
        Some(
            "measurement,fibers_ops,fibers_median_ns,fibers_min_ns,fibers_max_ns,\
             os_ops,os_median_ns,os_min_ns,os_max_ns,os_over_fibers,reference_1998_ns,note"
        ),
        "{}",
        ran.show()
    );
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, THREADS_ROWS, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 12, "{row:?}\n{}", ran.show());
        for figure in &row[1..10] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}

/// `bench comm` runs name their emulated hosts `twc<pid>`, and each test
/// checks that none is left: one such test at a time, so that none sees
/// another's hosts while they run.
static COMM_NETS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `bench comm` with the smallest budget and an unshaped link, printed as
/// `format`.
fn bench_comm_tiny(format: &str) -> Ran {
    let _one_at_a_time = COMM_NETS.lock().unwrap_or_else(|e| e.into_inner());
    let ran = run(threadwire().args([
        "bench",
        "comm",
        "--links",
        "none",
        "--repetitions",
        "2",
        "--ms",
        "5",
        "--seconds",
        "1",
        format,
    ]));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    assert_no_namespaces_left("twc");
    ran
}

/// The sizes of `bench comm`'s columns.
const COMM_SIZES: [usize; 4] = [1, 1000, 32_000, 1_000_000];

/// `bench comm --json`: every path with a cell per size; the link's path,
/// built for the run, may instead say why it is missing (not root, no
/// namespaces).
#[test]
fn bench_comm_json_has_every_path_and_size() {
    let ran = bench_comm_tiny("--json");
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
    let paths: Vec<Option<&str>> = rows.iter().map(|r| r.get("path")?.as_str()).collect();
    assert_eq!(
        paths,
        [Some("thread"), Some("shm"), Some("tcp/none")],
        "{}",
        ran.show()
    );
    for (row, path) in rows.iter().zip(["thread", "shm", "tcp/none"]) {
        if let Some(why) = row.get("missing").and_then(|m| m.as_str()) {
            assert_eq!(path, "tcp/none", "{path} is missing: {why}\n{}", ran.show());
            eprintln!("SKIPPED the link row: {why}");
            continue;
        }
        let cells = row
            .get("cells")
            .and_then(|c| c.as_array())
            .unwrap_or_default();
        let sizes: Vec<Option<f64>> = cells.iter().map(|c| c.get("size")?.as_f64()).collect();
        let expected = COMM_SIZES.map(|s| Some(s as f64));
        assert_eq!(sizes, expected, "{path}\n{}", ran.show());
        for cell in cells {
            for key in ["median_ns", "min_ns", "max_ns", "repetitions"] {
                let value = cell.get(key).and_then(|x| x.as_f64());
                assert_positive(value, &format!("{path} {key}"), &ran);
            }
        }
    }
    // The 1998 threads figure sits beside the thread path at 1 B.
    let reference = rows[0]
        .get("cells")
        .and_then(|c| c.as_array()?.first()?.get("reference_1998_ns")?.as_f64());
    assert_positive(reference, "thread reference_1998_ns at 1 B", &ran);
}

/// `bench comm --csv`: a line per path and size; the link's path may
/// instead be one line that says why it is missing.
#[test]
fn bench_comm_csv_has_a_header_and_every_path_and_size() {
    let ran = bench_comm_tiny("--csv");
    let mut lines = ran.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("path,size,median_ns,min_ns,max_ns,repetitions,reference_1998_ns,missing"),
        "{}",
        ran.show()
    );
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    for row in &rows {
        assert_eq!(row.len(), 8, "{row:?}\n{}", ran.show());
    }
    for path in ["thread", "shm", "tcp/none"] {
        let of_path: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == path).collect();
        if let [missing] = &of_path[..] {
            if path == "tcp/none" && !missing[7].is_empty() {
                eprintln!("SKIPPED the link row: {}", missing[7]);
                continue;
            }
        }
        let sizes: Vec<&str> = of_path.iter().map(|r| r[1].as_str()).collect();
        let expected = COMM_SIZES.map(|s| s.to_string());
        assert_eq!(sizes, expected, "{path}\n{}", ran.show());
        for row in of_path {
            for figure in &row[2..6] {
                assert_positive(figure.parse().ok(), figure, &ran);
            }
            assert!(row[7].is_empty(), "{row:?}\n{}", ran.show());
        }
    }
}

/// `bench spawn --json` and `--csv`: every kind and count, and pvm_spawn
/// either measured or named as missing.
#[test]
fn bench_spawn_json_and_csv_have_every_row() {
    let spawn = |format: &str| {
        let ran = run(threadwire().args([
            "bench",
            "spawn",
            "--counts",
            "1,2",
            "--repetitions",
            "1",
            format,
        ]));
        assert_eq!(ran.code(), Some(0), "{}", ran.show());
        assert_no_progress_bar(&ran);
        ran
    };
    let ran = spawn("--json");
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let measured = match doc.get("pvm").and_then(|p| p.get("measured")) {
        Some(json::Value::Bool(measured)) => *measured,
        _ => panic!("no pvm.measured\n{}", ran.show()),
    };
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
    let kinds: Vec<(Option<&str>, Option<f64>)> = rows
        .iter()
        .map(|r| {
            let field = |key| r.get(key);
            (
                field("kind").and_then(|k| k.as_str()),
                field("count").and_then(|c| c.as_f64()),
            )
        })
        .collect();
    let mut expected = vec!["processes", "fibers", "OS threads"];
    if measured {
        expected.push("pvm_spawn");
    }
    let expected: Vec<(Option<&str>, Option<f64>)> = expected
        .into_iter()
        .flat_map(|k| [(Some(k), Some(1.0)), (Some(k), Some(2.0))])
        .collect();
    assert_eq!(kinds, expected, "{}", ran.show());
    for row in rows {
        let median = row.get("joined_ms").and_then(|j| j.get("median")?.as_f64());
        assert_positive(median, "joined_ms.median", &ran);
    }
    let ran = spawn("--csv");
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|h| h.starts_with("kind,count,joined_median_ms")),
        "{}",
        ran.show()
    );
    let pvm_lines = lines.iter().filter(|l| l.starts_with("pvm_spawn,")).count();
    assert_eq!(pvm_lines, if measured { 2 } else { 1 }, "{}", ran.show());
    assert_eq!(lines.len(), 1 + 6 + pvm_lines, "{}", ran.show());
}

/// The rows of `bench floors`, in order, with its default memcpy sizes.
const FLOORS_ROWS: [&str; 8] = [
    "cache line, 2 cores",
    "cache line, 1 core",
    "wake-up, 2 cores",
    "memcpy 64 KiB",
    "memcpy 1 MiB",
    "memcpy 16 MiB",
    "tcp loopback 1 B",
    "tcp loopback stream",
];

/// Whether `row` of `bench floors` may be missing here: the cache line
/// between two cores is, by design, where the process may use one CPU.
fn floors_row_may_be_missing(row: &str) -> bool {
    row == "cache line, 2 cores"
        && std::thread::available_parallelism().map_or(true, |n| n.get() < 2)
}

/// `bench floors` with the smallest budget, with the extra `args`.
fn bench_floors_tiny(args: &[&str]) -> Ran {
    let ran = run(threadwire()
        .args(["bench", "floors", "--repetitions", "1", "--ms", "5"])
        .args(args));
    assert_eq!(ran.code(), Some(0), "{}", ran.show());
    assert_no_progress_bar(&ran);
    ran
}

#[test]
fn bench_floors_prints_every_row_with_positive_figures() {
    let ran = bench_floors_tiny(&[]);
    for name in FLOORS_ROWS {
        let line = ran
            .stdout
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {name:?} row\n{}", ran.show()));
        // After the name: median, min–max, unit, note.
        let words: Vec<&str> = line[name.len()..].split_whitespace().collect();
        if floors_row_may_be_missing(name) && line.contains("missing:") {
            continue;
        }
        assert!(words.len() >= 4, "{line:?}\n{}", ran.show());
        assert_spread(&ran, words[0], &format!("({})", words[1]));
        assert!(
            matches!(words[2], "ns" | "µs" | "MB/s"),
            "{line:?}\n{}",
            ran.show()
        );
    }
}

#[test]
fn bench_floors_json_and_csv_have_every_row() {
    let ran = bench_floors_tiny(&["--json"]);
    let doc = json::parse(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()));
    let rows = doc
        .get("rows")
        .and_then(|r| r.as_array())
        .unwrap_or_default();
    let names: Vec<Option<&str>> = rows.iter().map(|r| r.get("floor")?.as_str()).collect();
    assert_eq!(names, FLOORS_ROWS.map(Some), "{}", ran.show());
    for (row, name) in rows.iter().zip(FLOORS_ROWS) {
        let unit = row.get("unit").and_then(|u| u.as_str());
        assert!(matches!(unit, Some("ns" | "MB/s")), "{}", ran.show());
        if floors_row_may_be_missing(name) && row.get("median") == Some(&json::Value::Null) {
            continue;
        }
        for key in ["median", "min", "max", "iterations"] {
            let value = row.get(key).and_then(|x| x.as_f64());
            assert_positive(value, &format!("{name}: {key}"), &ran);
        }
        assert_eq!(
            row.get("missing"),
            Some(&json::Value::Null),
            "{}",
            ran.show()
        );
    }

    let ran = bench_floors_tiny(&["--csv"]);
    let mut lines = ran.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("floor,unit,median,min,max,iterations,missing,note"),
        "{}",
        ran.show()
    );
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, FLOORS_ROWS, "{}", ran.show());
    for row in &rows {
        assert_eq!(row.len(), 8, "{row:?}\n{}", ran.show());
        if floors_row_may_be_missing(&row[0]) && row[2].is_empty() {
            continue;
        }
        for figure in &row[2..6] {
            assert_positive(figure.parse().ok(), figure, &ran);
        }
    }
}

/// `bench suite --quick` runs every benchmark once into one report: each
/// step's command and table in README.md, the tables in NAME.txt, the
/// ping-pong plots beside. The link steps need root; without it they are
/// listed as skipped, which the test prints.
#[test]
fn bench_suite_quick_reports_every_step() {
    let out = std::env::temp_dir().join(format!("threadwire-suite-test-{}", std::process::id()));
    let ran = run(threadwire()
        .args([
            "bench",
            "suite",
            "--quick",
            "--no-peers",
            "--links",
            "none",
            "--out",
        ])
        .arg(&out));
    assert!(ran.status.success(), "{}", ran.show());
    assert_no_progress_bar(&ran);
    let report = std::fs::read_to_string(out.join("README.md")).expect("the report");
    let steps = [
        "floors",
        "pingpong",
        "pingpong-none",
        "encodings",
        "comm",
        "spawn",
        "rate",
        "rate-none",
        "threads",
    ];
    for step in steps {
        let section = report
            .split(&format!("\n## {step}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no section {step} in\n{report}"));
        let section = section.split("\n## ").next().unwrap_or_default();
        assert!(
            section.contains("threadwire bench "),
            "{step}: no command\n{section}"
        );
        if section.contains("Skipped: ") {
            eprintln!("SKIPPED the step {step}: {section}");
            continue;
        }
        assert!(section.contains("Took "), "{step} did not run\n{section}");
        let table = std::fs::read_to_string(out.join(format!("{step}.txt"))).unwrap_or_default();
        assert!(!table.trim().is_empty(), "{step}: no table\n{}", ran.show());
        assert!(
            section.contains(table.trim_end()),
            "{step}: table not in the report"
        );
    }
    for plot in ["pingpong-latency.png", "pingpong-bandwidth.svg"] {
        assert!(out.join("pingpong").join(plot).exists(), "no {plot}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
