//! Spawning past the node's thread numbers: an error that says so, from
//! `endpoint` and the `try_spawn` family, and the documented panic from
//! `spawn`.

use threadwire::{Config, SpawnError};

#[test]
fn thread_numbers_run_out_with_a_clear_error() {
    let ep = Config::new()
        .standalone(true)
        .init()
        .expect("standalone init");
    let node = ep.node().clone();
    let mut endpoints = Vec::new();
    let err = loop {
        match node.endpoint() {
            Ok(e) => endpoints.push(e),
            Err(e) => break e,
        }
    };
    // Thread 0 is `ep`; every other number up to 65,535 was given once.
    assert_eq!(endpoints.len(), 65_535);
    let text = format!("{err:?}");
    assert!(text.contains("no thread number left"), "{text}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the spawn error is the source: {text}"
    );
    assert!(matches!(
        node.try_spawn_os(|_| ()),
        Err(SpawnError::ThreadsExhausted { max: 65_536 })
    ));
    assert!(matches!(
        node.try_spawn(|_| ()),
        Err(SpawnError::ThreadsExhausted { .. })
    ));
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| node.spawn_os(|_| ())));
    assert!(panic.is_err(), "spawn_os panics as documented");
    drop(endpoints);
}
