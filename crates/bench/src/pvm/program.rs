//! `pvmbench.c` ([`SOURCE`]): built with the system `cc` against PVM's
//! `pvm3.h` and `-lpvm3` (step 1 of the module docs), its command line,
//! and the lines of its results file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Encoding, Options};
use crate::peers::process::{io, require, Group};
use crate::peers::{Error, ScratchDir};

/// `bench-peers/pvm/pvmbench.c`; its header documents its options and its
/// results' lines.
pub const SOURCE: &str = include_str!("../../../../bench-peers/pvm/pvmbench.c");

/// `bench-peers/pvm/pvmtask.h`, which every PVM program of the benchmarks
/// includes: written beside each one built.
const PVMTASK_H: &str = include_str!("../../../../bench-peers/pvm/pvmtask.h");

/// The C compiler and PVM's header, and the packages that provide them.
const COMPILER: (&str, &str) = ("cc", "gcc");
const HEADER: (&str, &str) = ("/usr/include/pvm3.h", "pvm-dev");
/// How long the compiler may take.
const BUILD_DEADLINE: Duration = Duration::from_secs(120);

/// `pvmbench.c` built, in a scratch directory removed on drop.
pub struct Program {
    dir: ScratchDir,
    executable: PathBuf,
}

impl Program {
    /// Writes [`SOURCE`] to a scratch directory and compiles it there, as
    /// a PVM user builds a program: `cc -O2 pvmbench.c -lpvm3`.
    pub fn build() -> Result<Program, Error> {
        Program::build_from("pvmbench", SOURCE, &["-lpvm3"])
    }

    /// Any PVM program: `source` written as `NAME.c` to a scratch
    /// directory, `pvmtask.h` beside it, and built there as
    /// `cc -O2 NAME.c LIBRARIES` (`-lgpvm3 -lpvm3` for one that uses
    /// groups).
    pub fn build_from(name: &str, source: &str, libraries: &[&str]) -> Result<Program, Error> {
        require(&[COMPILER.0], COMPILER.1)?;
        if !Path::new(HEADER.0).is_file() {
            return Err(Error::Missing {
                program: "pvm3.h",
                packages: HEADER.1,
            });
        }
        let dir = ScratchDir::named(name).map_err(io("creating a scratch directory"))?;
        let source_file = dir.0.join(format!("{name}.c"));
        std::fs::write(&source_file, source).map_err(io("writing a PVM program's source"))?;
        std::fs::write(dir.0.join("pvmtask.h"), PVMTASK_H)
            .map_err(io("writing a PVM program's source"))?;
        let executable = dir.0.join(name);
        let log = dir.0.join("build.txt");
        let mut cc = Command::new(COMPILER.0);
        cc.args(["-O2", "-o"])
            .arg(&executable)
            .arg(&source_file)
            .args(libraries);
        let status = Group::spawn(cc, &log, &log)?.wait(Instant::now() + BUILD_DEADLINE)?;
        if !status.success() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // The linker's symlinks libpvm3.so and libgpvm3.so come with
            // the header.
            if text.contains("-lpvm3") || text.contains("-lgpvm3") {
                return Err(Error::Missing {
                    program: "libpvm3.so",
                    packages: HEADER.1,
                });
            }
            return Err(Group::failed_log(status, &log));
        }
        Ok(Program { dir, executable })
    }

    /// The executable.
    pub fn path(&self) -> &Path {
        &self.executable
    }

    /// A fresh results file's path in the scratch directory.
    pub fn results_file(&self, name: &str) -> PathBuf {
        self.dir.0.join(format!("{name}.txt"))
    }
}

/// What one run of the program measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Round trips and streams at each size, with the route asked for.
    PingPong(Route),
    /// `pvm_spawn` at each count.
    Spawn,
}

/// The route both tasks ask for (`pvm_setopt(PvmRoute, …)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `PvmRouteDirect`: task to task.
    Direct,
    /// `PvmDontRoute`: through the daemons.
    Daemon,
}

