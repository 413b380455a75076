//! Twins and diffs: how several nodes write one page at once.
//!
//! A node about to write a page it does not own keeps a copy of it, the
//! *twin*. At a release it compares the page with its twin and sends only
//! the bytes that changed, the *diff*, to the page's home, which applies
//! them to the master copy. Two nodes that write different bytes of one
//! page (false sharing) both see their writes survive, because each diff
//! carries only its writer's bytes.
//!
//! Diffs are exact to the byte: two writers of neighbouring bytes of one
//! word must not overwrite each other, so a changed word is trimmed to its
//! changed bytes at both ends of a run. Pages are compared a word at a
//! time (8 bytes), which the compiler vectorizes.
//!
//! The encoding is a sequence of runs, each `offset: u32 LE, len: u32 LE,
//! bytes`, in increasing offset order, not overlapping. Runs closer than a
//! header's size are merged: the unchanged bytes between them travel, which
//! costs less than a header and rewrites those bytes with the values they
//! already had at the home.

use std::fmt;

/// Bytes of a run's header.
pub const RUN_HEADER: usize = 8;

/// A diff that does not fit the page it is applied to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffError {
    /// The bytes end inside a run's header or data.
    Truncated,
    /// A run reaches past the page's end, or goes backwards.
    OutOfPage {
        /// The run's offset.
        offset: usize,
        /// The run's length.
        len: usize,
    },
}

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffError::Truncated => write!(f, "diff truncated"),
            DiffError::OutOfPage { offset, len } => {
                write!(
                    f,
                    "diff run of {len} bytes at {offset} is outside the page or out of order"
                )
            }
        }
    }
}

impl std::error::Error for DiffError {}

/// Appends to `out` the runs where `page` differs from `twin` (same length).
/// Nothing is appended when they are equal.
pub fn encode(page: &[u8], twin: &[u8], out: &mut Vec<u8>) {
    assert_eq!(
        page.len(),
        twin.len(),
        "a page and its twin differ in length"
    );
    let mut run: Option<(usize, usize)> = None;
    let words = page.len() / 8;
    let flush = |run: (usize, usize), out: &mut Vec<u8>| {
        let (start, end) = run;
        out.extend_from_slice(&(start as u32).to_le_bytes());
        out.extend_from_slice(&((end - start) as u32).to_le_bytes());
        out.extend_from_slice(&page[start..end]);
    };
    let mut i = 0;
    while i < words {
        let at = i * 8;
        if page[at..at + 8] == twin[at..at + 8] {
            i += 1;
            continue;
        }
        // Trim the word to its changed bytes.
        let first = (0..8).find(|&b| page[at + b] != twin[at + b]).unwrap_or(0);
        let last = (0..8)
            .rev()
            .find(|&b| page[at + b] != twin[at + b])
            .unwrap_or(7);
        let (start, end) = (at + first, at + last + 1);
        run = Some(match run {
            Some((s, e)) if start - e < RUN_HEADER => (s, end),
            Some(done) => {
                flush(done, out);
                (start, end)
            }
            None => (start, end),
        });
        i += 1;
    }
    for at in words * 8..page.len() {
        if page[at] != twin[at] {
            run = Some(match run {
                Some((s, e)) if at - e < RUN_HEADER => (s, at + 1),
                Some(done) => {
                    flush(done, out);
                    (at, at + 1)
                }
                None => (at, at + 1),
            });
        }
    }
    if let Some(done) = run {
        flush(done, out);
    }
}

/// Checks that `diff` fits a page of `len` bytes.
pub fn check(diff: &[u8], len: usize) -> Result<(), DiffError> {
    runs(diff, len).try_for_each(|run| run.map(|_| ()))
}

/// Writes the runs of `diff` into `page`. A diff that does not fit is
/// refused before any byte is written.
pub fn apply(page: &mut [u8], diff: &[u8]) -> Result<(), DiffError> {
    for run in runs(diff, page.len()) {
        run?;
    }
    for run in runs(diff, page.len()) {
        let (offset, bytes) = run.expect("checked above");
        page[offset..offset + bytes.len()].copy_from_slice(bytes);
    }
    Ok(())
}

