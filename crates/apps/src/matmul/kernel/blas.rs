//! The modern reference kernel: `matrixmultiply`'s `dgemm` (bluss'
//! BLIS-style packed GEMM with AVX/FMA micro-kernels, maintained on
//! crates.io), multithreaded by its `threading` feature.
//!
//! Chosen by measurement on this project's 2-core machine, n = 2048,
//! release build, both crates' own threading on 2 threads:
//! `matrixmultiply` 0.3.11 gave 55–62 GFLOP/s, `gemm` 0.18.2 (faer's
//! kernel, on a rayon pool) 30–32 GFLOP/s; at n = 1024 on one thread 37–41
//! against 17–24. It is also the smaller dependency (one crate and
//! `thread-tree`, against gemm's seven and `pulp`).
//!
//! Its thread pool is per process: sized once, at its first multiply, by
//! `MATMUL_NUM_THREADS` (else the physical cores), so the `threads`
//! argument cannot change it call by call. `threadwire apps matmul` sets
//! `MATMUL_NUM_THREADS` to `--threads` in every node's environment.

use crate::matmul::matrix::View;

/// `c += a × b`; `c` is `a.rows × b.cols`, row-major and contiguous. The
/// threads are the process' `MATMUL_NUM_THREADS` (see the module docs):
/// `_threads` is the caller's wish, for the record.
pub fn multiply_add(a: View<'_>, b: View<'_>, c: &mut [f64], _threads: usize) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    assert!(a.data.len() >= (m - 1) * a.stride + k);
    assert!(b.data.len() >= (k - 1) * b.stride + n);
    assert_eq!(c.len(), m * n);
    // SAFETY: the asserts above bound every element dgemm reads: A's
    // (m−1)·stride + k and B's (k−1)·stride + n, with column stride 1;
    // C is m·n elements with row stride n, written only by this call (it
    // is borrowed mutably), and no element of C aliases A or B (shared
    // and mutable borrows cannot overlap).
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.data.as_ptr(),
            a.stride as isize,
            1,
            b.data.as_ptr(),
            b.stride as isize,
            1,
            1.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}
