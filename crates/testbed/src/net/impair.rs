//! The impairments a net's links can have besides their rate: random
//! loss, delay with jitter and background load ("Impairments" in the
//! module docs), as values that parse from and print to the command line.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The longest delay (and jitter) a net takes.
const MAX_DELAY: Duration = Duration::from_secs(10);

/// A share of packets each host drops at random from what it receives:
/// `1` or `0.5` (percent), kept in parts per million.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loss {
    ppm: u32,
}

impl Loss {
    /// The loss in percent, as given.
    pub fn percent(self) -> f64 {
        f64::from(self.ppm) / 10_000.0
    }

    /// The probability of a drop, as `iptables -m statistic --probability`
    /// takes it.
    pub(super) fn probability(self) -> String {
        format!("{:.6}", f64::from(self.ppm) / 1e6)
    }

    /// The loss of `iptables -S`'s probability (it prints 0.10000000009 for
    /// 0.1, the nearest 2^-31 step), to the ppm.
    pub(super) fn from_probability(probability: f64) -> Option<Loss> {
        let ppm = (probability * 1e6).round();
        (1.0..1e6)
            .contains(&ppm)
            .then_some(Loss { ppm: ppm as u32 })
    }
}

impl FromStr for Loss {
    type Err = ParseImpairmentError;
    /// A percentage above 0 and below 100, `%` optional: `1`, `0.5%`.
    fn from_str(s: &str) -> Result<Loss, ParseImpairmentError> {
        let bad = || ParseImpairmentError::new("a loss in percent, above 0 and below 100", s);
        let number: f64 = s.trim_end_matches('%').parse().map_err(|_| bad())?;
        let ppm = (number * 10_000.0).round();
        if !(1.0..1e6).contains(&ppm) {
            return Err(bad());
        }
        Ok(Loss { ppm: ppm as u32 })
    }
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.percent())
    }
}

/// A one-way delay each host adds to what it receives, and the jitter
/// around it: `5ms`, `5ms/1ms`, `500us`; kept to the microsecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Delay {
    /// The mean delay.
    pub delay: Duration,
    /// Each packet's delay is `delay` ± up to this, evenly spread; at most
    /// `delay`.
    pub jitter: Duration,
}

impl Delay {
    /// `delay` ± `jitter`, checked: the delay 1 µs to 10 s, the jitter not
    /// above it, both whole microseconds.
    pub fn new(delay: Duration, jitter: Duration) -> Option<Delay> {
        let whole = |d: Duration| d.subsec_nanos().is_multiple_of(1000);
        let ok = delay >= Duration::from_micros(1)
            && delay <= MAX_DELAY
            && jitter <= delay
            && whole(delay)
            && whole(jitter);
        ok.then_some(Delay { delay, jitter })
    }
}

impl FromStr for Delay {
    type Err = ParseImpairmentError;
    /// `D` or `D/J`, each a number and `us`, `ms` or `s`.
    fn from_str(s: &str) -> Result<Delay, ParseImpairmentError> {
        let bad = || {
            ParseImpairmentError::new(
                "a delay as 5ms or 5ms/1ms (us, ms or s; 1us to 10s, the jitter not above the delay)",
                s,
            )
        };
        let (delay, jitter) = match s.split_once('/') {
            Some((d, j)) => (d, Some(j)),
            None => (s, None),
        };
        let delay = parse_duration(delay).ok_or_else(bad)?;
        let jitter = match jitter {
            Some(j) => parse_duration(j).ok_or_else(bad)?,
            None => Duration::ZERO,
        };
        Delay::new(delay, jitter).ok_or_else(bad)
    }
}

impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Micros(self.delay))?;
        if !self.jitter.is_zero() {
            write!(f, "/{}", Micros(self.jitter))?;
        }
        Ok(())
    }
}

