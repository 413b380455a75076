//! One node's part in the protocol of the module docs: the handlers
//! (step 1), thread 0's sweep (steps 2–4 and 6) and the computing threads
//! (step 5).

use super::report::{Measured, Report, Round, SizeReport, Split};
use super::{Config, Error, TaskPool};
use crate::matmul::{element, tolerance, Kernel, Matrix, View};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use threadwire::{
    ActiveMessage, Address, AmError, AmRequest, Encoding, Endpoint, Group, Handler, Node, Packer,
    Payload, Unpacker,
};

const TAG_GO: u32 = 1;
const TAG_DONE: u32 = 2;
const WORK: &str = "agenda.work";
const RESULT: &str = "agenda.result";
const MASTER: u32 = 0;

/// The round under way, where this node's handlers and computing threads
/// find it: set by thread 0 before the round's first barrier, cleared
/// after its last.
#[derive(Default)]
struct Current(Mutex<Option<Arc<Plan>>>);

impl Current {
    fn get(&self) -> Option<Arc<Plan>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, plan: Option<Arc<Plan>>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = plan;
    }
}

/// One round as a node sees it.
struct Plan {
    b: Arc<Matrix>,
    kernel: Kernel,
    /// The tasks, at the master only.
    pool: Option<TaskPool>,
}

/// The handlers of step 1, to call on the master.
struct Handlers {
    work: Handler,
    result: Handler,
}

/// Runs the sweep on this node: the master's report on node 0.
pub(super) fn run(ep: &Endpoint, cfg: &Config) -> Result<Option<Report>, Error> {
    let node = ep.node().clone();
    let current = Arc::new(Current::default());
    let handlers = Arc::new(register(&node, &current)?);
    let most = cfg.concurrencies.iter().copied().max().unwrap_or(1);
    let threads: Vec<_> = (0..most)
        .map(|_| {
            let (current, handlers) = (current.clone(), handlers.clone());
            node.spawn_os(move |ep| computing_thread(&ep, &current, &handlers))
        })
        .collect();
    let addresses: Vec<Address> = threads.iter().map(|h| h.address()).collect();
    let outcome = sweep(ep, cfg, &current, &addresses);
    current.set(None);
    // Every computing thread waits for a go: stop them, even after a failure.
    for &t in &addresses {
        let mut p = Packer::new(Encoding::InPlace);
        p.pack(0u8);
        let _ = ep.send(t, TAG_GO, p);
    }
    let mut failed = None;
    for h in threads {
        let address = h.address();
        match h.join() {
            Err(_) => return Err(Error::Panicked(address)),
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Ok(Ok(())) => {}
        }
    }
    match (outcome, failed) {
        // The thread's own error says more than that it failed.
        (Err(Error::ThreadFailed(_)), Some(e)) => Err(e),
        (outcome, _) => outcome,
    }
}

fn register(node: &Node, current: &Arc<Current>) -> Result<Handlers, AmError> {
    let at_work = current.clone();
    let work = node.register_fiber(WORK, move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
        // Outside a round, or not the master: no answer, so the requester
        // fails with AmError::NoReply naming the handler.
        let Some(plan) = at_work.get() else { return };
        let Some(pool) = &plan.pool else { return };
        let mut p = Packer::new(Encoding::InPlace);
        match pool.take() {
            Some(batch) => p
                .pack(batch.first as u32)
                .pack(batch.rows as u32)
                .pack_slice(pool.rows_of_a(batch)),
            None => p.pack(0u32).pack(0u32),
        };
        // A requester lost meanwhile fails the round at its barrier.
        let _ = am.reply(p);
    })?;
    let at_result = current.clone();
    let result =
        node.register_fiber(RESULT, move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let Some(plan) = at_result.get() else { return };
            let Some(pool) = &plan.pool else { return };
            let answer = match store_result(pool, am.take_payload()) {
                Ok(()) => Vec::new(),
                Err(e) => e.to_string().into_bytes(),
            };
            let _ = am.reply(answer);
        })?;
    Ok(Handlers { work, result })
}

/// Stores a slave's rows of C: `first`, `rows`, then the elements.
fn store_result(pool: &TaskPool, payload: Payload) -> Result<(), Error> {
    let mut m = Unpacker::new(payload)?;
    let first = m.unpack::<u32>()? as usize;
    let rows = m.unpack::<u32>()? as usize;
    let len = rows.saturating_mul(pool.a().cols);
    pool.store(first, rows, len, |c| m.unpack_into(c).map_err(Error::from))
}

