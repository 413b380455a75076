//! Starting node processes: the environment every node gets (the
//! contract of `threadwire::env`) and the command that runs it on its
//! host — a child of the launcher, in a namespace, or through an ssh
//! host's proxy.

use crate::process::{self, NodeProcess};
use crate::proxy::Proxies;
use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};

/// Starts node processes: what every node's environment and command
/// need, for the founders and for nodes added later.
pub(crate) struct Starter {
    pub(crate) job_id: u64,
    pub(crate) secret: [u8; 32],
    pub(crate) port: u16,
    /// The address the rendezvous listens on.
    pub(crate) listen_on: IpAddr,
    /// How nodes on this host (and ssh hosts) reach the rendezvous.
    pub(crate) bind: IpAddr,
    /// A namespace's gateway, if the job has a namespace host: an
    /// address of this host the namespaces reach.
    pub(crate) first_gateway: Option<IpAddr>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) capacity: u32,
    pub(crate) founders: u32,
    /// Whether node 0 reads the launcher's stdin.
    pub(crate) stdin_to_first: bool,
    /// Every local node's output and exit (`watch`).
    pub(crate) watcher: crate::watch::Watcher,
    /// The proxies on the job's ssh hosts.
    pub(crate) proxies: Proxies,
}

impl Starter {
    /// Starts node `node` of `nodes` given out so far on `host`, at the
    /// rendezvous address `gateway` (or the one for this host).
    pub(crate) fn start(
        &mut self,
        node: u32,
        nodes: u32,
        host: &crate::Host,
        gateway: Option<IpAddr>,
        (program, args, env): (&std::path::Path, &[OsString], &[(String, String)]),
    ) -> std::io::Result<NodeProcess> {
        let vars = self.vars(node, nodes, gateway, env);
        if let crate::Host::Ssh(name) = host {
            // The same path on the host: a relative one is the launcher's.
            let program = match program.is_relative() && program.components().count() > 1 {
                true => std::env::current_dir()?.join(program),
                false => program.to_path_buf(),
            };
            let proxy = self.proxies.start(name, node, &program, args, vars)?;
            return Ok(NodeProcess::Proxied {
                proxy,
                node,
                pid: None,
            });
        }
        let cmd = host.command(program, args, &vars);
        let stdin = self.stdin_to_first && node == 0;
        let pid = process::start(node, cmd, stdin, &self.watcher)?;
        Ok(NodeProcess::Local { pid })
    }

    /// The environment of node `node` of `nodes` given out so far: the
    /// contract's variables for reaching the rendezvous at `gateway` (or
    /// the one for this host), the job's, and `env`.
    pub(crate) fn vars(
        &self,
        node: u32,
        nodes: u32,
        gateway: Option<IpAddr>,
        env: &[(String, String)],
    ) -> Vec<(String, String)> {
        let rendezvous = SocketAddr::new(
            gateway.or(self.first_gateway).unwrap_or(self.bind),
            self.port,
        );
        let sizes = (nodes, self.founders, self.capacity);
        let mut vars: Vec<(String, String)> =
            threadwire::env::JobEnv::vars_for(self.job_id, node, sizes, rendezvous, &self.secret)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        vars.extend(self.env.iter().cloned());
        vars.extend(env.iter().cloned());
        vars
    }

    /// Whether a node in a namespace whose gateway is `gateway` can reach
    /// the rendezvous (and the nodes, which listen alike).
    pub(crate) fn reachable_from(&self, gateway: IpAddr) -> bool {
        self.listen_on.is_unspecified() || self.listen_on == gateway
    }
}
