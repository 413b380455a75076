//! MRI: deblurring of a magnetic resonance image distorted by
//! off-resonance — the seed's application (its §4.2: each thread deblurs
//! the image around its chosen frequency points, and adds the relevant
//! portions to the final image under a global lock), on an `n × n`
//! Shepp–Logan phantom with `points` frequency points (the seed's 14 on
//! its PHANTOM image; here 256², `--small` 32² and 6).
//!
//! # The model
//!
//! The image m(x, y) is read out along x in time T = 1 (k-space row kx,
//! in order from −n/2, at t(kx) = (kx + n/2)/n), while a smooth field map
//! ω(x, y) of off-resonance frequencies turns each pixel's phase:
//! s(kx, ky) = Σ m(x, y)·e^(−iω(x, y)t(kx))·e^(−2πi(kx·x + ky·y)/n). Its
//! plain inverse transform is the blurred image: every pixel shifted
//! along x by ω/2π pixels and smeared where ω varies. Every node computes
//! s once in step 1, as every node of the seed's would read the
//! scanner's file ([`Mri::new`]; O(n³), untimed).
//!
//! # The reconstruction
//!
//! Frequency-segmented conjugate phase: frequency points ω₀ < … <
//! ω_L−1 evenly spaced over the map's range, and hat weights w_l(ω)
//! (linear interpolation between neighbouring points, so each pixel has
//! at most two non-zero weights). For each point l:
//!
//! 1. demodulate the data, s·e^(+iω_l·t(kx)), and transform it back
//!    along kx (one inverse FFT per ky: `along_kx`);
//! 2. transform along ky the image rows x of this work item (`band`);
//! 3. weight them, w_l(ω(x, y))·image_l(x, y)/n², where w_l is not zero
//!    (`weigh`), and under lock 0 add them to the shared output
//!    (`add`).
//!
//! The output's magnitude is the deblurred image.
//!
//! # Partition and sharing
//!
//! The work items are (point, band of image rows): one band per point
//! when P ≤ L, else ⌈P / L⌉ bands per point, each band's process
//! repeating step 1 for its point (step 2 and the additions are split).
//! Items are shared out in order, contiguous per process. The FFTs run in
//! private memory (rustfft); the only shared data is the output image,
//! updated by each item under the lock — the seed's pattern, with its
//! very high ratio of computation to communication. A pixel's value is
//! at most two additions to zero, which commute, so the order of the
//! lock's holders does not change it.
//!
//! Checked in process 0: against the reconstruction run here alone, item
//! by item, to 1e-9 of the largest magnitude (the sums are exact whatever
//! the order, but rustfft chooses its kernels by the CPU's features at
//! run time, which may differ between hosts); and the deblurred image
//! must be closer to the phantom (root-mean-square) than the blurred one.

use super::parmacs::{Env, ParmacsError};
use super::{part, part_mut, share, Kernel};
use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};
use std::f64::consts::PI;
use std::sync::Arc;
use threadwire_dsm::{DsmError, Region};

/// Image and frequency points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// The image is n × n, n even.
    pub n: usize,
    /// Frequency points.
    pub points: usize,
}

impl Size {
    /// The seed's size, or `--small`'s.
    pub fn of(small: bool) -> Size {
        match small {
            false => Size { n: 256, points: 14 },
            true => Size { n: 32, points: 6 },
        }
    }

    /// The most processes: one image row of one point each.
    pub fn most_processes(self) -> usize {
        self.n * self.points
    }
}

/// The modified Shepp–Logan phantom's ellipses: intensity, semi-axes,
/// centre (in [−1, 1]²) and rotation in degrees.
const ELLIPSES: [[f64; 6]; 10] = [
    [1.0, 0.69, 0.92, 0.0, 0.0, 0.0],
    [-0.8, 0.6624, 0.874, 0.0, -0.0184, 0.0],
    [-0.2, 0.11, 0.31, 0.22, 0.0, -18.0],
    [-0.2, 0.16, 0.41, -0.22, 0.0, 18.0],
    [0.1, 0.21, 0.25, 0.0, 0.35, 0.0],
    [0.1, 0.046, 0.046, 0.0, 0.1, 0.0],
    [0.1, 0.046, 0.046, 0.0, -0.1, 0.0],
    [0.1, 0.046, 0.023, -0.08, -0.605, 0.0],
    [0.1, 0.023, 0.023, 0.0, -0.606, 0.0],
    [0.1, 0.023, 0.046, 0.06, -0.605, 0.0],
];

/// Pixel (x, y)'s centre in [−1, 1]².
fn position(n: usize, x: usize, y: usize) -> (f64, f64) {
    let at = |k: usize| (2 * k + 1) as f64 / n as f64 - 1.0;
    (at(x), at(y))
}

