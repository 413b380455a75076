//! One worker's share of the distributed DIF transform, without messages:
//! where its rows lie ([`Layout`]), the twiddle factors it needs
//! ([`Twiddles`]), its butterflies ([`butterflies`], [`local_dif`]) and the
//! host's final reordering ([`bit_reversed`]). The indexing is derived in
//! the module docs of [`super`]; the unit tests run every worker of a
//! transform in one thread, exchanges included, against rustfft.

use rustfft::num_complex::Complex64;
use std::f64::consts::PI;

/// A complex vector in split layout: real parts in one vector, imaginary
/// parts in another, so that each moves as a plain `Vec<f64>` in a
/// message (and within a node without a copy).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Split {
    /// Real parts.
    pub re: Vec<f64>,
    /// Imaginary parts, as many as real parts.
    pub im: Vec<f64>,
}

impl Split {
    /// `values` in split layout.
    pub fn from_complex(values: &[Complex64]) -> Split {
        Split {
            re: values.iter().map(|c| c.re).collect(),
            im: values.iter().map(|c| c.im).collect(),
        }
    }

    /// The values as complex numbers.
    pub fn to_complex(&self) -> Vec<Complex64> {
        self.re
            .iter()
            .zip(&self.im)
            .map(|(&re, &im)| Complex64::new(re, im))
            .collect()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.re.len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.re.is_empty()
    }

    /// A copy of `len` values from `first`.
    pub fn range(&self, first: usize, len: usize) -> Split {
        Split {
            re: self.re[first..first + len].to_vec(),
            im: self.im[first..first + len].to_vec(),
        }
    }

    /// Appends `other`'s values.
    pub fn append(&mut self, other: &Split) {
        self.re.extend_from_slice(&other.re);
        self.im.extend_from_slice(&other.im);
    }
}

/// Where worker `worker` of `workers` stands in a transform of `points`
/// points (both powers of two, `points >= 2 * workers`; checked by
/// [`super::Config::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Points M of a set.
    pub points: usize,
    /// Workers P that share a set.
    pub workers: usize,
    /// This worker's index, `0..workers`.
    pub worker: usize,
}

/// What a worker does at one exchange step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The worker it trades with.
    pub partner: usize,
    /// Whether it keeps its sums X and receives its partner's as its new
    /// B (the lower worker of the pair), or keeps its differences Y and
    /// receives its partner's as its new A.
    pub keeps_sums: bool,
}

impl Layout {
    /// Butterfly rows R = M / 2P of each worker: the length of A and of B.
    pub fn rows(&self) -> usize {
        self.points / (2 * self.workers)
    }

    /// Computation steps: log2 M.
    pub fn steps(&self) -> u32 {
        self.points.trailing_zeros()
    }

    /// Exchange steps: log2 P (log2 2N with two threads on each of N
    /// nodes), one after each of the first log2 P computation steps.
    pub fn exchanges(&self) -> u32 {
        self.workers.trailing_zeros()
    }

    /// The first row of this worker: its A is `x[first..first + R]` and its
    /// B `x[M/2 + first..M/2 + first + R]` of the input.
    pub fn first_row(&self) -> usize {
        self.worker * self.rows()
    }

    /// The exchange after computation step `step < exchanges()`, at worker
    /// distance d = P·2^−(step+1) (the seed's 2N·2^−(step+1)).
    pub fn exchange(&self, step: u32) -> Exchange {
        let d = self.workers >> (step + 1);
        if self.worker % (2 * d) < d {
            Exchange {
                partner: self.worker + d,
                keeps_sums: true,
            }
        } else {
            Exchange {
                partner: self.worker - d,
                keeps_sums: false,
            }
        }
    }
}

/// W^k = e^(−2πik/M), the forward transform's twiddle factor (as rustfft's).
fn twiddle(k: usize, points: usize) -> (f64, f64) {
    let (sin, cos) = (-2.0 * PI * k as f64 / points as f64).sin_cos();
    (cos, sin)
}