/// The runs of `diff` as (offset, bytes), each checked against a page of
/// `len` bytes and against the previous run's end.
fn runs(diff: &[u8], len: usize) -> impl Iterator<Item = Result<(usize, &[u8]), DiffError>> {
    let mut rest = diff;
    let mut end = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if rest.is_empty() || failed {
            return None;
        }
        let item = (|| {
            let header = rest.get(..RUN_HEADER).ok_or(DiffError::Truncated)?;
            let offset = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
            let n = u32::from_le_bytes(header[4..].try_into().expect("4 bytes")) as usize;
            let bytes = rest
                .get(RUN_HEADER..RUN_HEADER + n)
                .ok_or(DiffError::Truncated)?;
            if offset < end || offset.checked_add(n).is_none_or(|e| e > len) {
                return Err(DiffError::OutOfPage { offset, len: n });
            }
            rest = &rest[RUN_HEADER + n..];
            end = offset + n;
            Ok((offset, bytes))
        })();
        failed = item.is_err();
        Some(item)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(page: &[u8], twin: &[u8]) -> Vec<u8> {
        let mut diff = Vec::new();
        encode(page, twin, &mut diff);
        let mut home = twin.to_vec();
        apply(&mut home, &diff).unwrap();
        assert_eq!(home, page);
        diff
    }

    #[test]
    fn an_unchanged_page_has_an_empty_diff() {
        let page = vec![3u8; 8192];
        assert!(roundtrip(&page, &page).is_empty());
    }

    #[test]
    fn a_changed_byte_travels_alone() {
        let twin = vec![0u8; 8192];
        let mut page = twin.clone();
        page[4097] = 1;
        let diff = roundtrip(&page, &twin);
        assert_eq!(diff.len(), RUN_HEADER + 1);
    }

    #[test]
    fn writers_of_neighbouring_bytes_both_survive_at_the_home() {
        let twin = vec![0u8; 64];
        let (mut a, mut b) = (twin.clone(), twin.clone());
        a[9] = 1; // one word, two writers
        b[10] = 2;
        let (mut da, mut db) = (Vec::new(), Vec::new());
        encode(&a, &twin, &mut da);
        encode(&b, &twin, &mut db);
        let mut home = twin.clone();
        apply(&mut home, &db).unwrap();
        apply(&mut home, &da).unwrap();
        assert_eq!((home[9], home[10]), (1, 2));
    }

    #[test]
    fn close_runs_merge_and_distant_ones_do_not() {
        let twin = vec![0u8; 256];
        let mut page = twin.clone();
        page[0] = 1;
        page[5] = 1; // 4 bytes apart: merged
        page[100] = 1; // far: its own run
        page[255] = 1; // in the last word
        let diff = roundtrip(&page, &twin);
        assert_eq!(diff.len(), 3 * RUN_HEADER + 6 + 1 + 1);
    }

    #[test]
    fn pages_not_a_multiple_of_a_word_diff_their_tail() {
        let twin = vec![0u8; 13];
        let mut page = twin.clone();
        page[12] = 7;
        page[3] = 1;
        roundtrip(&page, &twin);
    }

    #[test]
    fn bad_diffs_are_refused_and_write_nothing() {
        let mut page = vec![0u8; 16];
        let mut d = Vec::new();
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        d.push(9);
        d.extend_from_slice(&12u32.to_le_bytes());
        d.extend_from_slice(&8u32.to_le_bytes()); // past the end
        d.extend_from_slice(&[1; 8]);
        assert_eq!(
            apply(&mut page, &d),
            Err(DiffError::OutOfPage { offset: 12, len: 8 })
        );
        assert_eq!(page, [0; 16]);
        assert_eq!(apply(&mut page, &d[..5]), Err(DiffError::Truncated));
        let mut backwards = d[..9].to_vec();
        backwards.extend_from_slice(&d[..9]);
        assert!(matches!(
            apply(&mut page, &backwards),
            Err(DiffError::OutOfPage { .. })
        ));
        assert_eq!(page, [0; 16]);
    }
}
