use super::*;
use crate::{Failure, Source, TagMatch};

fn killed(node: u32) -> PeerLost {
    PeerLost {
        node,
        cause: LossCause::Failed(Failure::ClosedWithoutGoodbye),
    }
}

fn finished(node: u32) -> PeerLost {
    PeerLost {
        node,
        cause: LossCause::Finished,
    }
}

/// The notifications waiting in `thread`'s mailbox with `tag`, read.
fn take_all(mailboxes: &MailboxTable, thread: u32, tag: Tag) -> Vec<(u32, Notification)> {
    let mailbox = mailboxes.get(thread).unwrap();
    let mut got = Vec::new();
    while let Some(m) = mailbox.try_take(0, Source::Any, TagMatch::Is(tag)) {
        assert_eq!(m.source().thread, 0);
        let from = m.source().node;
        got.push((from, Notification::from_message(m).unwrap()));
    }
    got
}

fn exited(n: &Notifications, mb: &MailboxTable, lost: &PeerLost) -> bool {
    n.exited(mb, lost, || true)
}

fn exit(node: u32, cause: ExitCause) -> Notification {
    Notification::NodeExit { node, cause }
}

#[test]
fn node_exit_is_delivered_once_with_its_cause() {
    let (mb, n) = (MailboxTable::new(), Notifications::new(4, 4));
    let id = n.subscribe(&mb, 0, 1, Notify::NodeExit(2), 9).unwrap().unwrap();
    n.subscribe(&mb, 0, 1, Notify::NodeExit(3), 8).unwrap().unwrap();
    assert!(exited(&n, &mb, &killed(2)));
    assert!(!exited(&n, &mb, &finished(2))); // the first cause stays
    let why = Failure::ClosedWithoutGoodbye.to_string();
    assert_eq!(take_all(&mb, 1, 9), [(2, exit(2, ExitCause::Failed(why)))]);
    assert!(!n.is_active(id));
    exited(&n, &mb, &finished(3));
    assert_eq!(take_all(&mb, 1, 8), [(3, exit(3, ExitCause::Finished))]);
    assert!(take_all(&mb, 1, 9).is_empty());
}

#[test]
fn a_past_exit_is_delivered_at_once() {
    let (mb, n) = (MailboxTable::new(), Notifications::new(3, 3));
    exited(&n, &mb, &finished(1));
    assert_eq!(n.subscribe(&mb, 0, 0, Notify::NodeExit(1), 4), Ok(None));
    assert_eq!(take_all(&mb, 0, 4), [(1, exit(1, ExitCause::Finished))]);
    // Any node: the past one now, the other when it goes, then done.
    let id = n.subscribe(&mb, 0, 0, Notify::AnyNodeExit, 5).unwrap().unwrap();
    assert_eq!(take_all(&mb, 0, 5).len(), 1);
    exited(&n, &mb, &killed(2));
    assert_eq!(take_all(&mb, 0, 5)[0].0, 2);
    assert!(!n.is_active(id));
    assert_eq!(n.subscribe(&mb, 0, 0, Notify::AnyNodeExit, 6), Ok(None));
    assert_eq!(take_all(&mb, 0, 6).len(), 2);
}

#[test]
fn cancelled_and_finished_threads_get_nothing() {
    let (mb, n) = (MailboxTable::new(), Notifications::new(3, 3));
    let cancelled = n.subscribe(&mb, 0, 0, Notify::NodeExit(1), 4).unwrap().unwrap();
    n.subscribe(&mb, 0, 5, Notify::AnyNodeExit, 4).unwrap().unwrap();
    n.subscribe(&mb, 0, 6, Notify::NodeExit(1), 4).unwrap().unwrap();
    assert!(n.cancel(cancelled));
    assert!(!n.cancel(cancelled));
    n.thread_finished(5);
    exited(&n, &mb, &killed(1));
    assert!(take_all(&mb, 0, 4).is_empty());
    assert!(take_all(&mb, 5, 4).is_empty());
    assert_eq!(take_all(&mb, 6, 4).len(), 1);
    assert!(lock(&n.state).subscriptions.is_empty());
}

#[test]
fn a_growing_job_keeps_any_node_exit_open() {
    let (mb, n) = (MailboxTable::new(), Notifications::new(2, 4));
    let id = n.subscribe(&mb, 0, 0, Notify::AnyNodeExit, 5).unwrap().unwrap();
    exited(&n, &mb, &finished(1));
    assert!(n.is_active(id), "more nodes may join");
    n.grown(4);
    exited(&n, &mb, &finished(2));
    exited(&n, &mb, &killed(3));
    assert_eq!(take_all(&mb, 0, 5).len(), 3);
    assert!(!n.is_active(id), "every other node of a full job is gone");
}

#[test]
fn hosts_added_and_removed_are_told() {
    let host = |name: &str, present| HostEntry {
        name: name.into(),
        present,
    };
    let (mb, n) = (MailboxTable::new(), Notifications::new(2, 2));
    assert_eq!(
        n.subscribe(&mb, 0, 0, Notify::HostAdd, 1),
        Err(NotifyError::NoHosts(Notify::HostAdd))
    );
    n.hosts_changed(&mb, 0, vec![host("local", true), host("netns:a", true)]);
    assert_eq!(
        n.subscribe(&mb, 0, 0, Notify::HostDelete(2), 1),
        Err(NotifyError::NoSuchHost(2))
    );
    let added = n.subscribe(&mb, 0, 0, Notify::HostAdd, 1).unwrap().unwrap();
    let gone = n.subscribe(&mb, 0, 0, Notify::HostDelete(1), 2).unwrap().unwrap();
    n.hosts_changed(
        &mb,
        0,
        vec![host("local", true), host("netns:a", false), host("netns:b", true)],
    );
    let told = |tag| -> Vec<Notification> {
        take_all(&mb, 0, tag).into_iter().map(|(_, n)| n).collect()
    };
    assert_eq!(told(1), [Notification::HostAdded { host: 2, name: "netns:b".into() }]);
    assert_eq!(told(2), [Notification::HostRemoved { host: 1, name: "netns:a".into() }]);
    assert!(n.is_active(added) && !n.is_active(gone));
    // A host removed already is told at once.
    assert_eq!(n.subscribe(&mb, 0, 0, Notify::HostDelete(1), 3), Ok(None));
    assert_eq!(told(3).len(), 1);
}
