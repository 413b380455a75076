//! Building and removing a net: [`up`] and [`down`], each a numbered
//! protocol, run with the termination signals held ("Interruption" in the
//! module docs).

use std::net::Ipv4Addr;
use std::path::Path;

use super::command::{require_root, run};
use super::error::NetErrorKind;
use super::inspect::{inet_addr, namespaces, root_links};
use super::plan::{check_prefix, plan, Names, LOAD_SOURCE_OCTET};
use super::{delay, helper, load, Link, Net, NetConfig, NetError};
use crate::interrupt::Registry;
use crate::signals::HeldSignals;

/// How long a packet may wait in a token bucket (`tc … latency`).
const TBF_LATENCY_MS: u32 = 50;

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
///    `tc qdisc replace dev pv{i} root tbf rate Rkbit burst B latency L`.
/// 6. With a load (module docs, "Impairments"): the namespace `pload`, a
///    veth pair `pvl` / `eth0` on the bridge as in step 5, unshaped, with
///    `10.77.N.253/24`.
/// 7. Per host, with `ipt` = `ip netns exec h iptables -w -A INPUT -i eth0`:
///    with a load, `ipt -s 10.77.N.253 -p udp --dport 9 -j DROP`; with a
///    loss P%, `ipt -m statistic --mode random --probability P/100 -j DROP`;
///    with a delay, `ipt -j NFQUEUE --queue-num 0 --queue-bypass`.
/// 8. With a delay, start a delay queue in each host; with a load, the
///    load's source in `pload` (each `up` waits for its `ready`, module
///    docs of `helper.rs`).
/// 9. If a command fails or a held signal arrives (or the interrupt thread
///    took one, [`crate::interrupt`]), remove everything as in step 2 and
///    return the error; a held signal is then let through.
///
/// Re-running `up` is safe: step 2 starts from nothing.
pub fn up(cfg: &NetConfig) -> Result<Net, NetError> {
    up_locked(cfg, &crate::interrupt::registry())
}

