//! A token passes through every thread of every node, ROUNDS times:
//! `threadwire run -n 3 -- target/release/examples/ring [THREADS [ROUNDS]]`.
use threadwire::{Address, Endpoint};

fn pass(ep: &Endpoint, threads: u32, rounds: u32) -> Result<(), Box<dyn std::error::Error>> {
    let me = ep.address();
    let nodes = ep.node().nodes();
    let next = if me.thread + 1 < threads {
        Address::new(me.node, me.thread + 1)
    } else {
        Address::new((me.node + 1) % nodes, 0)
    };
    let prev = if me.thread > 0 {
        Address::new(me.node, me.thread - 1)
    } else {
        Address::new((me.node + nodes - 1) % nodes, threads - 1)
    };
    let origin = me == Address::new(0, 0);
    for round in 0..rounds {
        if origin {
            ep.send(
                next,
                round,
                (round as u64 * (nodes * threads) as u64)
                    .to_le_bytes()
                    .to_vec(),
            )?;
        }
        let m = ep.recv(prev, round)?;
        let count = u64::from_le_bytes(m.into_vec().try_into().map_err(|_| "bad token")?);
        if origin {
            let expected = (round as u64 + 1) * (nodes * threads) as u64 - 1;
            if count != expected {
                return Err(
                    format!("round {round}: token counted {count}, expected {expected}").into(),
                );
            }
        } else {
            ep.send(next, round, (count + 1).to_le_bytes().to_vec())?;
        }
    }
    if origin {
        println!(
            "token passed {rounds} times through {} threads on {nodes} nodes",
            nodes * threads
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let threads: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(4);
    let rounds: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(100);
    let ep = threadwire::init()?;
    let others: Vec<_> = (1..threads)
        .map(|_| {
            ep.node()
                .spawn(move |ep| pass(&ep, threads, rounds).map_err(|e| e.to_string()))
        })
        .collect();
    pass(&ep, threads, rounds)?;
    for t in others {
        t.join().expect("ring thread panicked")?;
    }
    Ok(())
}