/// The twiddle factors one worker uses, computed once before the timed
/// sets (as an FFT library plans): R for each exchanged step and R for
/// all the local steps together — a share of M, not M.
#[derive(Clone, Debug)]
pub struct Twiddles {
    /// For exchanged step s, row g of the worker's rows: W^((g mod h)·2^s),
    /// h = M·2^−(s+1).
    pub exchanged: Vec<Split>,
    /// For the local steps on the worker's block of L = 2R points:
    /// W_L^j = W^(P·j), j < R; local step t uses every 2^t-th.
    pub local: Split,
}

impl Twiddles {
    /// The factors of `layout`'s worker.
    pub fn new(layout: &Layout) -> Twiddles {
        let (m, r) = (layout.points, layout.rows());
        let first = layout.first_row();
        let factors = |ks: &mut dyn Iterator<Item = usize>| {
            let mut s = Split::default();
            for k in ks {
                let (re, im) = twiddle(k, m);
                s.re.push(re);
                s.im.push(im);
            }
            s
        };
        let exchanged = (0..layout.exchanges())
            .map(|step| {
                let half = m >> (step + 1);
                factors(&mut (first..first + r).map(|g| (g % half) << step))
            })
            .collect();
        let local = factors(&mut (0..r).map(|j| j * layout.workers));
        Twiddles { exchanged, local }
    }
}

/// One computation step on rows: X = A + B into `a`, Y = (A − B)·W into
/// `b`, row i with twiddle `w[i]`.
pub fn butterflies(a: &mut Split, b: &mut Split, w: &Split) {
    butterfly_rows(&mut a.re, &mut a.im, &mut b.re, &mut b.im, w, 1);
}

/// Row i: (A, B) ← (A + B, (A − B)·w[i·stride]); all slices as long as `ar`.
#[inline]
fn butterfly_rows(
    ar: &mut [f64],
    ai: &mut [f64],
    br: &mut [f64],
    bi: &mut [f64],
    w: &Split,
    stride: usize,
) {
    let wr = w.re.iter().step_by(stride);
    let wi = w.im.iter().step_by(stride);
    let rows = ar.iter_mut().zip(ai).zip(br.iter_mut().zip(bi));
    for (((ar, ai), (br, bi)), (wr, wi)) in rows.zip(wr.zip(wi)) {
        let (dr, di) = (*ar - *br, *ai - *bi);
        *ar += *br;
        *ai += *bi;
        *br = dr * wr - di * wi;
        *bi = dr * wi + di * wr;
    }
}

/// The last log2 L computation steps, all local: the DIF transform of the
/// worker's contiguous block `x` of L = 2R points (A then B), in place,
/// its output in bit-reversed order within the block. `w` is
/// [`Twiddles::local`].
pub fn local_dif(x: &mut Split, w: &Split) {
    let n = x.len();
    let (mut half, mut stride) = (n / 2, 1);
    while half >= 1 {
        let blocks =
            x.re.chunks_exact_mut(2 * half)
                .zip(x.im.chunks_exact_mut(2 * half));
        for (re, im) in blocks {
            let (ar, br) = re.split_at_mut(half);
            let (ai, bi) = im.split_at_mut(half);
            butterfly_rows(ar, ai, br, bi, w, stride);
        }
        half /= 2;
        stride *= 2;
    }
}

