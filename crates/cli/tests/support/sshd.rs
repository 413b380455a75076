//! ssh hosts for tests: network namespaces on a bridge (testbed's
//! [`ScopedNet`]), each running an `sshd` that listens on the namespace's
//! address and lets in a user key made for the test; and an ssh config
//! that reaches them with that key, for the launcher (`THREADWIRE_SSH`).
//!
//! Everything lives in a directory of its own and goes when the
//! [`SshHosts`] is dropped: the sshds are killed, the namespaces deleted,
//! the directory removed — on a failed assertion too.

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use threadwire_testbed::net::{self, Link, ScopedNet};

/// The ssh daemon the hosts run.
pub const SSHD: &str = "/usr/sbin/sshd";

/// How long an sshd has to start listening.
const SSHD_START: Duration = Duration::from_secs(10);

/// Namespaces with an sshd each. Fields drop in order: the sshds are
/// killed (in `drop`) before the net goes.
pub struct SshHosts {
    sshds: Vec<Sshd>,
    /// The namespaces and the bridge.
    pub net: ScopedNet,
    /// The test's directory: keys, configs, the host file.
    pub dir: PathBuf,
}

struct Sshd {
    child: Child,
    /// What it has said on standard error, for a failure's message.
    said: Arc<Mutex<String>>,
}

/// A process running in one of the hosts' namespaces.
#[derive(Debug)]
pub struct Process {
    pub pid: u32,
    /// Which host, by number.
    pub host: usize,
    pub cmdline: Vec<String>,
}

impl SshHosts {
    /// Why ssh hosts cannot be made here, if they cannot: not root, no
    /// namespaces, no `sshd`, `ssh` or `ssh-keygen`.
    pub fn unavailable(stem: &str) -> Option<String> {
        if let Some(why) = net::unavailable(stem) {
            return Some(format!("cannot create network namespaces here: {why}"));
        }
        if !Path::new(SSHD).is_file() {
            return Some(format!("no {SSHD} (openssh-server)"));
        }
        for tool in ["ssh", "ssh-keygen"] {
            if !super::command::on_path(tool) {
                return Some(format!("no {tool} on PATH (openssh-client)"));
            }
        }
        None
    }

