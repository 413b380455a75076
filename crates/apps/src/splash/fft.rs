//! FFT: SPLASH-2's six-step 1-D FFT of `n` complex doubles, n = 2^m with
//! m even (the seed's 2^20), as Bailey's algorithm for machines where a
//! processor's memory is near and everyone else's far.
//!
//! The n points are a √n × √n matrix, row-major: point k = k1 + √n·k2 is
//! row k2, column k1. Three such matrices live in shared memory — the data
//! `x`, the `scratch` the transposes write to (it ends with the result),
//! and the `twiddles` W^(k1·j1) at (k1, j1), W = e^(−2πi/n) (SPLASH-2's
//! `umain2`) — and process p owns the same contiguous band of rows in
//! each, as even as can be, homed on its node. With T the transpose and F
//! a length-√n FFT of each of a process's rows:
//!
//! 1. T: `scratch` ← `x`ᵀ; now row k1 holds x[k1 + √n·k2] for every k2.
//! 2. F on `scratch`, then each element (k1, j1) × W^(k1·j1) (the
//!    twiddle step); a barrier.
//! 3. T: `x` ← `scratch`ᵀ.
//! 4. F on `x`; row j1 now holds X[j1 + √n·j2] for every j2; a barrier.
//! 5. T: `scratch` ← `x`ᵀ, the transform in natural order.
//!
//! A transpose is blocked: process p writes its rows of the destination
//! alone, copying from each process q (q = p+1, p+2, … around, as SPLASH-2
//! staggers them so that not all read from one at once) the block of q's
//! rows and p's columns, in tiles that stay in cache. The row FFTs and the
//! twiddles are local. SPLASH-2 puts a barrier after every step; two do:
//! within steps 1–2 and 3–4 a process touches only its own rows of the
//! matrix it writes, and each barrier separates a transpose's reads of a
//! matrix from the next writes to it (the runner's ends step 5).
//!
//! Sharing: each transpose is all to all — a process reads (P−1)/P of the
//! matrix from the others' rows, a coherence unit (8 KiB, half a row at
//! the seed's size) at a time, and writes only its own rows, at home.
//!
//! Checked in process 0 against rustfft's transform of the same input,
//! run here alone, and by rustfft's inverse of our result back to the
//! input: both to a relative 1e-12 in the 2-norm. The two are not equal
//! bit for bit, the six steps rounding in another order; their rounding
//! errors are near 1e-16·log2 n, and a single wrong point of 2^12 moves
//! the norm by about 2^−6.

use super::parmacs::{Env, ParmacsError};
use super::{mix, part, part_mut, share, Kernel};
use rustfft::num_complex::Complex64;
use rustfft::FftPlanner;
use std::f64::consts::PI;
use std::ops::Range;
use std::sync::Arc;
use threadwire_dsm::{DsmError, Region};

/// A point in shared memory: real and imaginary parts (a plain-data
/// `Complex64`, which it is cast to for arithmetic).
type Point = [f64; 2];

/// Tiles of the transposes, in points per side: a tile of the source and
/// one of the destination, 16 KiB each, stay in cache.
const TILE: usize = 32;

/// The relative error allowed by the check (module docs).
const TOLERANCE: f64 = 1e-12;

/// Points to transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// How many: a power of four.
    pub points: usize,
}

impl Size {
    /// The seed's size (2^20 points), or `--small`'s (2^12).
    pub fn of(small: bool) -> Size {
        Size {
            points: if small { 1 << 12 } else { 1 << 20 },
        }
    }

    /// √n: the rows of the matrix, and its columns.
    pub fn side(self) -> usize {
        1 << (self.points.trailing_zeros() / 2)
    }
}

/// Input point `k`: real and imaginary parts in [−1, 1).
fn input(k: usize) -> Complex64 {
    let unit = |v: u64| (v >> 11) as f64 / (1u64 << 52) as f64 - 1.0;
    Complex64::new(
        unit(mix(4096, 2 * k as u64)),
        unit(mix(4096, 2 * k as u64 + 1)),
    )
}

/// W^e for W = e^(−2πi/n), e reduced mod n so that the angle is exact.
fn root(e: usize, n: usize) -> Complex64 {
    Complex64::from_polar(1.0, -2.0 * PI * (e % n) as f64 / n as f64)
}

