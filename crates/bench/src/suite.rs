//! The benchmark suite: every benchmark, one after the other, each run as
//! the very command a user would type, into one report. The binary runs
//! the steps (`threadwire bench suite`); this module says which, and
//! writes the report.
//!
//! 1. [`plan`]: each step is `threadwire bench …` (or `threadwire apps
//!    …` for the seeds' application tables), its standard output
//!    (the table) kept in `OUT/NAME.txt` and its standard error in
//!    `OUT/NAME.log`; plots go to `OUT/NAME/`.
//! 2. Steps on emulated links need network namespaces (root); where they
//!    cannot be made, those steps are planned as skipped, with the reason,
//!    and the rest still run.
//! 3. A step that fails, or runs past [`STEP_DEADLINE`], does not stop the
//!    suite: the report says so, with the last lines it printed.
//! 4. [`markdown`]: `OUT/README.md` gathers, per step, the command, how
//!    long it took and its table, in the order they ran: the raw material
//!    of `docs/PERFORMANCE.md`.
//!
//! A quick plan runs every step with tiny sizes and counts: it proves the
//! suite works and measures nothing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use threadwire_testbed::net::Link;

/// What the suite is asked to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory of the report.
    pub out: PathBuf,
    /// Emulated links of the host-to-host steps.
    pub links: Vec<Link>,
    /// Run the peers beside the ping-pong.
    pub peers: bool,
    /// Tiny sizes and counts.
    pub quick: bool,
}

/// One benchmark run of the suite.
#[derive(Clone, Debug)]
pub struct Step {
    /// File stem of its outputs.
    pub name: String,
    /// Arguments after `threadwire`.
    pub args: Vec<String>,
    /// Why it cannot run here, if it cannot.
    pub skip: Option<String>,
}

/// What became of a step.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It ran, taking this long.
    Ran(Duration),
    /// It could not run here (step 2).
    Skipped(String),
    /// It failed or ran past its deadline (step 3).
    Failed {
        /// How long it ran.
        took: Duration,
        /// Its status and last lines.
        why: String,
    },
}

/// The longest a step may run: the slowest, the ping-pong with its peers
/// on 10 Mbit/s, takes 13 minutes.
pub const STEP_DEADLINE: Duration = Duration::from_secs(60 * 60);

/// The largest size of the ping-pong on emulated links: the classic sizes
/// up to 1 MB, as 16 MiB would take half a minute a round trip on 10 Mbit/s.
const LINK_LARGEST: usize = 1_000_000;

/// The last three non-empty lines of a failed step's log, after its status.
pub fn failure(status: impl std::fmt::Display, log: &str) -> String {
    let last: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    format!(
        "{status}: {}",
        last[last.len().saturating_sub(3)..].join(" / ")
    )
}

