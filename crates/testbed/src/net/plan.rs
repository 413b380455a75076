//! What a net is: its config, its hosts and addresses, and the names and
//! subnet a prefix gives it ("Subnet" and "Names" in the module docs).

use std::net::Ipv4Addr;
use std::path::PathBuf;

use super::error::NetErrorKind;
use super::{Delay, Link, Load, Loss, NetError};

/// The longest prefix: `p` + `v252` must fit in 15 bytes.
pub(super) const MAX_PREFIX_LEN: usize = 11;
/// Host `i` is `10.77.N.{i+1}`; `.254` is the bridge.
pub(super) const MAX_HOSTS: u32 = 253;
/// The load's source takes `.253` (module docs, "Impairments").
pub(super) const LOAD_SOURCE_OCTET: u8 = 253;

/// What [`up`](super::up) builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Number of hosts (namespaces), 1 to 253.
    pub hosts: u32,
    /// Every host's link.
    pub link: Link,
    /// Start of every name the net creates (module docs), `tw` by default.
    pub prefix: String,
    /// Random loss of what each host receives; none by default.
    pub loss: Option<Loss>,
    /// Delay of what each host receives; none by default.
    pub delay: Option<Delay>,
    /// Background traffic on each host's receive link, which must then be
    /// shaped; none by default.
    pub load: Option<Load>,
    /// The program that serves `net delay-queue` and `net load-source`
    /// (module docs, "Impairments"): the `threadwire` binary, or one that
    /// passes those arguments to [`serve_helper`](super::serve_helper).
    /// `None`, the default, is this process's own executable.
    pub helper: Option<PathBuf>,
}

impl NetConfig {
    /// `hosts` hosts on `link`, with prefix `tw` and no impairments.
    pub fn new(hosts: u32, link: Link) -> NetConfig {
        NetConfig {
            hosts,
            link,
            prefix: "tw".to_string(),
            loss: None,
            delay: None,
            load: None,
            helper: None,
        }
    }
}

/// One emulated host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The network namespace's name (`ip netns exec NAME …`, or
    /// `netns:NAME` in a host file).
    pub name: String,
    /// The address of the namespace's `eth0`.
    pub addr: Ipv4Addr,
}

/// A net of emulated hosts, as built or as found on the system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Net {
    /// The prefix of its names.
    pub prefix: String,
    /// The bridge in the root namespace.
    pub bridge: String,
    /// The bridge's address: every host's default gateway, and this host's
    /// address as the hosts see it.
    pub bridge_addr: Ipv4Addr,
    /// The hosts, host `i` at index `i`.
    pub hosts: Vec<Host>,
    /// Every host's link.
    pub link: Link,
    /// Random loss of what each host receives.
    pub loss: Option<Loss>,
    /// Delay of what each host receives.
    pub delay: Option<Delay>,
    /// Background traffic on each host's receive link.
    pub load: Option<Load>,
}

impl Net {
    /// The hosts as a launcher's host list ([`threadwire_launch::JobSpec::hosts`]):
    /// node `i` runs in namespace `i % hosts`.
    pub fn launch_hosts(&self) -> Vec<threadwire_launch::Host> {
        self.hosts
            .iter()
            .map(|h| threadwire_launch::Host::Netns(h.name.clone()))
            .collect()
    }
}

/// The names of one prefix's net.
pub(super) struct Names {
    prefix: String,
    pub(super) bridge: String,
}

impl Names {
    pub(super) fn new(prefix: &str) -> Names {
        Names {
            prefix: prefix.to_string(),
            bridge: format!("{prefix}br"),
        }
    }

    pub(super) fn host(&self, i: u32) -> String {
        format!("{}h{i}", self.prefix)
    }

    pub(super) fn veth(&self, i: u32) -> String {
        format!("{}v{i}", self.prefix)
    }

    /// The namespace of the load's source.
    pub(super) fn load_source(&self) -> String {
        format!("{}load", self.prefix)
    }

    /// The root-side veth of the load's source.
    pub(super) fn load_veth(&self) -> String {
        format!("{}vl", self.prefix)
    }

    pub(super) fn host_index(&self, name: &str) -> Option<u32> {
        numbered(name, &self.prefix, "h")
    }

    pub(super) fn veth_index(&self, name: &str) -> Option<u32> {
        numbered(name, &self.prefix, "v")
    }
}

