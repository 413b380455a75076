//! Dynamic named groups between the threads of a job.
//!
//! `node-named MODE THREADS`: the first THREADS threads of every node
//! (thread 0 and THREADS − 1 fibers). MODE is one of
//! - `churn`: every thread joins one name at once, checks that the
//!   instances are 0..p−1 and the lookups agree, half leave and rejoin
//!   (getting the freed instances back), then all leave;
//! - `freeze`: all threads but the last of each node join and freeze the
//!   name and run allreduces, broadcasts and nonblocking allgathers on the
//!   frozen group while the last thread of each node joins and leaves the
//!   same name over and over;
//! - `home-lost`: (one thread per node) everyone joins a name homed on the
//!   last node, which then kills itself; the others find the name served
//!   by the next node with every survivor's instance, the dead node's
//!   thread gone, and printed `n<id>: survived`;
//! - `home-finishes`: the same with the home (node 0) finishing instead;
//! - `churn-home-killed`: every thread of every node but the last joins
//!   and leaves a name homed on the last node over and over, while that
//!   node kills itself; every join and leave succeeds exactly once (a
//!   change retried at the new home after the loss is not applied twice),
//!   and at the end the survivors hold instances 0..p−1;
//! - `member-finishes`: (one thread per node) everyone joins a name homed
//!   on node 0; the last node finishes; node 0, then node 1, see it gone
//!   from the name.
//!
//! Thread 0 of each surviving node prints `named n<id>: ok mode=<MODE>`.

mod common;

use threadwire::group::named::home_of;
use threadwire::{Address, Endpoint, Group, GroupError, Op, RecvError};

/// The first name of the form `<prefix><i>` whose home is `home`.
fn name_homed_on(prefix: &str, home: u32, nodes: u32) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|n| home_of(n, nodes) == home)
        .expect("some name hashes there")
}

fn churn(ep: &Endpoint, threads: u32) {
    let me = ep.address();
    let world = Group::world_threads(ep, threads).expect("world");
    let p = world.size() as u64;
    let name = "churn";
    let inst = ep.join_group(name).expect("join");
    let mut all = world.allgather(&[u64::from(inst)]).expect("allgather");
    all.sort_unstable();
    assert_eq!(all, (0..p).collect::<Vec<_>>(), "instances at {me}");
    assert_eq!(ep.group_instance(name, me), Ok(inst));
    assert_eq!(ep.group_address(name, inst), Ok(me));
    assert_eq!(
        ep.join_group(name),
        Err(GroupError::AlreadyMember {
            name: name.into(),
            instance: inst
        })
    );
    world.barrier().expect("barrier");

    let leaver = world.rank() % 2 == 1;
    if leaver {
        ep.leave_group(name).expect("leave");
        assert_eq!(
            ep.leave_group(name),
            Err(GroupError::NotMember(name.into()))
        );
        assert_eq!(
            ep.group_instance(name, me),
            Err(GroupError::NotMember(name.into()))
        );
    }
    world.barrier().expect("barrier");
    let stayed = p - p / 2;
    assert_eq!(ep.group_size(name), Ok(stayed as usize));
    if !leaver {
        assert!(matches!(
            ep.group_address(name, inst),
            Ok(a) if a == me
        ));
    }
    world.barrier().expect("barrier");
    let inst = if leaver {
        ep.join_group(name).expect("rejoin")
    } else {
        inst
    };
    let mut all = world.allgather(&[u64::from(inst)]).expect("allgather");
    all.sort_unstable();
    assert_eq!(all, (0..p).collect::<Vec<_>>(), "freed instances reused");
    let members = ep.group_members(name).expect("members");
    assert_eq!(members.len() as u64, p);
    assert!(members.contains(&(inst, me)));
    let mut digest = [members.iter().fold(0u64, |h, &(i, a)| {
        h.wrapping_mul(31) ^ u64::from(i << 16 | a.node << 8 | a.thread)
    })];
    let mine = digest[0];
    world.allreduce(&mut digest, Op::Max).expect("allreduce");
    assert_eq!(digest[0], mine, "every member saw the same list");
    world.barrier().expect("barrier");
    ep.leave_group(name).expect("leave");
    world.barrier().expect("barrier");
    assert_eq!(
        ep.group_size(name),
        Err(GroupError::UnknownName(name.into()))
    );
    // The name's home serves the others until they are done.
    world.barrier().expect("barrier");
}