/// The steps, in the order they run (step 1 of the module docs).
pub fn plan(args: &Options) -> Vec<Step> {
    let quick = args.quick;
    let peers = args.peers;
    let out = |name: &str| args.out.join(name).display().to_string();
    let mut steps = Vec::new();
    let mut add = |name: &str, args: &[&str], skip: Option<String>| {
        steps.push(Step {
            name: name.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            skip,
        })
    };
    let tiny_timing: &[&str] = if quick {
        &["--repetitions", "1", "--ms", "5"]
    } else {
        &[]
    };
    add(
        "floors",
        &[&["bench", "floors"], tiny_timing].concat(),
        None,
    );
    let mut pingpong = vec!["bench", "pingpong"];
    if quick {
        pingpong.extend(["--sizes", "1,1000"]);
    }
    let plots = out("pingpong");
    pingpong.extend(tiny_timing);
    pingpong.extend(["--plot", &plots]);
    if peers {
        pingpong.push("--peers");
    }
    add("pingpong", &pingpong, None);
    let no_namespaces = threadwire_testbed::net::unavailable("tws");
    let link_names: Vec<String> = args.links.iter().map(|l| l.to_string()).collect();
    let link_sizes: Vec<String> = crate::pingpong::CLASSIC_SIZES
        .iter()
        .filter(|&&n| n <= LINK_LARGEST)
        .map(usize::to_string)
        .collect();
    let link_sizes = link_sizes.join(",");
    for link in &link_names {
        let name = format!("pingpong-{link}");
        let plots = out(&name);
        let sizes = if quick { "8,1000" } else { &link_sizes };
        let mut a = vec!["bench", "pingpong", "--link", link, "--paths", "tcp"];
        a.extend(["--sizes", sizes, "--plot", &plots]);
        a.extend(tiny_timing);
        if peers {
            a.push("--peers");
        }
        add(&name, &a, no_namespaces.clone());
    }
    let encodings_sizes: &[&str] = if quick { &["--sizes", "8,1000"] } else { &[] };
    add(
        "encodings",
        &[&["bench", "encodings"], encodings_sizes, tiny_timing].concat(),
        None,
    );
    // Without root the link rows say why in the table; the rest still runs.
    let links = if link_names.is_empty() {
        "none".to_string()
    } else {
        link_names.join(",")
    };
    add(
        "comm",
        &[&["bench", "comm", "--links", &links], tiny_timing].concat(),
        None,
    );
    let spawn: &[&str] = if quick {
        &["--counts", "1", "--repetitions", "1"]
    } else {
        &[]
    };
    add("spawn", &[&["bench", "spawn"], spawn].concat(), None);
    let rate: &[&str] = if quick {
        &["--threads", "1", "--messages", "1000", "--repetitions", "1"]
    } else {
        &[]
    };
    // Beside Open MPI's msgrate over shared memory; not on the emulated
    // link, where it does not run.
    let mut rate_here = [&["bench", "rate"], rate].concat();
    if peers {
        rate_here.push("--peers");
    }
    add("rate", &rate_here, None);
    if args.links.contains(&Link::Unshaped) {
        add(
            "rate-none",
            &[&["bench", "rate", "--link", "none"], rate].concat(),
            no_namespaces.clone(),
        );
    }
    // Issue 14's active messages: round trips beside the ping-pong, and
    // the one-way rate beside LCI's published figure.
    let am: &[&str] = if quick {
        &[
            "--sizes",
            "0",
            "--threads",
            "1",
            "--messages",
            "1000",
            "--rate-repetitions",
            "1",
        ]
    } else {
        &[]
    };
    add("am", &[&["bench", "am"], am, tiny_timing].concat(), None);
    let threads: &[&str] = if quick {
        &["--iterations", "1000", "--repetitions", "1"]
    } else {
        &[]
    };
    add("threads", &[&["bench", "threads"], threads].concat(), None);
    // The default layouts at five sizes from 8 B to 16 MiB (every power of
    // two would take most of an hour with the peers), beside Open MPI and
    // MPICH.
    let mut coll = vec!["bench", "coll"];
    match quick {
        true => coll.extend(["--layout", "2x2", "--sizes", "8,1000"]),
        false => coll.extend(["--sizes", "8,1024,65536,1048576,16777216"]),
    }
    coll.extend(tiny_timing);
    if peers {
        coll.push("--peers");
    }
    add("coll", &coll, None);
    // Issue 17's broadcast against receivers, on every link of the suite,
    // beside PVM and MPI (the peers are its point; without them, the
    // threadwire rows alone).
    if !link_names.is_empty() {
        let plots = out("bcast");
        let mut bcast = vec!["bench", "bcast", "--link", &links, "--plot", &plots];
        if quick {
            bcast.extend(["--hosts", "1,2", "--sizes", "8,1000"]);
        }
        bcast.extend(tiny_timing);
        if !peers {
            bcast.extend(["--systems", "tree,multicast"]);
        }
        add("bcast", &bcast, no_namespaces.clone());
    }
    // Issue 13's flood: 2000 × 1 MiB to a receiver 3 s late, beside Open MPI.
    let mut flood = vec!["bench", "flood"];
    if quick {
        flood.extend(["--count", "50", "--size", "65536", "--delay", "0.2"]);
    }
    if peers {
        flood.push("--peers");
    }
    add("flood", &flood, None);
    // Issue 18's overlap of computation with communication, on each link
    // (on one host where there are none).
    let overlap_quick: &[&str] = if quick {
        &[
            "--block",
            "65536",
            "--blocks",
            "2",
            "--ratios",
            "1",
            "--repetitions",
            "1",
        ]
    } else {
        &[]
    };
    let shaped: Vec<&String> = link_names.iter().filter(|l| *l != "none").collect();
    if shaped.is_empty() {
        add(
            "overlap",
            &[&["bench", "overlap"], overlap_quick].concat(),
            None,
        );
    }
    for link in shaped {
        let name = format!("overlap-{link}");
        let a = [
            &["bench", "overlap", "--link", link.as_str()],
            overlap_quick,
        ]
        .concat();
        add(&name, &a, no_namespaces.clone());
    }
    // Issue 19's shared memory: faults, locks and barriers on shared
    // memory and on every shaped link (rows that say why where the hosts
    // cannot be made), beside the Strings DSM's message sizes.
    let mut dsm = vec!["bench", "dsm"];
    let shaped_links: Vec<&str> = link_names
        .iter()
        .map(String::as_str)
        .filter(|l| *l != "none")
        .collect();
    let shaped_links = shaped_links.join(",");
    if !shaped_links.is_empty() {
        dsm.extend(["--link", &shaped_links]);
    }
    if quick {
        dsm.extend([
            "--faults",
            "4",
            "--hand-offs",
            "4",
            "--barriers",
            "4",
            "--repetitions",
            "2",
        ]);
    }
    add("dsm", &dsm, None);
    seed_apps(args, &no_namespaces, &mut add);
    splash(args, &no_namespaces, &mut add);
    steps
}

