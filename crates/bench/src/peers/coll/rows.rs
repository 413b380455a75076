//! The rows `coll.c` prints: one JSON object per line on rank 0's
//! stdout (its header describes them), read into [`Measured`] rows.
//!
//! The output comes from another program, so every line is checked, not
//! trusted: a line that is not the object, a time that is not a finite
//! non-negative number, a minimum above the median or a median above the
//! maximum, and a row of another shape than the run's configuration are
//! each a [`ParseError`] naming the line, never a panic.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::{Configuration, Measured, Mpi, Operation};

/// One line as `coll.c` writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    operation: Operation,
    bytes: usize,
    ranks: u32,
    threads: u32,
    members: u32,
    repetitions: u32,
    iterations: u64,
    median_us: f64,
    min_us: f64,
    max_us: f64,
}

/// A line of `coll.c`'s output that is not a row of this run.
#[derive(Debug)]
pub struct ParseError {
    line: usize,
    text: String,
    kind: ParseErrorKind,
}

#[derive(Debug)]
enum ParseErrorKind {
    Json(serde_json::Error),
    Invalid(&'static str),
}

impl ParseError {
    /// The line's number, from 1.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The line itself (its first 200 characters).
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} of coll's output ", self.line)?;
        match &self.kind {
            ParseErrorKind::Json(e) => write!(f, "is not a row ({e})")?,
            ParseErrorKind::Invalid(why) => write!(f, "is not a valid row: {why}")?,
        }
        write!(f, ": {:?}", self.text)
    }
}

impl std::error::Error for ParseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ParseErrorKind::Json(e) => Some(e),
            ParseErrorKind::Invalid(_) => None,
        }
    }
}

/// Reads every line of `output` as a row of `mpi` run in `configuration`.
pub fn parse(
    output: &str,
    mpi: Mpi,
    configuration: Configuration,
) -> Result<Vec<Measured>, ParseError> {
    output
        .lines()
        .enumerate()
        .map(|(index, text)| {
            let error = |kind| ParseError {
                line: index + 1,
                text: text.chars().take(200).collect(),
                kind,
            };
            let line: Line =
                serde_json::from_str(text).map_err(|e| error(ParseErrorKind::Json(e)))?;
            row(line, mpi, configuration).map_err(|why| error(ParseErrorKind::Invalid(why)))
        })
        .collect()
}

fn row(line: Line, mpi: Mpi, configuration: Configuration) -> Result<Measured, &'static str> {
    if line.ranks != configuration.ranks
        || line.threads != configuration.threads
        || u64::from(line.members) != u64::from(line.ranks) * u64::from(line.threads)
    {
        return Err("its ranks, threads and members are not the run's");
    }
    if line.repetitions == 0 || line.iterations == 0 {
        return Err("no repetitions or no iterations");
    }
    if (line.operation == Operation::Barrier) != (line.bytes == 0) {
        return Err("a barrier has 0 bytes, and only a barrier");
    }
    let time = |us: f64| {
        Duration::try_from_secs_f64(us / 1e6)
            .map_err(|_| "a time is not a finite, non-negative number")
    };
    let (median, min, max) = (
        time(line.median_us)?,
        time(line.min_us)?,
        time(line.max_us)?,
    );
    if !(min <= median && median <= max) {
        return Err("its times are not min <= median <= max");
    }
    Ok(Measured {
        mpi,
        configuration,
        operation: line.operation,
        size: line.bytes,
        median,
        min,
        max,
        repetitions: line.repetitions,
        iterations: line.iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: Configuration = Configuration {
        ranks: 2,
        threads: 1,
    };

    fn parse_two(output: &str) -> Result<Vec<Measured>, ParseError> {
        parse(output, Mpi::OpenMpi, TWO)
    }

    #[test]
    fn rows_are_read_with_their_times() {
        let output = "{\"operation\":\"barrier\",\"bytes\":0,\"ranks\":2,\"threads\":1,\"members\":2,\"repetitions\":5,\"iterations\":58083,\"median_us\":1.5,\"min_us\":0.25,\"max_us\":2}\n\
                      {\"operation\":\"allreduce\",\"bytes\":8,\"ranks\":2,\"threads\":1,\"members\":2,\"repetitions\":3,\"iterations\":3187,\"median_us\":0.1927,\"min_us\":1.9e-01,\"max_us\":0.19643}\n";
        let rows = parse_two(output).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].operation, Operation::Barrier);
        assert_eq!(rows[0].median, Duration::from_nanos(1500));
        assert_eq!(rows[0].min, Duration::from_nanos(250));
        assert_eq!(rows[1].operation, Operation::Allreduce);
        assert_eq!(
            (rows[1].size, rows[1].repetitions, rows[1].iterations),
            (8, 3, 3187)
        );
        assert_eq!(rows[1].configuration, TWO);
        assert_eq!(rows[1].mpi, Mpi::OpenMpi);
        assert!(parse_two("").unwrap().is_empty());
    }

    #[test]
    fn malformed_lines_are_typed_errors_naming_the_line() {
        let good = "{\"operation\":\"bcast\",\"bytes\":8,\"ranks\":2,\"threads\":1,\"members\":2,\"repetitions\":1,\"iterations\":1,\"median_us\":1,\"min_us\":1,\"max_us\":1}";
        let bad = [
            ("", "is not a row"),
            ("[vm:01234] a warning on stdout", "is not a row"),
            ("{\"operation\":\"bcast\"", "is not a row"),
            (&good.replace("bcast", "scan"), "is not a row"),
            (&good.replace("\"bytes\":8", "\"bytes\":-8"), "is not a row"),
            (&good.replace("}", ",\"extra\":1}"), "is not a row"),
            (
                &good.replace("\"median_us\":1", "\"median_us\":\"1\""),
                "is not a row",
            ),
            (
                &good.replace("\"median_us\":1", "\"median_us\":1e999"),
                "is not a row",
            ),
            (
                &good.replace("\"min_us\":1", "\"min_us\":-1"),
                "finite, non-negative",
            ),
            (
                &good.replace("\"max_us\":1", "\"max_us\":0.5"),
                "min <= median <= max",
            ),
            (&good.replace("\"ranks\":2", "\"ranks\":4"), "not the run's"),
            (
                &good.replace("\"members\":2", "\"members\":3"),
                "not the run's",
            ),
            (
                &good.replace("\"repetitions\":1", "\"repetitions\":0"),
                "no repetitions",
            ),
            (
                &good.replace("\"bytes\":8", "\"bytes\":0"),
                "only a barrier",
            ),
        ];
        for (line, why) in bad {
            let output = format!("{good}\n{line}\n{good}\n");
            let e = parse_two(&output).expect_err(line);
            assert_eq!(e.line(), 2, "{e}");
            assert!(e.to_string().contains(why), "{line:?}: {e}");
        }
        let long = "x".repeat(1000);
        let e = parse_two(&long).unwrap_err();
        assert_eq!(e.text().len(), 200);
        assert!(std::error::Error::source(&e).is_some());
    }
}
