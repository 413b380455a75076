//! A node started by a process manager (PMI) instead of `threadwire run`:
//! `mpiexec.hydra -n 4 node-managed` or `srun --mpi=pmi2 -n 4
//! node-managed`.
//!
//! Each node passes a token around a ring of every node (thread 0 to
//! thread 0, `ROUNDS` times), then every node allreduces its number over
//! the world group (a collective across hosts and, on one host, through
//! the host stage), and prints `managed n<id> of <nodes>: ok sum=<sum>
//! peers=<connected>`, where `connected` counts the nodes it made a
//! connection with: its two neighbours, and those its collectives needed.

mod common;

use threadwire::{Address, Group, Op};

const ROUNDS: u32 = 3;

fn main() {
    common::exit_on_panic();
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("init under the process manager");
    let node = ep.node().clone();
    let (me, n) = (node.id(), node.nodes());
    let next = Address::new((me + 1) % n, 0);
    let prev = Address::new((me + n - 1) % n, 0);
    for round in 0..ROUNDS {
        if me == 0 {
            ep.send(next, round, 0u64.to_le_bytes().to_vec())
                .expect("send");
        }
        let m = ep.recv(prev, round).expect("token");
        let hops = u64::from_le_bytes(m.into_vec().try_into().expect("8 bytes"));
        match me {
            0 => assert_eq!(hops, u64::from(n) - 1, "round {round}"),
            _ => ep
                .send(next, round, (hops + 1).to_le_bytes().to_vec())
                .expect("send"),
        }
    }
    let world = Group::world(&ep).expect("world group");
    let mut v = [u64::from(me)];
    world.allreduce(&mut v, Op::Sum).expect("allreduce");
    assert_eq!(v[0], u64::from(n) * u64::from(n - 1) / 2);
    world.barrier().expect("barrier");
    println!("managed n{me} of {n}: ok sum={}", v[0]);
}