/// The program's arguments for `mode`: results to `output`, partners on
/// `host` if given (`PvmTaskHost`).
pub fn args(options: &Options, mode: Mode, output: &Path, host: Option<&str>) -> Vec<OsString> {
    let list = |items: &mut dyn Iterator<Item = String>| items.collect::<Vec<_>>().join(",");
    let mut args: Vec<OsString> = vec!["-o".into(), output.into()];
    match mode {
        Mode::PingPong(route) => {
            let route = match route {
                Route::Direct => "direct",
                Route::Daemon => "daemon",
            };
            let sizes = list(&mut options.sizes.iter().map(|s| s.to_string()));
            let ms = options.per_measurement.as_millis().max(1).to_string();
            args.extend(
                [
                    "-m",
                    "pingpong",
                    "-r",
                    route,
                    "-e",
                    options.encoding.argument(),
                    "-s",
                    &sizes,
                    "-t",
                    &ms,
                ]
                .map(OsString::from),
            );
        }
        Mode::Spawn => {
            let counts = list(&mut options.counts.iter().map(|c| c.to_string()));
            args.extend(["-m", "spawn", "-n", &counts].map(OsString::from));
        }
    }
    if let Some(host) = host {
        args.extend(["-H".into(), host.into()]);
    }
    args
}

impl Encoding {
    /// The program's `-e`.
    fn argument(self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Default => "default",
            Encoding::InPlace => "inplace",
        }
    }
}

/// One line of the results file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Line {
    /// `pingpong size=BYTES iterations=N ns=NS`.
    PingPong {
        /// The message's size in bytes.
        size: usize,
        /// One round trip, in µs.
        round_trip_us: f64,
    },
    /// `stream size=BYTES messages=N ns=NS`.
    Stream {
        /// The messages' size in bytes.
        size: usize,
        /// Bytes over the whole stream's time, MB/s.
        mbps: f64,
    },
    /// `spawn count=N ns=NS`.
    Spawn {
        /// Tasks spawned.
        count: u32,
        /// Until a message from each had arrived, ms.
        ms: f64,
    },
}

/// The results file's lines; `None` for the first line that is not one
/// of the three (the program and the bench disagree: a failure).
pub fn parse(text: &str) -> Option<Vec<Line>> {
    text.lines().map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Line> {
    let mut words = line.split_whitespace();
    let kind = words.next()?;
    let mut fields = [0u64; 2];
    let names: [&str; 2] = match kind {
        "pingpong" => ["size", "iterations"],
        "stream" => ["size", "messages"],
        "spawn" => ["count", "ns"],
        _ => return None,
    };
    let mut ns = None;
    for word in words {
        let (key, value) = word.split_once('=')?;
        let value: u64 = value.parse().ok()?;
        match names.iter().position(|&n| n == key) {
            Some(i) => fields[i] = value,
            None if key == "ns" => ns = Some(value),
            None => return None,
        }
    }
    let ns = match kind {
        "spawn" => fields[1],
        _ => ns?,
    };
    if fields[0] == 0 || ns == 0 {
        return None;
    }
    let [first, second] = fields;
    Some(match kind {
        "pingpong" if second > 0 => Line::PingPong {
            size: first as usize,
            round_trip_us: ns as f64 / 1e3 / second as f64,
        },
        "stream" if second > 0 => Line::Stream {
            size: first as usize,
            mbps: (first * second) as f64 * 1e3 / ns as f64,
        },
        "spawn" => Line::Spawn {
            count: u32::try_from(first).ok()?,
            ms: ns as f64 / 1e6,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_lines_parse_into_figures() {
        let text = "pingpong size=8 iterations=1000 ns=20000000\n\
                    stream size=1000000 messages=4 ns=2000000\n\
                    spawn count=16 ns=40000000\n";
        assert_eq!(
            parse(text),
            Some(vec![
                Line::PingPong {
                    size: 8,
                    round_trip_us: 20.0
                },
                Line::Stream {
                    size: 1_000_000,
                    mbps: 2000.0
                },
                Line::Spawn {
                    count: 16,
                    ms: 40.0
                },
            ])
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "pingpong size=8 iterations=0 ns=5",
            "pingpong size=8 ns=5",
            "stream size=8 messages=2",
            "spawn count=1",
            "spawn count=x ns=4",
            "libpvm [t40001]: pvm_send(): Bad parameter",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
