//! Emulated hosts: network namespaces joined by a Linux bridge, each host's
//! link shaped to a classic rate and, if asked, lossy, delayed or loaded
//! (`threadwire net up` / `net down`).
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
//! **Impairments** ([`NetConfig::loss`], [`NetConfig::delay`],
//! [`NetConfig::load`]; none by default) act on what a host receives on
//! its `eth0`, by rules in the namespace's iptables `INPUT` chain (so
//! loopback traffic is untouched, and the rules go with the namespace).
//! A path between two hosts thus has each impairment once each way; so
//! does the path between a host and this machine (a launcher on the
//! bridge address). `netem` would do it all, but not every kernel has it.
//!
//! - Loss P%: `-m statistic --mode random --probability P/100 -j DROP`.
//! - Delay D ± J: `-j NFQUEUE --queue-num 0 --queue-bypass`, and a delay
//!   queue per host, a helper process that gives each packet its verdict
//!   D ± J after it arrived (`delay.rs` has its numbered steps, its memory
//!   bound and its precision). If it dies, packets pass undelayed.
//! - Load F: a namespace `pload` with `10.77.N.253` on the bridge, whose
//!   helper, the load's source, sends every host UDP at F of the link's
//!   rate (`load.rs`). The frames cross the host's receive link, the
//!   token bucket on `pv{i}`, where they compete with the job's packets,
//!   and the host drops them (`-s 10.77.N.253 -p udp --dport 9 -j DROP`,
//!   before the other rules). A bridge forwards traffic between two other
//!   hosts on their own links, so only traffic sent *to* a host loads it.
//!   Needs a shaped link, and at most 252 hosts.
//!
//! The helpers are the hidden subcommands `threadwire net delay-queue` and
//! `net load-source` (or another program that calls [`serve_helper`],
//! named in [`NetConfig::helper`]), run detached in their namespaces;
//! `helper.rs` says how they are started, found and stopped.
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
//! exact forms `ph<digits>`, `pv<digits>`, `pbr`, and with a load `pload`
//! (a namespace) and `pvl` (its veth), belong to a net, so prefix `tw`
//! never touches the namespaces of prefix `tw2` (`tw2h0` is not `tw`,
//! `h` and digits). Helper processes belong to it if they run in its
//! namespaces with the command line `… net delay-queue p …` or
//! `… net load-source p …`.
//!
//! **Interruption.** While [`up`] or [`down`] changes the system, the
//! calling thread holds back SIGINT, SIGTERM and SIGHUP, and the `ip` and
//! `tc` children (and the helpers) run in their own process group, so a
//! terminal's Ctrl-C reaches only this process and kills no command
//! half-way. [`up`] looks
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
//!
//! # Up and down
//!
//! [`up`], in short (its docs give every command):
//!
//! 1. Check for root and the config; take the interrupt registry's lock and
//!    hold the three signals.
//! 2. Remove any net of the prefix, whole or half-built, as [`down`] does.
//! 3. Refuse if another interface holds an address in the subnet.
//! 4. Make the bridge and give it `.254`.
//! 5. Per host: the namespace, the veth pair, addresses, the default route
//!    and, on a shaped link, a token bucket at each end.
//! 6. With a load: the namespace `pload` on the bridge.
//! 7. Per host, the impairments' iptables rules.
//! 8. The helpers: a delay queue per host, the load's source; each must
//!    say it is ready before `up` goes on.
//! 9. On a failed command or a signal, remove everything as in step 2.
//!
//! [`down`]: 1. the same checks and holds; 2. stop the helpers; 3. delete
//! the root-side veths; 4. delete the namespaces (and their rules); 5.
//! delete the bridge; every step tried even if one before failed.
//!
//! The parts: `link.rs` (the rates and token buckets), `impair.rs` (loss,
//! delay and load as values), `plan.rs` (config, names, subnet), `build.rs`
//! ([`up`], [`down`]), `helper.rs` (starting, finding and stopping the
//! helpers, [`serve_helper`]), `delay.rs` (the delay queue), `load.rs` (the
//! load's source), `inspect.rs` ([`current`] and the listings it reads),
//! `command.rs` (running `ip` and `tc`), `scoped.rs` ([`ScopedNet`]),
//! `error.rs` ([`NetError`]).

mod build;
mod command;
mod delay;
mod error;
mod helper;
mod impair;
mod inspect;
mod link;
mod load;
mod plan;
mod scoped;

pub use build::{down, up};
pub use command::unavailable;
pub use delay::LIMIT as DELAY_QUEUE_LIMIT;
pub use error::NetError;
pub use helper::serve_helper;
pub use impair::{Delay, Load, Loss, ParseImpairmentError};
pub use inspect::{current, delay_queue_drops};
pub use link::{Link, ParseLinkError};
pub use plan::{Host, Net, NetConfig};
pub use scoped::ScopedNet;
