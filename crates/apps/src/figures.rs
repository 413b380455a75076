//! The figures every app's report computes alike: medians and ranges of
//! its rounds, and the seeds' "% improvement".

use std::time::Duration;

/// The percentage by which `threaded` takes less time than `serial`: the
/// seeds' "% Improvement", (serial − threaded) / serial.
pub fn improvement(serial: f64, threaded: f64) -> f64 {
    (serial - threaded) / serial * 100.0
}

/// Median, least and greatest of `values` (zeros if empty); the median of
/// an even count is the mean of the middle two.
pub fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => (0.0, 0.0, 0.0),
        _ => {
            let median = match n % 2 {
                1 => values[n / 2],
                _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
            };
            (median, values[0], values[n - 1])
        }
    }
}

/// One row of the NCS (1995) paper's tables of execution times (Table 2,
/// JPEG; Table 3, FFT), typed in as printed: p4, one thread per process,
/// against NCS's multithreaded p4, two threads per node process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeedRow {
    /// Node processes.
    pub nodes: u32,
    /// (p4, NCS/p4) seconds on 10 Mbit Ethernet.
    pub ethernet: (f64, f64),
    /// (p4, NCS/p4) seconds on the NYNET ATM testbed, where measured.
    pub nynet: Option<(f64, f64)>,
}

/// `d` in milliseconds.
pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_even_and_no_counts() {
        assert_eq!(spread(vec![3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(spread(vec![4.0, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0));
        assert_eq!(spread(Vec::new()), (0.0, 0.0, 0.0));
    }

    #[test]
    fn improvement_is_the_share_of_time_saved() {
        assert_eq!(improvement(4.0, 3.0), 25.0);
        assert_eq!(improvement(2.0, 3.0), -50.0);
    }
}
