use super::*;

#[test]
fn a_missing_pvm_names_the_package() {
    let text = Pvm::NotMeasured(Arc::new(crate::peers::Error::Missing {
        program: crate::peers::pvm::LIBRARY,
        packages: crate::peers::pvm::PACKAGES,
    }))
    .to_string();
    assert!(text.contains("libpvm3.so.3 missing"), "{text}");
    assert!(text.contains("apt-get install pvm"), "{text}");
}

#[test]
fn a_missing_open_mpi_names_the_packages_and_hangs_are_told() {
    let text = CommSpawn::NotMeasured(Arc::new(crate::peers::comm_spawn::Error::Mpi(
        crate::peers::coll::Error::Missing {
            program: "mpicc.openmpi",
            packages: crate::peers::coll::Mpi::OpenMpi.packages(),
        },
    )))
    .to_string();
    assert!(text.contains("mpicc.openmpi missing"), "{text}");
    assert!(
        text.contains("apt-get install openmpi-bin libopenmpi-dev"),
        "{text}"
    );
    let retried = |count, hung, failed| Retried {
        count,
        hung,
        failed,
    };
    let text = CommSpawn::Measured {
        retried: vec![retried(4, 1, 0), retried(16, 3, 1)],
    }
    .to_string();
    assert!(
        text.contains("N=4: 1 hung, 0 failed; N=16: 3 hung, 1 failed"),
        "{text}"
    );
    let quiet = CommSpawn::Measured {
        retried: Vec::new(),
    }
    .to_string();
    assert!(!quiet.contains("hanging"), "{quiet}");
}
