//! The thesis' block matrix multiply (§4.2.2): `T` threads share the rows
//! of A.
//!
//! 1. The rows are cut into `T` blocks of `⌊m/T⌋` rows, and one residual
//!    block of the `m mod T` rows left over.
//! 2. The calling thread starts `T` threads, which wait on a condition
//!    variable until it sets the work counter up and signals them.
//! 3. Each thread takes the next block under the counter's mutex, computes
//!    its rows of C, and comes back for another: the first thread free
//!    after its share takes the residual block.
//!
//! Inside a block the loops are tiled (`K_TILE` × `N_TILE` of B, 256 KiB,
//! stays in L2 while the block's rows pass over it). With one thread the
//! rows are multiplied on the calling thread, none started.

use crate::matmul::matrix::View;
use std::sync::{Condvar, Mutex};

/// Rows of B in a tile.
const K_TILE: usize = 128;
/// Columns of B in a tile.
const N_TILE: usize = 256;

/// `c += a × b` on `threads` threads; `c` is `a.rows × b.cols`, row-major
/// and contiguous.
pub fn multiply_add(a: View<'_>, b: View<'_>, c: &mut [f64], threads: usize) {
    let (m, n) = (a.rows, b.cols);
    debug_assert_eq!(a.cols, b.rows);
    debug_assert_eq!(c.len(), m * n);
    let threads = threads.clamp(1, m.max(1));
    if threads == 1 || n == 0 {
        rows_multiply_add(a, b, c);
        return;
    }
    // Step 1: T blocks of ⌊m/T⌋ rows, then the residual rows.
    let per = m / threads;
    let mut blocks: Vec<Mutex<Option<Block<'_>>>> = Vec::with_capacity(threads + 1);
    let residual = m - per * threads;
    let sizes = std::iter::repeat_n(per, threads).chain((residual > 0).then_some(residual));
    let mut rest = c;
    let mut first = 0;
    for rows in sizes {
        let (block, tail) = rest.split_at_mut(rows * n);
        blocks.push(Mutex::new(Some((first, rows, block))));
        rest = tail;
        first += rows;
    }
    let work = Work {
        counter: Mutex::new(Counter {
            started: false,
            next: 0,
        }),
        start: Condvar::new(),
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                // Step 2: wait for the start.
                let mut counter = work.counter.lock().unwrap_or_else(|e| e.into_inner());
                while !counter.started {
                    counter = work.start.wait(counter).unwrap_or_else(|e| e.into_inner());
                }
                drop(counter);
                // Step 3: block after block until none is left.
                loop {
                    let taken = {
                        let mut counter = work.counter.lock().unwrap_or_else(|e| e.into_inner());
                        let i = counter.next;
                        counter.next += 1;
                        i
                    };
                    let Some(slot) = blocks.get(taken) else {
                        return;
                    };
                    let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                    let Some((first, rows, block)) = taken else {
                        continue;
                    };
                    rows_multiply_add(a.block(first, 0, rows, a.cols), b, block);
                }
            });
        }
        work.counter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .started = true;
        work.start.notify_all();
    });
}

/// A block of rows: its first row, its rows, and its rows of C.
type Block<'c> = (usize, usize, &'c mut [f64]);

struct Counter {
    started: bool,
    /// The next block to take.
    next: usize,
}

struct Work {
    counter: Mutex<Counter>,
    start: Condvar,
}

/// `c += a × b` on this thread, tiled over B.
fn rows_multiply_add(a: View<'_>, b: View<'_>, c: &mut [f64]) {
    let (k, n) = (b.rows, b.cols);
    for kk in (0..k).step_by(K_TILE) {
        let k_end = (kk + K_TILE).min(k);
        for jj in (0..n).step_by(N_TILE) {
            let j_end = (jj + N_TILE).min(n);
            for i in 0..a.rows {
                let ai = a.row(i);
                let ci = &mut c[i * n + jj..i * n + j_end];
                for (kx, &aik) in ai.iter().enumerate().take(k_end).skip(kk) {
                    let bk = &b.row(kx)[jj..j_end];
                    for (cij, bkj) in ci.iter_mut().zip(bk) {
                        *cij += aik * bkj;
                    }
                }
            }
        }
    }
}
