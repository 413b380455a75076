//! Making two runs of a PVM program comparable: what differs from run to
//! run, or between real PVM and threadwire's libpvm3, is replaced by what
//! stays the same. A text is normalized line by line, in steps:
//!
//! 1. Trailing blanks go, and so do the lines of [`Rules::racy`].
//! 2. Lines that a [`Mask`] names have every number replaced by `#`, and
//!    their runs of blanks made one (a `%8d` pads a short time more).
//! 3. Host names become `<host>`.
//! 4. If asked, the lines are sorted (output of tasks that run at once).
//! 5. Task ids become `T1`, `T2`, … and message contexts `C1`, `C2`, … in
//!    order of first appearance, over every text given to one
//!    [`Normalizer`], so a task named in two outputs has one name. A task
//!    id is a number with PVM's host field non-zero (`0x40000` to
//!    `0x3fffffff`) written as `t40001` or `0x40001` (always recognized),
//!    as a bare decimal `262145` (if [`Rules::decimal_tids`]), as a bare
//!    hex `40001` just before a text of [`Rules::hex_tids_before`] or
//!    bare hex after a text of [`Rules::hex_tids_after`]. A `t` tid may
//!    open a longer word (`t40001lmbi0`, a mailbox name). A context is the
//!    non-zero number after the word `context`, `ctx` or `sctx`.
//!
//! Sorting comes before naming, so that names follow the sorted order;
//! tids sort in the order pvmd gave them out, and so do threadwire's as
//! long as it numbers tasks in the order they start.

use std::collections::HashMap;

/// Numbers that vary from run to run (times, rates), by the lines that
/// hold them (step 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Every line that contains this text.
    LinesWith(&'static str),
    /// Every line made of numbers only (a row of a table of times).
    NumericRows,
}

/// How one program prints what [`Normalizer`] replaces (module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rules {
    /// Its tids are printed as decimals (`%d`) too.
    pub decimal_tids: bool,
    /// Texts that follow a tid printed as a bare hex (`%x`).
    pub hex_tids_before: &'static [&'static str],
    /// Texts that come just before a tid printed as a bare hex.
    pub hex_tids_after: &'static [&'static str],
    /// Its lines of varying numbers.
    pub masks: &'static [Mask],
    /// Lines it prints only when it loses a race of its own making (a
    /// check run while a sibling may already be leaving): dropped.
    pub racy: &'static [&'static str],
}

/// Normalizes the texts of one run (module docs); the names it gives
/// hold across all of them.
#[derive(Clone, Debug)]
pub struct Normalizer {
    rules: Rules,
    hosts: Vec<String>,
    tids: HashMap<u64, usize>,
    contexts: HashMap<u64, usize>,
}

/// The words after which a number is a message context.
const CONTEXT_WORDS: &[&str] = &["context", "ctx", "sctx"];

/// The lowest and the highest tid: PVM's host field (bits 18 to 29) is
/// not zero.
const TIDS: std::ops::RangeInclusive<u64> = 0x4_0000..=0x3fff_ffff;

impl Normalizer {
    /// A normalizer by `rules` that masks `hosts`' names.
    pub fn new(rules: Rules, hosts: Vec<String>) -> Normalizer {
        let mut hosts: Vec<String> = hosts.into_iter().filter(|h| !h.is_empty()).collect();
        hosts.sort();
        hosts.dedup();
        Normalizer {
            rules,
            hosts,
            tids: HashMap::new(),
            contexts: HashMap::new(),
        }
    }

    /// `text` normalized (module docs), its lines sorted if `sort`.
    pub fn normalize(&mut self, text: &str, sort: bool) -> String {
        let mut lines: Vec<String> = text
            .lines()
            .filter(|line| !self.rules.racy.iter().any(|racy| line.contains(racy)))
            .map(|line| self.mask(line))
            .collect();
        if sort {
            lines.sort();
        }
        let mut out = String::new();
        for line in &lines {
            out.push_str(&self.name(line));
            out.push('\n');
        }
        out
    }

