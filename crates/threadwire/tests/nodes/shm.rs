//! Nodes on one host over the shared-memory channel.
//!
//! `node-shm MODE`:
//! - `exchange`: n0 and n1 (and n2 and n3, …) trade messages of 8 B to
//!   8 MiB both ways, many times over for the small ones (inline,
//!   chunked or by cross-memory copy, as the channel decides) and check
//!   every byte; in a job of 4 or more, each node then trades one message
//!   with the node two away (n0 with n2, n1 with n3: pairs connect on
//!   first use, so these pairs connect too); each node prints
//!   `shm nK: region <name>` for the
//!   shared-memory mapping it found in `/proc/self/maps`, then `shm nK: ok`.
//! - `wait`: after one exchange, prints its regions and
//!   `shm nK: ready pid=<pid>`, and waits
//!   for a message that never comes, until its peers or the launcher are
//!   lost (then prints `shm nK: lost` and exits 0).
//! - `corrupt`: n1 forges a record of absurd length in the ring it sends
//!   on; n0 must close the channel (`shm n0: PeerLost …`), not crash.

mod common;

use threadwire::{Address, Endpoint, RecvError};

const SIZES: [usize; 7] = [8, 200, 4096, 20_000, 100_000, 1 << 20, 8 << 20];

fn pattern(size: usize, salt: u8) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u8).wrapping_mul(31) ^ salt)
        .collect()
}

/// The shared-memory mappings of this process: (start, end, name).
fn regions() -> Vec<(usize, usize, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines()
        .filter(|l| l.contains("threadwire-job"))
        .map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next().expect("address range");
            let (a, b) = range.split_once('-').expect("a-b");
            let name = l[l.find("threadwire-job").expect("name")..].to_string();
            (
                usize::from_str_radix(a, 16).expect("hex"),
                usize::from_str_radix(b, 16).expect("hex"),
                name,
            )
        })
        .collect()
}

fn exchange(ep: &Endpoint, peer: Address) {
    let me = ep.address().node;
    for (i, &size) in SIZES.iter().enumerate() {
        let tag = i as u32;
        let rounds = if size <= 4096 { 2000 } else { 3 };
        for _ in 0..rounds {
            ep.send(peer, tag, pattern(size, me as u8))
                .expect("send to the peer");
            let m = ep.recv(peer, tag).expect("receive from the peer");
            assert_eq!(m.len(), size, "size of message {i}");
            assert!(
                m.into_vec() == pattern(size, peer.node as u8),
                "bytes of message {i} ({size} B) differ"
            );
        }
    }
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "exchange".to_string());
    let ep = threadwire::Config::new().log(true).init().expect("init");
    let me = ep.address().node;
    // Pairs: n0 with n1, n2 with n3, …
    let peer = Address::new(me ^ 1, 0);
    match mode.as_str() {
        "exchange" => {
            exchange(&ep, peer);
            let nodes = ep.node().nodes();
            if nodes >= 4 {
                let across = Address::new(me ^ 2, 0);
                if across.node < nodes {
                    ep.send(across, 77, vec![me as u8]).expect("send two away");
                    let m = ep.recv(across, 77).expect("receive from two away");
                    assert_eq!(m.into_vec(), vec![across.node as u8]);
                }
            }
            for (_, _, name) in regions() {
                println!("shm n{me}: region {name}");
            }
            println!("shm n{me}: ok");
        }
        "wait" => {
            exchange(&ep, peer);
            for (_, _, name) in regions() {
                println!("shm n{me}: region {name}");
            }
            println!("shm n{me}: ready pid={}", std::process::id());
            match ep.recv(peer, 999) {
                Err(RecvError::PeerLost(lost)) => println!("shm n{me}: lost {lost}"),
                other => println!("shm n{me}: unexpected {other:?}"),
            }
        }
        "corrupt" => {
            ep.send(peer, 0, vec![1u8; 8]).expect("send");
            let _ = ep.recv(peer, 0).expect("first exchange");
            if me == 1 {
                // n1 created the region (the higher node offers): the
                // first half is the ring n1 sends on. One 8-byte message
                // took slot 0; forge a published record in slot 1 whose
                // length is absurd (layout in the transport's `shm::ring`).
                let (start, _, _) = regions().pop().expect("a shared region");
                let slot = start + 256 + 256;
                // SAFETY: inside a live shared mapping of this process;
                // the peer reads it as hostile memory.
                unsafe {
                    ((slot + 8) as *mut u64).write_volatile(0x7fff_ffff | 1 << 32);
                    ((slot + 16) as *mut u64).write_volatile(1);
                    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                    (slot as *mut u64).write_volatile(2);
                }
                match ep.recv(peer, 2) {
                    Err(e) => println!("shm n1: {e}"),
                    Ok(_) => println!("shm n1: unexpected reply"),
                }
            } else {
                match ep.recv(peer, 1) {
                    Err(RecvError::PeerLost(lost)) => println!("shm n0: PeerLost {lost}"),
                    other => println!("shm n0: unexpected {other:?}"),
                }
            }
        }
        other => panic!("unknown mode {other}"),
    }
}
