//! The multiplication kernels a node runs on its blocks: `C += A × B` on
//! row-major f64 matrices of any shape (m × k by k × n), with a number of
//! threads.
//!
//! - [`naive`]: the triple loop, the reference of the tests;
//! - [`bmm`]: the thesis' block multiply, threads sharing blocks of rows
//!   through a work counter;
//! - [`strassen`]: Strassen–Winograd with dynamic peeling, BMM below the
//!   cutoff and for shapes far from square;
//! - [`blas`]: an optimized GEMM from crates.io, the modern reference.

pub mod blas;
pub mod bmm;
pub mod naive;
pub mod strassen;

use super::matrix::View;

/// Which kernel multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kernel {
    /// [`naive`], on one thread whatever the threads asked.
    Naive,
    /// [`bmm`].
    Bmm,
    /// [`strassen`] with the thesis' cutoff.
    Strassen,
    /// [`blas`].
    #[default]
    Blas,
}

impl Kernel {
    /// Every kernel, in the order of the command's help.
    pub const ALL: [Kernel; 4] = [Kernel::Naive, Kernel::Bmm, Kernel::Strassen, Kernel::Blas];

    /// The kernel's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Naive => "naive",
            Kernel::Bmm => "bmm",
            Kernel::Strassen => "strassen",
            Kernel::Blas => "blas",
        }
    }

    /// `c += a × b` on `threads` threads (at least one); `c` is
    /// `a.rows × b.cols`, row-major and contiguous.
    ///
    /// # Panics
    ///
    /// If `a.cols != b.rows` or `c` is not `a.rows × b.cols`.
    pub fn multiply_add(self, a: View<'_>, b: View<'_>, c: &mut [f64], threads: usize) {
        assert_eq!(a.cols, b.rows, "inner dimensions differ");
        assert_eq!(c.len(), a.rows * b.cols, "C is not {}x{}", a.rows, b.cols);
        match self {
            Kernel::Naive => naive::multiply_add(a, b, c),
            Kernel::Bmm => bmm::multiply_add(a, b, c, threads),
            Kernel::Strassen => strassen::multiply_add(a, b, c, strassen::DEFAULT_CUTOFF, threads),
            Kernel::Blas => blas::multiply_add(a, b, c, threads),
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel name that is none of [`Kernel::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: the kernels are naive, bmm, strassen and blas")]
pub struct UnknownKernel(pub String);

impl std::str::FromStr for Kernel {
    type Err = UnknownKernel;

    fn from_str(s: &str) -> Result<Kernel, UnknownKernel> {
        Kernel::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKernel(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::matrix::Matrix;

    fn random(rows: usize, cols: usize, seed: u64) -> Matrix {
        Matrix::from_fn(rows, cols, |i, j| crate::matmul::element(seed, i, j))
    }

    /// Every kernel on 1 and 3 threads against the naive product.
    fn agrees(m: usize, k: usize, n: usize) {
        let (a, b) = (random(m, k, 1), random(k, n, 2));
        let mut expected = Matrix::zeros(m, n);
        naive::multiply_add(a.view(), b.view(), &mut expected.data);
        for kernel in Kernel::ALL {
            for threads in [1, 3] {
                // Start from ones: the kernels add to C.
                let mut c = Matrix::from_fn(m, n, |_, _| 1.0);
                kernel.multiply_add(a.view(), b.view(), &mut c.data, threads);
                let mut want = expected.clone();
                want.data.iter_mut().for_each(|x| *x += 1.0);
                let error = c.max_difference(&want);
                assert!(
                    error <= 1e-12 * k.max(1) as f64,
                    "{kernel} on {threads} threads, {m}x{k} by {k}x{n}: error {error:e}"
                );
            }
        }
    }

    #[test]
    fn kernels_agree_on_odd_and_non_square_shapes() {
        for (m, k, n) in [
            (1, 1, 1),
            (13, 7, 5),
            (7, 13, 5),
            (2, 3, 4),
            (0, 3, 2),
            (3, 0, 2),
            (25, 25, 25),
            (31, 30, 29),
            (64, 64, 64),
            (50, 47, 53),
            (100, 200, 100),
            (101, 99, 97),
        ] {
            agrees(m, k, n);
        }
    }

    #[test]
    fn kernels_agree_on_a_scaled_800_by_1600() {
        // The 800 x 1600 shape, scaled down by 8 for debug builds.
        agrees(100, 200, 100);
        agrees(100, 200, 199);
    }

    #[test]
    fn strassen_peels_odd_dimensions_at_every_level() {
        // 2·2·2·13 + 1: odd at the top, even below, down past the cutoff.
        for size in [105, 106, 107, 211] {
            let (a, b) = (random(size, size, 3), random(size, size, 4));
            let mut expected = Matrix::zeros(size, size);
            naive::multiply_add(a.view(), b.view(), &mut expected.data);
            let cutoffs: &[usize] = if size > 200 { &[12] } else { &[1, 2, 12] };
            for &cutoff in cutoffs {
                let mut c = Matrix::zeros(size, size);
                strassen::multiply_add(a.view(), b.view(), &mut c.data, cutoff, 2);
                let error = c.max_difference(&expected);
                assert!(error <= 1e-10, "{size} cutoff {cutoff}: {error:e}");
            }
        }
    }

    #[test]
    fn strided_views_multiply_as_their_copies() {
        let a = random(20, 30, 5);
        let b = random(30, 20, 6);
        let (av, bv) = (a.view().block(3, 4, 11, 13), b.view().block(5, 2, 13, 9));
        let mut strided = Matrix::zeros(11, 9);
        let mut copied = Matrix::zeros(11, 9);
        for kernel in Kernel::ALL {
            strided.data.fill(0.0);
            copied.data.fill(0.0);
            kernel.multiply_add(av, bv, &mut strided.data, 2);
            naive::multiply_add(
                av.to_matrix().view(),
                bv.to_matrix().view(),
                &mut copied.data,
            );
            assert!(strided.max_difference(&copied) < 1e-12, "{kernel}");
        }
    }

    #[test]
    fn a_times_the_identity_is_exact_for_every_kernel() {
        // The app's elements (multiples of 2^-19) keep Strassen exact too.
        let a = random(70, 70, 7);
        for kernel in Kernel::ALL {
            let mut c = Matrix::zeros(70, 70);
            kernel.multiply_add(a.view(), Matrix::identity(70).view(), &mut c.data, 2);
            assert_eq!(c, a, "{kernel}");
        }
    }

    #[test]
    fn kernel_names_round_trip() {
        for k in Kernel::ALL {
            assert_eq!(k.name().parse::<Kernel>(), Ok(k));
        }
        assert!("gemm".parse::<Kernel>().is_err());
    }
}
