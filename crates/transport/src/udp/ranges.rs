//! Sets of `u64` as sorted, disjoint half-open ranges: the packet numbers
//! a side has received, and the stream offsets acknowledged, received or
//! waiting to be sent.

use std::collections::BTreeMap;
use std::ops::Range;

/// A set of `u64`, kept as disjoint, non-adjacent ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct RangeSet {
    /// start → end (exclusive).
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of disjoint ranges.
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// Adds `r`, merging with its neighbours; `true` if anything was new.
    pub(super) fn insert(&mut self, r: Range<u64>) -> bool {
        if r.is_empty() || self.gaps_in(r.clone()).is_empty() {
            return false;
        }
        let (mut start, mut end) = (r.start, r.end);
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        // Every range starting within [start, end] (adjacent ones too)
        // merges into this one.
        let swallowed: Vec<u64> = self.map.range(start..=end).map(|(&s, _)| s).collect();
        for s in swallowed {
            if let Some(e) = self.map.remove(&s) {
                end = end.max(e);
            }
        }
        self.map.insert(start, end);
        true
    }

    /// Removes `r` from the set.
    pub(super) fn remove(&mut self, r: Range<u64>) {
        if r.is_empty() {
            return;
        }
        let overlapping: Vec<(u64, u64)> = self
            .map
            .range(..r.end)
            .rev()
            .take_while(|(_, &e)| e > r.start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in overlapping {
            self.map.remove(&s);
            if s < r.start {
                self.map.insert(s, r.start);
            }
            if e > r.end {
                self.map.insert(r.end, e);
            }
        }
    }

    pub(super) fn contains(&self, x: u64) -> bool {
        self.map
            .range(..=x)
            .next_back()
            .is_some_and(|(_, &e)| x < e)
    }

    /// The lowest range.
    pub(super) fn first(&self) -> Option<Range<u64>> {
        self.map.iter().next().map(|(&s, &e)| s..e)
    }

    /// The lowest range starting at or after `x`.
    pub(super) fn after(&self, x: u64) -> Option<Range<u64>> {
        self.map.range(x..).next().map(|(&s, &e)| s..e)
    }

    /// The ranges, highest first.
    pub(super) fn iter_desc(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.map.iter().rev().map(|(&s, &e)| s..e)
    }

    /// The ranges, lowest first.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.map.iter().map(|(&s, &e)| s..e)
    }

    /// The parts of `r` not in the set, lowest first.
    pub(super) fn gaps_in(&self, r: Range<u64>) -> Vec<Range<u64>> {
        let mut gaps = Vec::new();
        if r.is_empty() {
            return gaps;
        }
        let mut at = r.start;
        let first = self
            .map
            .range(..=r.start)
            .next_back()
            .map(|(&s, &e)| (s, e));
        let rest = self.map.range(r.start + 1..r.end).map(|(&s, &e)| (s, e));
        for (s, e) in first.into_iter().chain(rest) {
            if e <= at {
                continue;
            }
            if s > at {
                gaps.push(at..s.min(r.end));
            }
            at = at.max(e);
            if at >= r.end {
                break;
            }
        }
        if at < r.end {
            gaps.push(at..r.end);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set as a plain bitmap over 0..128, for comparison.
    fn bits(s: &RangeSet) -> Vec<bool> {
        (0..128).map(|x| s.contains(x)).collect()
    }

    #[test]
    fn matches_a_bitmap_under_random_inserts_and_removes() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..200 {
            let mut set = RangeSet::default();
            let mut model = vec![false; 128];
            for _ in 0..40 {
                let a = next(120);
                let b = a + next(9);
                if next(3) == 0 {
                    set.remove(a..b);
                    model[a as usize..b as usize].fill(false);
                } else {
                    let had = model[a as usize..b as usize].iter().all(|&x| x);
                    let new = set.insert(a..b);
                    assert_eq!(new, !had && a < b, "insert {a}..{b}");
                    model[a as usize..b as usize].fill(true);
                }
                assert_eq!(bits(&set), model);
                // Disjoint and not adjacent.
                let ranges: Vec<_> = set.iter().collect();
                for w in ranges.windows(2) {
                    assert!(w[0].end < w[1].start, "{ranges:?}");
                }
                let (a, b) = (next(128), next(128));
                let (a, b) = (a.min(b), a.max(b));
                let gaps: Vec<u64> = set.gaps_in(a..b).into_iter().flatten().collect();
                let want: Vec<u64> = (a..b).filter(|&x| !model[x as usize]).collect();
                assert_eq!(gaps, want, "gaps in {a}..{b} of {ranges:?}");
            }
        }
    }
}