/// Thread 0's part: steps 2, 3, 4 and 6 for every size and combination.
fn sweep(
    ep: &Endpoint,
    cfg: &Config,
    current: &Current,
    threads: &[Address],
) -> Result<Option<Report>, Error> {
    let world = Group::world(ep)?;
    world.barrier()?;
    let master = ep.node().id() == MASTER;
    let (a_seed, b_seed) = (cfg.seed, cfg.seed ^ 0x5EED_0FB0_0000_0000);
    let mut sizes = Vec::with_capacity(cfg.sizes.len());
    for &n in &cfg.sizes {
        let mut b = match master {
            true => Matrix::from_fn(n, n, |i, j| element(b_seed, i, j)),
            false => Matrix::zeros(n, n),
        };
        world.bcast(&mut b.data, 0)?;
        let b = Arc::new(b);
        let a = master.then(|| Arc::new(Matrix::from_fn(n, n, |i, j| element(a_seed, i, j))));
        let reference = a.as_ref().map(|a| reference(a, &b));
        let mut serial = Vec::with_capacity(cfg.rounds);
        let mut measured: Vec<Measured> = cfg
            .granularities
            .iter()
            .flat_map(|&granularity| {
                cfg.concurrencies.iter().map(move |&concurrency| Measured {
                    granularity,
                    concurrency,
                    rounds: Vec::with_capacity(cfg.rounds),
                })
            })
            .collect();
        let mut max_error = 0.0f64;
        // Round 0 is untimed. The baseline alternates with the sweep, so
        // that the barriers between are never long apart: they notice a
        // lost node.
        for timed in (0..=cfg.rounds).map(|round| round > 0) {
            if let (Some(a), Some(reference)) = (&a, &reference) {
                let took = serial_baseline(a, &b, reference, cfg.kernel)?;
                if timed {
                    serial.push(took);
                }
            }
            for m in measured.iter_mut() {
                let plan = Plan {
                    b: b.clone(),
                    kernel: cfg.kernel,
                    pool: a.as_ref().map(|a| TaskPool::new(a.clone(), m.granularity)),
                };
                let k = m.concurrency as usize;
                let Some((round, c)) = round(ep, &world, current, &threads[..k], plan)? else {
                    continue;
                };
                if let Some(reference) = &reference {
                    let what = format!("granularity {}, concurrency {k}", m.granularity);
                    max_error = max_error.max(verify(&c, reference, &what)?);
                }
                if timed {
                    m.rounds.push(round);
                }
            }
        }
        sizes.push(SizeReport {
            size: n,
            serial,
            measured,
            max_error,
        });
    }
    Ok(master.then(|| Report {
        nodes: ep.node().nodes(),
        kernel: cfg.kernel,
        rounds: cfg.rounds,
        sizes,
    }))
}

/// The reference product: blas's.
fn reference(a: &Matrix, b: &Matrix) -> Matrix {
    let mut c = Matrix::zeros(a.rows, b.cols);
    Kernel::Blas.multiply_add(a.view(), b.view(), &mut c.data, 1);
    c
}

/// Step 3: the kernel on the whole product, on one thread, verified; its
/// time.
fn serial_baseline(
    a: &Matrix,
    b: &Matrix,
    reference: &Matrix,
    kernel: Kernel,
) -> Result<Duration, Error> {
    let mut c = Matrix::zeros(a.rows, b.cols);
    let began = Instant::now();
    kernel.multiply_add(a.view(), b.view(), &mut c.data, 1);
    let took = began.elapsed();
    verify(&c, reference, "the serial baseline")?;
    Ok(took)
}

/// The largest difference of `c` from `reference`, or [`Error::Wrong`].
fn verify(c: &Matrix, reference: &Matrix, what: &str) -> Result<f64, Error> {
    let error = c.max_difference(reference);
    if error.is_nan() || error > tolerance(reference.cols) {
        return Err(Error::Wrong(format!(
            "C of {what} differs from blas's product by {error:e} (tolerance {:e})",
            tolerance(reference.cols)
        )));
    }
    Ok(error)
}

/// Steps 4–6 for one combination: this node's times, and at the master
/// the round and C.
fn round(
    ep: &Endpoint,
    world: &Group,
    current: &Current,
    threads: &[Address],
    plan: Plan,
) -> Result<Option<(Round, Matrix)>, Error> {
    let plan = Arc::new(plan);
    current.set(Some(plan.clone()));
    world.barrier()?;
    let began = Instant::now();
    for &t in threads {
        let mut p = Packer::new(Encoding::InPlace);
        p.pack(1u8);
        ep.send(t, TAG_GO, p)?;
    }
    let (mut compute, mut busy) = (0.0, 0.0);
    for &t in threads {
        let mut done = ep.recv(t, TAG_DONE)?.unpack()?;
        if done.unpack::<u8>()? == 0 {
            return Err(Error::ThreadFailed(t));
        }
        compute += done.unpack::<f64>()?;
        busy += done.unpack::<f64>()?;
    }
    // Each slave thread had every result acknowledged: all of C is stored.
    world.barrier()?;
    let elapsed = began.elapsed();
    current.set(None);
    let gathered = world.gather(&[compute, busy, threads.len() as f64], 0)?;
    let (Some(times), Some(pool)) = (gathered, &plan.pool) else {
        return Ok(None);
    };
    let n = pool.a().rows;
    if pool.stored() != n {
        return Err(Error::Wrong(format!(
            "{} rows of C came back where {n} were handed out",
            pool.stored()
        )));
    }
    // Rank 0 is the master, the rest slaves: [compute, busy, threads] each.
    let split = |nodes: &[f64]| {
        let sum = |at: usize| nodes.iter().skip(at).step_by(3).sum::<f64>();
        let (compute, busy, threads) = (sum(0), sum(1), sum(2).max(1.0));
        // Times from other nodes: a nonsensical one counts as zero, not a panic.
        let per_thread =
            |secs: f64| Duration::try_from_secs_f64(secs / threads).unwrap_or_default();
        Split {
            compute: per_thread(compute),
            communication: per_thread(busy - compute),
        }
    };
    let (master, slaves) = times.split_at(3.min(times.len()));
    let round = Round {
        elapsed,
        master: split(master),
        slaves: (!slaves.is_empty()).then(|| split(slaves)),
    };
    Ok(Some((round, pool.take_c())))
}

