//! `threadwire bench spawn`: the table, `--json` and `--csv`.
//!
//! No benchmark draws its progress bar into a pipe (stderr is one here).

mod support;
use serde_json::Value;
use support::command::*;
use support::report::*;

/// The launcher rows' names, as the table and CSV give them.
const LAUNCHERS: [&str; 5] = [
    "threadwire run",
    "mpiexec.hydra (threadwire)",
    "srun (threadwire)",
    "mpirun (Open MPI)",
    "mpiexec.hydra (MPICH)",
];

#[test]
fn bench_spawn_reports_every_kind_and_count() {
    let ran =
        run_ok(threadwire().args(["bench", "spawn", "--counts", "1,2", "--repetitions", "2"]));
    let positive = |figure: &str| assert_positive(figure.parse().ok(), figure, &ran);
    let spread = |median: &str, cell: &str| assert_spread(&ran, median, cell);
    // Rows: kind, N, all joined (min–max), job finished (min–max) or –, Table 5.1 at its N (1).
    for kind in ["processes", "fibers", "OS threads", "remote fibers"] {
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
    // The thesis' Table 5.1 beside ours at the N it has (1 of 1, 2): its
    // figures as printed, ours real numbers with their ratio to it.
    let table_5_1: Vec<Vec<&str>> = ran
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("the thesis' Table 5.1 (1998): ms to spawn N"))
        .skip(2)
        .take_while(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let [one] = &table_5_1[..] else {
        panic!("Table 5.1 has not one row, N = 1\n{}", ran.show());
    };
    // N, 1998 processes, processes (×), pvm_spawn (×) or –, 1998
    // threads, fibers (×), OS threads (×).
    let pvm_cells = if one[4] == "–" { 1 } else { 2 };
    assert_eq!(one.len(), 9 + pvm_cells, "{one:?}\n{}", ran.show());
    assert_eq!((one[0], one[1]), ("1", "57.75"), "{}", ran.show());
    assert_eq!(one[4 + pvm_cells], "1.75", "{}", ran.show());
    for ours in [2, 5 + pvm_cells, 7 + pvm_cells] {
        positive(one[ours]);
        assert_ratio(&ran, one[ours + 1]);
    }
    // The remote rows' yardstick and ratio.
    for prefix in [
        "remote fibers: an active-message round trip",
        "remote fibers: one started and joined in",
    ] {
        assert!(
            ran.stdout.lines().any(|l| l.starts_with(prefix)),
            "no line {prefix:?}\n{}",
            ran.show()
        );
    }
    // The launcher rows: threadwire run's at each N; every other launcher
    // has its rows, or a line saying why not.
    let launcher_row = |name: &str, count: &str| {
        ran.stdout
            .lines()
            .filter_map(|l| l.strip_prefix(name))
            .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.first() == Some(&count))
    };
    for count in ["1", "2"] {
        let row = launcher_row("threadwire run ", count)
            .unwrap_or_else(|| panic!("no threadwire run row for N = {count}\n{}", ran.show()));
        spread(row[1], row[2]);
    }
    for name in LAUNCHERS {
        let said = ran.stdout.lines().any(|l| {
            l.starts_with(&format!("{name}: not measured: "))
                || l.starts_with(&format!("{name}: failed at N="))
        });
        assert!(
            said || launcher_row(&format!("{name} "), "1").is_some(),
            "{name}: no row and no reason\n{}",
            ran.show()
        );
    }
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.starts_with("issue 15: threadwire run at least as fast as")),
        "no goal line\n{}",
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

/// `bench spawn --json` and `--csv`: every kind and count, and pvm_spawn
/// either measured or named as missing; the remote rows' yardstick.
#[test]
fn bench_spawn_json_and_csv_have_every_row() {
    let spawn = |format: &str| {
        run_bench_ok(
            threadwire()
                .args(["bench", "spawn", "--counts", "1,2"])
                .args(["--repetitions", "1", format]),
        )
    };
    let ran = spawn("--json");
    let doc = json_doc(&ran);
    let measured = match doc.get("pvm").and_then(|p| p.get("measured")) {
        Some(Value::Bool(measured)) => *measured,
        _ => panic!("no pvm.measured\n{}", ran.show()),
    };
    let comm_measured = match doc.get("comm_spawn").and_then(|p| p.get("measured")) {
        Some(Value::Bool(measured)) => *measured,
        _ => panic!("no comm_spawn.measured\n{}", ran.show()),
    };
    let rows = rows(&doc);
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
    if comm_measured {
        expected.push("comm_spawn");
    }
    expected.push("added nodes");
    expected.push("remote fibers");
    let expected: Vec<(Option<&str>, Option<f64>)> = expected
        .into_iter()
        .flat_map(|k| [(Some(k), Some(1.0)), (Some(k), Some(2.0))])
        .collect();
    assert_eq!(kinds, expected, "{}", ran.show());
    for row in rows {
        let median = row.get("joined_ms").and_then(|j| j.get("median")?.as_f64());
        assert_positive(median, "joined_ms.median", &ran);
    }
    let am = doc
        .get("am_round_trip_us")
        .and_then(|a| a.get("median")?.as_f64());
    assert_positive(am, "am_round_trip_us.median", &ran);
    // Every launcher, measured or why not; threadwire run's rows.
    let launchers = doc.get("launchers").unwrap_or(&Value::Null);
    let names: Vec<&str> = array(launchers, "launchers")
        .iter()
        .filter_map(|l| l.get("name")?.as_str())
        .collect();
    assert_eq!(names, LAUNCHERS, "{}", ran.show());
    let ours: Vec<f64> = array(launchers, "rows")
        .iter()
        .filter(|r| r.get("launcher").and_then(Value::as_str) == Some("threadwire run"))
        .filter_map(|r| r.get("finished_ms")?.get("median")?.as_f64())
        .collect();
    assert_eq!(ours.len(), 2, "{}", ran.show());
    ours.iter()
        .for_each(|&ms| assert_positive(Some(ms), "launchers.rows[].finished_ms.median", &ran));
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
    let comm_lines = lines
        .iter()
        .filter(|l| l.starts_with("comm_spawn,"))
        .count();
    assert!(comm_lines >= 1, "{}", ran.show());
    // A launcher's row per N, or one row with only its name.
    let launcher_lines = lines
        .iter()
        .filter(|l| LAUNCHERS.iter().any(|n| l.starts_with(&format!("{n},"))))
        .count();
    assert!(launcher_lines >= LAUNCHERS.len(), "{}", ran.show());
    // Processes, fibers, OS threads, added nodes and remote fibers at N =
    // 1 and 2.
    assert_eq!(
        lines.len(),
        1 + 10 + pvm_lines + comm_lines + launcher_lines,
        "{}",
        ran.show()
    );
}
