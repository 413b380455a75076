//! Engine rule 9 on a node of its own: memory homed here is mapped when
//! it is allocated, so that no sweep over it faults, the first included
//! (and rule 7 keeps it so across barriers). One test: a process has one
//! space.

use threadwire_dsm::{Dsm, DsmConfig, DsmError};

const UNIT: usize = 8192;
const UNITS: usize = 64;

#[test]
fn memory_homed_here_is_mapped_when_allocated() {
    let ep = threadwire::Config::new()
        .standalone(true)
        .init()
        .expect("a node of its own");
    let dsm = match Dsm::new(&ep, DsmConfig::default()) {
        Ok(dsm) => dsm,
        Err(DsmError::Os(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("SKIPPED: userfaultfd is not permitted here ({e})");
            return;
        }
        Err(e) => panic!("the shared memory: {e}"),
    };
    let words = UNITS * UNIT / 8;
    let a = dsm.alloc::<u64>(words).expect("room");
    for i in 0..words {
        a.set(i, i as u64);
    }
    let first = dsm.stats();
    assert_eq!(first.write_faults + first.read_faults, 0, "{first:?}");
    dsm.barrier(&ep).expect("barrier");
    let b = dsm.alloc::<u64>(words).expect("room");
    let mut sum = 0;
    for i in 0..words {
        // A read first, then a write: no fault either.
        sum += b.get(i);
        b.set(i, a.get(i) * 2);
    }
    assert_eq!(sum, 0, "fresh memory is zero");
    for i in 0..words {
        a.set(i, b.get(i) + 1);
    }
    let after = dsm.stats();
    assert_eq!(after.read_faults + after.write_faults, 0, "{after:?}");
    assert_eq!(a.get(words - 1), 2 * (words as u64 - 1) + 1);
    // A size whose bytes overflow is refused as too large, never wrapped.
    assert!(matches!(
        dsm.alloc::<u64>(usize::MAX / 4),
        Err(DsmError::Full { .. })
    ));
}