    /// Steps 1 to 3.
    fn mask(&self, line: &str) -> String {
        let line = line.trim_end();
        let numeric = |word: &str| word.bytes().all(|b| b.is_ascii_digit());
        let words = split(line);
        let all_numbers = words.iter().any(|(word, _)| *word)
            && words.iter().all(|(word, text)| !*word || numeric(text))
            && words.iter().all(|(word, text)| {
                *word || text.chars().all(|c| c.is_whitespace() || ".+-".contains(c))
            });
        let masked = self.rules.masks.iter().any(|mask| match mask {
            Mask::LinesWith(text) => line.contains(text),
            Mask::NumericRows => all_numbers,
        });
        let mut out = String::new();
        for (word, text) in words {
            if word && masked && numeric(text) {
                out.push('#');
            } else if word && self.hosts.iter().any(|h| h == text) {
                out.push_str("<host>");
            } else if !word && masked {
                let mut blank = false;
                for c in text.chars() {
                    match c.is_whitespace() {
                        true if blank => {}
                        true => out.push(' '),
                        false => out.push(c),
                    }
                    blank = c.is_whitespace();
                }
            } else {
                out.push_str(text);
            }
        }
        out
    }

    /// Step 5.
    fn name(&mut self, line: &str) -> String {
        let words = split(line);
        let mut out = String::new();
        let mut after_context = false;
        let mut rest_at = 0;
        for (word, text) in &words {
            rest_at += text.len();
            if !*word {
                out.push_str(text);
                continue;
            }
            let before = &line[..rest_at - text.len()];
            let rest = &line[rest_at..];
            if after_context {
                after_context = false;
                if let Some(n) = text.parse::<u64>().ok().filter(|&n| n != 0) {
                    let next = self.contexts.len() + 1;
                    let k = *self.contexts.entry(n).or_insert(next);
                    out.push_str(&format!("C{k}"));
                    continue;
                }
            }
            after_context = CONTEXT_WORDS.contains(text);
            match self.tid(text, before, rest) {
                Some((tid, suffix)) => {
                    let next = self.tids.len() + 1;
                    let k = *self.tids.entry(tid).or_insert(next);
                    out.push_str(&format!("T{k}{suffix}"));
                }
                None => out.push_str(text),
            }
        }
        out
    }

    /// The tid that `word`, between `before` and `rest` on its line,
    /// writes, and what follows it in the word (`t40001lmbi0`: `lmbi0`).
    fn tid<'w>(&self, word: &'w str, before: &str, rest: &str) -> Option<(u64, &'w str)> {
        let hex = |digits: &str| {
            (5..=8).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_hexdigit())
        };
        let (value, suffix) = if let Some(digits) = word.strip_prefix("0x").filter(|d| hex(d)) {
            (u64::from_str_radix(digits, 16).ok(), "")
        } else if let Some(digits) = word.strip_prefix('t') {
            // A tid may open a longer word: the hex digits up to a letter
            // that is not one.
            let end = digits
                .bytes()
                .position(|b| !b.is_ascii_hexdigit())
                .unwrap_or(digits.len());
            let (digits, suffix) = digits.split_at(end);
            match hex(digits) && !suffix.starts_with(|c: char| c.is_ascii_digit()) {
                true => (u64::from_str_radix(digits, 16).ok(), suffix),
                false => (None, ""),
            }
        } else if hex(word)
            && (self
                .rules
                .hex_tids_before
                .iter()
                .any(|after| rest.starts_with(after))
                || self
                    .rules
                    .hex_tids_after
                    .iter()
                    .any(|text| before.ends_with(text)))
        {
            (u64::from_str_radix(word, 16).ok(), "")
        } else if self.rules.decimal_tids && word.bytes().all(|b| b.is_ascii_digit()) {
            (word.parse().ok(), "")
        } else {
            (None, "")
        };
        value.filter(|v| TIDS.contains(v)).map(|v| (v, suffix))
    }
}

