//! Emulated hosts: network namespaces joined by a Linux bridge, each host's
//! link shaped to a classic rate (`threadwire net up` / `net down`).
//!
//! A net with prefix `p` and K hosts is, with `N` the prefix's subnet
//! number (below):
//!
//! ```text
//!   namespace ph0            namespace ph1                    namespace ph{K-1}
//!   eth0 10.77.N.1/24        eth0 10.77.N.2/24          ...   eth0 10.77.N.K/24
//!     |  veth pair             |                                 |
//!   pv0                      pv1                       ...     pv{K-1}
//!     +------------------ bridge pbr 10.77.N.254/24 -------------+   (root namespace)
//! ```
//!
//! Every namespace has `lo` up and a default route via the bridge, which is
//! also how a node in a namespace reaches a launcher on this host. With a
//! shaped [`Link`], a token bucket (`tc … tbf`) sits on `eth0` inside the
//! namespace (what the host sends) and on the root-side `pv{i}` (what it
//! receives), so both directions of every host's link run at the rate.
//!
//! **Subnet.** `N` is the 32-bit FNV-1a hash of the prefix, modulo 250,
//! plus 1 (so 1..=250): deterministic, so [`down`] and [`current`] need
//! nothing but the prefix, and nets with different prefixes (parallel
//! tests) usually get different subnets. Two prefixes can still collide;
//! [`up`] then refuses, naming the interface that already holds an address
//! in `10.77.N.0/24`, and another prefix must be chosen.
//!
//! **Names.** A prefix is 1 to 11 ASCII letters or digits, so that
//! `p` + `v252` fits Linux's 15-byte interface names. Only names of the
//! exact forms `ph<digits>`, `pv<digits>` and `pbr` belong to a net, so
//! prefix `tw` never touches the namespaces of prefix `tw2` (`tw2h0` is
//! not `tw` + `h` + digits).
//!
//! **Interruption.** While [`up`] or [`down`] changes the system, the
//! calling thread holds back SIGINT, SIGTERM and SIGHUP, and the `ip` and
//! `tc` children run in their own process group, so a terminal's Ctrl-C
//! reaches only this process and kills no command half-way. [`up`] looks
//! for a held signal before every command; on one it removes what it built,
//! returns an error, and lets the signal through as it returns (by default
//! ending the process, with nothing left behind). [`down`] always finishes
//! first. Signals sent to the process reach another thread if one does not
//! block them, so call these from a program's main thread before it starts
//! others (as `threadwire net up` should). A net left half-built by anything
//! that cannot be held (SIGKILL, a power cut) is removed by running [`up`]
//! or [`down`] again with the same prefix.
//!
//! In a program that has called [`crate::interrupt::install`], every thread
//! blocks the three signals and the interrupt thread takes them instead:
//! [`up`] sees its record of the signal before every command just as it
//! sees a held one, and stops and removes what it built; and as [`up`] and
//! [`down`] hold the interrupt registry's lock while they change the
//! system, that thread removes the [`ScopedNet`]s, registered there while
//! they exist, only once the change is over.
//!
//! Everything here needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); without
//! it every function returns an error saying so, having run nothing.

use std::fmt;
use std::io;
use std::net::Ipv4Addr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::str::FromStr;

mod held_signals;
use crate::interrupt::Registry;
use held_signals::HeldSignals;

/// The longest prefix: `p` + `v252` must fit in 15 bytes.
const MAX_PREFIX_LEN: usize = 11;
/// Host `i` is `10.77.N.{i+1}`; `.254` is the bridge.
const MAX_HOSTS: u32 = 253;
/// How long a packet may wait in a token bucket (`tc … latency`).
const TBF_LATENCY_MS: u32 = 50;
/// The smallest token bucket (`tc … burst`), in bytes.
const TBF_MIN_BURST: u64 = 32 * 1024;