/// `i` if `name` is exactly `prefix` + `kind` + the digits of `i`.
fn numbered(name: &str, prefix: &str, kind: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_prefix(kind)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The third octet of the prefix's subnet `10.77.N.0/24` (module docs).
pub(super) fn subnet_octet(prefix: &str) -> u8 {
    let hash = prefix.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    // The remainder is below 250, so the octet is 1..=250.
    (hash % 250) as u8 + 1
}

pub(super) fn check_prefix(prefix: &str) -> Result<(), NetError> {
    let ok = !prefix.is_empty()
        && prefix.len() <= MAX_PREFIX_LEN
        && prefix.bytes().all(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(NetErrorKind::Prefix(prefix.to_string()).into())
    }
}

/// The net `cfg` describes, checked but not yet built.
pub(super) fn plan(cfg: &NetConfig) -> Result<Net, NetError> {
    check_prefix(&cfg.prefix)?;
    if !(1..=MAX_HOSTS).contains(&cfg.hosts) {
        return Err(NetErrorKind::HostCount(cfg.hosts).into());
    }
    if cfg.load.is_some() {
        if cfg.link.rate_kbit().is_none() {
            return Err(NetErrorKind::LoadUnshaped.into());
        }
        if cfg.hosts >= u32::from(LOAD_SOURCE_OCTET) {
            return Err(NetErrorKind::LoadHostCount(cfg.hosts).into());
        }
    }
    let names = Names::new(&cfg.prefix);
    let n = subnet_octet(&cfg.prefix);
    let hosts = (0..cfg.hosts)
        .map(|i| Host {
            name: names.host(i),
            // `i + 1` is at most MAX_HOSTS = 253.
            addr: Ipv4Addr::new(10, 77, n, (i + 1) as u8),
        })
        .collect();
    Ok(Net {
        prefix: cfg.prefix.clone(),
        bridge: names.bridge,
        bridge_addr: Ipv4Addr::new(10, 77, n, 254),
        hosts,
        link: cfg.link,
        loss: cfg.loss,
        delay: cfg.delay,
        load: cfg.load,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_are_in_range_and_apart_for_the_test_prefixes() {
        let octets: Vec<u8> = ["tw", "twt1", "twt2", "twt3", "twt4", "twt6"]
            .into_iter()
            .map(subnet_octet)
            .collect();
        assert!(octets.iter().all(|o| (1..=250).contains(o)), "{octets:?}");
        let mut unique = octets.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), octets.len(), "{octets:?}");
    }

    #[test]
    fn names_belong_to_exactly_one_prefix() {
        let tw = Names::new("tw");
        assert_eq!(tw.host_index("twh0"), Some(0));
        assert_eq!(tw.host_index("twh12"), Some(12));
        assert_eq!(tw.veth_index("twv3"), Some(3));
        let extra = [tw.load_source(), tw.load_veth()];
        assert_eq!(extra, ["twload", "twvl"]);
        for other in ["tw2h0", "twh", "twh1x", "twbr", "twvh0", "twt1h0", "eth0"]
            .into_iter()
            .chain(extra.iter().map(String::as_str))
        {
            assert_eq!(tw.host_index(other), None, "{other}");
            assert_eq!(tw.veth_index(other), None, "{other}");
        }
    }

    #[test]
    fn configs_are_checked_before_anything_runs() {
        for prefix in ["", "tw-1", "tw/x", "twelvechars1"] {
            let cfg = NetConfig {
                prefix: prefix.to_string(),
                ..NetConfig::new(2, Link::Unshaped)
            };
            let err = plan(&cfg).unwrap_err();
            assert!(err.to_string().starts_with("bad prefix"), "{err}");
        }
        for hosts in [0, 254] {
            let err = plan(&NetConfig::new(hosts, Link::Gige)).unwrap_err();
            assert!(err.to_string().starts_with("bad host count"), "{err}");
        }
        let loaded = |hosts, link| NetConfig {
            load: Some("0.5".parse().unwrap()),
            ..NetConfig::new(hosts, link)
        };
        let err = plan(&loaded(2, Link::Unshaped)).unwrap_err();
        assert!(err.to_string().contains("needs a shaped link"), "{err}");
        let err = plan(&loaded(253, Link::Gige)).unwrap_err();
        assert!(err.to_string().contains("at most 252 hosts"), "{err}");
        assert!(plan(&loaded(252, Link::Gige)).is_ok());
        let net = plan(&NetConfig::new(253, Link::Gige)).unwrap();
        let n = subnet_octet("tw");
        assert_eq!(net.bridge, "twbr");
        assert_eq!(net.bridge_addr, Ipv4Addr::new(10, 77, n, 254));
        assert_eq!(net.hosts[0].name, "twh0");
        assert_eq!(net.hosts[252].addr, Ipv4Addr::new(10, 77, n, 253));
    }
}
