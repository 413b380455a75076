//! The shape of every benchmark's report, as programs and people read it:
//! the keys of its `--json` document, the columns of its `--csv` header
//! and the header lines of its table, each against a golden list, on the
//! tiniest parameters that still fill every row kind. The figures are
//! other tests' business.

mod support;
use serde_json::Value;
use std::collections::BTreeSet;
use support::command::*;
use support::report::*;

/// Every key path of `value`: `rows`, `rows[].send.median`, …
fn key_paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                let path = match prefix {
                    "" => key.clone(),
                    _ => format!("{prefix}.{key}"),
                };
                key_paths(member, &path, out);
                out.insert(path);
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// Runs `args` in the three formats and checks each shape against the
/// golden lists: `keys` of the JSON, `columns` of the CSV header, `lines`
/// of the table (each a whole line of it).
fn assert_shape(args: &[&str], keys: &[&str], columns: &[&str], lines: &[&str]) {
    let ran = |format: Option<&str>| run_bench_ok(threadwire().args(args).args(format));
    let table = ran(None);
    for line in lines {
        assert!(
            table.stdout.lines().any(|l| l == *line),
            "the table has no line {line:?}\n{}",
            table.show()
        );
    }
    let document = json_doc(&ran(Some("--json")));
    let mut found = BTreeSet::new();
    key_paths(&document, "", &mut found);
    let golden: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
    assert_eq!(found, golden, "JSON keys of {args:?}");
    let csv = ran(Some("--csv"));
    let header = csv.stdout.lines().next().unwrap_or_default();
    assert_eq!(csv_fields(header), columns, "CSV header of {args:?}");
}

/// The JSON keys of `bench pingpong` without peers, with or without `--into`.
const PINGPONG_KEYS: [&str; 18] = [
    "benchmark",
    "rows",
    "rows[].path",
    "rows[].receive",
    "rows[].size",
    "rows[].median_ns",
    "rows[].min_ns",
    "rows[].max_ns",
    "rows[].mbps",
    "fits",
    "fits[].path",
    "fits[].receive",
    "fits[].sizes",
    "fits[].startup_ns",
    "fits[].ns_per_byte",
    "fits[].bandwidth_mbps",
    "fits[].half_bandwidth_bytes",
    "fits[].rms_relative_error",
];

#[test]
fn pingpong_shape() {
    assert_shape(
        &[
            "bench",
            "pingpong",
            "--paths",
            "thread,shm",
            "--sizes",
            "8,64",
        ]
        .into_iter()
        .chain(["--repetitions", "1", "--ms", "2"])
        .collect::<Vec<_>>(),
        &PINGPONG_KEYS,
        &["path", "size", "median_ns", "min_ns", "max_ns", "mbps"],
        &[
            "path           size (B)   one-way µs             min–max µs         MB/s",
            "Hockney's t(n) = α + β·n, least squares over all sizes weighted by 1/t² \
             (threadwire_bench::fit):",
            "path            start-up α µs      r∞ = 1/β MB/s     n½ = α/β B  rms error",
        ],
    );
}

/// `--into`: the same JSON keys, and a `receive` column in the CSV and
/// the table.
#[test]
fn pingpong_into_shape() {
    assert_shape(
        &[
            "bench", "pingpong", "--paths", "shm", "--sizes", "8,64", "--into",
        ]
        .into_iter()
        .chain(["--repetitions", "1", "--ms", "2"])
        .collect::<Vec<_>>(),
        &PINGPONG_KEYS,
        &[
            "path",
            "receive",
            "size",
            "median_ns",
            "min_ns",
            "max_ns",
            "mbps",
        ],
        &[
            "path         receive   size (B)   one-way µs             min–max µs         MB/s",
            "path         receive    start-up α µs      r∞ = 1/β MB/s     n½ = α/β B  rms error",
        ],
    );
}

