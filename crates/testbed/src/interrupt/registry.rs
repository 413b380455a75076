//! The interrupt registry: what the interrupt thread would undo now, and
//! how it undoes it (steps 4 and 5 and the lock's rules in the parent
//! module's docs).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::process::kill_groups_and_descendants;

/// How long step 4 waits for the killed process groups to be gone.
pub const GROUPS_GRACE: Duration = Duration::from_secs(2);

/// Something the interrupt thread removes (step 5) that this module knows
/// only through this trait: a net ([`crate::net`] depends on this module,
/// not the reverse).
pub(crate) trait Removable: Send {
    /// What it is, for "removed …" and unregistering: `net tw1`.
    fn name(&self) -> String;
    /// Removes it; called holding the registry's lock.
    fn remove(&self, locked: &Registry) -> Result<(), Box<dyn std::error::Error>>;
}

/// What the interrupt thread would undo now.
pub(crate) struct Registry {
    /// Process groups of live peers, by their leader's id.
    groups: Vec<libc::pid_t>,
    /// Live [`ScopedNet`](crate::net::ScopedNet)s.
    removables: Vec<Box<dyn Removable>>,
    /// Scratch directories of live peers.
    dirs: Vec<PathBuf>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: Vec::new(),
    removables: Vec::new(),
    dirs: Vec::new(),
});

/// The registry, locked (the rules are in the module docs).
pub(crate) fn registry() -> MutexGuard<'static, Registry> {
    // Every change to the registry is a single push or remove: a panic
    // elsewhere under the lock leaves it whole.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    /// Registers the process group led by `leader`.
    pub(crate) fn add_group(&mut self, leader: u32) {
        if let Ok(id) = libc::pid_t::try_from(leader) {
            self.groups.push(id);
        }
    }

    pub(crate) fn remove_group(&mut self, leader: u32) {
        if let Ok(id) = libc::pid_t::try_from(leader) {
            remove_one(&mut self.groups, &id);
        }
    }

    pub(crate) fn add_removable(&mut self, removable: Box<dyn Removable>) {
        self.removables.push(removable);
    }

    /// Unregisters one removable of this [`name`](Removable::name).
    pub(crate) fn remove_removable(&mut self, name: &str) {
        if let Some(i) = self.removables.iter().position(|r| r.name() == name) {
            self.removables.swap_remove(i);
        }
    }

    pub(crate) fn add_dir(&mut self, dir: &Path) {
        self.dirs.push(dir.to_path_buf());
    }

    pub(crate) fn remove_dir(&mut self, dir: &Path) {
        remove_one(&mut self.dirs, &dir.to_path_buf());
    }

    /// Step 4; returns how many processes it killed.
    fn kill_peers(&self) -> usize {
        kill_groups_and_descendants(&self.groups, GROUPS_GRACE)
    }

    /// Steps 4 and 5: what was removed, and what could not be, as phrases.
    pub(super) fn undo(&self) -> Vec<String> {
        let mut done = Vec::new();
        if !self.groups.is_empty() {
            let killed = self.kill_peers();
            done.push(format!(
                "killed {} ({})",
                count(
                    self.groups.len(),
                    "peer process group",
                    "peer process groups"
                ),
                count(killed, "process", "processes")
            ));
        }
        let mut dirs = 0;
        for dir in &self.dirs {
            match std::fs::remove_dir_all(dir) {
                Ok(()) => dirs += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => done.push(format!("could not remove {}: {e}", dir.display())),
            }
        }
        if dirs > 0 {
            let dirs = count(dirs, "scratch directory", "scratch directories");
            done.push(format!("removed {dirs}"));
        }
        for removable in &self.removables {
            let name = removable.name();
            match removable.remove(self) {
                Ok(()) => done.push(format!("removed {name}")),
                Err(e) => done.push(format!("could not remove {name}: {e}")),
            }
        }
        done
    }
}

fn remove_one<T: PartialEq>(list: &mut Vec<T>, item: &T) {
    if let Some(i) = list.iter().position(|x| x == item) {
        list.swap_remove(i);
    }
}

/// `n` and the noun in the number it takes.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str);

    impl Removable for Named {
        fn name(&self) -> String {
            self.0.to_string()
        }
        fn remove(&self, _locked: &Registry) -> Result<(), Box<dyn std::error::Error>> {
            Ok(())
        }
    }

    #[test]
    fn entries_are_removed_one_at_a_time() {
        let mut registry = Registry {
            groups: Vec::new(),
            removables: Vec::new(),
            dirs: Vec::new(),
        };
        registry.add_removable(Box::new(Named("net tw1")));
        registry.add_removable(Box::new(Named("net tw1")));
        registry.remove_removable("net tw1");
        assert_eq!(registry.removables.len(), 1);
        assert_eq!(registry.undo(), ["removed net tw1"]);
        registry.add_group(7);
        registry.remove_group(8);
        registry.remove_group(7);
        assert!(registry.groups.is_empty());
        registry.add_dir(Path::new("/tmp/a"));
        registry.remove_dir(Path::new("/tmp/a"));
        assert!(registry.dirs.is_empty());
    }

    #[test]
    fn counts_take_their_number() {
        assert_eq!(count(1, "process", "processes"), "1 process");
        assert_eq!(count(3, "process", "processes"), "3 processes");
    }
}
