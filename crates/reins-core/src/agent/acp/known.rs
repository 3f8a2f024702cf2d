//! The ACP agents Reins knows how to start, and finding them on this machine's `PATH`, so a first
//! launch can offer each one found as a registered agent in one click.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A known agent: the program to look for and the arguments that start it in ACP mode.
struct Known {
    name: &'static str,
    label: &'static str,
    program: &'static str,
    acp_args: &'static [&'static str],
}

const KNOWN: &[Known] = &[
    Known { name: "qwen", label: "Qwen Code", program: "qwen", acp_args: &["--acp"] },
    Known { name: "opencode", label: "opencode", program: "opencode", acp_args: &["acp"] },
    Known { name: "gemini", label: "Gemini CLI", program: "gemini", acp_args: &["--experimental-acp"] },
    Known { name: "claude", label: "Claude Code (ACP adapter)", program: "claude-code-acp", acp_args: &[] },
    Known { name: "codex", label: "Codex (ACP adapter)", program: "codex-acp", acp_args: &[] },
    Known { name: "goose", label: "Goose", program: "goose", acp_args: &["acp"] },
];

/// An agent found on `PATH`, as it would be registered.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FoundAgent {
    /// The name it would be registered under.
    pub name: String,
    pub label: String,
    /// Where the program is.
    pub path: String,
    /// The command that starts it in ACP mode.
    pub command: Vec<String>,
}

fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The known agents whose program is on `path` (a `PATH` value), first match per program.
pub fn on_path(path: &OsStr) -> Vec<FoundAgent> {
    let dirs: Vec<PathBuf> = std::env::split_paths(path).collect();
    KNOWN
        .iter()
        .filter_map(|k| {
            let found = dirs
                .iter()
                .map(|d| d.join(k.program))
                .find(|p| executable(p))?;
            let mut command = vec![found.display().to_string()];
            command.extend(k.acp_args.iter().map(|a| (*a).to_owned()));
            Some(FoundAgent {
                name: k.name.into(),
                label: k.label.into(),
                path: found.display().to_string(),
                command,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(dir: &Path, name: &str, mode: u32) -> std::io::Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n")?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
    }

    #[test]
    fn known_agents_on_the_path_are_found_with_their_acp_command() -> std::io::Result<()> {
        let a = tempfile::tempdir()?;
        let b = tempfile::tempdir()?;
        program(a.path(), "qwen", 0o755)?;
        program(b.path(), "qwen", 0o755)?;
        program(b.path(), "opencode", 0o755)?;
        program(b.path(), "gemini", 0o644)?; // not executable
        program(b.path(), "some-tool", 0o755)?;
        let path = std::env::join_paths([a.path(), b.path()]).map_err(std::io::Error::other)?;
        let found = on_path(&path);
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["qwen", "opencode"]);
        assert_eq!(found[0].path, a.path().join("qwen").display().to_string(), "the first on PATH");
        assert_eq!(found[0].command[1..], ["--acp"]);
        assert_eq!(found[1].command[1..], ["acp"]);
        assert!(on_path(OsStr::new("")).is_empty());
        Ok(())
    }
}
