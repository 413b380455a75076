//! The host–node layout: node 0 (the master) sends B and blocks of rows
//! of A to worker threads on the other nodes (on node 0 itself in a
//! one-node job); each worker multiplies its block with the kernel and
//! sends its rows of C back with its time in the kernel; the master
//! gathers C and verifies it. Two rounds: B = identity (C must equal A
//! exactly), then a random B, timed, checked against the blas kernel.
//!
//! B crosses the network once per node, not once per thread: the master
//! sends it to each node's first worker thread, which hands it on to the
//! node's others through memory (a same-node message moves its buffer).
//! NCS' program (its Fig. 14) sent B to every thread, doubling the
//! traffic of two threads a node; on a 10 Mbit/s link that alone made its
//! multithreaded run slower than the serial one here, where computing a
//! block takes less than sending it.

use super::{seeds, verify_identity, verify_random, Config, Error, Kernel, Matrix, Report};
use std::time::{Duration, Instant};
use threadwire::{Address, Encoding, Endpoint, Packer, ANY_SOURCE};

const TAG_B: u32 = 1;
const TAG_A: u32 = 2;
const TAG_C: u32 = 3;

/// Runs the host–node multiply on this node; the report on node 0.
pub fn run(ep: &Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    let node = ep.node().clone();
    let worker_nodes: Vec<u32> = if node.nodes() == 1 {
        vec![0]
    } else {
        (1..node.nodes()).collect()
    };
    let is_worker_node = worker_nodes.contains(&node.id());
    let kernel = cfg.kernel;
    let handles: Vec<_> = if is_worker_node {
        (0..cfg.threads)
            .map(|_| {
                let threads = cfg.threads;
                node.spawn(move |ep| worker(&ep, kernel, threads))
            })
            .collect()
    } else {
        Vec::new()
    };
    let report = if node.id() == 0 {
        // Worker threads are t1..=threads on every worker node: spawned first.
        let workers: Vec<Address> = worker_nodes
            .iter()
            .flat_map(|&n| (1..=cfg.threads).map(move |t| Address::new(n, t)))
            .collect();
        let report = master(ep, &workers, cfg);
        // Every worker waits for a B: stop them even after a failure.
        for &w in &workers {
            let mut p = Packer::new(Encoding::ReceiverMakesRight);
            p.pack(0u32);
            let _ = ep.send(w, TAG_B, p);
        }
        Some(report?)
    } else {
        None
    };
    for h in handles {
        let address = h.address();
        h.join().map_err(|_| Error::Panicked(address))??;
    }
    Ok(report)
}

fn worker(ep: &Endpoint, kernel: Kernel, threads: u32) -> Result<(), Error> {
    let host = Address::new(0, 0);
    let me = ep.address();
    loop {
        // From the master, or (after the first) from this node's first.
        let mut b_msg = ep.recv(ANY_SOURCE, TAG_B)?.unpack()?;
        let n = b_msg.unpack::<u32>()? as usize;
        if n == 0 {
            return Ok(()); // no more rounds
        }
        let b = b_msg.unpack_vec::<f64>()?;
        if me.thread == 1 {
            for t in 2..=threads {
                let mut p = Packer::new(Encoding::ReceiverMakesRight);
                p.pack(n as u32).pack_slice(&b);
                ep.send(Address::new(me.node, t), TAG_B, p)?;
            }
        }
        let mut a_msg = ep.recv(host, TAG_A)?.unpack()?;
        let first = a_msg.unpack::<u32>()?;
        let a = a_msg.unpack_vec::<f64>()?;
        if b.len() != n * n || a.len() % n != 0 {
            return Err(Error::Protocol(format!(
                "{} elements of B and {} of A for n = {n}",
                b.len(),
                a.len()
            )));
        }
        let rows = a.len() / n;
        let mut c = vec![0.0; rows * n];
        let t = Instant::now();
        kernel.multiply_add(
            super::View::new(&a, rows, n),
            super::View::new(&b, n, n),
            &mut c,
            1,
        );
        let took = t.elapsed();
        let mut p = Packer::new(Encoding::ReceiverMakesRight);
        p.pack(first).pack(took.as_secs_f64()).pack_vec(c);
        ep.send(host, TAG_C, p)?;
    }
}

/// One round: C from the workers, and their mean time in the kernel.
fn round(
    ep: &Endpoint,
    workers: &[Address],
    a: &Matrix,
    b: &Matrix,
) -> Result<(Matrix, Duration), Error> {
    let n = a.rows;
    let per = n.div_ceil(workers.len());
    for (w, &to) in workers.iter().enumerate() {
        let first = (w * per).min(n);
        let last = ((w + 1) * per).min(n);
        if to.thread == 1 {
            // The node's first worker hands B on to the others.
            let mut p = Packer::new(Encoding::ReceiverMakesRight);
            p.pack(n as u32).pack_slice(&b.data);
            ep.send(to, TAG_B, p)?;
        }
        let mut p = Packer::new(Encoding::ReceiverMakesRight);
        p.pack(first as u32)
            .pack_slice(&a.data[first * n..last * n]);
        ep.send(to, TAG_A, p)?;
    }
    let mut c = Matrix::zeros(n, n);
    let mut compute = 0.0;
    for _ in workers {
        let mut m = ep.recv(ANY_SOURCE, TAG_C)?.unpack()?;
        let first = m.unpack::<u32>()? as usize;
        compute += m.unpack::<f64>()?;
        let block = m.unpack_vec::<f64>()?;
        if first * n + block.len() > c.data.len() {
            return Err(Error::Protocol(format!("block at row {first} overruns C")));
        }
        c.data[first * n..first * n + block.len()].copy_from_slice(&block);
    }
    let mean = compute / workers.len() as f64;
    Ok((c, Duration::try_from_secs_f64(mean).unwrap_or_default()))
}

fn master(ep: &Endpoint, workers: &[Address], cfg: Config) -> Result<Report, Error> {
    let n = cfg.size;
    let (a_seed, b_seed) = seeds(cfg.seed);
    let a = Matrix::from_fn(n, n, |i, j| super::element(a_seed, i, j));
    let (c, _) = round(ep, workers, &a, &Matrix::identity(n))?;
    verify_identity(&a, &c, "the master")?;
    let b = Matrix::from_fn(n, n, |i, j| super::element(b_seed, i, j));
    let start = Instant::now();
    let (c, compute) = round(ep, workers, &a, &b)?;
    let elapsed = start.elapsed();
    let max_error = verify_random(&a, &b, &c, cfg.threads as usize)?;
    Ok(Report {
        size: n,
        layout: cfg.layout,
        mesh: None,
        nodes: ep.node().nodes(),
        kernel: cfg.kernel,
        threads: cfg.threads,
        serial: cfg.serial,
        elapsed,
        compute,
        communication: elapsed.saturating_sub(compute),
        max_error,
    })
}
