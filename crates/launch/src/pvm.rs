//! Running PVM programs on threadwire's own `libpvm3.so.3` (crate
//! `threadwire-pvm3`): what `threadwire pvm` sets up around [`run`](crate::run).
//!
//! 1. [`library_dir`] finds `libpvm3.so` and `libgpvm3.so` beside the
//!    `threadwire` binary (cargo builds them into the same directory) and
//!    makes a directory `pvm3/` there whose `libpvm3.so.3` and
//!    `libgpvm3.so.3` point at them: the sonames PVM programs were linked
//!    against. Anyone can use it: `LD_LIBRARY_PATH=DIR threadwire run -n 1
//!    -- PROGRAM`.
//! 2. [`job`] makes the spec: the program as node 0 with that directory
//!    first on `LD_LIBRARY_PATH`, which every node it spawns inherits; a
//!    task's failure is told to the others but does not end the job
//!    ([`FailurePolicy::Continue`]), as under PVM.
//! 3. [`task_of`] names a node's first thread as PVM does (its tid): the
//!    command shows spawned tasks' output with it, as `pvm_catchout`
//!    would.

use crate::{FailurePolicy, JobSpec};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// The libraries' files as cargo names them, and the sonames they stand in for.
const LIBRARIES: [(&str, &str); 2] = [
    ("libpvm3.so", "libpvm3.so.3"),
    ("libgpvm3.so", "libgpvm3.so.3"),
];

/// Why the libraries cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PvmSetupError {
    /// A library was not built.
    #[error("{0} is missing; build it with `cargo build -p threadwire-pvm3 -p threadwire-gpvm3` (same profile as threadwire)")]
    Missing(PathBuf),
    /// The directory could not be made.
    #[error("making {0}: {1}")]
    Io(PathBuf, #[source] io::Error),
}

/// Step 1: the directory holding `libpvm3.so.3` and `libgpvm3.so.3` for
/// the libraries in `built` (the binary's directory).
pub fn library_dir(built: &Path) -> Result<PathBuf, PvmSetupError> {
    let dir = built.join("pvm3");
    std::fs::create_dir_all(&dir).map_err(|e| PvmSetupError::Io(dir.clone(), e))?;
    for (file, soname) in LIBRARIES {
        let target = built.join(file);
        if !target.is_file() {
            return Err(PvmSetupError::Missing(target));
        }
        let link = dir.join(soname);
        if std::fs::read_link(&link).ok().as_deref() == Some(target.as_path()) {
            continue;
        }
        // Made aside and renamed over, so that jobs starting at once never
        // see a missing or half-made link.
        let fresh = dir.join(format!(".{soname}.{}", std::process::id()));
        let _ = std::fs::remove_file(&fresh);
        std::os::unix::fs::symlink(&target, &fresh)
            .and_then(|()| std::fs::rename(&fresh, &link))
            .map_err(|e| PvmSetupError::Io(link.clone(), e))?;
    }
    Ok(dir)
}

/// Step 2: the job that runs `program` with `args` as `nodes` PVM tasks
/// started from the command line, on the libraries in `dir`.
pub fn job(nodes: u32, program: PathBuf, args: Vec<OsString>, dir: &Path) -> JobSpec {
    let mut path = dir.as_os_str().to_owned();
    if let Some(before) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(before);
    }
    JobSpec::new(nodes, program)
        .args(args)
        .env("LD_LIBRARY_PATH", path.to_string_lossy())
        .on_failure(FailurePolicy::Continue)
        .stdin_to_first()
}

/// Step 3: the tid of node `node`'s first thread (`threadwire-pvm3`'s
/// `tid` module: node + 1 in the host field, thread + 1 in the local one).
pub fn task_of(node: u32) -> u32 {
    ((node + 1) << 18) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_names_the_libraries_by_soname_and_says_what_is_missing() {
        let built = std::env::temp_dir().join(format!("tw-pvm-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&built);
        std::fs::create_dir_all(&built).unwrap();
        std::fs::write(built.join("libpvm3.so"), b"").unwrap();
        assert!(
            matches!(library_dir(&built), Err(PvmSetupError::Missing(p)) if p.ends_with("libgpvm3.so"))
        );
        std::fs::write(built.join("libgpvm3.so"), b"").unwrap();
        let dir = library_dir(&built).unwrap();
        assert_eq!(
            std::fs::read_link(dir.join("libpvm3.so.3")).unwrap(),
            built.join("libpvm3.so")
        );
        // Again: the links stand.
        assert_eq!(library_dir(&built).unwrap(), dir);
        assert_eq!(task_of(0), 0x40001);
        std::fs::remove_dir_all(&built).unwrap();
    }
}
