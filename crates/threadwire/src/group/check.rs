//! The argument check: before a call runs, its members agree on what they
//! passed, so that bad arguments at some members fail the call at every
//! member with one typed error, and never leave a member waiting.
//!
//! Without it, a member that sees a bad argument of its own (a root out
//! of range) or a message of the wrong length fails and aborts the others
//! ([`schedule`](super::schedule) rule 4), but members that finished
//! before the abort keep their result, and arguments that differ without
//! being wrong anywhere — another root, a length that makes one member
//! take the per-node stage and another run flat — can leave members
//! waiting for messages nobody sends, as in MPI.
//!
//! With it, every call is preceded by a call of its own (the next number
//! in the group's sequence, made with it): a small allreduce, through the
//! per-node stage where the group has one, with the runtime's own choice
//! of algorithms whatever the group forces, of a short record:
//!
//! 1. a *signature* of what must be alike at every member — the
//!    collective, the root, the element type, the lengths that are
//!    significant everywhere, the operation and the forced algorithms —
//!    combined as the AND of it and the AND of its complement, which are
//!    complements of each other only if every member passed the same;
//! 2. the error of the lowest rank whose own checks failed (a root out of
//!    range, counts that do not cover the group), kept by the lowest rank;
//! 3. for `gatherv`, a word per rank: the count the root expects and the
//!    count the member sends, which must not differ.
//!
//! Every member then ends the call with the same verdict: the failed
//! member's error (a member that failed its own checks returns its own,
//! exactly; the others that of the lowest such rank, as it travels, see
//! [`CollError::encode`]), else [`CollError::CallsDiffer`], else the call
//! runs. No abort is sent: every member knows already (where the check's
//! own allreduce fails — a lost member, records of different lengths
//! from different collectives — it aborts in its own tag, where the
//! members are). Once the arguments agree, an error that follows from
//! them alone (an algorithm that cannot run the call) is found by every
//! member itself and sends no abort either (it would only be left
//! unread).
//!
//! The check is on by default in debug builds and off in release builds
//! (like Rust's overflow checks); `THREADWIRE_COLL_CHECKS` (`1` or `0`)
//! overrides that default, and [`Group::set_checks`] sets it per group —
//! every member must set the same. What it cannot see: user reduction
//! closures (only whether they are commutative), the data itself, and the
//! counts of `alltoallv` (a receiver accepts any length).
//!
//! [`Group::set_checks`]: super::Group::set_checks

use super::element::{Element, Reducible, Reduction};
use super::schedule::Call;
use super::CollError;
use std::sync::OnceLock;

/// The check's default: `THREADWIRE_COLL_CHECKS`, else on in debug builds.
pub(crate) fn default_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| match std::env::var(crate::env::COLL_CHECKS).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    })
}

/// What one member passed to one call, as the check compares it.
pub(crate) struct Args {
    signature: u64,
    root: Option<usize>,
    error: Option<CollError>,
    per_rank: Option<Vec<u64>>,
}

