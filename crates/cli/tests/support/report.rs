//! Reading what the command prints: table cells, CSV lines and `--json`
//! documents. Every check fails with the command's transcript.

use super::command::Ran;
use serde_json::Value;

/// Standard output as one JSON document.
pub fn json_doc(ran: &Ran) -> Value {
    serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", ran.show()))
}

/// The array `key` of an object; empty if there is none.
pub fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The `rows` of a report's document.
pub fn rows(doc: &Value) -> &[Value] {
    array(doc, "rows")
}

/// The lines of a CSV report after its `header`, which it must start with,
/// split into fields.
pub fn csv_rows(ran: &Ran, header: &str) -> Vec<Vec<String>> {
    let mut lines = ran.stdout.lines();
    assert_eq!(lines.next(), Some(header), "{}", ran.show());
    lines.map(csv_fields).collect()
}

/// The fields of a CSV line, quoted ones unquoted (RFC 4180).
pub fn csv_fields(line: &str) -> Vec<String> {
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
pub fn assert_spread(ran: &Ran, median: &str, cell: &str) {
    assert_positive(median.parse().ok(), median, ran);
    let (min, max) = cell
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .and_then(|c| c.split_once('–'))
        .unwrap_or_else(|| panic!("{cell:?} is not (min–max)\n{}", ran.show()));
    assert_positive(min.parse().ok(), min, ran);
    assert_positive(max.parse().ok(), max, ran);
}

/// A ratio printed beside a seed's figure, `(0.0123×)`: a positive number.
pub fn assert_ratio(ran: &Ran, cell: &str) {
    let ratio = cell.strip_prefix('(').and_then(|c| c.strip_suffix("×)"));
    assert_positive(ratio.and_then(|r| r.parse().ok()), cell, ran);
}

pub fn assert_positive(figure: Option<f64>, what: &str, ran: &Ran) {
    assert!(
        figure.is_some_and(|x| x.is_finite() && x > 0.0),
        "{what} is {figure:?}, not a positive number\n{}",
        ran.show()
    );
}
