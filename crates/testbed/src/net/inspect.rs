//! The net of a prefix as the system shows it ([`current`]), and the
//! parsing of `ip` and `tc` listings that it and [`super::build`] read.

use std::net::Ipv4Addr;

use super::command::{require_root, run};
use super::error::NetErrorKind;
use super::plan::{check_prefix, Names};
use super::{Host, Link, Net, NetError};

/// Describes the net with this prefix as the system shows it: `None` if
/// neither its bridge nor any of its namespaces exists; an error if it is
/// half-built (a host without its address, a missing bridge, a gap in the
/// host numbers).
pub fn current(prefix: &str) -> Result<Option<Net>, NetError> {
    require_root("inspecting")?;
    check_prefix(prefix)?;
    let names = Names::new(prefix);
    let mut indices: Vec<u32> = namespaces()?
        .iter()
        .filter_map(|n| names.host_index(n))
        .collect();
    indices.sort_unstable();
    let bridge_exists = root_links()?.contains(&names.bridge);
    if !bridge_exists && indices.is_empty() {
        return Ok(None);
    }
    let half_built = |what: String| -> NetError {
        NetErrorKind::HalfBuilt {
            prefix: prefix.to_string(),
            what,
        }
        .into()
    };
    if !bridge_exists {
        return Err(half_built(format!("no bridge {}", names.bridge)));
    }
    if indices.is_empty() {
        return Err(half_built("a bridge but no hosts".to_string()));
    }
    if let Some(gap) = (0u32..).zip(&indices).find(|(want, got)| want != *got) {
        return Err(half_built(format!("no host {}", names.host(gap.0))));
    }
    let bridge_addr = ipv4_of(&["-o", "-4", "addr", "show", "dev", &names.bridge])?
        .ok_or_else(|| half_built(format!("bridge {} has no address", names.bridge)))?;
    let mut hosts = Vec::with_capacity(indices.len());
    for i in indices {
        let name = names.host(i);
        let addr = ipv4_of(&["-n", &name, "-o", "-4", "addr", "show", "dev", "eth0"])?
            .ok_or_else(|| half_built(format!("{name} has no address on eth0")))?;
        hosts.push(Host { name, addr });
    }
    let qdisc = run("tc", &["qdisc", "show", "dev", &names.veth(0)])?;
    let link = match tbf_rate(&qdisc) {
        None => Link::Unshaped,
        Some(rate) => Link::from_rate(rate).ok_or_else(|| {
            half_built(format!(
                "{} is shaped to {rate} bit/s, no known link",
                names.veth(0)
            ))
        })?,
    };
    Ok(Some(Net {
        prefix: prefix.to_string(),
        bridge: names.bridge,
        bridge_addr,
        hosts,
        link,
    }))
}

/// The names of the root namespace's network interfaces.
pub(super) fn root_links() -> Result<Vec<String>, NetError> {
    // `ip -o link show` prints `7: twv0@if2: <BROADCAST,…> …` per link.
    let listing = run("ip", &["-o", "link", "show"])?;
    Ok(listing
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .collect())
}

/// The names of the named network namespaces (`ip netns list`).
pub(super) fn namespaces() -> Result<Vec<String>, NetError> {
    // One per line, `twh0 (id: 0)` or just `twh0`.
    let listing = run("ip", &["netns", "list"])?;
    Ok(listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// The first IPv4 address `ip {args}` prints.
fn ipv4_of(args: &[&str]) -> Result<Option<Ipv4Addr>, NetError> {
    Ok(run("ip", args)?.lines().find_map(inet_addr))
}

/// The address of an `ip -o -4 addr` line: `… inet 10.77.3.1/24 brd …`.
pub(super) fn inet_addr(line: &str) -> Option<Ipv4Addr> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == "inet")?;
    words.next()?.split('/').next()?.parse().ok()
}

/// The rate of a tbf qdisc in `tc qdisc show` output, in bit/s:
/// `qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 50000b lat 50ms`.
pub(super) fn tbf_rate(qdisc_listing: &str) -> Option<u64> {
    let line = qdisc_listing
        .lines()
        .find(|l| l.starts_with("qdisc tbf "))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "rate")?;
    let rate = words.next()?;
    let digits_end = rate
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rate.len());
    let (number, unit) = rate.split_at(digits_end);
    let scale = match unit {
        "bit" => 1.0,
        "Kbit" => 1e3,
        "Mbit" => 1e6,
        "Gbit" => 1e9,
        _ => return None,
    };
    Some((number.parse::<f64>().ok()? * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_listings_parse() {
        let line = "5: twbr    inet 10.77.3.254/24 brd 10.77.3.255 scope global twbr\\       valid_lft forever";
        assert_eq!(inet_addr(line), Some(Ipv4Addr::new(10, 77, 3, 254)));
        assert_eq!(inet_addr("1: lo    inet6 ::1/128 scope host"), None);
    }
}
