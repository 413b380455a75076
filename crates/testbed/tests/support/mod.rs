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
/// `{prefix}h<digits>` and `{prefix}load`, links `{prefix}v<digits>`,
/// `{prefix}vl` and `{prefix}br`, and helper processes (`… net
/// delay-queue {prefix} …`, `… net load-source {prefix} …`).
pub fn leftovers(prefix: &str) -> Vec<String> {
    let namespaces = output("ip", &["netns", "list"]);
    let links = output("ip", &["-o", "link", "show"]);
    let is_ours = |name: &str| {
        let Some(rest) = name.strip_prefix(prefix) else {
            return false;
        };
        ["br", "load", "vl"].contains(&rest)
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
        .chain(helper_processes(prefix))
        .collect()
}

/// The command lines of the helper processes of `prefix`'s net.
fn helper_processes(prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| {
            c.split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
        })
        .filter(|argv| {
            argv.get(1).map(String::as_str) == Some("net")
                && matches!(
                    argv.get(2).map(String::as_str),
                    Some("delay-queue" | "load-source")
                )
                && argv.get(3).map(String::as_str) == Some(prefix)
        })
        .map(|argv| argv.join(" ").trim_end().to_string())
        .collect()
}
