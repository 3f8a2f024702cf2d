//! What Reins knows about particular agents so that they ask before acting. An agent that decides
//! by its own configuration whether to ask (opencode lets every tool run by default) is started
//! with the setting that makes it ask for all of them; the user's own configuration cannot turn
//! that off, because the setting is given last. An agent Reins does not know gets nothing here:
//! if it acts without asking, the run notices and stops (see `unasked`).

use std::path::Path;

/// Environment variables to set for the agent `argv` starts, so that it asks before every tool.
pub fn asking_env(argv: &[String]) -> &'static [(&'static str, &'static str)] {
    if runs(argv, &["opencode", "opencode-ai"]) {
        // opencode's permission rules from the environment win over its config files: ask for
        // every tool, every pattern.
        return &[("OPENCODE_PERMISSION", r#"{"*":"ask"}"#)];
    }
    &[]
}

/// Whether the command starts one of `names`: as its program or through a launcher
/// (`npx opencode-ai@1.2.3 acp`, `node …/opencode`, `env VAR=… opencode acp`).
fn runs(argv: &[String], names: &[&str]) -> bool {
    without_env(argv).iter().take(4).any(|a| {
        let file = Path::new(a)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bare = file.split('@').next().unwrap_or("");
        let bare = bare.strip_suffix(".exe").unwrap_or(bare);
        names.contains(&bare)
    })
}

/// The command `env` runs, when `argv` starts with `env`: its options and however many
/// `VAR=value` settings come before the program are not the program.
fn without_env(argv: &[String]) -> &[String] {
    let is_env = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|f| f == "env");
    if !is_env {
        return argv;
    }
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if matches!(a.as_str(), "-u" | "--unset" | "-C" | "--chdir" | "-S" | "--split-string") {
            i += 2;
        } else if a.starts_with('-') || a.contains('=') {
            i += 1;
        } else {
            break;
        }
    }
    argv.get(i..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn opencode_is_made_to_ask_however_it_is_started() {
        for cmd in [
            "opencode acp",
            "/home/u/.cache/reins-agents/node_modules/.bin/opencode acp",
            "npx -y opencode-ai@1.18.33 acp",
            "opencode.exe acp",
            "env OPENCODE_CONFIG=/c.json XDG_CONFIG_HOME=/x OPENCODE_DISABLE_MODELS_FETCH=1 A=1 opencode acp",
            "/usr/bin/env -u HOME -i PATH=/bin -- /opt/bin/opencode acp",
        ] {
            assert_eq!(asking_env(&argv(cmd))[0].0, "OPENCODE_PERMISSION", "{cmd}");
        }
        for cmd in [
            "qwen --acp",
            "my-opencode-wrapper acp",
            "gemini --experimental-acp",
            "env A=1 B=2 C=3 D=4 qwen --acp",
            "env",
        ] {
            assert!(asking_env(&argv(cmd)).is_empty(), "{cmd}");
        }
    }
}