/// `x` (a power of two long) reordered by bit-reversed index: the DIF
/// output, gathered block after block, into natural order.
pub fn bit_reversed(x: &[Complex64]) -> Vec<Complex64> {
    let bits = x.len().trailing_zeros();
    if bits == 0 {
        return x.to_vec();
    }
    (0..x.len())
        .map(|k| x[k.reverse_bits() >> (usize::BITS - bits)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn signal(points: usize, seed: u64) -> Vec<Complex64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..points)
            .map(|_| Complex64::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
            .collect()
    }

    fn reference(x: &[Complex64]) -> Vec<Complex64> {
        let mut y = x.to_vec();
        rustfft::FftPlanner::new()
            .plan_fft_forward(y.len())
            .process(&mut y);
        y
    }

    fn max_difference(x: &[Complex64], y: &[Complex64]) -> f64 {
        x.iter()
            .zip(y)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max)
    }

    /// Every worker of the transform in turn, step by step, exchanges
    /// done by swapping halves between the pair: the messages the app
    /// sends, without the runtime.
    fn distributed(x: &[Complex64], workers: usize) -> Vec<Complex64> {
        let points = x.len();
        let layouts: Vec<Layout> = (0..workers)
            .map(|worker| Layout {
                points,
                workers,
                worker,
            })
            .collect();
        let input = Split::from_complex(x);
        let mut rows: Vec<(Split, Split)> = layouts
            .iter()
            .map(|l| {
                let first = l.first_row();
                (
                    input.range(first, l.rows()),
                    input.range(points / 2 + first, l.rows()),
                )
            })
            .collect();
        let plans: Vec<Twiddles> = layouts.iter().map(Twiddles::new).collect();
        for step in 0..layouts[0].exchanges() {
            for (w, (a, b)) in rows.iter_mut().enumerate() {
                butterflies(a, b, &plans[w].exchanged[step as usize]);
            }
            let before = rows.clone();
            for (w, (a, b)) in rows.iter_mut().enumerate() {
                let e = layouts[w].exchange(step);
                assert_eq!(layouts[e.partner].exchange(step).partner, w);
                if e.keeps_sums {
                    *b = before[e.partner].0.clone();
                } else {
                    *a = before[e.partner].1.clone();
                }
            }
        }
        let mut out = Split::default();
        for (w, (a, b)) in rows.iter_mut().enumerate() {
            a.append(b);
            local_dif(a, &plans[w].local);
            out.append(a);
        }
        bit_reversed(&out.to_complex())
    }

    #[test]
    fn one_worker_is_the_serial_dif_transform() {
        for bits in 1..=10 {
            let x = signal(1 << bits, bits as u64);
            let error = max_difference(&distributed(&x, 1), &reference(&x));
            assert!(
                error < 1e-12 * (1 << bits) as f64,
                "M = 2^{bits}: {error:e}"
            );
        }
    }

    #[test]
    fn every_split_of_the_rows_matches_rustfft() {
        for bits in 1..=9 {
            let x = signal(1 << bits, 100 + bits as u64);
            let expected = reference(&x);
            // P up to M/2: one row a worker at the extreme.
            for workers in (0..bits).map(|p| 1usize << p) {
                let error = max_difference(&distributed(&x, workers), &expected);
                assert!(
                    error < 1e-12 * 512.0,
                    "M = 2^{bits}, P = {workers}: {error:e}"
                );
            }
        }
    }

    #[test]
    fn an_impulse_gives_a_flat_spectrum() {
        let mut x = vec![Complex64::new(0.0, 0.0); 64];
        x[0] = Complex64::new(1.0, 0.0);
        for y in distributed(&x, 8) {
            assert!((y - Complex64::new(1.0, 0.0)).norm() < 1e-15, "{y}");
        }
    }

    #[test]
    fn exchanges_halve_the_distance_and_the_last_pairs_neighbours() {
        let l = |worker| Layout {
            points: 512,
            workers: 8,
            worker,
        };
        assert_eq!((l(0).steps(), l(0).exchanges(), l(0).rows()), (9, 3, 32));
        let partners = |step| {
            (0..8)
                .map(|w| l(w).exchange(step).partner)
                .collect::<Vec<_>>()
        };
        assert_eq!(partners(0), [4, 5, 6, 7, 0, 1, 2, 3]);
        assert_eq!(partners(1), [2, 3, 0, 1, 6, 7, 4, 5]);
        // Workers 2m and 2m+1 are the two threads of node m: a local exchange.
        assert_eq!(partners(2), [1, 0, 3, 2, 5, 4, 7, 6]);
        assert!(l(2).exchange(2).keeps_sums && !l(3).exchange(2).keeps_sums);
    }

    #[test]
    fn bit_reversal_is_an_involution() {
        let x = signal(32, 7);
        assert_eq!(bit_reversed(&bit_reversed(&x)), x);
        assert_eq!(bit_reversed(&x)[1], x[16]);
        assert_eq!(bit_reversed(&x[..1]), x[..1]);
    }
}
