//! Helpers of the tests of emulated hosts (`threadwire_testbed::net`).

use std::process::Command;

/// Why namespaces cannot be made here, if they cannot.
pub fn cannot_run(prefix: &str) -> Option<String> {
    threadwire_testbed::net::unavailable(prefix)
}

/// A command's standard output, asserting that it succeeded.
pub fn output(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .expect("run a command");
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What of the net with this prefix is on the system: namespaces
/// `{prefix}h<digits>`, links `{prefix}v<digits>` and `{prefix}br`.
pub fn leftovers(prefix: &str) -> Vec<String> {
    let namespaces = output("ip", &["netns", "list"]);
    let links = output("ip", &["-o", "link", "show"]);
    let is_ours = |name: &str| {
        let Some(rest) = name.strip_prefix(prefix) else {
            return false;
        };
        rest == "br"
            || ["h", "v"].iter().any(|kind| {
                rest.strip_prefix(kind)
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
    };
    namespaces
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .chain(links.lines().filter_map(|l| l.split(": ").nth(1)))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .filter(|n| is_ours(n))
        .collect()
}
