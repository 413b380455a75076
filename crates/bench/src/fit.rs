//! Hockney's straight line through a ping-pong sweep: t(n) = α + β·n.
//!
//! α is the start-up latency (Hockney's t₀), 1/β the asymptotic bandwidth
//! r∞, and n½ = α/β the size at which half of r∞ is reached (a message of
//! n½ bytes spends as long starting up as moving its bytes). These are the
//! figures the 1990s papers give for a network (Hockney, "The communication
//! challenge for MPP", Parallel Computing 20, 1994).
//!
//! # Which sizes enter the fit
//!
//! All of them, each weighted by 1/t² (least squares on the *relative*
//! residual (t − α − β·n)/t). A sweep from 1 B to 16 MiB spans seven
//! decades of time, and an unweighted fit is the fit of its largest two or
//! three sizes alone: a 1 % wobble at 16 MiB (tens of µs) moves the
//! intercept α by more than the whole start-up latency (below a µs over
//! shared memory), often below zero. Weighted by 1/t², every size counts as
//! much as any other as a fraction of its own time, which is also how the
//! timing noise scales. α then comes from the small sizes, where β·n is
//! negligible, and β from the large ones, where α is: no threshold to pick
//! per path, and none to get wrong when a protocol switch (eager to
//! rendezvous, a chunk size) moves.
//!
//! The line is a model, and one line across a protocol switch is a
//! compromise; [`Fit::rms_relative_error`] says how far the measurements
//! lie from it.

/// t(n) = α + β·n fitted to measured (size, time) points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// α: start-up latency in seconds, Hockney's t₀ (can come out negative
    /// when the points are far from a line).
    pub startup_seconds: f64,
    /// β: seconds per byte, 1/r∞.
    pub seconds_per_byte: f64,
    /// Points that entered the fit.
    pub points: usize,
    /// Root mean square of the relative residuals (t − α − β·n)/t: 0.05 is
    /// a line within about 5 % of the measurements.
    pub rms_relative_error: f64,
}

impl Fit {
    /// The line's time for `size` bytes, in seconds.
    pub fn time(&self, size: f64) -> f64 {
        self.startup_seconds + self.seconds_per_byte * size
    }

    /// r∞ = 1/β in bytes per second; `None` unless β > 0.
    pub fn bandwidth(&self) -> Option<f64> {
        (self.seconds_per_byte > 0.0).then(|| 1.0 / self.seconds_per_byte)
    }

    /// n½ = α/β in bytes, where the bandwidth is half of r∞; `None` unless
    /// α > 0 and β > 0.
    pub fn half_bandwidth_size(&self) -> Option<f64> {
        (self.startup_seconds > 0.0 && self.seconds_per_byte > 0.0)
            .then(|| self.startup_seconds / self.seconds_per_byte)
    }
}