fn as_complex(points: &[Point]) -> &[Complex64] {
    // SAFETY: `Complex64` is `#[repr(C)]` with fields re, im (num-complex
    // guarantees it): the layout and alignment of `[f64; 2]`.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
}

fn as_complex_mut(points: &mut [Point]) -> &mut [Complex64] {
    // SAFETY: as in `as_complex`; the borrow is carried over.
    unsafe { std::slice::from_raw_parts_mut(points.as_mut_ptr().cast(), points.len()) }
}

/// The program's shared state.
pub struct Fft {
    size: Size,
    x: Region<Point>,
    scratch: Region<Point>,
    twiddles: Region<Point>,
    /// The length-√n transform of a row, planned once (SPLASH-2's `umain`).
    row_fft: Arc<dyn rustfft::Fft<f64>>,
}

impl Fft {
    /// Allocates the three matrices, each process's rows homed on its
    /// node, and plans the row transform (PARMACS step 1).
    pub fn new(env: &Env, small: bool) -> Result<Fft, ParmacsError> {
        let size = Size::of(small);
        Ok(Fft {
            size,
            x: env.g_malloc_blocks(size.points)?,
            scratch: env.g_malloc_blocks(size.points)?,
            twiddles: env.g_malloc_blocks(size.points)?,
            row_fft: FftPlanner::new().plan_fft_forward(size.side()),
        })
    }

    /// Process `pid`'s band of rows.
    fn band(&self, env: &Env, pid: usize) -> Range<usize> {
        share(self.size.side(), env.processes(), pid)
    }

    /// The points of rows `rows`.
    fn points(&self, rows: &Range<usize>) -> Range<usize> {
        let side = self.size.side();
        rows.start * side..rows.end * side
    }

    /// Process `pid`'s rows of `to` ← its columns of `from`, block by
    /// block (module docs).
    ///
    /// # Safety
    ///
    /// Until the next barrier, nobody writes `from`, and nobody else reads
    /// or writes this process's rows of `to`.
    unsafe fn transpose(&self, env: &Env, pid: usize, from: &Region<Point>, to: &Region<Point>) {
        let side = self.size.side();
        let processes = env.processes();
        let mine = self.band(env, pid);
        // SAFETY: the caller keeps others from this process's rows of `to`.
        let to = as_complex_mut(unsafe { part_mut(to, self.points(&mine)) });
        for q in (1..=processes).map(|k| (pid + k) % processes) {
            let theirs = self.band(env, q);
            // SAFETY: the caller keeps writers from `from`.
            let from = as_complex(unsafe { part(from, self.points(&theirs)) });
            for r0 in (0..theirs.len()).step_by(TILE) {
                for c0 in (0..mine.len()).step_by(TILE) {
                    for r in r0..(r0 + TILE).min(theirs.len()) {
                        let source = &from[r * side + mine.start..][..mine.len()];
                        for c in c0..(c0 + TILE).min(mine.len()) {
                            to[c * side + theirs.start + r] = source[c];
                        }
                    }
                }
            }
        }
    }

    /// The length-√n FFT of each of process `pid`'s rows of `m`, each
    /// then multiplied by its twiddles if `twiddle`.
    ///
    /// # Safety
    ///
    /// Until the next barrier, nobody else reads or writes this process's
    /// rows of `m`, and nobody writes the twiddles.
    unsafe fn row_ffts(&self, env: &Env, pid: usize, m: &Region<Point>, twiddle: bool) {
        let side = self.size.side();
        let points = self.points(&self.band(env, pid));
        // SAFETY: the caller keeps others from these rows.
        let rows = as_complex_mut(unsafe { part_mut(m, points.clone()) });
        // SAFETY: the caller keeps writers from the twiddles.
        let twiddles = as_complex(unsafe { part(&self.twiddles, points) });
        let mut work = vec![Complex64::default(); self.row_fft.get_inplace_scratch_len()];
        for (row, w) in rows.chunks_exact_mut(side).zip(twiddles.chunks_exact(side)) {
            self.row_fft.process_with_scratch(row, &mut work);
            if twiddle {
                for (a, w) in row.iter_mut().zip(w) {
                    *a *= w;
                }
            }
        }
    }