/// The apps that reproduce the seeds' application tables (issue 18):
/// NCS' Tables 1-3 and the thesis' Table 5.4 on each link of the suite,
/// the thesis' Figure 5.7 and SCALE's agenda multiply on one host.
///
/// Full sizes are the seeds', which take minutes a step on a 2-core
/// machine: NCS' Table 1 is 128 x 128 on 1, 2, 4 and 8 worker nodes (13 s
/// on ethernet10), and again at 1024 x 1024 with the naive kernel on 1, 2
/// and 4 (the seed's balance of computation and transfers; about a
/// minute on fast100, 5 min 38 s on ethernet10); FFT and JPEG are their
/// seed's sizes on 4 nodes. Table 5.4 goes to 1600 x 1600, 20 MB a matrix that the mesh's broadcasts, the
/// untimed identity round and the master's check move through each
/// host's link: measured, 15 s for the whole table on atm155, and on
/// ethernet10 about two and a half minutes for 1600 alone (17 s of it
/// timed), three for the table.
fn seed_apps(
    args: &Options,
    no_namespaces: &Option<String>,
    add: &mut impl FnMut(&str, &[&str], Option<String>),
) {
    let quick = args.quick;
    for link in &args.links {
        let name = link.name();
        let on = ["--link", name];
        let table1: &[&str] = if quick {
            &["-n", "2,3", "--sizes", "32"]
        } else {
            &[]
        };
        add(
            &format!("matmul-ncs1-{name}"),
            &[
                &["apps", "matmul", "--layout", "host-node", "--compare"],
                table1,
                &on,
            ]
            .concat(),
            no_namespaces.clone(),
        );
        // The seed's regime: at 128 x 128 today's cores compute a block in
        // microseconds and there is nothing to overlap; at 1024 with the
        // naive kernel computation is comparable to the transfers again.
        let scaled: &[&str] = if quick {
            &["-n", "2,3", "--sizes", "32"]
        } else {
            &["-n", "2,3,5", "--sizes", "1024"]
        };
        add(
            &format!("matmul-ncs1-scaled-{name}"),
            &[
                &[
                    "apps",
                    "matmul",
                    "--layout",
                    "host-node",
                    "--compare",
                    "--kernel",
                    "naive",
                ],
                scaled,
                &on,
            ]
            .concat(),
            no_namespaces.clone(),
        );
        let table54: &[&str] = if quick { &["--sizes", "24,48"] } else { &[] };
        add(
            &format!("matmul-thesis54-{name}"),
            &[
                &["apps", "matmul", "--mesh", "2x3", "--compare"],
                table54,
                &on,
            ]
            .concat(),
            no_namespaces.clone(),
        );
        let rounds: &[&str] = if quick { &["--rounds", "1"] } else { &[] };
        add(
            &format!("fft-ncs3-{name}"),
            &[&["apps", "fft", "-n", "4"], rounds, &on].concat(),
            no_namespaces.clone(),
        );
        let picture: &[&str] = if quick {
            &["--width", "64", "--height", "64"]
        } else {
            &[]
        };
        add(
            &format!("jpeg-ncs2-{name}"),
            &[&["apps", "jpeg", "-n", "4"], picture, rounds, &on].concat(),
            no_namespaces.clone(),
        );
    }
    let figure57: &[&str] = if quick { &["--sizes", "32,64"] } else { &[] };
    add(
        "matmul-fig57",
        &[
            &["apps", "matmul", "-n", "1", "--threads", "1,2,4,8"],
            figure57,
        ]
        .concat(),
        None,
    );
    let agenda: &[&str] = if quick {
        &[
            "--sizes",
            "64",
            "--granularity",
            "8",
            "--concurrency",
            "1",
            "--rounds",
            "1",
        ]
    } else {
        &[]
    };
    add(
        "agenda-matmul",
        &[&["apps", "agenda-matmul", "-n", "4"], agenda].concat(),
        None,
    );
}