/// Least squares of t = α + β·n over `points` of (bytes, seconds), weighted
/// by 1/t² (module docs). Points whose time is not finite and positive are
/// left out; `None` if fewer than two distinct sizes remain.
pub fn least_squares(points: impl IntoIterator<Item = (f64, f64)>) -> Option<Fit> {
    let points: Vec<(f64, f64)> = points
        .into_iter()
        .filter(|&(n, t)| n.is_finite() && t.is_finite() && t > 0.0)
        .collect();
    let weight = |t: f64| 1.0 / (t * t);
    let total: f64 = points.iter().map(|&(_, t)| weight(t)).sum();
    if points.is_empty() || !total.is_normal() {
        return None;
    }
    // Centred on the weighted means: the plain normal equations subtract
    // sums of n² near 10^14 from each other.
    let mean_n = points.iter().map(|&(n, t)| weight(t) * n).sum::<f64>() / total;
    let mean_t = points.iter().map(|&(_, t)| weight(t) * t).sum::<f64>() / total;
    let (mut spread_nn, mut spread_nt) = (0.0, 0.0);
    for &(n, t) in &points {
        spread_nn += weight(t) * (n - mean_n) * (n - mean_n);
        spread_nt += weight(t) * (n - mean_n) * (t - mean_t);
    }
    if spread_nn <= 0.0 || !spread_nn.is_normal() {
        return None;
    }
    let seconds_per_byte = spread_nt / spread_nn;
    let startup_seconds = mean_t - seconds_per_byte * mean_n;
    let squares: f64 = points
        .iter()
        .map(|&(n, t)| {
            let relative = (t - startup_seconds - seconds_per_byte * n) / t;
            relative * relative
        })
        .sum();
    Some(Fit {
        startup_seconds,
        seconds_per_byte,
        points: points.len(),
        rms_relative_error: (squares / points.len() as f64).sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    /// 1 B … 16 MiB and the classic sizes, as `bench pingpong` sweeps.
    fn sweep() -> Vec<f64> {
        crate::pingpong::sizes(24)
            .into_iter()
            .map(|n| n as f64)
            .collect()
    }

    #[test]
    fn recovers_an_exact_line() {
        // 0.5 µs start-up, 4 GB/s.
        let (alpha, beta) = (0.5e-6, 0.25e-9);
        let fit = least_squares(sweep().into_iter().map(|n| (n, alpha + beta * n))).unwrap();
        assert!(close(fit.startup_seconds, alpha), "{fit:?}");
        assert!(close(fit.seconds_per_byte, beta), "{fit:?}");
        assert!(close(fit.bandwidth().unwrap(), 4e9), "{fit:?}");
        assert!(close(fit.half_bandwidth_size().unwrap(), 2000.0), "{fit:?}");
        assert!(fit.rms_relative_error < 1e-12, "{fit:?}");
        assert_eq!(fit.points, sweep().len());
        assert!(close(fit.time(1000.0), alpha + beta * 1000.0));
    }

    #[test]
    fn recovers_a_slow_network() {
        // Ethernet of the 1990s: 1 ms start-up, 1.25 MB/s; n½ = 1250 B.
        let points = [(8.0, 1.0064e-3), (1000.0, 1.8e-3), (60_000.0, 49e-3)];
        let fit = least_squares(points).unwrap();
        assert!(close(fit.startup_seconds, 1e-3), "{fit:?}");
        assert!(close(fit.bandwidth().unwrap(), 1.25e6), "{fit:?}");
        assert!(close(fit.half_bandwidth_size().unwrap(), 1250.0), "{fit:?}");
    }

    #[test]
    fn two_sizes_are_enough_and_order_does_not_matter() {
        let fit = least_squares([(1000.0, 3e-6), (0.0, 1e-6)]).unwrap();
        assert!(close(fit.startup_seconds, 1e-6), "{fit:?}");
        assert!(close(fit.seconds_per_byte, 2e-9), "{fit:?}");
        assert_eq!(fit.points, 2);
    }

    #[test]
    fn the_start_up_comes_from_the_small_sizes() {
        // The largest size 2 % slow: an unweighted fit puts α at −0.75 µs,
        // this one within 0.02 % of 1 µs.
        let (alpha, beta) = (1e-6, 0.25e-9);
        let sizes = sweep();
        let largest = *sizes.last().unwrap();
        let points = sizes.iter().map(|&n| {
            let t = alpha + beta * n;
            (n, if n == largest { t * 1.02 } else { t })
        });
        let fit = least_squares(points).unwrap();
        let error = (fit.startup_seconds - alpha).abs() / alpha;
        assert!(error < 0.01, "α off by {:.1} %: {fit:?}", error * 100.0);
        assert!(fit.rms_relative_error > 0.0);
    }

    #[test]
    fn too_few_sizes_give_no_fit() {
        assert_eq!(least_squares([]), None);
        assert_eq!(least_squares([(8.0, 1e-6)]), None);
        assert_eq!(least_squares([(8.0, 1e-6), (8.0, 2e-6)]), None);
        // Unusable times are left out, leaving one size.
        assert_eq!(
            least_squares([(8.0, 1e-6), (16.0, 0.0), (32.0, f64::NAN)]),
            None
        );
    }

    #[test]
    fn a_falling_line_has_no_bandwidth_or_half_size() {
        let fit = least_squares([(1.0, 3e-6), (2.0, 2e-6), (3.0, 1e-6)]).unwrap();
        assert!(close(fit.seconds_per_byte, -1e-6), "{fit:?}");
        assert_eq!(fit.bandwidth(), None);
        assert_eq!(fit.half_bandwidth_size(), None);
    }
}