/// `line` cut into words (letters, digits, `_`: `true`) and what lies
/// between them (`false`), in order.
fn split(line: &str) -> Vec<(bool, &str)> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut in_word = None;
    for (i, c) in line.char_indices() {
        let word = c.is_ascii_alphanumeric() || c == '_';
        if in_word != Some(word) {
            if let Some(was) = in_word {
                parts.push((was, &line[start..i]));
            }
            start = i;
            in_word = Some(word);
        }
    }
    if let Some(was) = in_word {
        parts.push((was, &line[start..]));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalizer(rules: Rules) -> Normalizer {
        Normalizer::new(rules, vec!["vm".into()])
    }

    #[test]
    fn tids_are_named_in_order_of_first_appearance_in_every_form() {
        let mut n = normalizer(Rules {
            decimal_tids: true,
            hex_tids_before: &[" myinst"],
            ..Rules::default()
        });
        let text = "i'm t40016\nfrom t4001a: hi\n 40016 myinst is 0\n0x4001a and 262166 again\n";
        assert_eq!(
            n.normalize(text, false),
            "i'm T1\nfrom T2: hi\n T1 myinst is 0\nT2 and T1 again\n"
        );
        // A tid opening a mailbox name; one after an `id: `.
        let mut m = normalizer(Rules {
            hex_tids_after: &["id: "],
            ..Rules::default()
        });
        assert_eq!(
            m.normalize(
                "entry <t40001lmbi0> of t40001 on vm id: 40001 sctx = 262145",
                false
            ),
            "entry <T1lmbi0> of T1 on <host> id: T1 sctx = C1\n"
        );
        // The names hold across the texts of one run.
        assert_eq!(
            n.normalize("libpvm [t4001a]: pvm_send()", false),
            "libpvm [T2]: pvm_send()\n"
        );
    }

    #[test]
    fn numbers_that_are_not_tids_stay() {
        let mut n = normalizer(Rules::default());
        // Too small, not hex after a t, a decimal without decimal_tids,
        // a bare hex in no tid's place, pvm's -1 as a tid.
        let text = "I got 200.000000 from 0\ntest 4001a\n262145 -> 40001\nsrc = tffffffff\n";
        assert_eq!(n.normalize(text, false), text);
    }

    #[test]
    fn contexts_are_named_and_the_base_context_stays() {
        let mut n = normalizer(Rules::default());
        let text = "t40028 with context 0.\nwith context 262145.\nt40029 with context 262146.\nback to context 262145.\n";
        assert_eq!(
            n.normalize(text, false),
            "T1 with context 0.\nwith context C1.\nT2 with context C2.\nback to context C1.\n"
        );
    }

    #[test]
    fn masked_lines_lose_their_numbers_and_padding() {
        let mut n = normalizer(Rules {
            masks: &[Mask::LinesWith("MB/s"), Mask::NumericRows],
            ..Rules::default()
        });
        let text = "Roundtrip T = 39 (us)  (0.3810 MB/s)  Data size: 8\n 1     2379\n     100.000000   2.325581\nRTT Avg uSec 178\n";
        assert_eq!(
            n.normalize(text, false),
            "Roundtrip T = # (us) (#.# MB/s) Data size: #\n # #\n #.# #.#\nRTT Avg uSec 178\n"
        );
    }

    #[test]
    fn host_names_are_masked_as_whole_words_only() {
        let mut n = normalizer(Rules::default());
        assert_eq!(
            n.normalize("hello, world from vm\non machine <vm> in vms\n", false),
            "hello, world from <host>\non machine <<host>> in vms\n"
        );
    }

    #[test]
    fn sorted_lines_are_named_in_sorted_order() {
        let mut a = normalizer(Rules::default());
        let mut b = normalizer(Rules::default());
        let one = a.normalize("[t40004] done\n[t40003] done\n", true);
        let other = b.normalize("[t40003] done\n[t40004] done\n", true);
        assert_eq!(one, "[T1] done\n[T2] done\n");
        assert_eq!(one, other);
    }

    #[test]
    fn trailing_blanks_and_racy_lines_go() {
        let mut n = normalizer(Rules {
            racy: &["doesn't match up!"],
            ..Rules::default()
        });
        let text = "barrier on group0 \ngid 2 doesn't match up!\n\n";
        assert_eq!(n.normalize(text, false), "barrier on group0\n\n");
    }
}
