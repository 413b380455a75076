//! `threadwire bench am`: with tiny settings, `--json` has a round-trip
//! row per path, size and handler beside the ping-pong, a rate row per
//! path and thread count, and LCI's published figure as the reference.

mod support;
use serde_json::Value;
use support::command::*;
use support::report::*;

fn number(value: &Value, path: &[&str]) -> Option<f64> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_f64)
}

#[test]
fn bench_am_json_has_round_trips_rates_and_the_reference() {
    let mut cmd = threadwire();
    cmd.args(["bench", "am", "--paths", "shm,tcp", "--sizes", "0,8"])
        .args(["--repetitions", "1", "--ms", "5"])
        .args([
            "--threads",
            "1,2",
            "--messages",
            "300",
            "--rate-repetitions",
            "1",
        ])
        .arg("--json");
    let ran = run_bench_ok(&mut cmd);
    let doc = json_doc(&ran);
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);

    let round_trips = array(&doc, "round_trip");
    let cells: Vec<(Option<String>, Option<f64>, Option<String>)> = round_trips
        .iter()
        .map(|r| (text(r, "path"), number(r, &["size"]), text(r, "handler")))
        .collect();
    let mut expected = Vec::new();
    for path in ["shm", "tcp"] {
        for size in [0.0, 8.0] {
            for handler in ["inline", "fiber"] {
                expected.push((Some(path.into()), Some(size), Some(handler.into())));
            }
        }
    }
    assert_eq!(cells, expected, "{}", ran.show());
    for row in round_trips {
        for figure in [
            &["am", "median_ns"][..],
            &["am", "min_ns"],
            &["am", "max_ns"],
            &["pingpong", "median_ns"],
            &["ratio"],
        ] {
            assert_positive(number(row, figure), &figure.join("."), &ran);
        }
    }

    let rates = array(&doc, "rate");
    let counts: Vec<(Option<String>, Option<f64>)> = rates
        .iter()
        .map(|r| (text(r, "path"), number(r, &["threads"])))
        .collect();
    let expected: Vec<(Option<String>, Option<f64>)> = ["shm", "tcp"]
        .into_iter()
        .flat_map(|p| {
            [
                (Some(p.to_string()), Some(1.0)),
                (Some(p.to_string()), Some(2.0)),
            ]
        })
        .collect();
    assert_eq!(counts, expected, "{}", ran.show());
    for row in rates {
        for figure in ["send", "end_to_end"] {
            assert_positive(number(row, &[figure, "median"]), figure, &ran);
        }
        assert_positive(number(row, &["lci_ratio"]), "lci_ratio", &ran);
    }

    let reference = doc.get("reference").unwrap_or(&Value::Null);
    assert_eq!(text(reference, "source").as_deref(), Some("LCI, published"));
    assert_eq!(number(reference, &["messages_per_second"]), Some(3.09e6));
}