/// A computing thread: a round for every go, until told to stop.
fn computing_thread(ep: &Endpoint, current: &Current, handlers: &Handlers) -> Result<(), Error> {
    let zero = Address::new(ep.node().id(), 0);
    loop {
        let mut go = ep.recv(zero, TAG_GO)?.unpack()?;
        if go.unpack::<u8>()? == 0 {
            return Ok(());
        }
        let began = Instant::now();
        let outcome = match current.get() {
            Some(plan) => match &plan.pool {
                Some(pool) => compute_here(pool, &plan),
                None => compute_for_master(ep, handlers, &plan),
            },
            None => Err(Error::Protocol("a go outside a round".into())),
        };
        let mut p = Packer::new(Encoding::InPlace);
        match &outcome {
            Ok(compute) => p
                .pack(1u8)
                .pack(compute.as_secs_f64())
                .pack(began.elapsed().as_secs_f64()),
            Err(_) => p.pack(0u8),
        };
        ep.send(zero, TAG_DONE, p)?;
        outcome?;
    }
}

/// A master thread's round: tasks from the pool, rows into C; its time
/// in the kernel.
fn compute_here(pool: &TaskPool, plan: &Plan) -> Result<Duration, Error> {
    let n = plan.b.cols;
    let mut compute = Duration::ZERO;
    let mut c = Vec::new();
    while let Some(batch) = pool.take() {
        c.clear();
        c.resize(batch.rows * n, 0.0);
        let a = View::new(pool.rows_of_a(batch), batch.rows, n);
        let began = Instant::now();
        plan.kernel.multiply_add(a, plan.b.view(), &mut c, 1);
        compute += began.elapsed();
        pool.store(batch.first, batch.rows, c.len(), |rows| {
            rows.copy_from_slice(&c);
            Ok::<_, Error>(())
        })?;
    }
    Ok(compute)
}

/// A slave thread's round (step 5): tasks by request, the next asked for
/// before the current is multiplied; its time in the kernel.
fn compute_for_master(ep: &Endpoint, handlers: &Handlers, plan: &Plan) -> Result<Duration, Error> {
    let n = plan.b.cols;
    let ask = || ep.am_request(MASTER, &handlers.work, Packer::new(Encoding::InPlace));
    let mut next = ask();
    let mut sent: Option<AmRequest> = None;
    let mut compute = Duration::ZERO;
    loop {
        let mut task = Unpacker::new(next.wait()?)?;
        let first = task.unpack::<u32>()?;
        let rows = task.unpack::<u32>()? as usize;
        if rows == 0 {
            break;
        }
        let a = task.unpack_vec::<f64>()?;
        if a.len() != rows.saturating_mul(n) {
            return Err(Error::Protocol(format!(
                "a task of {rows} rows with {} elements of A, rows of {n}",
                a.len()
            )));
        }
        next = ask();
        let mut c = vec![0.0; rows * n];
        let began = Instant::now();
        plan.kernel
            .multiply_add(View::new(&a, rows, n), plan.b.view(), &mut c, 1);
        compute += began.elapsed();
        if let Some(previous) = sent.take() {
            acknowledged(previous)?;
        }
        let mut p = Packer::new(Encoding::InPlace);
        p.pack(first).pack(rows as u32).pack_vec(c);
        sent = Some(ep.am_request(MASTER, &handlers.result, p));
    }
    if let Some(previous) = sent {
        acknowledged(previous)?;
    }
    Ok(compute)
}

/// Waits for the master's answer to a result: empty, or why it refused.
fn acknowledged(request: AmRequest) -> Result<(), Error> {
    let answer = request.wait()?;
    match answer.is_empty() {
        true => Ok(()),
        false => Err(Error::Protocol(format!(
            "the master refused rows of C: {}",
            String::from_utf8_lossy(&answer.to_vec())
        ))),
    }
}
