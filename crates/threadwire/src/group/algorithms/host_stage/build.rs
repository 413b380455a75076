//! Building a group's host stage (module docs of [`super`], "Building",
//! steps 1–3): which of the group's nodes share a host, the segment their
//! leaders map, and whether large calls may read each other's buffers.

use super::*;

/// Step 1's host of this node, positions in `nodes` (its own first if it
/// is the host's leader): the nodes on its host as the address book tells
/// (the same listening address, or the process manager's mapping), checked
/// by connecting — a host leader to every other, the others to their host
/// leader, so that a host of `k` nodes makes `k - 1` connections, not one
/// per pair (pairs connect on first use, `peer::dial`) — and kept if the
/// pair settled on shared memory.
fn mates(ep: &Endpoint, nodes: &[u32], my_pos: usize) -> Vec<usize> {
    let shared = &ep.node().shared;
    let router = &shared.router;
    if matches!(
        router.channel_choice(),
        crate::config::ChannelChoice::Tcp | crate::config::ChannelChoice::Udp
    ) {
        return vec![my_pos];
    }
    let guess: Vec<usize> = (0..nodes.len())
        .filter(|&i| i == my_pos || router.dialer.same_host(nodes[i]))
        .collect();
    let checked: Vec<u32> = match guess[0] == my_pos {
        true => guess.iter().map(|&i| nodes[i]).collect(),
        false => vec![nodes[guess[0]]],
    };
    crate::peer::dial::settle(shared, &checked);
    guess
        .into_iter()
        .filter(|&i| {
            i == my_pos
                || !checked.contains(&nodes[i])
                || router.peers[nodes[i] as usize].shm().is_some()
        })
        .collect()
}

