//! The runner of the peer tests that run without libtest's harness
//! (`harness = false`: they must be able to say why a test skips, and
//! `pvm_peer` runs itself as PVM's tasks): the names for `--list`, name
//! filters, one line a test, and a check after each.

/// How a test went, when it did not fail.
pub enum Outcome {
    /// It ran and passed.
    Ran,
    /// A package it needs is missing; the reason is printed.
    Skipped(Box<dyn std::error::Error>),
}

impl Outcome {
    /// Skipped for `reason`.
    pub fn skipped(reason: impl std::error::Error + 'static) -> Outcome {
        Outcome::Skipped(Box::new(reason))
    }
}

/// A test: its name and its body.
pub type Test = (&'static str, fn() -> Outcome);

/// Runs `tests` as `cargo test` asks (`--list`, name filters), printing
/// a line each, and `after` with each test's name once it has run (to
/// check that it left nothing behind).
pub fn run(tests: &[Test], mut after: impl FnMut(&str)) {
    if std::env::args().any(|a| a == "--list") {
        // `cargo test -- --list` asks every test binary.
        for (name, _) in tests {
            println!("{name}: test");
        }
        return;
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, test) in tests {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        match test() {
            Outcome::Ran => eprintln!("{name}: ok"),
            Outcome::Skipped(reason) => eprintln!("{name}: SKIPPED: {reason}"),
        }
        after(name);
    }
}
