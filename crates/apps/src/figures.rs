//! The figures every app's report computes alike: medians and ranges of
//! its rounds, and the seeds' "% improvement".

use std::time::Duration;
use threadwire_testbed::net::Link;

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

/// One row of the NCS (1995) paper's tables of execution times (Table 1,
/// matrix multiply; Table 2, JPEG; Table 3, FFT), typed in as printed:
/// p4, one thread per process, against NCS's multithreaded p4, two
/// threads per node process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeedRow {
    /// Node processes.
    pub nodes: u32,
    /// (p4, NCS/p4) seconds on 10 Mbit Ethernet.
    pub ethernet: (f64, f64),
    /// (p4, NCS/p4) seconds on the NYNET ATM testbed, where measured.
    pub nynet: Option<(f64, f64)>,
}

/// What NYNET was, for a table that prints its column.
pub const NYNET: &str = "NYNET: the seed's ATM wide-area testbed (155 Mbit/s OC-3), \
whose workstations were also faster than its Ethernet's";

impl SeedRow {
    /// The seed's networks to print beside ours on `link`, labelled, with
    /// their (p4, NCS/p4) seconds where measured: Ethernet beside
    /// `ethernet10`, NYNET beside `atm155`, both beside any other link and
    /// on one host.
    pub fn beside(&self, link: Option<Link>) -> Vec<(&'static str, Option<(f64, f64)>)> {
        let ethernet = ("Ethernet", Some(self.ethernet));
        let nynet = ("NYNET", self.nynet);
        match link {
            Some(Link::Ethernet10) => vec![ethernet],
            Some(Link::Atm155) => vec![nynet],
            _ => vec![ethernet, nynet],
        }
    }
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
    fn the_seeds_network_is_printed_beside_its_link() {
        let row = SeedRow {
            nodes: 2,
            ethernet: (2.0, 1.0),
            nynet: None,
        };
        let labels = |link| -> Vec<&str> { row.beside(link).iter().map(|b| b.0).collect() };
        assert_eq!(labels(Some(Link::Ethernet10)), ["Ethernet"]);
        assert_eq!(labels(Some(Link::Atm155)), ["NYNET"]);
        assert_eq!(labels(Some(Link::Gige)), ["Ethernet", "NYNET"]);
        assert_eq!(labels(None), ["Ethernet", "NYNET"]);
        assert_eq!(row.beside(Some(Link::Atm155))[0].1, None);
    }

    #[test]
    fn improvement_is_the_share_of_time_saved() {
        assert_eq!(improvement(4.0, 3.0), 25.0);
        assert_eq!(improvement(2.0, 3.0), -50.0);
    }
}
