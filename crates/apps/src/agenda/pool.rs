//! The master's pool of tasks: the rows of A handed out `granularity` at a
//! time, and C filled in as rows come back.

use crate::matmul::Matrix;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A task: rows `first..first + rows` of A, to multiply by B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// The first row.
    pub first: usize,
    /// Rows in the batch: at least one.
    pub rows: usize,
}

/// Rows of C that do not fit where they claim to go.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{rows} rows of C from row {first} with {len} elements: C has {n} rows of {n}")]
pub struct Misplaced {
    /// The first row claimed.
    pub first: usize,
    /// Rows claimed.
    pub rows: usize,
    /// Elements given.
    pub len: usize,
    /// C is n × n.
    pub n: usize,
}

/// One round's agenda at the master: A, the next row to hand out, and C.
///
/// Any thread may [`take`](Self::take) a batch (the master's computing
/// threads directly, the slaves' through the `agenda.work` handler) and
/// [`store`](Self::store) its rows of C; a batch is handed out once.
#[derive(Debug)]
pub struct TaskPool {
    a: Arc<Matrix>,
    granularity: usize,
    next: AtomicUsize,
    c: Mutex<Matrix>,
    stored: AtomicUsize,
}

impl TaskPool {
    /// A pool of A's rows, `granularity` (at least 1) to a batch.
    pub fn new(a: Arc<Matrix>, granularity: usize) -> TaskPool {
        let c = Matrix::zeros(a.rows, a.cols);
        TaskPool {
            a,
            granularity: granularity.max(1),
            next: AtomicUsize::new(0),
            c: Mutex::new(c),
            stored: AtomicUsize::new(0),
        }
    }

    /// The next batch, or `None` once every row is handed out.
    pub fn take(&self) -> Option<Batch> {
        let n = self.a.rows;
        // Past n, every caller gets None: the counter only grows, by at
        // most granularity per taker, far from overflowing for n ≤ 8192.
        let first = self.next.fetch_add(self.granularity, Ordering::Relaxed);
        (first < n).then(|| Batch {
            first,
            rows: self.granularity.min(n - first),
        })
    }

    /// The rows of A of `batch`, row after row.
    pub fn rows_of_a(&self, batch: Batch) -> &[f64] {
        let n = self.a.cols;
        &self.a.data[batch.first * n..(batch.first + batch.rows) * n]
    }

    /// A, whole.
    pub fn a(&self) -> &Matrix {
        &self.a
    }

    /// Stores rows of C, computed by whom `write` says: it fills the
    /// `rows · n` elements from row `first` (a slice of exactly that
    /// length), or fails, leaving C as it was.
    pub fn store<E>(
        &self,
        first: usize,
        rows: usize,
        len: usize,
        write: impl FnOnce(&mut [f64]) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<Misplaced>,
    {
        let n = self.a.cols;
        let fits = first
            .checked_add(rows)
            .is_some_and(|end| end <= self.a.rows)
            && rows.checked_mul(n) == Some(len);
        if !fits {
            return Err(Misplaced {
                first,
                rows,
                len,
                n,
            }
            .into());
        }
        // A panic elsewhere cannot leave C half-written in a way that
        // matters: the product is verified whole at the end.
        let mut c = self.c.lock().unwrap_or_else(PoisonError::into_inner);
        write(&mut c.data[first * n..(first + rows) * n])?;
        drop(c);
        self.stored.fetch_add(rows, Ordering::Relaxed);
        Ok(())
    }

    /// Rows of C stored so far (a row stored twice counts twice).
    pub fn stored(&self) -> usize {
        self.stored.load(Ordering::Relaxed)
    }

    /// C as stored, taken out (the pool is left a C of no rows): the
    /// handlers may still hold the pool when the round is over.
    pub fn take_c(&self) -> Matrix {
        let mut c = self.c.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *c, Matrix::zeros(0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_the_rows_once_with_a_short_last_one() {
        let pool = TaskPool::new(Arc::new(Matrix::zeros(13, 13)), 4);
        let batches: Vec<Batch> = std::iter::from_fn(|| pool.take()).collect();
        let expected = [(0, 4), (4, 4), (8, 4), (12, 1)].map(|(first, rows)| Batch { first, rows });
        assert_eq!(batches, expected);
        assert_eq!(pool.take(), None);
        let big = TaskPool::new(Arc::new(Matrix::zeros(5, 5)), 64);
        assert_eq!(big.take(), Some(Batch { first: 0, rows: 5 }));
        assert_eq!(big.take(), None);
    }

    #[test]
    fn stores_that_do_not_fit_are_refused() {
        let pool = TaskPool::new(Arc::new(Matrix::zeros(4, 3)), 2);
        let fill = |v: f64| {
            move |c: &mut [f64]| -> Result<(), Misplaced> {
                c.fill(v);
                Ok(())
            }
        };
        assert!(pool.store(2, 2, 6, fill(1.0)).is_ok());
        assert_eq!(pool.stored(), 2);
        for (first, rows, len) in [(3, 2, 6), (0, 1, 4), (usize::MAX, 1, 3)] {
            let refused = pool.store(first, rows, len, fill(9.0)).unwrap_err();
            assert_eq!(refused.first, first);
        }
        let c = pool.take_c();
        assert_eq!(
            c.data,
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
        );
    }
}
