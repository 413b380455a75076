//! The links of emulated hosts: classic networks as `tc tbf` token
//! buckets, and how big a bucket each needs.

use std::fmt;
use std::str::FromStr;

/// The smallest token bucket (`tc … burst`), in bytes.
const TBF_MIN_BURST: u64 = 32 * 1024;

/// One host's link to the bridge: a classic network, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Link {
    /// 10 Mbit/s Ethernet (10BASE-T).
    Ethernet10,
    /// 100 Mbit/s Fast Ethernet.
    Fast100,
    /// 155 Mbit/s ATM (OC-3) as ATM carries data: 135.632 Mbit/s of
    /// cells' payload. SONET's framing leaves 26/27 of the 155.52 Mbit/s
    /// line rate to cells, and each 53-byte cell carries 48 bytes:
    /// 155.52 × 26/27 × 48/53 = 135.632 Mbit/s (AAL5's trailer and the
    /// padding of a packet's last cell, a few percent more, are not
    /// counted).
    Atm155,
    /// 1 Gbit/s Ethernet.
    Gige,
    /// No shaping: veth speed, several Gbit/s.
    Unshaped,
}

impl Link {
    /// Every link, in order of rate.
    pub const ALL: [Link; 5] = [
        Link::Ethernet10,
        Link::Fast100,
        Link::Atm155,
        Link::Gige,
        Link::Unshaped,
    ];

    /// The link's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Link::Ethernet10 => "ethernet10",
            Link::Fast100 => "fast100",
            Link::Atm155 => "atm155",
            Link::Gige => "gige",
            Link::Unshaped => "none",
        }
    }

    /// The shaped rate in kbit/s (10^3 bit/s, `tc`'s `kbit`), `None` when
    /// unshaped.
    pub fn rate_kbit(&self) -> Option<u32> {
        match self {
            Link::Ethernet10 => Some(10_000),
            Link::Fast100 => Some(100_000),
            Link::Atm155 => Some(135_632),
            Link::Gige => Some(1_000_000),
            Link::Unshaped => None,
        }
    }

    /// The shaped rate in Mbit/s (10^6 bit/s), `None` when unshaped.
    pub fn rate_mbit(&self) -> Option<f64> {
        self.rate_kbit().map(|k| f64::from(k) / 1000.0)
    }

    /// The name's rate as `tc` spells it (`100mbit`), which the command
    /// line takes too; `155mbit` for ATM, its line rate.
    fn nominal(self) -> Option<&'static str> {
        match self {
            Link::Ethernet10 => Some("10mbit"),
            Link::Fast100 => Some("100mbit"),
            Link::Atm155 => Some("155mbit"),
            Link::Gige => Some("1000mbit"),
            Link::Unshaped => None,
        }
    }

    /// The token bucket's size in bytes for this rate.
    ///
    /// tbf refills tokens when its timer fires. The classic rule
    /// (tc-tbf(8)) is a bucket of at least rate/HZ, but tbf's watchdog is
    /// a high-resolution timer, so 1 ms of data is enough: measured, the
    /// stream rates below are the same as with rate/HZ (4 ms here), while a
    /// ping-pong, which lets the bucket refill during its idle half, no
    /// longer rides a large burst (1 MB over gige: 134 MB/s, 107% of the
    /// rate, against 223 MB/s with rate/HZ). At the slow rates 1 ms is a
    /// handful of frames, so a timer that fires late idles the link, and
    /// tbf must split every veth GSO packet larger than the bucket; the
    /// 32 KiB floor (22 frames) leaves room for both, at the price of a
    /// 26 ms burst at line rate on ethernet10. With 50 ms of queue (`latency`,
    /// far above these sub-millisecond round trips) TCP's window never
    /// drains the queue, yet a standing queue stays bounded. Measured TCP
    /// goodput between two namespaces, 3 s each (`measure_every_link` in
    /// `tests/net_namespaces.rs`): 95.4–96.3% of the rate on every link,
    /// which is all there is: tbf counts whole 1514-byte frames, of which
    /// 1448 bytes are payload (95.6%).
    pub(super) fn burst_bytes(rate_kbit: u32) -> u64 {
        let rate_bytes = u64::from(rate_kbit) * 1000 / 8;
        (rate_bytes / 1000).max(TBF_MIN_BURST)
    }

    /// The link whose rate is `bits_per_second`, if any is.
    pub(super) fn from_rate(bits_per_second: u64) -> Option<Link> {
        Link::ALL
            .into_iter()
            .find(|l| l.rate_kbit().map(|k| u64::from(k) * 1000) == Some(bits_per_second))
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A link name other than `ethernet10`, `fast100`, `atm155`, `gige` or
/// `none`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not a link (ethernet10, fast100, atm155, gige or none; or 10mbit, 100mbit, 155mbit, \
     1000mbit): {0:?}"
)]
pub struct ParseLinkError(String);

impl FromStr for Link {
    type Err = ParseLinkError;
    /// A link's name, or its rate as `100mbit` (`tc`'s spelling).
    fn from_str(s: &str) -> Result<Link, ParseLinkError> {
        Link::ALL
            .into_iter()
            .find(|l| l.name() == s || l.nominal() == Some(&s.to_ascii_lowercase()))
            .ok_or_else(|| ParseLinkError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::inspect::tbf_rate;

    #[test]
    fn links_parse_and_print() {
        for link in Link::ALL {
            assert_eq!(link.name().parse::<Link>(), Ok(link));
            assert_eq!(link.to_string(), link.name());
        }
        assert_eq!(
            "fast100".parse::<Link>().unwrap().rate_kbit(),
            Some(100_000)
        );
        assert_eq!("155mbit".parse::<Link>(), Ok(Link::Atm155));
        assert_eq!("100mbit".parse::<Link>(), Ok(Link::Fast100));
        assert_eq!("1000Mbit".parse::<Link>(), Ok(Link::Gige));
        assert_eq!(Link::Unshaped.rate_mbit(), None);
        // ATM's payload rate: 155.52 × 26/27 × 48/53 Mbit/s.
        let atm = 155.52 * 26.0 / 27.0 * 48.0 / 53.0;
        assert!((Link::Atm155.rate_mbit().unwrap() - atm).abs() < 0.001);
        let err = "token-ring".parse::<Link>().unwrap_err();
        assert!(err.to_string().contains("\"token-ring\""), "{err}");
    }

    #[test]
    fn bursts_hold_a_millisecond_of_data_or_the_floor() {
        assert_eq!(Link::burst_bytes(10_000), 32 * 1024);
        assert_eq!(Link::burst_bytes(100_000), 32 * 1024);
        assert_eq!(Link::burst_bytes(1_000_000), 125_000);
    }

    #[test]
    fn tc_rates_name_their_links() {
        let show =
            |r: &str| format!("qdisc tbf 8001: root refcnt 2 rate {r} burst 50000b lat 50ms\n");
        assert_eq!(
            tbf_rate(&show("100Mbit")).and_then(Link::from_rate),
            Some(Link::Fast100)
        );
        assert_eq!(
            tbf_rate(&show("1Gbit")).and_then(Link::from_rate),
            Some(Link::Gige)
        );
        assert_eq!(
            tbf_rate(&show("135632Kbit")).and_then(Link::from_rate),
            Some(Link::Atm155)
        );
        assert_eq!(
            tbf_rate(&show("10Mbit")).and_then(Link::from_rate),
            Some(Link::Ethernet10)
        );
        assert_eq!(tbf_rate(&show("64Kbit")), Some(64_000));
        assert_eq!(tbf_rate("qdisc noqueue 0: root refcnt 2\n"), None);
    }
}