/// One host's link to the bridge: a classic network, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Link {
    /// 10 Mbit/s Ethernet (10BASE-T).
    Ethernet10,
    /// 100 Mbit/s Fast Ethernet.
    Fast100,
    /// 155 Mbit/s ATM (OC-3).
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

    /// The shaped rate in Mbit/s (10^6 bit/s), `None` when unshaped.
    pub fn rate_mbit(&self) -> Option<u32> {
        match self {
            Link::Ethernet10 => Some(10),
            Link::Fast100 => Some(100),
            Link::Atm155 => Some(155),
            Link::Gige => Some(1000),
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
    fn burst_bytes(rate_mbit: u32) -> u64 {
        let rate_bytes = u64::from(rate_mbit) * 1_000_000 / 8;
        (rate_bytes / 1000).max(TBF_MIN_BURST)
    }

    /// The link whose rate is `bits_per_second`, if any is.
    fn from_rate(bits_per_second: u64) -> Option<Link> {
        Link::ALL
            .into_iter()
            .find(|l| l.rate_mbit().map(|m| u64::from(m) * 1_000_000) == Some(bits_per_second))
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
#[error("not a link (ethernet10, fast100, atm155, gige or none): {0:?}")]
pub struct ParseLinkError(String);

impl FromStr for Link {
    type Err = ParseLinkError;
    fn from_str(s: &str) -> Result<Link, ParseLinkError> {
        Link::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| ParseLinkError(s.to_string()))
    }
}

/// What [`up`] builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Number of hosts (namespaces), 1 to 253.
    pub hosts: u32,
    /// Every host's link.
    pub link: Link,
    /// Start of every name the net creates (module docs), `tw` by default.
    pub prefix: String,
}

impl NetConfig {
    /// `hosts` hosts on `link`, with prefix `tw`.
    pub fn new(hosts: u32, link: Link) -> NetConfig {
        NetConfig {
            hosts,
            link,
            prefix: "tw".to_string(),
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

/// A net that is removed when this is dropped: for a benchmark that runs
/// on an emulated link and must leave nothing behind.
#[derive(Debug)]
pub struct ScopedNet(Net);

impl ScopedNet {
    /// Builds the net ([`up`]).
    pub fn up(cfg: &NetConfig) -> Result<ScopedNet, NetError> {
        let mut registry = crate::interrupt::registry();
        // Registered before it exists, so an interrupt while it is being
        // built removes it too (crate::interrupt, rule 1).
        registry.add_net(&cfg.prefix);
        let built = up_locked(cfg, &registry);
        if built.is_err() {
            if crate::interrupt::signal().is_some() {
                // Stopped by the signal: the interrupt thread, waiting for
                // the lock, removes it (again, harmlessly) and the rest,
                // and ends the process.
                drop(registry);
                crate::interrupt::wait_for_exit();
            }
            registry.remove_net(&cfg.prefix);
        }
        built.map(ScopedNet)
    }

    /// `hosts` hosts on `link`, for one run: the prefix is `stem` and a
    /// number from this process's id, and as the prefix picks the subnet,
    /// which another net may hold, a few numbers are tried.
    pub fn up_with_free_prefix(stem: &str, hosts: u32, link: Link) -> Result<ScopedNet, NetError> {
        let mut last = None;
        for k in 0..5 {
            let config = NetConfig {
                prefix: format!("{stem}{}", (std::process::id() + k) % 100_000),
                ..NetConfig::new(hosts, link)
            };
            match ScopedNet::up(&config) {
                Ok(net) => return Ok(net),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("tried at least once"))
    }
}

impl std::ops::Deref for ScopedNet {
    type Target = Net;
    fn deref(&self) -> &Net {
        &self.0
    }
}

impl Drop for ScopedNet {
    fn drop(&mut self) {
        let mut registry = crate::interrupt::registry();
        if let Err(e) = down_locked(&self.0.prefix, &registry) {
            tracing::warn!("removing emulated net {}: {e}", self.0.prefix);
        }
        registry.remove_net(&self.0.prefix);
    }
}

/// Why building, removing or inspecting a net failed.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct NetError {
    kind: NetErrorKind,
}

#[derive(Debug, thiserror::Error)]
enum NetErrorKind {
    #[error("not root: {0} network namespaces needs CAP_NET_ADMIN (run as root)")]
    NotRoot(&'static str),
    #[error(
        "bad prefix {0:?}: use 1 to {MAX_PREFIX_LEN} ASCII letters or digits \
         (interface names are at most 15 bytes)"
    )]
    Prefix(String),
    #[error("bad host count {0}: use 1 to {MAX_HOSTS} (one /24 subnet)")]
    HostCount(u32),
    #[error("cannot run `{line}`")]
    Spawn { line: String, source: io::Error },
    #[error("`{line}` failed ({status}): {stderr}")]
    Command {
        line: String,
        status: ExitStatus,
        stderr: String,
    },
    #[error(
        "subnet {subnet}/24 (derived from prefix {prefix:?}) is already used by \
         interface {device}: choose another prefix"
    )]
    SubnetInUse {
        prefix: String,
        subnet: Ipv4Addr,
        device: String,
    },
    #[error("net {prefix:?} is half-built ({what}): run up or down again to clean it")]
    HalfBuilt { prefix: String, what: String },
    #[error("interrupted by signal {0}: the partly built net was removed")]
    Interrupted(i32),
    #[error("{cause}; removing the partly built net then failed too: {cleanup}")]
    Cleanup {
        #[source]
        cause: Box<NetError>,
        cleanup: Box<NetError>,
    },
}

impl From<NetErrorKind> for NetError {
    fn from(kind: NetErrorKind) -> NetError {
        NetError { kind }
    }
}

/// Builds the net `cfg` describes, first removing any net with its prefix.
///
/// Steps (names and subnet `N` as in the module docs; `p` is the prefix):
///
/// 1. Check for root and a valid config, running nothing otherwise; take
///    the interrupt registry's lock and hold back SIGINT, SIGTERM and
///    SIGHUP (module docs).
/// 2. Remove any net with prefix `p`, whole or half-built, as [`down`].
/// 3. Refuse if another interface holds an address in `10.77.N.0/24`.
/// 4. `ip link add pbr type bridge`, `ip addr add 10.77.N.254/24 dev pbr`,
///    `ip link set pbr up`.
/// 5. For each host `i`, with `h` = `ph{i}`:
///    `ip netns add h`;
///    `ip link add pv{i} type veth peer name eth0 netns h`;
///    `ip link set pv{i} master pbr`; `ip link set pv{i} up`;
///    `ip -n h link set lo up`; `ip -n h addr add 10.77.N.{i+1}/24 dev eth0`;
///    `ip -n h link set eth0 up`; `ip -n h route add default via 10.77.N.254`;
///    and on a shaped link, with R its rate, B = max(32 KiB, R/1000 bytes: 1 ms of data)
///    and L = 50 ms:
///    `tc -n h qdisc replace dev eth0 root tbf rate Rmbit burst B latency L`,
///    `tc qdisc replace dev pv{i} root tbf rate Rmbit burst B latency L`.
/// 6. If a command fails or a held signal arrives (or the interrupt thread
///    took one, [`crate::interrupt`]), remove everything as in step 2 and
///    return the error; a held signal is then let through.
///
/// Re-running `up` is safe: step 2 starts from nothing.
pub fn up(cfg: &NetConfig) -> Result<Net, NetError> {
    up_locked(cfg, &crate::interrupt::registry())
}

/// [`up`], the caller holding the interrupt registry's lock.
fn up_locked(cfg: &NetConfig, _locked: &Registry) -> Result<Net, NetError> {
    require_root("creating")?;
    let net = plan(cfg)?;
    let held = HeldSignals::hold();
    remove(&net.prefix)?;
    check_subnet_free(&net)?;
    let built = build(&net, &held);
    match built {
        Ok(()) => Ok(net),
        Err(cause) => match remove(&net.prefix) {
            Ok(()) => Err(cause),
            Err(cleanup) => Err(NetErrorKind::Cleanup {
                cause: Box::new(cause),
                cleanup: Box::new(cleanup),
            }
            .into()),
        },
    }
    // `held` is dropped here: a signal that came in meanwhile is delivered.
}

/// Removes the net with this prefix, or what is left of one.
///
/// Steps (`p` is the prefix):
///
/// 1. Check for root and a valid prefix, running nothing otherwise; take
///    the interrupt registry's lock and hold back SIGINT, SIGTERM and
///    SIGHUP until the end (module docs).
/// 2. `ip link del pv{i}` for every root-namespace link named `pv<digits>`:
///    deleting one end of a veth pair deletes both, at once (deleting a
///    namespace only frees its interfaces later, asynchronously).
/// 3. `ip netns del ph{i}` for every namespace named `ph<digits>`.
/// 4. `ip link del pbr` if the bridge exists.
///
/// Every step is attempted even if an earlier one failed; the first error
/// is returned. Ok if nothing existed, so `down` is safe to re-run.
pub fn down(prefix: &str) -> Result<(), NetError> {
    down_locked(prefix, &crate::interrupt::registry())
}

/// [`down`], the caller holding the interrupt registry's lock.
pub(crate) fn down_locked(prefix: &str, _locked: &Registry) -> Result<(), NetError> {
    require_root("removing")?;
    check_prefix(prefix)?;
    let _held = HeldSignals::hold();
    remove(prefix)
}

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

/// The names of one prefix's net.
struct Names {
    prefix: String,
    bridge: String,
}

impl Names {
    fn new(prefix: &str) -> Names {
        Names {
            prefix: prefix.to_string(),
            bridge: format!("{prefix}br"),
        }
    }

    fn host(&self, i: u32) -> String {
        format!("{}h{i}", self.prefix)
    }

    fn veth(&self, i: u32) -> String {
        format!("{}v{i}", self.prefix)
    }

    fn host_index(&self, name: &str) -> Option<u32> {
        numbered(name, &self.prefix, "h")
    }

    fn veth_index(&self, name: &str) -> Option<u32> {
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
fn subnet_octet(prefix: &str) -> u8 {
    let hash = prefix.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    // The remainder is below 250, so the octet is 1..=250.
    (hash % 250) as u8 + 1
}

fn check_prefix(prefix: &str) -> Result<(), NetError> {
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
fn plan(cfg: &NetConfig) -> Result<Net, NetError> {
    check_prefix(&cfg.prefix)?;
    if !(1..=MAX_HOSTS).contains(&cfg.hosts) {
        return Err(NetErrorKind::HostCount(cfg.hosts).into());
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
    })
}

/// [`up`], steps 4 and 5.
fn build(net: &Net, held: &HeldSignals) -> Result<(), NetError> {
    let step = |cmd: &str, args: &[&str]| -> Result<(), NetError> {
        if let Some(signal) = held.pending().or_else(crate::interrupt::signal) {
            return Err(NetErrorKind::Interrupted(signal).into());
        }
        run(cmd, args).map(drop)
    };
    let names = Names::new(&net.prefix);
    let bridge = net.bridge.as_str();
    let bridge_cidr = format!("{}/24", net.bridge_addr);
    let gateway = net.bridge_addr.to_string();
    step("ip", &["link", "add", bridge, "type", "bridge"])?;
    step("ip", &["addr", "add", &bridge_cidr, "dev", bridge])?;
    step("ip", &["link", "set", bridge, "up"])?;
    let shaping = net.link.rate_mbit().map(|mbit| {
        (
            format!("{mbit}mbit"),
            Link::burst_bytes(mbit).to_string(),
            format!("{TBF_LATENCY_MS}ms"),
        )
    });
    for (i, host) in (0u32..).zip(&net.hosts) {
        let h = host.name.as_str();
        let veth = names.veth(i);
        let cidr = format!("{}/24", host.addr);
        step("ip", &["netns", "add", h])?;
        step(
            "ip",
            &[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", h,
            ],
        )?;
        step("ip", &["link", "set", &veth, "master", bridge])?;
        step("ip", &["link", "set", &veth, "up"])?;
        step("ip", &["-n", h, "link", "set", "lo", "up"])?;
        step("ip", &["-n", h, "addr", "add", &cidr, "dev", "eth0"])?;
        step("ip", &["-n", h, "link", "set", "eth0", "up"])?;
        step("ip", &["-n", h, "route", "add", "default", "via", &gateway])?;
        if let Some((rate, burst, latency)) = &shaping {
            let tbf = [
                "root", "tbf", "rate", rate, "burst", burst, "latency", latency,
            ];
            let mut inside = vec!["-n", h, "qdisc", "replace", "dev", "eth0"];
            inside.extend(tbf);
            step("tc", &inside)?;
            let mut outside = vec!["qdisc", "replace", "dev", &veth];
            outside.extend(tbf);
            step("tc", &outside)?;
        }
    }
    Ok(())
}

/// [`down`], steps 2 to 4, without the checks.
fn remove(prefix: &str) -> Result<(), NetError> {
    let names = Names::new(prefix);
    let links = root_links()?;
    let mut first_error = None;
    let mut note = |result: Result<(), NetError>| {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    };
    for veth in links.iter().filter(|l| names.veth_index(l).is_some()) {
        note(delete_link(veth));
    }
    for ns in namespaces()?
        .iter()
        .filter(|n| names.host_index(n).is_some())
    {
        note(run("ip", &["netns", "del", ns]).map(drop));
    }
    if links.contains(&names.bridge) {
        note(delete_link(&names.bridge));
    }
    first_error.map_or(Ok(()), Err)
}

/// `ip link del`, and Ok if the link vanished by itself meanwhile (the
/// root end of a veth whose namespace was deleted goes asynchronously).
fn delete_link(name: &str) -> Result<(), NetError> {
    match run("ip", &["link", "del", name]) {
        Ok(_) => Ok(()),
        Err(e) if !root_links()?.iter().any(|l| l == name) => {
            drop(e);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// [`up`], step 3.
fn check_subnet_free(net: &Net) -> Result<(), NetError> {
    let octets = net.bridge_addr.octets();
    let listing = run("ip", &["-o", "-4", "addr", "show"])?;
    for line in listing.lines() {
        let mut words = line.split_whitespace();
        let device = words.nth(1).unwrap_or("?");
        let taken = inet_addr(line).is_some_and(|a| a.octets()[..3] == octets[..3]);
        if taken {
            return Err(NetErrorKind::SubnetInUse {
                prefix: net.prefix.clone(),
                subnet: Ipv4Addr::new(octets[0], octets[1], octets[2], 0),
                device: device.to_string(),
            }
            .into());
        }
    }
    Ok(())
}

/// The names of the root namespace's network interfaces.
fn root_links() -> Result<Vec<String>, NetError> {
    // `ip -o link show` prints `7: twv0@if2: <BROADCAST,…> …` per link.
    let listing = run("ip", &["-o", "link", "show"])?;
    Ok(listing
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .collect())
}

/// The names of the named network namespaces (`ip netns list`).
fn namespaces() -> Result<Vec<String>, NetError> {
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
fn inet_addr(line: &str) -> Option<Ipv4Addr> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == "inet")?;
    words.next()?.split('/').next()?.parse().ok()
}

/// The rate of a tbf qdisc in `tc qdisc show` output, in bit/s:
/// `qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 50000b lat 50ms`.
fn tbf_rate(qdisc_listing: &str) -> Option<u64> {
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

/// Runs `cmd args`, the one place this module runs a command, and returns
/// its standard output; a failure to start or a non-zero exit is an error
/// holding the command line and its standard error.
fn run(cmd: &str, args: &[&str]) -> Result<String, NetError> {
    let line = || {
        std::iter::once(cmd)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let output = Command::new(cmd)
        .args(args)
        // Out of the terminal's foreground group, a Ctrl-C reaches only us,
        // where it is held (module docs), and never kills a step half-way.
        .process_group(0)
        .output()
        .map_err(|source| NetErrorKind::Spawn {
            line: line(),
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        let stderr = match output.status.signal() {
            Some(signal) if stderr.is_empty() => format!("killed by signal {signal}"),
            _ => stderr,
        };
        return Err(NetErrorKind::Command {
            line: line(),
            status: output.status,
            stderr,
        }
        .into());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Why emulated hosts cannot be made here, if they cannot: not root, or a
/// kernel or container that refuses `ip netns add` (tried with a throwaway
/// namespace `{prefix}probe`, removed at once). For callers that skip, and
/// say why, where there are no namespaces.
pub fn unavailable(prefix: &str) -> Option<String> {
    if let Err(e) = require_root("creating") {
        return Some(e.to_string());
    }
    let probe = format!("{prefix}probe");
    match run("ip", &["netns", "add", &probe]) {
        Ok(_) => {
            let _ = run("ip", &["netns", "del", &probe]);
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

fn require_root(action: &'static str) -> Result<(), NetError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok(())
    } else {
        Err(NetErrorKind::NotRoot(action).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_parse_and_print() {
        for link in Link::ALL {
            assert_eq!(link.name().parse::<Link>(), Ok(link));
            assert_eq!(link.to_string(), link.name());
        }
        assert_eq!("fast100".parse::<Link>().unwrap().rate_mbit(), Some(100));
        assert_eq!(Link::Unshaped.rate_mbit(), None);
        let err = "token-ring".parse::<Link>().unwrap_err();
        assert!(err.to_string().contains("\"token-ring\""), "{err}");
    }

    #[test]
    fn bursts_hold_a_millisecond_of_data_or_the_floor() {
        assert_eq!(Link::burst_bytes(10), 32 * 1024);
        assert_eq!(Link::burst_bytes(100), 32 * 1024);
        assert_eq!(Link::burst_bytes(1000), 125_000);
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
            tbf_rate(&show("155Mbit")).and_then(Link::from_rate),
            Some(Link::Atm155)
        );
        assert_eq!(
            tbf_rate(&show("10Mbit")).and_then(Link::from_rate),
            Some(Link::Ethernet10)
        );
        assert_eq!(tbf_rate(&show("64Kbit")), Some(64_000));
        assert_eq!(tbf_rate("qdisc noqueue 0: root refcnt 2\n"), None);
    }

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
        for other in ["tw2h0", "twh", "twh1x", "twbr", "twvh0", "twt1h0", "eth0"] {
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
        let net = plan(&NetConfig::new(253, Link::Gige)).unwrap();
        let n = subnet_octet("tw");
        assert_eq!(net.bridge, "twbr");
        assert_eq!(net.bridge_addr, Ipv4Addr::new(10, 77, n, 254));
        assert_eq!(net.hosts[0].name, "twh0");
        assert_eq!(net.hosts[252].addr, Ipv4Addr::new(10, 77, n, 253));
    }

    #[test]
    fn ip_listings_parse() {
        let line = "5: twbr    inet 10.77.3.254/24 brd 10.77.3.255 scope global twbr\\       valid_lft forever";
        assert_eq!(inet_addr(line), Some(Ipv4Addr::new(10, 77, 3, 254)));
        assert_eq!(inet_addr("1: lo    inet6 ::1/128 scope host"), None);
    }
}