/// FNV-1a, one word at a time: the same at every member of a job.
fn mix(h: u64, word: u64) -> u64 {
    word.to_le_bytes()
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn text(h: u64, s: &str) -> u64 {
    s.bytes().fold(h, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl Args {
    /// The arguments of a call of collective `name`.
    pub(crate) fn new(name: &'static str) -> Args {
        Args {
            signature: text(0xcbf2_9ce4_8422_2325, name),
            root: None,
            error: None,
            per_rank: None,
        }
    }

    /// A root, alike everywhere and in range.
    pub(crate) fn root(mut self, root: usize) -> Args {
        self.signature = mix(self.signature, root as u64);
        self.root = Some(root);
        self
    }

    /// A length of elements of `T` that every member passes alike.
    pub(crate) fn len<T: Element>(mut self, n: usize) -> Args {
        self.signature = mix(text(self.signature, std::any::type_name::<T>()), n as u64);
        self
    }

    /// Elements of type `T`, of lengths that may differ between members.
    pub(crate) fn of<T: Element>(mut self) -> Args {
        self.signature = text(self.signature, std::any::type_name::<T>());
        self
    }

    /// Words (counts) that every member passes alike.
    pub(crate) fn words(mut self, words: &[usize]) -> Args {
        self.signature = mix(self.signature, words.len() as u64);
        for &w in words {
            self.signature = mix(self.signature, w as u64);
        }
        self
    }

    /// The operation, and whether it applies to `T`.
    pub(crate) fn op<T: Reducible>(mut self, op: &Reduction<T>) -> Args {
        self.signature = text(self.signature, &format!("{op:?}"));
        self.failed(op.check())
    }

    /// The outcome of this member's own checks.
    pub(crate) fn failed(mut self, checked: Result<(), CollError>) -> Args {
        if let Err(e) = checked {
            self.error.get_or_insert(e);
        }
        self
    }

    /// `gatherv`'s counts: at the root, what each member must send; at
    /// the others, what this one sends.
    pub(crate) fn gatherv_counts(mut self, counts: &[usize], own: usize, is_root: bool) -> Args {
        self.per_rank = Some(match is_root {
            true => counts.iter().map(|&n| n as u64 + 1).collect(),
            false => vec![own as u64 + 1],
        });
        self
    }
}

/// The record's fixed words: signature, its complement, the failed rank
/// (`u64::MAX`: none) and its error as it travels (kind, three words).
const FIXED: usize = 7;
const NO_RANK: u64 = u64::MAX;
/// A per-rank word two members gave differently.
const CONFLICT: u64 = u64::MAX;

fn combine_records(acc: &mut [u64], other: &[u64]) {
    acc[0] &= other[0];
    acc[1] &= other[1];
    if other[2] < acc[2] {
        acc[2..FIXED].copy_from_slice(&other[2..FIXED]);
    }
    for (a, &b) in acc[FIXED..].iter_mut().zip(&other[FIXED..]) {
        *a = match (*a, b) {
            (0, b) => b,
            (a, 0) => a,
            (a, b) if a == b => a,
            _ => CONFLICT,
        };
    }
}

/// The check of `call`, run as call `check` (module docs): `Ok` if every
/// member passed the same and none failed its own checks.
pub(crate) async fn agree(check: &Call, call: &Call, args: Args) -> Result<(), CollError> {
    // Boxed: a collective's future is held on a fiber's stack (128 KiB
    // by default), and the check's allreduce would double its size.
    let verdict = Box::pin(verdict(check, call, args)).await;
    let verdict = check.finish(verdict).await;
    match &verdict {
        // Every member knows (or hears of the check's own failure).
        Err(_) => call.heard_abort(),
        Ok(()) => call.arguments_agreed(),
    }
    verdict
}

async fn verdict(check: &Call, call: &Call, args: Args) -> Result<(), CollError> {
    let (p, r) = (call.size(), call.rank());
    let signature = mix(args.signature, text(0, &format!("{:?}", call.algorithms())));
    let mut error = args.error;
    if let Some(root) = args.root.filter(|&root| root >= p) {
        error.get_or_insert(CollError::RankOutOfRange { rank: root, size: p });
    }
    let mut record = vec![signature, !signature, NO_RANK, 0, 0, 0, 0];
    if let Some(e) = &error {
        let bytes = e.encode(r);
        record[2] = r as u64;
        record[3] = u64::from(bytes[0]);
        for (i, word) in bytes[1..].chunks_exact(8).enumerate() {
            record[4 + i] = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        }
    }
    if let Some(per_rank) = &args.per_rank {
        let mut words = vec![0; p];
        match per_rank.len() {
            1 => words[r] = per_rank[0],
            n if n == p => words.copy_from_slice(per_rank),
            // The root's counts do not cover the group: its own error.
            _ => {}
        }
        record.extend(words);
    }
    let op = Reduction::commutative(combine_records);
    super::dispatch::allreduce(check, &mut record, &op).await?;
    let verdict = if record[2] != NO_RANK {
        let failed = record[2] as usize;
        match error {
            // Its own error: exact, where another's may not travel whole.
            Some(e) => e,
            None => {
                let mut bytes = vec![record[3] as u8];
                for w in &record[4..FIXED] {
                    bytes.extend_from_slice(&w.to_le_bytes());
                }
                CollError::decode(&bytes, failed)
            }
        }
    } else if record[0] != !record[1] || record[FIXED..].contains(&CONFLICT) {
        CollError::CallsDiffer
    } else {
        return Ok(());
    };
    // Every member reached this verdict: none needs an abort.
    check.heard_abort();
    Err(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::Op;

    fn record(signature: u64, failed: Option<(u64, u64)>, per_rank: &[u64]) -> Vec<u64> {
        let (rank, kind) = failed.unwrap_or((NO_RANK, 0));
        let mut r = vec![signature, !signature, rank, kind, 0, 0, 0];
        r.extend_from_slice(per_rank);
        r
    }

    fn combined(records: &[Vec<u64>]) -> Vec<u64> {
        let mut acc = records[0].clone();
        for r in &records[1..] {
            combine_records(&mut acc, r);
        }
        acc
    }

    #[test]
    fn differing_signatures_and_counts_are_seen_in_any_order() {
        let alike = combined(&[record(5, None, &[0, 3]), record(5, None, &[2, 3])]);
        assert_eq!(alike[0], !alike[1]);
        assert_eq!(alike[FIXED..], [2, 3]);
        let a = record(5, None, &[0, 3]);
        let b = record(6, None, &[4, 3]);
        let c = record(5, None, &[2, 0]);
        for order in [[&a, &b, &c], [&c, &a, &b], [&b, &c, &a]] {
            let got = combined(&order.map(|r| r.clone()));
            assert_ne!(got[0], !got[1], "signatures differ");
            assert_eq!(got[FIXED..], [CONFLICT, 3], "rank 0's count differs");
        }
    }

    #[test]
    fn the_lowest_failed_rank_wins() {
        let got = combined(&[
            record(1, Some((4, 2)), &[]),
            record(1, None, &[]),
            record(1, Some((1, 1)), &[]),
        ]);
        assert_eq!(got[2..4], [1, 1]);
    }

    #[test]
    fn signatures_tell_arguments_apart() {
        let sig = |a: Args| a.signature;
        let base = || Args::new("bcast").root(0).len::<u8>(4);
        assert_eq!(sig(base()), sig(base()));
        assert_ne!(sig(base()), sig(Args::new("bcast").root(1).len::<u8>(4)));
        assert_ne!(sig(base()), sig(Args::new("bcast").root(0).len::<u8>(5)));
        assert_ne!(sig(base()), sig(Args::new("bcast").root(0).len::<i8>(4)));
        assert_ne!(sig(base()), sig(Args::new("reduce").root(0).len::<u8>(4)));
        let sum = Reduction::<i32>::from(Op::Sum);
        let max = Reduction::<i32>::from(Op::Max);
        let with = |op: &Reduction<i32>| sig(Args::new("allreduce").len::<i32>(1).op(op));
        assert_ne!(with(&sum), with(&max));
    }
}