/// [`up`], the caller holding the interrupt registry's lock.
pub(super) fn up_locked(cfg: &NetConfig, _locked: &Registry) -> Result<Net, NetError> {
    require_root("creating")?;
    let net = plan(cfg)?;
    let impaired = net.loss.is_some() || net.delay.is_some() || net.load.is_some();
    if impaired && !crate::process::on_path("iptables") {
        return Err(NetErrorKind::NoIptables.into());
    }
    let helper = match net.delay.is_some() || net.load.is_some() {
        true => Some(helper::program(cfg.helper.as_deref())?),
        false => None,
    };
    let held = HeldSignals::hold();
    remove(&net.prefix)?;
    check_subnet_free(&net)?;
    let built = build(&net, helper.as_deref(), &held);
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
/// 2. Stop the helpers (delay queues, the load's source) in the
///    namespaces `ph<digits>` and `pload`: SIGTERM, then SIGKILL after
///    2 s (`helper.rs`). A namespace with a process in it lives on after
///    `ip netns del`, so they go first.
/// 3. `ip link del pv{i}` for every root-namespace link named `pv<digits>`,
///    and `pvl`: deleting one end of a veth pair deletes both, at once
///    (deleting a namespace only frees its interfaces later,
///    asynchronously).
/// 4. `ip netns del` every namespace named `ph<digits>`, and `pload`; their
///    iptables rules go with them.
/// 5. `ip link del pbr` if the bridge exists.
///
/// Every step is attempted even if an earlier one failed; the first error
/// is returned. Ok if nothing existed, so `down` is safe to re-run.
pub fn down(prefix: &str) -> Result<(), NetError> {
    down_locked(prefix, &crate::interrupt::registry())
}

/// [`down`], the caller holding the interrupt registry's lock.
pub(super) fn down_locked(prefix: &str, _locked: &Registry) -> Result<(), NetError> {
    require_root("removing")?;
    check_prefix(prefix)?;
    let _held = HeldSignals::hold();
    remove(prefix)
}

/// [`up`], steps 4 to 8.
fn build(net: &Net, helper: Option<&Path>, held: &HeldSignals) -> Result<(), NetError> {
    let step = |cmd: &str, args: &[&str]| -> Result<(), NetError> {
        not_interrupted(held)?;
        run(cmd, args).map(drop)
    };
    let names = Names::new(&net.prefix);
    let bridge = net.bridge.as_str();
    let bridge_cidr = format!("{}/24", net.bridge_addr);
    let gateway = net.bridge_addr.to_string();
    step("ip", &["link", "add", bridge, "type", "bridge"])?;
    step("ip", &["addr", "add", &bridge_cidr, "dev", bridge])?;
    step("ip", &["link", "set", bridge, "up"])?;
    let shaping = net.link.rate_kbit().map(|kbit| {
        (
            format!("{kbit}kbit"),
            Link::burst_bytes(kbit).to_string(),
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
    build_impairments(net, helper, held)
}

/// An error if a held signal has arrived, or the interrupt thread took one.
fn not_interrupted(held: &HeldSignals) -> Result<(), NetError> {
    match held.pending().or_else(crate::interrupt::signal) {
        Some(signal) => Err(NetErrorKind::Interrupted(signal).into()),
        None => Ok(()),
    }
}

/// [`up`], steps 6 to 8.
fn build_impairments(net: &Net, helper: Option<&Path>, held: &HeldSignals) -> Result<(), NetError> {
    let step = |cmd: &str, args: &[&str]| -> Result<(), NetError> {
        not_interrupted(held)?;
        run(cmd, args).map(drop)
    };
    let names = Names::new(&net.prefix);
    let [a, b, c, _] = net.bridge_addr.octets();
    let source_addr = Ipv4Addr::new(a, b, c, LOAD_SOURCE_OCTET);
    let source = names.load_source();
    if net.load.is_some() {
        let veth = names.load_veth();
        let cidr = format!("{source_addr}/24");
        let s = source.as_str();
        step("ip", &["netns", "add", s])?;
        step(
            "ip",
            &[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", s,
            ],
        )?;
        step("ip", &["link", "set", &veth, "master", &net.bridge])?;
        step("ip", &["link", "set", &veth, "up"])?;
        step("ip", &["-n", s, "link", "set", "lo", "up"])?;
        step("ip", &["-n", s, "addr", "add", &cidr, "dev", "eth0"])?;
        step("ip", &["-n", s, "link", "set", "eth0", "up"])?;
    }
    let source_addr = source_addr.to_string();
    let port = load::PORT.to_string();
    let probability = net.loss.map(|l| l.probability());
    let queue = delay::QUEUE.to_string();
    for host in &net.hosts {
        let rule = |tail: &[&str]| {
            let mut args = vec![
                "netns", "exec", &host.name, "iptables", "-w", "-A", "INPUT", "-i", "eth0",
            ];
            args.extend(tail);
            step("ip", &args)
        };
        if net.load.is_some() {
            rule(&[
                "-s",
                &source_addr,
                "-p",
                "udp",
                "--dport",
                &port,
                "-j",
                "DROP",
            ])?;
        }
        if let Some(p) = &probability {
            rule(&[
                "-m",
                "statistic",
                "--mode",
                "random",
                "--probability",
                p,
                "-j",
                "DROP",
            ])?;
        }
        if net.delay.is_some() {
            rule(&["-j", "NFQUEUE", "--queue-num", &queue, "--queue-bypass"])?;
        }
    }
    let Some(program) = helper else {
        return Ok(());
    };
    let start = |namespace: &str, args: &[String]| {
        not_interrupted(held)?;
        helper::start(program, namespace, args)
    };
    if let Some(delay) = net.delay {
        let args = helper::delay_queue_args(&net.prefix, delay);
        for host in &net.hosts {
            start(&host.name, &args)?;
        }
    }
    if let (Some(load), Some(kbit)) = (net.load, net.link.rate_kbit()) {
        let addrs: Vec<Ipv4Addr> = net.hosts.iter().map(|h| h.addr).collect();
        start(
            &source,
            &helper::load_source_args(&net.prefix, load, kbit, &addrs),
        )?;
    }
    Ok(())
}

/// [`down`], steps 2 to 5, without the checks.
fn remove(prefix: &str) -> Result<(), NetError> {
    let names = Names::new(prefix);
    let mut first_error = None;
    let mut note = |result: Result<(), NetError>| {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    };
    let load_source = names.load_source();
    let ours: Vec<String> = namespaces()?
        .into_iter()
        .filter(|n| names.host_index(n).is_some() || *n == load_source)
        .collect();
    note(helper::stop(prefix, &ours));
    let links = root_links()?;
    let load_veth = names.load_veth();
    for veth in links
        .iter()
        .filter(|l| names.veth_index(l).is_some() || **l == load_veth)
    {
        note(delete_link(veth));
    }
    for ns in &ours {
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
