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

/// Qwen Code's system settings, which win over the user's and the project's: every read tool
/// (file reads, search, glob, listing), every edit, command and fetch asks, so each reaches Reins
/// as a permission request. Its `default` mode alone runs the read tools unasked.
const QWEN_ASKS: &str = r#"{"permissions":{"ask":["Read","Edit","Write","Bash","WebFetch","Agent","Skill"]}}"#;

/// Qwen Code's program, and its package's name as a launcher gives it (`npx @qwen-code/qwen-code`).
const QWEN: &[&str] = &["qwen", "qwen-code"];

/// Settings files to give the agent `argv` starts, so that it asks before every tool: the
/// variable that names each, and its content. Reins writes them where the agent cannot.
pub fn asking_files(argv: &[String]) -> &'static [(&'static str, &'static str, &'static str)] {
    if runs(argv, QWEN) {
        return &[("QWEN_CODE_SYSTEM_SETTINGS_PATH", "qwen-settings.json", QWEN_ASKS)];
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

/// Where a known agent keeps its own state and configuration, under `home` (and the XDG dirs
/// `xdg` names), and whether it carries out changes itself rather than through Reins. An agent
/// Reins does not know gets no state dir and a read-only workspace: the strictest profile.
pub struct Known {
    pub state: Vec<std::path::PathBuf>,
    pub writes_workspace: bool,
    /// It talks to a server of its own on a port the kernel picks (opencode's ACP mode is a
    /// client of its own local HTTP server), so its network cannot be narrowed to its model's
    /// port: it gets the network, and stays confined in files.
    pub serves_itself: bool,
    /// The hosted endpoints it talks to when its configuration names none (HTTPS, port 443): its
    /// vendor's model API and sign-in. An agent Reins does not know has none: it reaches only
    /// the endpoints it was pointed at.
    pub hosts: &'static [&'static str],
}

/// Each known agent's hosted endpoints, by the names it runs under.
const HOSTS: &[(&[&str], &[&str])] = &[
    (
        QWEN,
        &["dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "chat.qwen.ai", "portal.qwen.ai"],
    ),
    (
        &["gemini"],
        &[
            "generativelanguage.googleapis.com",
            "cloudcode-pa.googleapis.com",
            "oauth2.googleapis.com",
        ],
    ),
    (
        &["opencode", "opencode-ai"],
        &["opencode.ai", "models.dev", "api.anthropic.com", "api.openai.com"],
    ),
    (
        &["claude-code-acp", "claude"],
        &["api.anthropic.com", "console.anthropic.com", "claude.ai"],
    ),
    (
        &["codex-acp", "codex"],
        &["api.openai.com", "chatgpt.com", "auth.openai.com"],
    ),
    (&["goose"], &["api.openai.com", "api.anthropic.com"]),
];

/// The XDG base dirs, as the agent's environment sets them or their defaults under `home`.
pub struct Xdg {
    pub config: std::path::PathBuf,
    pub data: std::path::PathBuf,
    pub cache: std::path::PathBuf,
    pub state: std::path::PathBuf,
}

impl Xdg {
    pub fn of(home: &Path, var: impl Fn(&str) -> Option<std::path::PathBuf>) -> Self {
        let dir = |name: &str, default: &str| {
            var(name)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(default))
        };
        Self {
            config: dir("XDG_CONFIG_HOME", ".config"),
            data: dir("XDG_DATA_HOME", ".local/share"),
            cache: dir("XDG_CACHE_HOME", ".cache"),
            state: dir("XDG_STATE_HOME", ".local/state"),
        }
    }
}

pub fn known(argv: &[String], home: &Path, xdg: &Xdg) -> Known {
    let xdg_dirs = |name: &str| {
        vec![
            xdg.config.join(name),
            xdg.data.join(name),
            xdg.cache.join(name),
            xdg.state.join(name),
        ]
    };
    let state = if runs(argv, QWEN) {
        vec![home.join(".qwen")]
    } else if runs(argv, &["gemini"]) {
        vec![home.join(".gemini")]
    } else if runs(argv, &["opencode", "opencode-ai"]) {
        xdg_dirs("opencode")
    } else if runs(argv, &["claude-code-acp", "claude"]) {
        vec![home.join(".claude"), home.join(".claude.json")]
    } else if runs(argv, &["codex-acp", "codex"]) {
        vec![home.join(".codex")]
    } else if runs(argv, &["goose"]) {
        xdg_dirs("goose")
    } else {
        return Known {
            state: Vec::new(),
            writes_workspace: false,
            serves_itself: false,
            hosts: &[],
        };
    };
    // Each of these runs its own shell commands once Reins approved them, in the workspace.
    Known {
        state,
        writes_workspace: true,
        serves_itself: runs(argv, &["opencode", "opencode-ai"]),
        hosts: HOSTS
            .iter()
            .find(|(names, _)| runs(argv, names))
            .map_or(&[], |(_, hosts)| *hosts),
    }
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

    #[test]
    fn qwen_code_is_given_settings_that_make_its_read_tools_ask() {
        for cmd in ["qwen --acp", "npx @qwen-code/qwen-code@0.24.4 --acp"] {
            assert_eq!(asking_files(&argv(cmd)).len(), 1, "{cmd}");
        }
        let files = asking_files(&argv("qwen --acp"));
        assert_eq!(files[0].0, "QWEN_CODE_SYSTEM_SETTINGS_PATH");
        let settings: serde_json::Value = serde_json::from_str(files[0].2).unwrap();
        let ask = settings["permissions"]["ask"].to_string();
        assert!(ask.contains("\"Read\"") && ask.contains("\"WebFetch\""), "{ask}");
        assert!(asking_files(&argv("opencode acp")).is_empty());
    }

    #[test]
    fn a_known_agent_keeps_its_state_dirs_and_an_unknown_one_gets_none() {
        let home = Path::new("/home/ada");
        let xdg = Xdg::of(home, |v| (v == "XDG_CONFIG_HOME").then(|| "/cfg".into()));
        let qwen = known(&argv("/opt/n/node_modules/.bin/qwen --acp"), home, &xdg);
        assert_eq!(qwen.state, [Path::new("/home/ada/.qwen")]);
        assert!(qwen.writes_workspace);
        let opencode = known(&argv("npx -y opencode-ai@1.2.3 acp"), home, &xdg);
        assert!(opencode.state.contains(&"/cfg/opencode".into()));
        assert!(opencode.state.contains(&"/home/ada/.local/share/opencode".into()));
        let stranger = known(&argv("python3 agent.py"), home, &xdg);
        assert!(stranger.state.is_empty());
        assert!(!stranger.writes_workspace);
    }
}