/// The JSON keys of `bench flood`'s rows, without peers.
const FLOOD_KEYS: [&str; 21] = [
    "benchmark",
    "count",
    "size",
    "delay_seconds",
    "receive",
    "rows",
    "rows[].source",
    "rows[].path",
    "rows[].flood_seconds",
    "rows[].mbps",
    "rows[].sender",
    "rows[].sender.messages",
    "rows[].sender.seconds",
    "rows[].sender.start_bytes",
    "rows[].sender.peak_bytes",
    "rows[].receiver",
    "rows[].receiver.messages",
    "rows[].receiver.seconds",
    "rows[].receiver.start_bytes",
    "rows[].receiver.peak_bytes",
    "peers",
];

#[test]
fn flood_shape() {
    assert_shape(
        &[
            "bench", "flood", "--count", "50", "--size", "65536", "--delay", "0.2",
        ],
        &FLOOD_KEYS[..FLOOD_KEYS.len() - 1],
        &[
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
        ],
        &[
            "peak = VmHWM at the end, start = VmHWM before the flood; MiB = 2^20 B; the flood \
             is timed from the receiver's start to its last receive",
            "source      path  sender peak MiB  (start MiB) receiver peak MiB  (start MiB)   \
             sends s  flood s       MB/s messages",
        ],
    );
}

/// The JSON keys of `bench rate`'s rows, without peers.
const RATE_KEYS: [&str; 23] = [
    "benchmark",
    "unit",
    "message_size",
    "window",
    "repetitions",
    "owned",
    "rows",
    "rows[].source",
    "rows[].kind",
    "rows[].threads",
    "rows[].messages",
    "rows[].repetitions",
    "rows[].send",
    "rows[].send.median",
    "rows[].send.min",
    "rows[].send.max",
    "rows[].end_to_end",
    "rows[].end_to_end.median",
    "rows[].end_to_end.min",
    "rows[].end_to_end.max",
    // With the peers.
    "rows[].provided",
    "rows[].end_to_end_ratio",
    "peers",
];