/// Issue 19's programs on the shared memory: each against plain threads
/// on one host (the DSM within 1.5x), and the Strings DSM's Figs 3-12 and
/// Table 3 on each link of the suite (1, 2 and 4 hosts x 4 threads).
/// Full sizes are the seed's: minutes a link on a 2-core machine.
fn splash(
    args: &Options,
    no_namespaces: &Option<String>,
    add: &mut impl FnMut(&str, &[&str], Option<String>),
) {
    let small: &[&str] = if args.quick {
        &["--small", "--rounds", "1"]
    } else {
        &[]
    };
    add(
        "splash-plain",
        &[
            &[
                "apps",
                "splash",
                "all",
                "--compare",
                "-n",
                "1",
                "--threads",
                "2",
            ],
            small,
        ]
        .concat(),
        None,
    );
    for link in &args.links {
        let name = link.name();
        add(
            &format!("splash-{name}"),
            &[
                &["apps", "splash", "all", "--figure", "--link", name],
                small,
            ]
            .concat(),
            no_namespaces.clone(),
        );
    }
}

/// `README.md` of the report (step 4).
pub fn markdown(steps: &[Step], outcomes: &[Outcome], out: &Path) -> String {
    let mut md = String::from("# threadwire bench suite\n\n");
    let _ = writeln!(
        md,
        "threadwire {}, {} cores. Each section: the command, how long it took, its output.\n",
        env!("CARGO_PKG_VERSION"),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (step, outcome) in steps.iter().zip(outcomes) {
        let _ = writeln!(md, "## {}\n", step.name);
        let _ = writeln!(md, "```\nthreadwire {}\n```\n", step.args.join(" "));
        match outcome {
            Outcome::Skipped(why) => {
                let _ = writeln!(md, "Skipped: {why}.\n");
                continue;
            }
            Outcome::Failed { took, why } => {
                let _ = writeln!(md, "Failed after {:.1} s: {why}\n", took.as_secs_f64());
            }
            Outcome::Ran(took) => {
                let _ = writeln!(md, "Took {:.1} s.\n", took.as_secs_f64());
            }
        }
        let table =
            std::fs::read_to_string(out.join(format!("{}.txt", step.name))).unwrap_or_default();
        if !table.trim().is_empty() {
            let _ = writeln!(md, "```\n{}\n```\n", table.trim_end());
        }
        let svgs = crate::plot::PINGPONG_FILES
            .iter()
            .filter(|f| f.ends_with(".svg"));
        for plot in svgs {
            if out.join(&step.name).join(plot).exists() {
                let _ = writeln!(md, "![{} {plot}]({}/{plot})\n", step.name, step.name);
            }
        }
    }
    md
}