    /// Whether `ours` is the transform of the input (module docs).
    fn verify(&self, ours: &[Complex64]) -> bool {
        let n = self.size.points;
        let x: Vec<Complex64> = (0..n).map(input).collect();
        let mut planner = FftPlanner::new();
        let mut want = x.clone();
        planner.plan_fft_forward(n).process(&mut want);
        let mut back = ours.to_vec();
        planner.plan_fft_inverse(n).process(&mut back);
        let scale = 1.0 / n as f64;
        let inverse = back.iter().map(|b| b * scale);
        relative_error(ours.iter().copied(), &want) <= TOLERANCE
            && relative_error(inverse, &x) <= TOLERANCE
    }
}

/// ‖got − want‖₂ / ‖want‖₂.
fn relative_error(got: impl Iterator<Item = Complex64>, want: &[Complex64]) -> f64 {
    let (mut error, mut norm) = (0.0, 0.0);
    for (g, w) in got.zip(want) {
        error += (g - w).norm_sqr();
        norm += w.norm_sqr();
    }
    (error / norm).sqrt()
}

impl Kernel for Fft {
    fn size(&self) -> String {
        let side = self.size.side();
        format!(
            "{} complex points, a {side}x{side} matrix",
            self.size.points
        )
    }

    fn initialize(&self, env: &Env, pid: usize) {
        let (n, side) = (self.size.points, self.size.side());
        let points = self.points(&self.band(env, pid));
        let first = points.start;
        // SAFETY: each process writes its own rows; nobody reads them
        // before the barrier that ends initialization.
        let (x, twiddles) = unsafe {
            (
                part_mut(&self.x, points.clone()),
                part_mut(&self.twiddles, points),
            )
        };
        for (k, (x, w)) in x.iter_mut().zip(twiddles).enumerate() {
            let k = first + k;
            let (z, t) = (input(k), root((k / side) * (k % side), n));
            *x = [z.re, z.im];
            *w = [t.re, t.im];
        }
    }

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let (x, scratch) = (&self.x, &self.scratch);
        // SAFETY: each process writes only its own rows of a matrix, and
        // reads others' rows only in a transpose; the barriers separate
        // each transpose's reads of a matrix from the next writes to it
        // (module docs).
        unsafe {
            self.transpose(env, pid, x, scratch);
            self.row_ffts(env, pid, scratch, true);
        }
        env.barrier()?;
        // SAFETY: as above.
        unsafe {
            self.transpose(env, pid, scratch, x);
            self.row_ffts(env, pid, x, false);
        }
        env.barrier()?;
        // SAFETY: as above.
        unsafe { self.transpose(env, pid, x, scratch) };
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        // SAFETY: nobody writes the result while process 0 checks it.
        let ours = as_complex(unsafe { part(&self.scratch, 0..self.scratch.len()) });
        (
            self.verify(ours),
            "rustfft forward and back, to 1e-12 of the norm",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The six steps, run by one process over a whole matrix, without the
    /// shared memory.
    fn six_steps(x: &[Complex64]) -> Vec<Complex64> {
        let n = x.len();
        let side = Size { points: n }.side();
        let transpose = |m: &[Complex64]| -> Vec<Complex64> {
            (0..n).map(|k| m[(k % side) * side + k / side]).collect()
        };
        let fft = FftPlanner::new().plan_fft_forward(side);
        let mut m = transpose(x);
        fft.process(&mut m);
        for (k, a) in m.iter_mut().enumerate() {
            *a *= root((k / side) * (k % side), n);
        }
        let mut m = transpose(&m);
        fft.process(&mut m);
        transpose(&m)
    }

    #[test]
    fn the_six_steps_are_the_transform() {
        let n = 1 << 8;
        let x: Vec<Complex64> = (0..n).map(input).collect();
        let mut want = x.clone();
        FftPlanner::new().plan_fft_forward(n).process(&mut want);
        let got = six_steps(&x);
        assert!(relative_error(got.into_iter(), &want) <= TOLERANCE);
    }

    #[test]
    fn the_sizes_are_squares() {
        for small in [false, true] {
            let s = Size::of(small);
            assert_eq!(s.side() * s.side(), s.points);
        }
    }
}
