//! The standard triple loop, in i-k-j order so that the inner loop runs
//! along rows of B and C with unit stride: the reference every other
//! kernel is tested against.

use crate::matmul::matrix::View;

/// `c += a × b`; `c` is `a.rows × b.cols`, row-major and contiguous.
pub fn multiply_add(a: View<'_>, b: View<'_>, c: &mut [f64]) {
    let n = b.cols;
    debug_assert_eq!(a.cols, b.rows);
    debug_assert_eq!(c.len(), a.rows * n);
    for i in 0..a.rows {
        let ci = &mut c[i * n..(i + 1) * n];
        for (k, &aik) in a.row(i).iter().enumerate() {
            for (cij, bkj) in ci.iter_mut().zip(b.row(k)) {
                *cij += aik * bkj;
            }
        }
    }
}
