//! The node side of `bench encodings`: node 0 and node 1 ping-pong every
//! size with every encoding in turn, node 0 reporting each as it is
//! measured ([`NodeResult::Encodings`]).

use super::{name, payload_sizes, Error, Options, PackedValues};
use crate::node_result::NodeResult;
use crate::pingpong::{self, Budget};
use threadwire::{Address, Encoding};

/// Node side: node 0 and node 1 ping-pong every size with every encoding
/// (module docs); node 0 reports each as it is measured.
pub fn node(options: &Options) -> Result<(), Error> {
    let ep = threadwire::init().map_err(Error::Init)?;
    let (leader, partner) = match ep.address().node {
        0 => (true, Address::new(1, 0)),
        1 => (false, Address::new(0, 0)),
        _ => return Ok(()),
    };
    let budget = Budget {
        repetitions: options.budget.repetitions.max(1),
        ..options.budget
    };
    for size in payload_sizes(&options.sizes) {
        for encoding in Encoding::ALL {
            let mut bounce = PackedValues { encoding };
            let samples = pingpong::run_with(&ep, partner, leader, &[size], budget, &mut bounce)
                .map_err(|e| Error::Pingpong(encoding, e))?;
            for sample in samples {
                NodeResult::Encodings {
                    encoding: name(encoding).to_string(),
                    sample,
                }
                .send(ep.node())
                .map_err(Error::Report)?;
            }
        }
    }
    Ok(())
}