/// A duration printed as the shortest of `5ms`, `1500us`, `2s`.
struct Micros(Duration);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0.as_micros();
        match us {
            _ if us.is_multiple_of(1_000_000) && us > 0 => write!(f, "{}s", us / 1_000_000),
            _ if us.is_multiple_of(1000) && us > 0 => write!(f, "{}ms", us / 1000),
            _ => write!(f, "{us}us"),
        }
    }
}

/// `12ms`, `0.5ms`, `800us`, `1s`, rounded to the microsecond.
fn parse_duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = s.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return None,
    };
    let micros = (number * scale).round();
    (micros.is_finite() && micros <= MAX_DELAY.as_micros() as f64)
        .then(|| Duration::from_micros(micros as u64))
}

/// Background traffic on every host's receive link, as a fraction of the
/// link's rate: `0.2`, `0.5`, `0.9`; kept in thousandths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Load {
    permille: u16,
}

impl Load {
    /// The fraction of the rate, 0.001 to 1.
    pub fn fraction(self) -> f64 {
        f64::from(self.permille) / 1000.0
    }

    pub(super) fn permille(self) -> u16 {
        self.permille
    }

    pub(super) fn from_permille(permille: u16) -> Option<Load> {
        (1..=1000).contains(&permille).then_some(Load { permille })
    }
}

impl FromStr for Load {
    type Err = ParseImpairmentError;
    /// A fraction above 0, at most 1: `0.5`.
    fn from_str(s: &str) -> Result<Load, ParseImpairmentError> {
        let bad = || ParseImpairmentError::new("a load as a fraction of the rate, 0.001 to 1", s);
        let number: f64 = s.parse().map_err(|_| bad())?;
        let permille = (number * 1000.0).round();
        if !(1.0..=1000.0).contains(&permille) {
            return Err(bad());
        }
        Load::from_permille(permille as u16).ok_or_else(bad)
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.fraction())
    }
}

/// A loss, delay or load that does not parse, or is out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not {wanted}: {given:?}")]
pub struct ParseImpairmentError {
    wanted: &'static str,
    given: String,
}

impl ParseImpairmentError {
    fn new(wanted: &'static str, given: &str) -> ParseImpairmentError {
        ParseImpairmentError {
            wanted,
            given: given.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_parse_print_and_become_probabilities() {
        let loss: Loss = "0.5".parse().unwrap();
        assert_eq!(loss.to_string(), "0.5%");
        assert_eq!(loss.probability(), "0.005000");
        assert_eq!("10%".parse::<Loss>().unwrap().probability(), "0.100000");
        assert_eq!(
            Loss::from_probability(0.10000000009),
            Some("10".parse().unwrap())
        );
        for bad in ["0", "100", "-1", "x", "", "nan"] {
            assert!(bad.parse::<Loss>().is_err(), "{bad}");
        }
    }

    #[test]
    fn delays_parse_and_print() {
        let d: Delay = "5ms/1ms".parse().unwrap();
        assert_eq!(d.delay, Duration::from_millis(5));
        assert_eq!(d.jitter, Duration::from_millis(1));
        assert_eq!(d.to_string(), "5ms/1ms");
        assert_eq!("0.5ms".parse::<Delay>().unwrap().to_string(), "500us");
        assert_eq!("2s".parse::<Delay>().unwrap().to_string(), "2s");
        assert_eq!("1500us".parse::<Delay>().unwrap().to_string(), "1500us");
        for bad in ["5", "5ms/6ms", "0ms", "11s", "5 ms", "ms", "5ms/", "-1ms"] {
            let err = bad.parse::<Delay>().unwrap_err();
            assert!(err.to_string().starts_with("not a delay"), "{bad}: {err}");
        }
    }

    #[test]
    fn loads_parse_and_print() {
        assert_eq!("0.5".parse::<Load>().unwrap().to_string(), "0.5");
        assert_eq!("1".parse::<Load>().unwrap().permille(), 1000);
        for bad in ["0", "1.5", "-0.2", "half"] {
            assert!(bad.parse::<Load>().is_err(), "{bad}");
        }
    }
}
