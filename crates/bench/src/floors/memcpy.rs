//! memcpy bandwidth: `copy_from_slice` between two `u8` buffers, in
//! 10^6 bytes copied per second. Every buffer is written before timing,
//! so no page fault is timed. Where source and destination fit in half the
//! last-level cache, one pair is copied over and over (in cache); larger
//! sizes go round enough pairs to fill four times the last-level cache, so
//! each copy finds its data evicted since it last ran (out of cache).

use super::cpus::Cache;
use super::{repeat, size_name, Measured, Options};
use std::hint;
use std::time::Instant;

pub(super) fn measure(options: &Options, size: usize, caches: &[Cache]) -> (Measured, String) {
    let size = size.max(1);
    let (pairs, note) = placement(size, caches);
    let mut buffers: Vec<(Vec<u8>, Vec<u8>)> = (0..pairs)
        .map(|_| (vec![0x5a; size], vec![0xa5; size]))
        .collect();
    let mut next = 0;
    let timed = repeat(options, |copies| {
        let start = Instant::now();
        for _ in 0..copies {
            let (source, destination) = &mut buffers[next];
            destination.copy_from_slice(source);
            // Nothing reads the copy: without this it might not be made.
            hint::black_box(&mut destination[..]);
            next = (next + 1) % pairs;
        }
        Ok(start.elapsed())
    });
    let measured = match timed {
        Ok(t) => t.megabytes_per_second(size),
        Err(e) => Measured::Missing(e.to_string()),
    };
    (measured, note)
}

/// How many buffer pairs to go round, and the note that says where they
/// sit against the caches (smallest level first).
fn placement(size: usize, caches: &[Cache]) -> (usize, String) {
    let working_set = 2 * size;
    let Some(last) = caches.last() else {
        return (
            1,
            format!(
                "copy_from_slice; one buffer pair ({}) reused; cache sizes unknown",
                size_name(working_set)
            ),
        );
    };
    if working_set > last.bytes / 2 {
        let pairs = (4 * last.bytes).div_ceil(working_set).max(2);
        let note = format!(
            "copy_from_slice; {pairs} buffer pairs in turn ({}), 4× the {} L{}: out of cache",
            size_name(pairs * working_set),
            size_name(last.bytes),
            last.level
        );
        return (pairs, note);
    }
    let holder = caches
        .iter()
        .find(|c| working_set <= c.bytes)
        .unwrap_or(last);
    let note = format!(
        "copy_from_slice; one buffer pair ({}) reused: fits the {} L{}",
        size_name(working_set),
        size_name(holder.bytes),
        holder.level
    );
    (1, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CACHES: [Cache; 3] = [
        Cache {
            level: 1,
            bytes: 32 << 10,
        },
        Cache {
            level: 2,
            bytes: 1 << 20,
        },
        Cache {
            level: 3,
            bytes: 32 << 20,
        },
    ];

    #[test]
    fn small_sizes_stay_in_cache_and_large_ones_rotate() {
        let (pairs, note) = placement(64 << 10, &CACHES);
        assert_eq!(pairs, 1);
        assert!(note.ends_with("fits the 1 MiB L2"), "{note}");
        assert_eq!(placement(1 << 20, &CACHES).0, 1);
        let (pairs, note) = placement(16 << 20, &CACHES);
        assert_eq!(pairs, 4);
        assert!(note.contains("(128 MiB), 4× the 32 MiB L3"), "{note}");
        assert_eq!(placement(16 << 20, &[]).0, 1);
    }
}