    /// `hosts` namespaces with an sshd each, listening and ready.
    pub fn up(stem: &str, hosts: u32) -> SshHosts {
        let net = ScopedNet::up_with_free_prefix(stem, hosts, Link::Unshaped)
            .expect("namespaces are available, yet the net could not be built");
        let dir = std::env::temp_dir().join(format!("{}-ssh-{}", net.prefix, std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the test's directory");
        let mut hosts = SshHosts {
            sshds: Vec::new(),
            net,
            dir,
        };
        hosts.make_keys_and_configs();
        // sshd's privilege separation directory, which its service makes.
        std::fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        for i in 0..hosts.net.hosts.len() {
            let sshd = hosts.start_sshd(i);
            hosts.sshds.push(sshd);
        }
        hosts
    }

    fn make_keys_and_configs(&self) {
        let dir = &self.dir;
        for key in ["host_key", "user_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .status()
                .expect("run ssh-keygen");
            assert!(made.success(), "ssh-keygen {key}: {made}");
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys"))
            .expect("authorized_keys");
        for (i, host) in self.net.hosts.iter().enumerate() {
            let config = format!(
                "ListenAddress {addr}\n\
                 Port 22\n\
                 HostKey {dir}/host_key\n\
                 AuthorizedKeysFile {dir}/authorized_keys\n\
                 PermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 UsePAM no\n\
                 StrictModes no\n\
                 PidFile {dir}/sshd{i}.pid\n\
                 LogLevel INFO\n",
                addr = host.addr,
                dir = dir.display(),
            );
            std::fs::write(dir.join(format!("sshd{i}.conf")), config).expect("sshd config");
        }
        let client = format!(
            "Host *\n\
             \x20 User root\n\
             \x20 IdentityFile {dir}/user_key\n\
             \x20 IdentitiesOnly yes\n\
             \x20 UserKnownHostsFile /dev/null\n\
             \x20 GlobalKnownHostsFile /dev/null\n\
             \x20 StrictHostKeyChecking no\n\
             \x20 ConnectTimeout 10\n\
             \x20 LogLevel ERROR\n",
            dir = dir.display()
        );
        std::fs::write(self.ssh_config(), client).expect("ssh config");
        let lines: String = self
            .net
            .hosts
            .iter()
            .map(|h| format!("ssh:{}\n", h.addr))
            .collect();
        std::fs::write(self.host_file(), lines).expect("host file");
    }

    /// `sshd -D -e` in namespace `i`, once it says it listens.
    fn start_sshd(&self, i: usize) -> Sshd {
        let name = &self.net.hosts[i].name;
        let mut child = Command::new("ip")
            .args(["netns", "exec", name, SSHD, "-D", "-e", "-f"])
            .arg(self.dir.join(format!("sshd{i}.conf")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sshd");
        let stderr = child.stderr.take().expect("piped");
        let said = Arc::new(Mutex::new(String::new()));
        let (listening, listens) = mpsc::channel();
        {
            let said = said.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains("Server listening on") {
                        let _ = listening.send(());
                    }
                    let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
                    said.push_str(&line);
                    said.push('\n');
                }
            });
        }
        let mut sshd = Sshd { child, said };
        if listens.recv_timeout(SSHD_START).is_err() {
            let _ = sshd.child.kill();
            let _ = sshd.child.wait();
            let said = sshd.said.lock().unwrap_or_else(|e| e.into_inner()).clone();
            panic!("sshd in {name} did not listen within {SSHD_START:?}:\n{said}");
        }
        sshd
    }

    /// The ssh config for the launcher: `THREADWIRE_SSH="-F" this`.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.join("ssh_config")
    }

    /// A host file naming every host `ssh:ADDRESS`.
    pub fn host_file(&self) -> PathBuf {
        self.dir.join("hosts")
    }

    /// The address of this host the namespaces reach: `--bind` for ssh
    /// hosts.
    pub fn bridge(&self) -> Ipv4Addr {
        self.net.bridge_addr
    }

    /// What the sshds have said, for a failure's message.
    pub fn sshd_logs(&self) -> String {
        self.sshds
            .iter()
            .map(|s| s.said.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// Every process in the hosts' namespaces but the listening sshds:
    /// nodes, proxies, ssh sessions.
    pub fn processes(&self) -> Vec<Process> {
        let namespaces: Vec<u64> = self
            .net
            .hosts
            .iter()
            .map(|h| {
                std::fs::metadata(format!("/run/netns/{}", h.name))
                    .expect("the namespace's file")
                    .ino()
            })
            .collect();
        let listeners: Vec<u32> = self.sshds.iter().map(|s| s.child.id()).collect();
        let mut found = Vec::new();
        for pid in pids() {
            if listeners.contains(&pid) {
                continue;
            }
            let proc = PathBuf::from(format!("/proc/{pid}"));
            // A process that ends meanwhile is left out.
            let Ok(link) = std::fs::read_link(proc.join("ns/net")) else {
                continue;
            };
            let inode = link
                .to_string_lossy()
                .trim_start_matches("net:[")
                .trim_end_matches(']')
                .parse::<u64>()
                .unwrap_or(0);
            let Some(host) = namespaces.iter().position(|&n| n == inode) else {
                continue;
            };
            let cmdline = std::fs::read(proc.join("cmdline")).unwrap_or_default();
            let cmdline = cmdline
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            found.push(Process { pid, host, cmdline });
        }
        found
    }
}

/// Every process's pid, as `/proc` lists them now.
pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

impl Drop for SshHosts {
    fn drop(&mut self) {
        for sshd in &mut self.sshds {
            let _ = sshd.child.kill();
            let _ = sshd.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