/// The phantom at pixel (x, y).
fn phantom(n: usize, x: usize, y: usize) -> f64 {
    let (u, v) = position(n, x, y);
    ELLIPSES
        .iter()
        .filter(|&&[_, a, b, x0, y0, degrees]| {
            let (sin, cos) = degrees.to_radians().sin_cos();
            let (du, dv) = (u - x0, v - y0);
            let (p, q) = (du * cos + dv * sin, -du * sin + dv * cos);
            (p / a).powi(2) + (q / b).powi(2) <= 1.0
        })
        .map(|e| e[0])
        .sum()
}

/// The field map at pixel (x, y), in radians per readout: smooth, mostly
/// a gradient along x, up to about two pixels' shift.
fn field(n: usize, x: usize, y: usize) -> f64 {
    let (u, v) = position(n, x, y);
    2.0 * PI * (1.5 * u + 0.5 * (u * u + v * v) - 0.25)
}

/// Row kx's time in the readout (FFT order: kx ≥ n/2 is kx − n).
fn readout_time(n: usize, kx: usize) -> f64 {
    let signed = if kx < n / 2 {
        kx as f64
    } else {
        kx as f64 - n as f64
    };
    (signed + (n / 2) as f64) / n as f64
}

/// Point l's hat weight at frequency ω among evenly spaced `frequencies`.
fn hat(frequencies: &[f64], l: usize, omega: f64) -> f64 {
    let step = frequencies[1] - frequencies[0];
    (1.0 - (omega - frequencies[l]).abs() / step).max(0.0)
}

/// The image rows of band `band` of `bands`.
fn band(n: usize, bands: usize, band: usize) -> std::ops::Range<usize> {
    share(n, bands, band)
}

/// The program's state: the node's copy of the data, and the shared
/// output.
pub struct Mri {
    size: Size,
    /// Bands per point.
    bands: usize,
    /// s, transposed: `data[ky·n + kx]`.
    data: Arc<Vec<Complex64>>,
    /// ω at every pixel, `[x·n + y]`.
    field: Vec<f64>,
    /// The frequency points.
    frequencies: Vec<f64>,
    inverse: Arc<dyn Fft<f64>>,
    /// The deblurred image, complex, `[x·n + y]` as (re, im).
    output: Region<f64>,
}

impl Mri {
    /// Allocates the output (PARMACS step 1) and computes the node's copy
    /// of the data.
    pub fn new(env: &Env, small: bool) -> Result<Mri, ParmacsError> {
        let size = Size::of(small);
        let n = size.n;
        let mut planner = FftPlanner::new();
        let field: Vec<f64> = (0..n * n).map(|k| field(n, k / n, k % n)).collect();
        let (low, high) = field
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &w| (l.min(w), h.max(w)));
        let step = (high - low) / (size.points - 1) as f64;
        Ok(Mri {
            size,
            bands: env.processes().div_ceil(size.points),
            data: Arc::new(acquire(size.n, &field, planner.plan_fft_forward(n))),
            frequencies: (0..size.points).map(|l| low + l as f64 * step).collect(),
            field,
            inverse: planner.plan_fft_inverse(n),
            output: env.g_malloc(2 * n * n)?,
        })
    }

    /// Step 1 for frequency `omega`: the data demodulated and transformed
    /// along kx, `[ky·n + x]`.
    fn along_kx(&self, omega: f64) -> Vec<Complex64> {
        let n = self.size.n;
        let turn: Vec<Complex64> = (0..n)
            .map(|kx| Complex64::from_polar(1.0, omega * readout_time(n, kx)))
            .collect();
        let mut rows: Vec<Complex64> = self
            .data
            .chunks_exact(n)
            .flat_map(|row| row.iter().zip(&turn).map(|(s, t)| s * t))
            .collect();
        self.inverse.process(&mut rows);
        rows
    }

    /// Step 2: rows `rows` of the image from step 1's result, `[x][y]`.
    fn along_ky(&self, transformed: &[Complex64], rows: std::ops::Range<usize>) -> Vec<Complex64> {
        let n = self.size.n;
        let mut image: Vec<Complex64> = rows
            .flat_map(|x| (0..n).map(move |ky| transformed[ky * n + x]))
            .collect();
        self.inverse.process(&mut image);
        image
    }

    /// Step 3's contributions, made before taking the lock: point l's
    /// image rows `rows`, weighted and scaled, with their pixels, where
    /// the weight is not zero.
    fn weigh(
        &self,
        l: usize,
        rows: std::ops::Range<usize>,
        image: &[Complex64],
    ) -> Vec<(usize, Complex64)> {
        let n = self.size.n;
        let scale = 1.0 / (n * n) as f64;
        let mut contributions = Vec::new();
        for (x, row) in rows.zip(image.chunks_exact(n)) {
            for (y, value) in row.iter().enumerate() {
                let w = hat(&self.frequencies, l, self.field[x * n + y]);
                if w > 0.0 {
                    contributions.push((x * n + y, value * (w * scale)));
                }
            }
        }
        contributions
    }

    /// The work items, (point, band), of process `pid`.
    fn items(&self, processes: usize, pid: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        share(self.size.points * self.bands, processes, pid)
            .map(|k| (k / self.bands, k % self.bands))
    }

    /// The reconstruction run here alone, item by item.
    fn sequential(&self) -> Vec<f64> {
        let n = self.size.n;
        let mut output = vec![0.0; 2 * n * n];
        for l in 0..self.size.points {
            let transformed = self.along_kx(self.frequencies[l]);
            for b in 0..self.bands {
                let rows = band(n, self.bands, b);
                let image = self.along_ky(&transformed, rows.clone());
                add(&self.weigh(l, rows, &image), &mut output);
            }
        }
        output
    }

    /// Root-mean-square distance of `image`'s magnitudes from the
    /// phantom's.
    fn distance(&self, image: impl Iterator<Item = f64>) -> f64 {
        let n = self.size.n;
        let sum: f64 = image
            .zip((0..n * n).map(|k| phantom(n, k / n, k % n)))
            .map(|(got, want)| (got - want).powi(2))
            .sum();
        (sum / (n * n) as f64).sqrt()
    }
}