fn freeze(ep: &Endpoint, threads: u32) {
    let me = ep.address();
    let nodes = ep.node().nodes();
    let name = "frozen";
    let mains = nodes * (threads - 1);
    let everyone = Group::world_threads(ep, threads).expect("everyone");
    if me.thread == threads - 1 {
        // The churner: starts when its node's thread 0 has its frozen group.
        ep.recv(Address::new(me.node, 0), 1).expect("go");
        for _ in 0..10 {
            let i = ep.join_group(name).expect("churner join");
            assert!(i >= mains, "{me} got instance {i} of a frozen member");
            assert_eq!(ep.group_address(name, i), Ok(me));
            ep.leave_group(name).expect("churner leave");
        }
    } else {
        let main = Group::world_threads(ep, threads - 1).expect("mains");
        let inst = ep.join_group(name).expect("join");
        main.barrier().expect("barrier");
        let g = ep.freeze_group(name).expect("freeze");
        assert_eq!((g.size() as u32, g.rank() as u32), (mains, inst));
        if me.thread == 0 {
            ep.send(Address::new(me.node, threads - 1), 1, Vec::new())
                .expect("go");
        }
        let m = u64::from(mains);
        for round in 0..20u64 {
            let gathered = g.iallgather(vec![inst]);
            let mut v = [u64::from(inst) + round];
            g.allreduce(&mut v, Op::Sum)
                .expect("allreduce on the frozen group");
            assert_eq!(v[0], m * (m - 1) / 2 + m * round);
            let mut b = [if inst == 0 { round } else { 0 }];
            g.bcast(&mut b, 0).expect("bcast on the frozen group");
            assert_eq!(b[0], round);
            let gathered = gathered.wait().expect("allgather on the frozen group");
            assert_eq!(gathered, (0..mains).collect::<Vec<u32>>());
        }
    }
    everyone.barrier().expect("barrier");
    if me.thread != threads - 1 {
        ep.leave_group(name).expect("leave");
    }
    everyone.barrier().expect("barrier");
}

fn home_lost(ep: &Endpoint) {
    let node = ep.node();
    let last = node.nodes() - 1;
    let name = name_homed_on("lost", last, node.nodes());
    let inst = ep.join_group(&name).expect("join");
    Group::world(ep).expect("world").barrier().expect("barrier");
    if node.id() == last {
        // Dies only once every survivor is out of the barrier.
        for n in 0..last {
            ep.recv(Address::new(n, 0), 4).expect("ready");
        }
        println!("n{last}: killing myself");
        // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        unreachable!("the process was killed");
    }
    ep.send(Address::new(last, 0), 4, Vec::new())
        .expect("ready");
    // Wait for the loss itself, so that the requests below meet the new
    // home.
    let m = ep.recv(Address::new(last, 0), 1);
    assert!(matches!(m, Err(RecvError::PeerLost(_))), "{m:?}");
    survives(ep, &name, inst, last);
}

/// After node `gone` (the name's home) is gone: the name has every other
/// node's thread, with its instance, and still serves joins and leaves.
fn survives(ep: &Endpoint, name: &str, inst: u32, gone: u32) {
    let node = ep.node();
    let others = node.nodes() - 1;
    assert_eq!(ep.group_size(name), Ok(others as usize));
    let members = ep.group_members(name).expect("members");
    assert!(members.iter().all(|&(_, a)| a.node != gone), "{members:?}");
    assert!(members.contains(&(inst, ep.address())), "{members:?}");
    assert_eq!(ep.group_instance(name, ep.address()), Ok(inst));
    let survivors: Vec<Address> = (0..node.nodes())
        .filter(|&n| n != gone)
        .map(|n| Address::new(n, 0))
        .collect();
    let g = Group::new(ep, &survivors).expect("survivors");
    g.barrier().expect("barrier");
    ep.leave_group(name).expect("leave");
    assert_eq!(ep.join_group(name).map(|_| ()), Ok(()));
    g.barrier().expect("barrier");
    assert_eq!(ep.group_size(name), Ok(others as usize));
    println!("n{}: survived", node.id());
    g.barrier().expect("barrier");
    ep.leave_group(name).expect("leave");
    g.barrier().expect("barrier");
}

