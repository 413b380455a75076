//! Agreement among a group's survivors, and the group of survivors
//! (`group_agree.rs` runs it).
//!
//! `node-agree MODE [KILLED] [DELAY_US]`, every node's thread 0 a member
//! of the world group:
//! - `rounds`: 20 agreements with no failure, flags differing by round;
//! - `dies`: the nodes listed in KILLED (comma-separated) kill themselves
//!   DELAY_US microseconds after entering the agreement (negative: before
//!   it, right after a barrier), while every survivor agrees on
//!   `flag = (node != 2)`, then shrinks the group and runs an allreduce
//!   in it, then agrees once more in the new group.
//! - `revoke` (3 nodes): n2 kills itself once n0 and n1 tell it they are
//!   past a barrier. n0 waits in a
//!   group receive from n1 that n1 will never send; n1 finds n2 lost in
//!   a barrier and
//!   revokes the group: n0's receives end with `Revoked`, a barrier
//!   fails alike, and both survivors shrink the group and reduce in it.
//!
//! Survivors print `agreement <i>: <flag> <failed ranks>` for each
//! agreement (the test compares them across nodes) and `agree <mode>: ok`.

mod common;

use std::time::Duration;
use threadwire::{Group, Op};

/// Tag of "past the first barrier", to n2 in the `revoke` mode.
const PAST_BARRIER: u32 = 99;

fn kill_self() -> ! {
    // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("killed")
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "rounds".to_string());
    let killed: String = common::arg(2, String::new());
    let delay: i64 = common::arg(3, 0);
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let me = ep.address().node;
    let world = Group::world(&ep).expect("world");
    // A node killed right after it returned from the barrier may fail the
    // others' barrier: the agreement is what must cope.
    let here = world.barrier();
    assert!(mode == "dies" || here.is_ok(), "{here:?}");
    if mode == "revoke" && me != 2 {
        // n2 dies only once both others are past the barrier: killed
        // sooner, its last barrier message could die with its
        // connection (a reset) and fail theirs.
        ep.send(threadwire::Address::new(2, 0), PAST_BARRIER, Vec::new())
            .expect("tell n2");
    }
    match mode.as_str() {
        "rounds" => {
            for round in 0..20u32 {
                let flag = !(me + round).is_multiple_of(3) || round.is_multiple_of(2);
                let a = world.agree(flag).expect("agree");
                println!("agreement {round}: {} {:?}", a.flag, a.failed);
            }
        }
        "dies" => {
            let doomed: Vec<u32> = killed.split(',').filter_map(|s| s.parse().ok()).collect();
            if doomed.contains(&me) {
                if delay < 0 {
                    kill_self();
                }
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_micros(delay as u64));
                    kill_self();
                });
            }
            let a = world.agree(me != 2).expect("agree");
            println!("agreement 0: {} {:?}", a.flag, a.failed);
            if doomed.contains(&me) {
                // Outlived the delay: wait for the kill without taking part
                // any more, as if already dead.
                loop {
                    std::thread::park();
                }
            }
            let survivors = world.shrink().expect("shrink");
            assert!(survivors.size() < world.size() && survivors.rank_of(ep.address()).is_some());
            println!("agreement shrink: {}", survivors.size());
            let mut sum = [1u64];
            survivors
                .allreduce(&mut sum, Op::Sum)
                .expect("allreduce among survivors");
            assert_eq!(sum[0] as usize, survivors.size());
            let b = survivors.agree(true).expect("agree again");
            println!("agreement 1: {} {:?}", b.flag, b.failed);
        }
        "revoke" => revoke(&ep, &world),
        other => panic!("unknown mode {other}"),
    }
    println!("agree {mode}: ok");
}

/// The `revoke` mode (module docs).
fn revoke(ep: &threadwire::Endpoint, world: &Group) {
    use threadwire::CollError;
    let me = ep.address().node;
    match me {
        2 => {
            for n in [0, 1] {
                ep.recv(threadwire::Address::new(n, 0), PAST_BARRIER)
                    .expect("n0 and n1 past the barrier");
            }
            kill_self()
        }
        1 => {
            // The barrier fails once n2 is found lost.
            let e = world.barrier().expect_err("a barrier with n2 dead");
            assert!(matches!(e, CollError::PeerLost(_)), "{e:?}");
            println!("n1: barrier failed: {e}");
            world.revoke();
            println!("n1: revoked");
        }
        _ => {
            // Waits on a live member: n2's loss alone would never end it.
            let e = world.recv(Some(1), 7).expect_err("n1 never sends");
            assert_eq!(e, CollError::Revoked);
            println!("n0: receive from n1 ended: {e}");
        }
    }
    assert_eq!(world.barrier(), Err(CollError::Revoked));
    assert_eq!(
        world.send(0, 1, Vec::new()).unwrap_err(),
        CollError::Revoked
    );
    assert_eq!(world.recv(None, 1).unwrap_err(), CollError::Revoked);
    world.revoke(); // again: nothing changes
    let survivors = world.shrink().expect("shrink a revoked group");
    let mut sum = [1u64];
    survivors
        .allreduce(&mut sum, Op::Sum)
        .expect("allreduce among survivors");
    println!("n{me}: survivors {} sum {}", survivors.size(), sum[0]);
}
