//! The node side of `bench comm`: the paths of this job, as the module
//! docs of [`comm`](super) say, node 0 reporting each size of each path
//! as it is measured ([`NodeResult::Comm`]).

use super::{Cell, Error, Options, Path, PATH_VAR};
use crate::node_result::NodeResult;
use crate::pingpong::{self, Budget, Sample};
use threadwire::{Address, Endpoint};

/// Node side: measures the paths of this job (module docs); node 0
/// reports a result per path and size.
pub fn node(options: &Options) -> Result<(), Error> {
    let which = std::env::var(PATH_VAR).ok();
    let paths = match which.as_deref() {
        Some("local") => vec![Path::Thread, Path::Shm],
        Some(name) => match name.parse() {
            Ok(link) => vec![Path::Link(link)],
            Err(_) => return Err(Error::NoPath(which)),
        },
        None => return Err(Error::NoPath(None)),
    };
    let ep = threadwire::init().map_err(Error::Init)?;
    let me = ep.address().node;
    for path in paths {
        let budgets: Vec<(usize, Budget)> = options
            .sizes(path)
            .into_iter()
            .map(|s| (s, options.budget(path, s)))
            .collect();
        // A result per size, reported as it is measured: the launcher
        // shows progress as the results come.
        let report = |sample: &Sample, budget: Budget| {
            NodeResult::Comm {
                path: path.name(),
                cell: Cell {
                    sample: *sample,
                    repetitions: budget.repetitions,
                },
            }
            .send(ep.node())
            .map_err(Error::Report)
        };
        match (path, me) {
            (Path::Thread, 0) => {
                let partner_budgets = budgets.clone();
                let partner = ep.node().spawn(move |ep| {
                    ping_pong(&ep, Address::new(0, 0), false, &partner_budgets, |_, _| {
                        Ok(())
                    })
                });
                ping_pong(&ep, partner.address(), true, &budgets, report)?;
                partner.join().map_err(Error::Join)??;
            }
            (Path::Thread, _) => {}
            (_, 0) => ping_pong(&ep, Address::new(1, 0), true, &budgets, report)?,
            (_, 1) => ping_pong(&ep, Address::new(0, 0), false, &budgets, |_, _| Ok(()))?,
            _ => {}
        }
    }
    Ok(())
}

/// One [`pingpong::run`] per size, each with its own budget; the leader
/// hands each size's sample to `on_sample` with its budget.
fn ping_pong(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    budgets: &[(usize, Budget)],
    mut on_sample: impl FnMut(&Sample, Budget) -> Result<(), Error>,
) -> Result<(), Error> {
    for &(size, budget) in budgets {
        let samples =
            pingpong::run(ep, partner, leader, &[size], budget).map_err(Error::Pingpong)?;
        for sample in &samples {
            on_sample(sample, budget)?;
        }
    }
    Ok(())
}