fn home_finishes(ep: &Endpoint) {
    let node = ep.node();
    let name = name_homed_on("finish", 0, node.nodes());
    let inst = ep.join_group(&name).expect("join");
    Group::world(ep).expect("world").barrier().expect("barrier");
    if node.id() == 0 {
        return; // finishes: the next node serves the name
    }
    let m = ep.recv(Address::new(0, 0), 1);
    assert!(matches!(m, Err(RecvError::PeerLost(_))), "{m:?}");
    survives(ep, &name, inst, 0);
}

fn churn_home_killed(ep: &Endpoint, threads: u32) {
    let node = ep.node();
    let last = node.nodes() - 1;
    let name = name_homed_on("churned", last, node.nodes());
    let world = Group::world_threads(ep, threads).expect("world");
    world.barrier().expect("barrier");
    if node.id() == last {
        if ep.address().thread == 0 {
            std::thread::sleep(std::time::Duration::from_millis(30));
            println!("n{last}: killing myself");
            // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        let _ = ep.recv(Address::new(0, 0), u32::MAX);
        unreachable!("the process was killed");
    }
    // Until the loss is seen, and 50 rounds after it.
    let mut after = 0;
    while after < 50 {
        if node.lost_peers().iter().any(|l| l.node == last) {
            after += 1;
        }
        ep.join_group(&name)
            .expect("join: applied once, never AlreadyMember");
        ep.leave_group(&name)
            .expect("leave: applied once, never NotMember");
    }
    let inst = ep.join_group(&name).expect("join");
    let survivors: Vec<Address> = (0..last)
        .flat_map(|n| (0..threads).map(move |t| Address::new(n, t)))
        .collect();
    let g = Group::new(ep, &survivors).expect("survivors");
    let mut all = g.allgather(&[inst]).expect("allgather");
    all.sort_unstable();
    assert_eq!(all, (0..survivors.len() as u32).collect::<Vec<_>>());
    assert_eq!(ep.group_size(&name), Ok(survivors.len()));
    g.barrier().expect("barrier");
    // Everyone leaves before anyone finishes: two nodes next to each other
    // in the name's chain finishing at once would take its state along.
    ep.leave_group(&name).expect("leave");
    g.barrier().expect("barrier");
}

fn member_finishes(ep: &Endpoint) {
    let node = ep.node();
    let (id, last) = (node.id(), node.nodes() - 1);
    let name = name_homed_on("stay", 0, node.nodes());
    let inst = ep.join_group(&name).expect("join");
    Group::world(ep).expect("world").barrier().expect("barrier");
    if id == last {
        return; // finishes: its goodbye takes it out of the name
    }
    if id == 0 {
        let m = ep.recv(Address::new(last, 0), 1);
        assert!(matches!(m, Err(RecvError::PeerLost(_))), "{m:?}");
    } else {
        ep.recv(Address::new(0, 0), 2).expect("go from the home");
    }
    assert_eq!(ep.group_size(&name), Ok(last as usize));
    let members = ep.group_members(&name).expect("members");
    assert!(members.iter().all(|&(_, a)| a.node != last), "{members:?}");
    assert!(members.contains(&(inst, ep.address())));
    if id == 0 {
        for n in 1..last {
            ep.send(Address::new(n, 0), 2, Vec::new()).expect("go");
        }
        // The home serves the others until they are done.
        for n in 1..last {
            ep.recv(Address::new(n, 0), 3).expect("done");
        }
        ep.leave_group(&name).expect("leave");
    } else {
        ep.send(Address::new(0, 0), 3, Vec::new()).expect("done");
    }
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "churn".to_string());
    let threads: u32 = common::arg(2, 2);
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let run = move |ep: &Endpoint, mode: &str| match mode {
        "churn" => churn(ep, threads),
        "freeze" => freeze(ep, threads),
        "home-lost" => home_lost(ep),
        "home-finishes" => home_finishes(ep),
        "churn-home-killed" => churn_home_killed(ep, threads),
        "member-finishes" => member_finishes(ep),
        other => panic!("unknown mode {other}"),
    };
    let workers: Vec<_> = (1..threads)
        .map(|_| {
            let mode = mode.clone();
            node.spawn(move |ep| run(&ep, &mode))
        })
        .collect();
    run(&ep, &mode);
    for w in workers {
        w.join().expect("worker panicked");
    }
    println!("named n{}: ok mode={mode}", node.id());
}