const RATE_COLUMNS: [&str; 13] = [
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

#[test]
fn rate_shape() {
    let args = ["--threads", "1", "--messages", "200", "--repetitions", "1"];
    assert_shape(
        &[&["bench", "rate"][..], &args, &["--kinds", "os,fibers"]].concat(),
        &RATE_KEYS[..RATE_KEYS.len() - 3],
        &RATE_COLUMNS,
        &["source     kind    threads      send-side Mmsg/s (min–max)     end-to-end Mmsg/s (min–max)"],
    );
}

/// `bench rate --peers`: Open MPI's rows and our ratios to them, or, if
/// it is not installed, its errors (and the test says it skipped).
#[test]
fn rate_peers_shape() {
    if !on_path("mpicc.openmpi") {
        eprintln!(
            "SKIPPED: mpicc.openmpi is not on PATH (apt-get install openmpi-bin libopenmpi-dev)"
        );
        return;
    }
    let args = [
        "--threads",
        "1,2",
        "--messages",
        "2000",
        "--repetitions",
        "1",
    ];
    assert_shape(
        &[&["bench", "rate", "--peers"][..], &args].concat(),
        &RATE_KEYS[..RATE_KEYS.len() - 1],
        &RATE_COLUMNS,
        &[
            "Open MPI: bench-peers/shm/msgrate.c, MPI_THREAD_MULTIPLE, pthreads, shared memory, \
             one timed round per T; ratio = ours ÷ Open MPI end to end",
            "source     kind    threads      send-side Mmsg/s (min–max)     end-to-end Mmsg/s \
             (min–max)  ratio",
        ],
    );
}

#[test]
fn threads_shape() {
    assert_shape(
        &[
            "bench",
            "threads",
            "--iterations",
            "1000",
            "--repetitions",
            "1",
        ],
        &[
            "benchmark",
            "unit",
            "repetitions",
            "rows",
            "rows[].measurement",
            "rows[].fibers",
            "rows[].fibers.ops",
            "rows[].fibers.median_ns",
            "rows[].fibers.min_ns",
            "rows[].fibers.max_ns",
            "rows[].os",
            "rows[].os.ops",
            "rows[].os.median_ns",
            "rows[].os.min_ns",
            "rows[].os.max_ns",
            "rows[].os_over_fibers",
            "rows[].reference_1998_ns",
            "rows[].solaris_1998_ns",
            "rows[].solaris_1998_approximate",
            "rows[].note",
            "idle",
            "idle.fibers",
            "idle.window_ns",
            "idle.cpu_ns",
            "idle.percent_of_core",
        ],
        &[
            "measurement",
            "fibers_ops",
            "fibers_median_ns",
            "fibers_min_ns",
            "fibers_max_ns",
            "os_ops",
            "os_median_ns",
            "os_min_ns",
            "os_max_ns",
            "os_over_fibers",
            "reference_1998_ns",
            "solaris_1998_ns",
            "solaris_1998_approximate",
            "note",
        ],
        &[
            "ns per operation                  fibers (min–max)  SCALE threads µs        \
             OS threads (min–max)  Solaris threads µs  OS/fiber  note",
        ],
    );
}

#[test]
fn spawn_shape() {
    let spread =
        |name: &str| ["", ".median", ".min", ".max"].map(|part| format!("rows[].{name}{part}"));
    let mut keys: Vec<String> = ["benchmark", "unit", "repetitions", "rows", "rows[].kind"]
        .into_iter()
        .chain([
            "rows[].count",
            "rows[].reference_1998_ms",
            "pvm",
            "pvm.measured",
        ])
        .chain(["pvm.not_measured_because"])
        .chain([
            "comm_spawn",
            "comm_spawn.measured",
            "comm_spawn.not_measured_because",
            "comm_spawn.retried",
        ])
        .chain([
            "am_round_trip_us",
            "am_round_trip_us.median",
            "am_round_trip_us.min",
            "am_round_trip_us.max",
        ])
        .map(String::from)
        .collect();
    for name in [
        "joined_ms",
        "finished_ms",
        "code_running_ms",
        "past_init_ms",
    ] {
        keys.extend(spread(name));
    }
    // The launcher rows: every launcher listed, measured or not.
    let launcher = ["name", "measured", "not_measured_because", "failed_at"]
        .into_iter()
        .chain(["failed_because"])
        .map(|key| format!("launchers.launchers[].{key}"));
    let launcher_row = ["launcher", "count", "finished_ms"]
        .into_iter()
        .chain(["finished_ms.median", "finished_ms.min", "finished_ms.max"])
        .map(|key| format!("launchers.rows[].{key}"));
    keys.extend(
        ["launchers", "launchers.repetitions", "launchers.rows"]
            .into_iter()
            .chain(["launchers.launchers"])
            .map(String::from)
            .chain(launcher)
            .chain(launcher_row),
    );
    assert_shape(
        &["bench", "spawn", "--counts", "1", "--repetitions", "1"],
        &keys.iter().map(String::as_str).collect::<Vec<_>>(),
        &[
            "kind",
            "count",
            "joined_median_ms",
            "joined_min_ms",
            "joined_max_ms",
            "finished_median_ms",
            "finished_min_ms",
            "finished_max_ms",
            "code_running_median_ms",
            "past_init_median_ms",
            "reference_1998_ms",
        ],
        &[
            "started      N          all joined (min–max)        job finished (min–max)  \
             1998 (5.1)",
            "  N  code running   past init   line read  job finished",
            "launcher                      N        job finished (min–max)",
        ],
    );
}

#[test]
fn comm_shape() {
    // The unshaped link's row has cells with root and says why it is
    // missing without: the keys are the thread and shm rows' either way.
    let cell = ["size", "median_ns", "min_ns", "max_ns", "repetitions"]
        .into_iter()
        .chain(["reference_1998_ns"])
        .map(|key| format!("rows[].cells[].{key}"));
    // The thesis' figures beside thread and shm (Table 5.2) at least.
    let seed = ["table", "path", "seed", "size", "unit", "seed_figure"]
        .into_iter()
        .chain(["ours", "ours_over_seed"])
        .map(|key| format!("seeds[].{key}"));
    let keys: Vec<String> = ["benchmark", "repetitions", "seconds_per_size", "rows"]
        .into_iter()
        .chain(["rows[].path", "rows[].missing", "rows[].cells", "seeds"])
        .map(String::from)
        .chain(cell)
        .chain(seed)
        .collect();
    assert_shape(
        &["bench", "comm", "--links", "none", "--repetitions", "1", "--ms", "2", "--seconds", "1"],
        &keys.iter().map(String::as_str).collect::<Vec<_>>(),
        &[
            "path",
            "size",
            "median_ns",
            "min_ns",
            "max_ns",
            "repetitions",
            "reference_1998_ns",
            "missing",
        ],
        &["path                                             1 B                          1 KB                         32 KB                          1 MB"],
    );
}

#[test]
fn encodings_shape() {
    assert_shape(
        &["bench", "encodings", "--sizes", "8,64", "--repetitions", "1", "--ms", "2"],
        &[
            "benchmark",
            "path",
            "value",
            "repetitions",
            "rows",
            "rows[].encoding",
            "rows[].size",
            "rows[].median_ns",
            "rows[].min_ns",
            "rows[].max_ns",
            "rows[].mbps",
        ],
        &["path", "encoding", "size", "median_ns", "min_ns", "max_ns", "mbps"],
        &["  size (B) encoding                            one-way µs (min–max)       MB/s   ÷ raw"],
    );
}

#[test]
fn floors_shape() {
    assert_shape(
        &["bench", "floors", "--repetitions", "1", "--ms", "5"],
        &[
            "benchmark",
            "repetitions",
            "ms_per_repetition",
            "rows",
            "rows[].floor",
            "rows[].unit",
            "rows[].median",
            "rows[].min",
            "rows[].max",
            "rows[].iterations",
            "rows[].missing",
            "rows[].note",
        ],
        &[
            "floor",
            "unit",
            "median",
            "min",
            "max",
            "iterations",
            "missing",
            "note",
        ],
        &["floor                      median               min–max  unit  note"],
    );
}

#[test]
fn coll_shape() {
    let row = |key: &str| format!("rows[].{key}");
    let mut keys: Vec<String> = ["benchmark", "link", "algorithms", "rows", "skipped"]
        .map(String::from)
        .to_vec();
    keys.extend(
        [
            "layout",
            "nodes",
            "threads",
            "members",
            "operation",
            "size",
            "median_ns",
            "min_ns",
            "max_ns",
            "repetitions",
            "iterations",
        ]
        .map(row),
    );
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_shape(
        &[
            "bench",
            "coll",
            "--layout",
            "2x1,1x2",
            "--sizes",
            "8,64",
            "--operations",
            "barrier,allreduce",
            "--repetitions",
            "1",
            "--ms",
            "2",
        ],
        &keys,
        &[
            "source",
            "layout",
            "configuration",
            "members",
            "operation",
            "size",
            "median_ns",
            "min_ns",
            "max_ns",
            "repetitions",
            "iterations",
            "threadwire_over_peer",
        ],
        &["layout  members operation    size (B)   median µs            min–max µs     reps × iters"],
    );
}

#[test]
fn coll_explain_shape() {
    assert_shape(
        &["bench", "coll", "--explain", "--sizes", "8,1048576"],
        &[
            "benchmark",
            "source",
            "thresholds",
            "thresholds[].name",
            "thresholds[].bytes",
            "choices",
            "choices[].layout",
            "choices[].members",
            "choices[].operation",
            "choices[].size",
            "choices[].algorithm",
            "choices[].forced",
            "choices[].rule",
        ],
        &[
            "layout",
            "members",
            "operation",
            "size",
            "algorithm",
            "forced",
            "rule",
        ],
        &["layout  members operation    size (B) algorithm           rule"],
    );
}
