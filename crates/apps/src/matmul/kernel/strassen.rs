//! Strassen's multiply in Winograd's variant (the thesis §4.2.3): 7
//! multiplications and 15 additions per level, with dynamic peeling of odd
//! dimensions (Huss-Lederman et al.) at every level.
//!
//! One level, for `A` (m × k) times `B` (k × n):
//!
//! 1. **Shape.** If one of m, k, n is more than twice another, the
//!    product is not square enough to gain: BMM ([`super::bmm`]) does it.
//!    If the smallest is at most the cutoff (12 by default, the thesis'
//!    solution of its cutoff inequality for square matrices), BMM does it.
//! 2. **Peel.** Each odd dimension loses its last row or column: the even
//!    core `A11` ((m−1…) × (k−1…)) times `B11` recurses, and what was peeled
//!    is added after, as the thesis' peeling formula:
//!    `C11 = A11·B11 + a12·b21` (k odd: a rank-one update),
//!    `c12 = A·b12` (n odd: the last column of C, from all of A),
//!    `c21 = a21·B` (m odd: the last row of C, from all of B).
//! 3. **Winograd.** With every dimension even, the quadrants give
//!    `S1 = A21 + A22, S2 = S1 − A11, S3 = A11 − A21, S4 = A12 − S2`,
//!    `T1 = B12 − B11, T2 = B22 − T1, T3 = B22 − B12, T4 = T2 − B21`
//!    (8 additions), the 7 products
//!    `P1 = A11·B11, P2 = A12·B21, P3 = S4·B22, P4 = A22·T4, P5 = S1·T1,
//!    P6 = S2·T2, P7 = S3·T3` (each a recursion), and
//!    `U1 = P1 + P2, U2 = P1 + P6, U3 = U2 + P7, U4 = U2 + P5,
//!    U5 = U4 + P3, U6 = U3 − P4, U7 = U3 + P5` (7 additions):
//!    `C11 = U1, C12 = U5, C21 = U6, C22 = U7`.
//!
//! The thesis prints `S2 = S1 + A11`, `T4 = B21 − T2` and `U3 = U2 − P5`
//! (in its numbering of the P's): sign slips, which the unit tests against
//! the naive product would catch; the signs here are Winograd's.
//!
//! Threads: at the top level the 7 products are shared by the `T` threads
//! through a work counter under a mutex, as BMM shares its blocks; below
//! it every recursion runs on the thread that took the product.

use super::bmm;
use crate::matmul::matrix::{Matrix, View};
use std::sync::Mutex;

/// The thesis' cutoff: below it (in the smallest dimension) BMM is faster.
pub const DEFAULT_CUTOFF: usize = 12;

/// `c += a × b` on `threads` threads; `c` is `a.rows × b.cols`, row-major
/// and contiguous.
pub fn multiply_add(a: View<'_>, b: View<'_>, c: &mut [f64], cutoff: usize, threads: usize) {
    let product = multiply(a, b, cutoff.max(1), threads.max(1));
    for (x, p) in c.iter_mut().zip(&product.data) {
        *x += p;
    }
}

/// Whether one of the dimensions is more than twice another.
fn rectangular(m: usize, k: usize, n: usize) -> bool {
    let (least, most) = (m.min(k).min(n), m.max(k).max(n));
    most > 2 * least
}

