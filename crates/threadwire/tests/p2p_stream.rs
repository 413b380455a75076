//! A stream of small messages over TCP corks the connection, and what the
//! cork holds still arrives, intact and in order, whether the sender goes
//! on computing or waits for an answer (see `nodes/stream.rs`).

mod support;

#[test]
fn a_corked_stream_arrives_whole_while_its_sender_computes() {
    let spec = support::job(2, "node-stream")
        .args(["2000"])
        .env(threadwire::env::CHANNEL, "tcp");
    let out = support::run(spec);
    out.assert_success();
    let t = out.transcript();
    for node in 0..2 {
        out.line(node, &format!("stream n{node}: ok"));
    }
    assert!(
        out.line(0, "stream n0: answered while computing=")
            .ends_with("=true"),
        "{t}"
    );
}
