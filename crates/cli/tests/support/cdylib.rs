//! The workspace's C libraries (`libthreadwire.so`, `libpvm3.so`,
//! `libgpvm3.so`), built for the profile of the `threadwire` binary under
//! test, in its target directory.

use std::path::Path;
use std::process::Command;

/// The workspace's root.
pub fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/cli is two levels below the workspace")
}

/// `target/<profile>`, where the `threadwire` binary is.
pub fn profile_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_threadwire"))
        .parent()
        .expect("the binary is in target/<profile>")
}

/// Builds `packages` for this profile (a no-op when they are current);
/// the reason when it cannot.
pub fn build(packages: &[&str]) -> Result<(), String> {
    let dir = profile_dir();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    cmd.arg("--manifest-path")
        .arg(workspace().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(dir.parent().expect("target/<profile> has a parent"));
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(profile) => {
            cmd.args(["--profile", profile]);
        }
        None => return Err(format!("no profile in {}", dir.display())),
    }
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{cmd:?} failed: {s}")),
        Err(e) => Err(format!("{cmd:?} could not start: {e}")),
    }
}