impl HostStage {
    /// Steps 1–3 of building (module docs), at every member of `comm`,
    /// the group of id `k`: `None` if the group gets no host stage.
    pub(crate) fn build(ep: &Endpoint, comm: &Rc<Comm>, k: u32) -> Option<HostStage> {
        let members = &comm.members;
        let me = members[comm.rank].node;
        // Nodes in the order of their lowest rank: the leaders' order.
        let mut nodes: Vec<u32> = Vec::new();
        let mut consecutive = true;
        for (i, a) in members.iter().enumerate() {
            match nodes.iter().position(|&n| n == a.node) {
                Some(_) => consecutive &= members[i - 1].node == a.node,
                None => nodes.push(a.node),
            }
        }
        if nodes.len() < 2 {
            return None;
        }
        // A node with the stage switched off still takes part in step 2
        // (declining), so that no member waits for it there.
        let declines = switch() == Some(false);
        let router = &ep.node().shared.router;
        let leader = members.iter().position(|a| a.node == me) == Some(comm.rank);
        let my_pos = nodes.iter().position(|&n| n == me).expect("a member's node");
        // Step 1.
        let mut words = [-1i64; 6];
        let mut created = None;
        if leader && !declines {
            let mates = mates(ep, &nodes, my_pos);
            let host_leader = mates[0];
            words[0] = my_pos as i64;
            words[1] = host_leader as i64;
            words[2] = mates.len() as i64;
            // Known of the pairs settled in `mates`; the views' AND covers
            // the host.
            let reads = |&i: &usize| {
                let p = &router.peers[nodes[i] as usize];
                i == my_pos || !p.has_tcp() || p.shm().is_some_and(|c| c.uses_cross_memory())
            };
            words[5] = i64::from(mates.iter().all(reads));
            if host_leader == my_pos && mates.len() > 1 {
                let name = format!("threadwire-{:x}-group-{k}", router.job_id);
                match Region::create(&name, mates.len() * LINE) {
                    Ok(r) => {
                        words[3] = i64::from(std::process::id());
                        words[4] = i64::from(r.raw_fd().unwrap_or(-1));
                        created = Some(r);
                    }
                    Err(e) => tracing::debug!("host stage: no segment: {e}"),
                }
            }
        }
        // Step 2.
        let views = gather(comm, &words)?;
        // A leader that declined left its node's host unset: no stage.
        let views: Vec<&[i64]> = views.chunks(6).filter(|v| v[0] >= 0).collect();
        let host_of: Vec<usize> = {
            let mut h = vec![usize::MAX; nodes.len()];
            for v in &views {
                *h.get_mut(usize::try_from(v[0]).ok()?)? = usize::try_from(v[1]).ok()?;
            }
            h
        };
        let count = |h: usize| host_of.iter().filter(|&&x| x == h).count();
        let agrees = host_of.iter().all(|&h| h < nodes.len() && host_of[h] == h)
            && views.iter().all(|v| v[2] as usize == count(v[1] as usize));
        if !agrees || host_of.iter().all(|&h| count(h) == 1) {
            return None;
        }
        let segment_of = |h: usize| views.iter().find(|v| v[0] as usize == h).map(|v| (v[3], v[4]));
        // Each host's leaders consecutive in the leaders' order.
        let hosts_consecutive = (1..host_of.len())
            .all(|i| host_of[i] == host_of[i - 1] || !host_of[..i].contains(&host_of[i]));
        // Step 3.
        let mut side = None;
        let mut ok = true;
        if leader {
            let h = host_of[my_pos];
            let lines = count(h);
            let index = host_of[..my_pos].iter().filter(|&&x| x == h).count();
            let segment = match (lines, created) {
                (1, _) => None,
                (_, Some(r)) => Some(r),
                (_, None) => match segment_of(h) {
                    Some((pid, fd)) if pid > 0 && fd >= 0 => {
                        match Region::open_peer(pid as u32, fd as i32, lines * LINE) {
                            Ok(r) => Some(r),
                            Err(e) => {
                                tracing::debug!("host stage: cannot open the segment: {e}");
                                ok = false;
                                None
                            }
                        }
                    }
                    _ => {
                        ok = false;
                        None
                    }
                },
            };
            let host_leaders = (index == 0).then(|| {
                let leaders: Vec<usize> = (0..nodes.len()).filter(|&i| host_of[i] == i).collect();
                (leaders.len() > 1).then(|| {
                    let addresses: Arc<[Address]> = leaders
                        .iter()
                        .map(|&i| members[members.iter().position(|a| a.node == nodes[i]).expect("a node")])
                        .collect();
                    let at = leaders.iter().position(|&i| i == my_pos).expect("a host leader");
                    Rc::new(Comm::new(ep, addresses, at, k, 0))
                })
            });
            let segment = segment.map(|region| Segment { region, lines });
            if let Some(s) = &segment {
                // Seen by all once the agreement below is done.
                s.word(index, PID).store(u64::from(std::process::id()), Ordering::Relaxed);
            }
            side = Some(LeaderSide {
                nodes: (0..nodes.len()).filter(|&i| host_of[i] == h).map(|i| nodes[i]).collect(),
                segment,
                index,
                host_leaders: host_leaders.flatten(),
                one_host: lines == nodes.len(),
            });
        }
        let all_ok = crate::group::collectives::agree(comm, vec![if ok { u64::MAX } else { 0 }]).ok()?;
        if all_ok[0] != u64::MAX {
            return None;
        }
        if let Some(LeaderSide { segment: Some(s), .. }) = side.as_mut() {
            s.region.close_fd();
        }
        let hosts = host_of.iter().enumerate().filter(|&(i, &h)| i == h).count();
        tracing::debug!("group {k}: host stage, {} nodes on {hosts} hosts", nodes.len());
        let bulk = hosts == 1 && views.iter().all(|v| v[5] == 1);
        Some(HostStage {
            consecutive: consecutive && hosts_consecutive,
            hosts,
            bulk,
            side,
        })
    }
}

/// Step 2's allgather over every member.
fn gather(comm: &Rc<Comm>, words: &[i64]) -> Option<Vec<i64>> {
    let call = Call::start(comm);
    let body = std::pin::pin!(async {
        let r = crate::group::algorithms::exchange::allgather_bruck(&call, words).await;
        call.finish(r).await
    });
    crate::group::schedule::blocking(comm, call.index, body).ok()
}