/// Step 3 proper: `contributions` added into `output` (the whole image,
/// `[x·n + y]` as (re, im)).
fn add(contributions: &[(usize, Complex64)], output: &mut [f64]) {
    for &(pixel, value) in contributions {
        output[2 * pixel] += value.re;
        output[2 * pixel + 1] += value.im;
    }
}

/// The data s of the node's copy, transposed (module docs): for each kx,
/// the sum over x for every y, then a forward FFT along y.
fn acquire(n: usize, field: &[f64], forward: Arc<dyn Fft<f64>>) -> Vec<Complex64> {
    let image: Vec<f64> = (0..n * n).map(|k| phantom(n, k / n, k % n)).collect();
    let mut data = vec![Complex64::default(); n * n];
    let mut column = vec![Complex64::default(); n];
    for kx in 0..n {
        let t = readout_time(n, kx);
        let along_x = 2.0 * PI * kx as f64 / n as f64;
        column.fill(Complex64::default());
        for x in 0..n {
            for (y, sum) in column.iter_mut().enumerate() {
                let m = image[x * n + y];
                if m != 0.0 {
                    *sum += Complex64::from_polar(m, -(field[x * n + y] * t + along_x * x as f64));
                }
            }
        }
        forward.process(&mut column);
        for (ky, s) in column.iter().enumerate() {
            data[ky * n + kx] = *s;
        }
    }
    data
}

impl Kernel for Mri {
    fn size(&self) -> String {
        let s = self.size;
        format!("{0}x{0} phantom, {1} frequency points", s.n, s.points)
    }

    fn initialize(&self, _env: &Env, _pid: usize) {}

    fn compute(&self, env: &Env, pid: usize) -> Result<(), DsmError> {
        let n = self.size.n;
        let mut transformed: Option<(usize, Vec<Complex64>)> = None;
        for (l, b) in self.items(env.processes(), pid) {
            if transformed.as_ref().is_none_or(|(point, _)| *point != l) {
                transformed = Some((l, self.along_kx(self.frequencies[l])));
            }
            let Some((_, rows_done)) = &transformed else {
                unreachable!("made above")
            };
            let rows = band(n, self.bands, b);
            let image = self.along_ky(rows_done, rows.clone());
            let contributions = self.weigh(l, rows, &image);
            let held = env.lock(0)?;
            // SAFETY: the lock orders every process's additions.
            let output = unsafe { part_mut(&self.output, 0..self.output.len()) };
            add(&contributions, output);
            drop(held);
        }
        Ok(())
    }

    fn check(&self) -> (bool, &'static str) {
        let n = self.size.n;
        // SAFETY: nobody writes the output while process 0 checks it.
        let ours = unsafe { part(&self.output, 0..self.output.len()) };
        let want = self.sequential();
        let largest = want
            .chunks_exact(2)
            .map(|c| c[0].hypot(c[1]))
            .fold(0.0, f64::max);
        let close = ours
            .iter()
            .zip(&want)
            .all(|(a, b)| (a - b).abs() <= 1e-9 * largest);
        let magnitudes = |image: &[f64]| {
            image
                .chunks_exact(2)
                .map(|c| c[0].hypot(c[1]))
                .collect::<Vec<_>>()
        };
        let deblurred = self.distance(magnitudes(ours).into_iter());
        let blurred_image = self.along_ky(&self.along_kx(0.0), 0..n);
        let scale = 1.0 / (n * n) as f64;
        let blurred = self.distance(blurred_image.iter().map(|v| v.norm() * scale));
        (
            close && deblurred < blurred,
            "the reconstruction run sequentially to 1e-9, and closer to the phantom than the blurred image",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hat_weights_add_up_to_one_and_at_most_two_are_not_zero() {
        let frequencies: Vec<f64> = (0..6).map(|l| -3.0 + 1.5 * l as f64).collect();
        for k in 0..=100 {
            let omega = -3.0 + 7.5 * k as f64 / 100.0;
            let weights: Vec<f64> = (0..6).map(|l| hat(&frequencies, l, omega)).collect();
            assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{omega}");
            assert!(weights.iter().filter(|w| **w > 0.0).count() <= 2);
        }
    }
}