/// `a × b`, a new matrix.
fn multiply(a: View<'_>, b: View<'_>, cutoff: usize, threads: usize) -> Matrix {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let mut c = Matrix::zeros(m, n);
    // Step 1.
    if m.min(k).min(n) <= cutoff || rectangular(m, k, n) {
        bmm::multiply_add(a, b, &mut c.data, threads);
        return c;
    }
    // Step 2.
    let (m2, k2, n2) = (m & !1, k & !1, n & !1);
    if (m2, k2, n2) != (m, k, n) {
        let core = multiply(
            a.block(0, 0, m2, k2),
            b.block(0, 0, k2, n2),
            cutoff,
            threads,
        );
        for i in 0..m2 {
            c.data[i * n..i * n + n2].copy_from_slice(core.view().row(i));
        }
        if k2 < k {
            // C11 += a12 · b21.
            let b21 = b.row(k - 1);
            for i in 0..m2 {
                let a12 = a.at(i, k - 1);
                for (x, y) in c.data[i * n..i * n + n2].iter_mut().zip(b21) {
                    *x += a12 * y;
                }
            }
        }
        if n2 < n {
            // c12 = A · b12, the last column.
            for i in 0..m2 {
                c.data[i * n + n - 1] = (0..k).map(|l| a.at(i, l) * b.at(l, n - 1)).sum();
            }
        }
        if m2 < m {
            // c21 = a21 · B, the last row.
            let last = &mut c.data[(m - 1) * n..];
            for (l, &x) in a.row(m - 1).iter().enumerate() {
                for (y, z) in last.iter_mut().zip(b.row(l)) {
                    *y += x * z;
                }
            }
        }
        return c;
    }
    // Step 3.
    let (h, w, d) = (m / 2, n / 2, k / 2);
    let a11 = a.block(0, 0, h, d);
    let a12 = a.block(0, d, h, d);
    let a21 = a.block(h, 0, h, d);
    let a22 = a.block(h, d, h, d);
    let b11 = b.block(0, 0, d, w);
    let b12 = b.block(0, w, d, w);
    let b21 = b.block(d, 0, d, w);
    let b22 = b.block(d, w, d, w);
    let s1 = combine(a21, a22, 1.0);
    let s2 = combine(s1.view(), a11, -1.0);
    let s3 = combine(a11, a21, -1.0);
    let s4 = combine(a12, s2.view(), -1.0);
    let t1 = combine(b12, b11, -1.0);
    let t2 = combine(b22, t1.view(), -1.0);
    let t3 = combine(b22, b12, -1.0);
    let t4 = combine(t2.view(), b21, -1.0);
    let factors = [
        (a11, b11),
        (a12, b21),
        (s4.view(), b22),
        (a22, t4.view()),
        (s1.view(), t1.view()),
        (s2.view(), t2.view()),
        (s3.view(), t3.view()),
    ];
    let [p1, p2, p3, p4, p5, p6, p7] = products(factors, cutoff, threads);
    let u1 = combine(p1.view(), p2.view(), 1.0);
    let u2 = combine(p1.view(), p6.view(), 1.0);
    let u3 = combine(u2.view(), p7.view(), 1.0);
    let u4 = combine(u2.view(), p5.view(), 1.0);
    let u5 = combine(u4.view(), p3.view(), 1.0);
    let u6 = combine(u3.view(), p4.view(), -1.0);
    let u7 = combine(u3.view(), p5.view(), 1.0);
    for i in 0..h {
        c.data[i * n..i * n + w].copy_from_slice(u1.view().row(i));
        c.data[i * n + w..(i + 1) * n].copy_from_slice(u5.view().row(i));
        c.data[(h + i) * n..(h + i) * n + w].copy_from_slice(u6.view().row(i));
        c.data[(h + i) * n + w..(h + i + 1) * n].copy_from_slice(u7.view().row(i));
    }
    c
}

/// `x + sign · y`, a new matrix (one of the 15 additions).
fn combine(x: View<'_>, y: View<'_>, sign: f64) -> Matrix {
    let mut data = Vec::with_capacity(x.rows * x.cols);
    for i in 0..x.rows {
        data.extend(x.row(i).iter().zip(y.row(i)).map(|(p, q)| p + sign * q));
    }
    Matrix {
        rows: x.rows,
        cols: x.cols,
        data,
    }
}

/// The 7 products, shared by `threads` threads through a work counter;
/// each recursion below runs on one thread.
fn products(factors: [(View<'_>, View<'_>); 7], cutoff: usize, threads: usize) -> [Matrix; 7] {
    if threads == 1 {
        return factors.map(|(x, y)| multiply(x, y, cutoff, 1));
    }
    let next = Mutex::new(0usize);
    let results: [Mutex<Option<Matrix>>; 7] = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(7) {
            scope.spawn(|| loop {
                let taken = {
                    let mut next = next.lock().unwrap_or_else(|e| e.into_inner());
                    let i = *next;
                    *next += 1;
                    i
                };
                let Some(&(x, y)) = factors.get(taken) else {
                    return;
                };
                let p = multiply(x, y, cutoff, 1);
                *results[taken].lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
            });
        }
    });
    results.map(|r| {
        r.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .expect("every product was taken")
    })
}
