//! The net of a prefix as the system shows it ([`current`]), and the
//! parsing of `ip` and `tc` listings that it and [`super::build`] read.

use std::net::Ipv4Addr;

use super::command::{require_root, run};
use super::error::NetErrorKind;
use super::helper;
use super::plan::{check_prefix, Names};
use super::{Delay, Host, Link, Load, Loss, Net, NetError};

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
    let (loss, queued) = input_rules(&hosts[0].name)?;
    let delay = match queued {
        false => None,
        true => Some(delay_of_queue(prefix, &hosts[0].name)?.ok_or_else(|| {
            half_built(format!(
                "{} sends to a delay queue that is not running",
                hosts[0].name
            ))
        })?),
    };
    let load = match namespaces()?.contains(&names.load_source()) {
        false => None,
        true => Some(
            load_of_source(prefix, &names.load_source())?
                .ok_or_else(|| half_built(format!("{} has no load source", names.load_source())))?,
        ),
    };
    Ok(Some(Net {
        prefix: prefix.to_string(),
        bridge: names.bridge,
        bridge_addr,
        hosts,
        link,
        loss,
        delay,
        load,
    }))
}

/// The loss of a host's `INPUT` rules, and whether they send to the delay
/// queue: `-A INPUT -i eth0 -m statistic --mode random --probability
/// 0.10000000009 -j DROP`, `-A INPUT -i eth0 -j NFQUEUE --queue-num 0 …`.
fn input_rules(host: &str) -> Result<(Option<Loss>, bool), NetError> {
    if !crate::process::on_path("iptables") {
        // `up` made no rules without it.
        return Ok((None, false));
    }
    let rules = run(
        "ip",
        &["netns", "exec", host, "iptables", "-w", "-S", "INPUT"],
    )?;
    Ok(parse_input_rules(&rules))
}

fn parse_input_rules(rules: &str) -> (Option<Loss>, bool) {
    let loss = rules.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        words.find(|w| *w == "--probability")?;
        Loss::from_probability(words.next()?.parse().ok()?)
    });
    let queued = rules.lines().any(|l| l.contains("-j NFQUEUE"));
    (loss, queued)
}

/// The delay of the delay queue running in `host`, if one is.
fn delay_of_queue(prefix: &str, host: &str) -> Result<Option<Delay>, NetError> {
    Ok(helper::find(prefix, host)?
        .iter()
        .find_map(|(_, args)| helper::delay_of(args)))
}

/// The load of the load's source running in `namespace`, if one is.
fn load_of_source(prefix: &str, namespace: &str) -> Result<Option<Load>, NetError> {
    Ok(helper::find(prefix, namespace)?
        .iter()
        .find_map(|(_, args)| helper::load_of(args)))
}

/// How many packets each host's delay queue has dropped, host `i` at index
/// `i`: those that found [`DELAY_QUEUE_LIMIT`](super::DELAY_QUEUE_LIMIT)
/// packets held, and any the kernel could not hand to the queue process,
/// as the kernel counts them (`queue_dropped` and `user_dropped` of queue
/// 0 in the namespace's `/proc/net/netfilter/nfnetlink_queue`). Empty
/// without a delay.
pub fn delay_queue_drops(net: &Net) -> Result<Vec<u64>, NetError> {
    if net.delay.is_none() {
        return Ok(Vec::new());
    }
    net.hosts
        .iter()
        .map(|h| {
            let table = run(
                "ip",
                &[
                    "netns",
                    "exec",
                    &h.name,
                    "cat",
                    "/proc/net/netfilter/nfnetlink_queue",
                ],
            )?;
            Ok(queue_drops(&table))
        })
        .collect()
}

/// Queue 0's drops in an `nfnetlink_queue` table, whose lines are
/// `queue peer_portid total copy_mode copy_range queue_dropped
/// user_dropped id_sequence 1`.
fn queue_drops(table: &str) -> u64 {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&"0"))
        .map_or(0, |fields| {
            let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
            field(5).unwrap_or(0) + field(6).unwrap_or(0)
        })
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

    #[test]
    fn queue_tables_parse() {
        let table = "    0  12345     3 1     0     7     2    99  1\n";
        assert_eq!(queue_drops(table), 9);
        assert_eq!(queue_drops(""), 0);
    }

    #[test]
    fn iptables_listings_parse() {
        let rules = "-P INPUT ACCEPT\n\
            -A INPUT -s 10.77.3.253/32 -i eth0 -p udp -m udp --dport 9 -j DROP\n\
            -A INPUT -i eth0 -m statistic --mode random --probability 0.10000000009 -j DROP\n\
            -A INPUT -i eth0 -j NFQUEUE --queue-num 0 --queue-bypass\n";
        assert_eq!(
            parse_input_rules(rules),
            (Some("10".parse().unwrap()), true)
        );
        assert_eq!(parse_input_rules("-P INPUT ACCEPT\n"), (None, false));
    }
}
