use super::*;

#[test]
fn a_missing_pvm_names_the_package() {
    let text = Pvm::NotMeasured(Arc::new(crate::peers::Error::Missing {
        program: crate::peers::pvm::LIBRARY,
        packages: crate::peers::pvm::PACKAGES,
    }))
    .to_string();
    assert!(text.contains("libpvm3.so.3 missing"), "{text}");
    assert!(text.contains("apt-get install pvm"), "{text}");
}

#[test]
fn a_missing_open_mpi_names_the_packages_and_hangs_are_told() {
    let text = CommSpawn::NotMeasured(Arc::new(crate::peers::comm_spawn::Error::Mpi(
        crate::peers::coll::Error::Missing {
            program: "mpicc.openmpi",
            packages: crate::peers::coll::Mpi::OpenMpi.packages(),
        },
    )))
    .to_string();
    assert!(text.contains("mpicc.openmpi missing"), "{text}");
    assert!(
        text.contains("apt-get install openmpi-bin libopenmpi-dev"),
        "{text}"
    );
    let retried = |count, hung, failed| Retried {
        count,
        hung,
        failed,
    };
    let text = CommSpawn::Measured {
        retried: vec![retried(4, 1, 0), retried(16, 3, 1)],
    }
    .to_string();
    assert!(
        text.contains("N=4: 1 hung, 0 failed; N=16: 3 hung, 1 failed"),
        "{text}"
    );
    let quiet = CommSpawn::Measured {
        retried: Vec::new(),
    }
    .to_string();
    assert!(!quiet.contains("hanging"), "{quiet}");
}

fn row(kind: Kind, count: u32, ms: f64) -> Row {
    Row {
        kind,
        count,
        joined: Millis {
            median: ms,
            min: ms,
            max: ms,
        },
        finished: None,
        timeline: None,
    }
}

fn report(rows: Vec<Row>) -> Report {
    Report {
        rows,
        pvm: Pvm::Measured,
        comm_spawn: CommSpawn::Measured {
            retried: Vec::new(),
        },
        repetitions: 1,
        emulated_hosts: None,
        am_round_trip_us: None,
        launchers: None,
    }
}

fn table(report: &Report) -> String {
    use crate::report::Report as _;
    let mut out = Vec::new();
    report.table(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn table_5_1_sits_beside_our_rows_at_its_n() {
    let text = table(&report(vec![
        row(Kind::Processes, 1, 5.775),
        row(Kind::Processes, 2, 6.0),
        row(Kind::Processes, 16, 85.254),
        row(Kind::Fibers, 1, 0.0175),
        row(Kind::Fibers, 2, 0.02),
        row(Kind::Fibers, 16, 0.2094),
    ]));
    let grid: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.starts_with("the thesis' Table 5.1 (1998)"))
        .skip(1)
        .take(3)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        grid,
        [
            vec![
                "N",
                "1998",
                "processes",
                "processes",
                "pvm_spawn",
                "1998",
                "threads"
            ]
            .into_iter()
            .chain(["fibers", "OS", "threads"])
            .collect::<Vec<_>>(),
            vec![
                "1",
                "57.75",
                "5.78",
                "(0.100×)",
                "–",
                "1.75",
                "0.0175",
                "(0.0100×)",
                "–"
            ],
            vec![
                "16",
                "852.54",
                "85.3",
                "(0.100×)",
                "–",
                "20.94",
                "0.209",
                "(0.0100×)",
                "–"
            ],
        ],
        "{text}"
    );
    // The main table's column: Table 5.1 at its N, nothing at N = 2.
    let main = |kind: &str, n: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(kind))
            .map(|r| r.split_whitespace().map(String::from).collect::<Vec<_>>())
            .find(|w| w[0] == n)
            .unwrap()
    };
    assert_eq!(main("processes ", "16").last().unwrap(), "852.54");
    assert_eq!(main("fibers ", "16").last().unwrap(), "20.94");
    assert_eq!(main("fibers ", "2").last().unwrap(), "–");
}

#[test]
fn no_table_5_1_without_rows_at_its_n() {
    let text = table(&report(vec![row(Kind::Fibers, 2, 0.02)]));
    assert!(!text.contains("Table 5.1"), "{text}");
}
