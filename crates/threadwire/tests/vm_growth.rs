//! A job that grows and shrinks while it runs (`threadwire::vm`; the node
//! program is `nodes/vm.rs`).

mod support;

use threadwire_launch::{Event, FailurePolicy, Host, NodeExit};

/// n0 adds two nodes on this host; they talk to every founder and to each
/// other, over shared memory, and take part in a collective; their finish
/// is notified; the event log names the change.
#[test]
fn a_job_adds_nodes_that_talk_to_everyone() {
    let mut log = Vec::new();
    let out = support::run_observed(support::job(2, "node-vm").args(["grow"]), |e| {
        if let Event::Machine(what) = e {
            log.push(what.clone());
        }
    });
    out.assert_success();
    assert_eq!(out.report.exits.len(), 4, "{}", out.transcript());
    out.line(0, "n0: added [2, 3] in");
    out.line(0, "n0: every joiner answered");
    out.line(1, "n1: counts 4 nodes");
    out.line(1, "n1: greeted both joiners");
    for n in 0..4 {
        out.line(n, &format!("n{n}: sum of ids 6"));
    }
    for n in 2..4 {
        out.line(n, &format!("n{n}: joined a job of 4 nodes"));
        out.line(0, &format!("n0: n{n} is Alive, route shm"));
    }
    out.line(0, "n0: machine has 4 nodes");
    out.line(0, "n0: told joiners finished: [2, 3]");
    assert!(
        log.iter()
            .any(|l| l.starts_with("n0 adds 2 nodes: n2 on local, n3 on local")),
        "{log:?}"
    );
    assert!(log.iter().any(|l| l.contains("2 of 2 joined")), "{log:?}");
}

/// A node added after another added one was lost reaches every node:
/// joining, it records the gone node lost and nothing more.
#[test]
fn a_node_added_after_a_loss_reaches_everyone() {
    let out = support::run(
        support::job(2, "node-vm")
            .args(["relost"])
            .on_failure(FailurePolicy::Continue),
    );
    out.assert_status_ok();
    out.line(0, "n0: quitter lost:");
    out.line(0, "n0: added [3]");
    out.line(0, "n0: the node added after a loss answered");
    out.line(3, "n3: reached n0 and n1");
}

/// Every bad request gets a typed error and costs nothing; a good one
/// after them adds a node.
#[test]
fn bad_requests_are_refused_with_their_cause() {
    let out = support::run(support::job(1, "node-vm").args(["refuse"]).max_nodes(3));
    out.assert_status_ok();
    out.line(
        0,
        "n0: beyond the maximum: refused: the job has 1 nodes and may grow to 3",
    );
    out.line(0, "n0: unknown host: refused: \"mars\" is not");
    out.line(
        0,
        "n0: own host: refused: local is the asking node's own host",
    );
    out.line(
        0,
        "n0: absent host: refused: netns:nowhere is not a host of this job",
    );
    out.line(
        0,
        "n0: missing program: refused: cannot start /nonexistent/node",
    );
    // The node that could not start took number 1.
    out.line(0, "n0: added [2]");
    out.line(2, "n2: told done, 3 bytes");
    assert_eq!(out.report.exits[1], NodeExit::Code(127));
}

/// n0 adds two namespace hosts and two nodes on each, uses them, then
/// removes the hosts, which kills the four: n0 is told of the hosts and of
/// every exit, n1 sees them lost, and the job still succeeds. Needs root
/// and network namespaces; without them it says why it skips.
#[test]
fn a_job_adds_four_nodes_on_namespace_hosts_and_removes_them() {
    use threadwire_testbed::net::{self, Link, ScopedNet};
    if let Some(why) = net::unavailable("twvm") {
        eprintln!("SKIPPED: cannot create network namespaces here: {why}");
        return;
    }
    let net = ScopedNet::up_with_free_prefix("twvm", 3, Link::Unshaped)
        .expect("namespaces are available, yet the net could not be built");
    let names: Vec<String> = net.launch_hosts().iter().map(Host::to_string).collect();
    let hosts = vec![Host::Local, net.launch_hosts()[0].clone()];
    let out = support::run(
        support::job(2, "node-vm")
            .args(["hosts", &names[1], &names[2]])
            .hosts(hosts)
            .on_failure(FailurePolicy::Abort),
    );
    out.assert_status_ok();
    out.line(0, &format!("n0: hosts [\"local\", \"{}\"]", names[0]));
    out.line(0, &format!("n0: told host 2 added: {}", names[1]));
    out.line(0, &format!("n0: told host 3 added: {}", names[2]));
    out.line(0, "n0: added [2, 3, 4, 5] in");
    out.line(0, "n0: every joiner answered");
    for n in 0..6 {
        out.line(n, &format!("n{n}: sum of ids 15"));
    }
    out.line(0, "n0: removing the hosts killed [2, 3, 4, 5]");
    out.line(0, &format!("n0: told host removed: {}", names[1]));
    out.line(0, "n0: told removed nodes exited: [2, 3, 4, 5]");
    out.line(
        0,
        &format!("n0: hosts present [\"local\", \"{}\"]", names[0]),
    );
    for n in 2..6 {
        out.line(1, &format!("n1: n{n} lost"));
        assert_eq!(out.report.exits[n as usize], NodeExit::Signal(9));
    }
}
