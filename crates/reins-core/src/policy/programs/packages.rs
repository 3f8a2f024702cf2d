//! Build tools and package managers: their subcommands decide. Building, testing and running run
//! project code (medium); listing and showing only read (low); installing, adding, publishing and
//! fetching reach the network and run install scripts (high); a subcommand Reins does not know is
//! high.

use super::{Class, ProgramVerdict};
use crate::policy::Risk;

/// The verdict for a build tool or package manager, or None for any other program.
pub(super) fn verdict(p: &str, lits: &[&str]) -> Option<ProgramVerdict> {
    let v = match p {
        "cargo" => {
            subcommand(
                p,
                lits,
                &[
                    "build",
                    "check",
                    "test",
                    "run",
                    "clippy",
                    "fmt",
                    "doc",
                    "bench",
                    "tree",
                    "metadata",
                    "clean",
                    "new",
                    "init",
                    "nextest",
                    "version",
                    "--version",
                    "-V",
                ],
                &[
                    "help",
                    "--help",
                    "-h",
                    "locate-project",
                    "verify-project",
                    "pkgid",
                    "read-manifest",
                ],
                &[
                    "install",
                    "publish",
                    "login",
                    "logout",
                    "owner",
                    "yank",
                    "add",
                    "remove",
                    "update",
                    "fetch",
                    "search",
                    "generate-lockfile",
                    "vendor",
                ],
                "compiles and runs project code (build scripts, tests)",
            )
        }
        "npm" | "pnpm" | "yarn" => {
            subcommand(
                p,
                lits,
                &[
                    "test",
                    "t",
                    "run",
                    "run-script",
                    "start",
                    "build",
                    "exec-no",
                ],
                &[
                    "ls",
                    "list",
                    "outdated",
                    "view",
                    "help",
                    "--version",
                    "-v",
                    "why",
                    "explain",
                ],
                &[
                    "install",
                    "i",
                    "ci",
                    "add",
                    "remove",
                    "uninstall",
                    "rm",
                    "update",
                    "up",
                    "upgrade",
                    "exec",
                    "x",
                    "dlx",
                    "publish",
                    "login",
                    "init",
                    "create",
                    "link",
                    "audit",
                    "pack",
                    "rebuild",
                ],
                "runs the project's package scripts",
            )
        }
        "go" => {
            subcommand(
                p,
                lits,
                &["build", "test", "vet", "fmt", "run", "generate", "clean"],
                &["list", "doc", "version", "env", "help"],
                &["get", "install", "mod", "work"],
                "compiles and runs project code",
            )
        }
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" | "conda" | "gem" | "bundle" | "composer"
        | "brew" | "apt" | "apt-get" | "dnf" | "yum" | "pacman" | "apk" | "snap" | "flatpak" => {
            subcommand(
                p,
                lits,
                &["run", "exec", "check", "lock"],
                &[
                    "list",
                    "show",
                    "freeze",
                    "info",
                    "search",
                    "help",
                    "--version",
                    "outdated",
                    "tree",
                ],
                &[],
                "runs project code",
            )
        }
        _ => return None,
    };
    Some(v)
}

/// Tools with subcommands: known local ones are medium, read-only ones low, network ones high,
/// anything else high.
fn subcommand(
    p: &str,
    lits: &[&str],
    local: &[&str],
    reads: &[&str],
    network: &[&str],
    local_why: &str,
) -> ProgramVerdict {
    let sub = lits
        .iter()
        .find(|a| !a.starts_with('-') || reads.contains(a) || local.contains(a))
        .copied()
        .unwrap_or("");
    if sub.is_empty() && matches!(p, "yarn") {
        return ProgramVerdict::one(
            Class::Other,
            Risk::High,
            "`yarn` installs packages from the network and runs their scripts".into(),
        );
    }
    if reads.contains(&sub) {
        return ProgramVerdict::low(Class::Reads);
    }
    if local.contains(&sub) {
        return ProgramVerdict::one(
            Class::Other,
            Risk::Medium,
            format!("`{p} {sub}` {local_why}"),
        );
    }
    if network.contains(&sub) || network.is_empty() {
        return ProgramVerdict::one(
            Class::Other,
            Risk::High,
            format!("`{p} {sub}` downloads, installs or publishes packages over the network (install scripts run code)"),
        );
    }
    ProgramVerdict::one(
        Class::Other,
        Risk::High,
        format!("`{p} {sub}` is not a subcommand Reins knows, so it cannot say what it does"),
    )
}
