//! Reins' entries in Claude Code's settings: a command hook, `reins hook claude-code`, on
//! `PreToolUse` for every tool (with a timeout long enough for a person), on `PostToolUse`, and on
//! `SessionEnd` (which finishes the session's run).
//! Installing merges them into the file and keeps every other setting and hook; uninstalling takes
//! out only Reins' own (found by their command). The change is worked out first, so a dry run can
//! show it, and written whole (a temporary file renamed over the old one).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::agent::AgentError;

/// What marks a hook command as Reins'.
pub const MARK: &str = " hook claude-code";
/// Claude Code's longest hook timeout, in seconds: the hook answers before it (see the deadline).
pub const TIMEOUT_SECS: u64 = 600;
/// The hooks installed: the event, and its timeout in seconds. Claude Code waits for a
/// `SessionEnd` hook as long as its timeout says (60 s at most), so the session's run is finished
/// before Claude Code exits.
const EVENTS: [(&str, u64); 3] = [("PreToolUse", TIMEOUT_SECS), ("PostToolUse", 30), ("SessionEnd", 10)];

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}: {detail}")]
    Unreadable { path: String, detail: String },
    #[error("{path} is not a JSON object of settings: {detail}")]
    Malformed { path: String, detail: String },
    #[error("cannot write {path}: {detail}")]
    Write { path: String, detail: String },
}

/// Where the entries go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `DIR/.claude/settings.local.json`: this project, this machine (not committed).
    Project(PathBuf),
    /// `~/.claude/settings.json`: every project of this user.
    User(PathBuf),
    /// Claude Code's managed settings (`/etc/claude-code/managed-settings.d/50-reins.json`): every
    /// user and project of this machine, and no project or user setting can switch them off.
    Managed(PathBuf),
}

impl Scope {
    pub fn file(&self) -> PathBuf {
        match self {
            Scope::Project(dir) => dir.join(".claude").join("settings.local.json"),
            Scope::User(home) => home.join(".claude").join("settings.json"),
            Scope::Managed(dir) => super::bypass::managed_file(dir),
        }
    }
}

/// A change to one settings file, worked out and not yet written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: String,
}

impl Change {
    /// Whether writing it would change the file (a missing file counts as empty).
    pub fn changes_anything(&self) -> bool {
        self.before.as_deref().unwrap_or("") != self.after
    }

    /// A unified diff of the change, for a dry run.
    pub fn diff(&self) -> String {
        let before = self.before.clone().unwrap_or_default();
        let path = self.path.display().to_string();
        similar::TextDiff::from_lines(&before, &self.after)
            .unified_diff()
            .header(&path, &path)
            .to_string()
    }

    pub fn write(&self) -> Result<(), SettingsError> {
        let fail = |e: std::io::Error| SettingsError::Write {
            path: self.path.display().to_string(),
            detail: e.to_string(),
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let tmp = self.path.with_extension("json.reins-tmp");
        std::fs::write(&tmp, &self.after).map_err(fail)?;
        std::fs::rename(&tmp, &self.path).map_err(fail)
    }
}

fn read(path: &Path) -> Result<(Option<String>, Map<String, Value>), SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => {
            return Err(SettingsError::Unreadable {
                path: path.display().to_string(),
                detail: e.to_string(),
            })
        }
    };
    let malformed = |detail: String| SettingsError::Malformed {
        path: path.display().to_string(),
        detail,
    };
    let settings = if text.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(&text).map_err(|e| malformed(e.to_string()))? {
            Value::Object(m) => m,
            _ => return Err(malformed("the top level is not an object".into())),
        }
    };
    Ok((Some(text), settings))
}

fn is_ours(hook: &Value) -> bool {
    hook["command"].as_str().is_some_and(|c| c.contains(MARK))
}

/// The event's matcher groups with Reins' hooks taken out (groups left empty go too).
fn without_ours(groups: &Value, path: &Path) -> Result<Vec<Value>, SettingsError> {
    let malformed = |detail: &str| SettingsError::Malformed {
        path: path.display().to_string(),
        detail: detail.into(),
    };
    let Some(groups) = groups.as_array() else {
        return Err(malformed("a hook event's value is not a list"));
    };
    let mut kept = Vec::new();
    for group in groups {
        let mut group = group.clone();
        let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            kept.push(group);
            continue;
        };
        let before = hooks.len();
        hooks.retain(|h| !is_ours(h));
        if hooks.is_empty() && before > 0 {
            continue;
        }
        kept.push(group);
    }
    Ok(kept)
}

fn render(settings: Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(settings)).unwrap_or_default();
    text.push('\n');
    text
}

/// The command of Reins' `PreToolUse` hook in the settings at `path`, when it is installed there.
pub fn installed(path: &Path) -> Result<Option<String>, SettingsError> {
    let (_, settings) = read(path)?;
    let groups = settings
        .get("hooks")
        .and_then(|h| h.get("PreToolUse"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(groups
        .iter()
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .find(|h| is_ours(h))
        .and_then(|h| h["command"].as_str().map(str::to_owned)))
}

/// Adds Reins' hooks (running `command`, which must contain [`MARK`]) to the settings at `path`,
/// replacing Reins' earlier entries and keeping everything else.
pub fn install(path: &Path, command: &str) -> Result<Change, SettingsError> {
    let (before, mut settings) = read(path)?;
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(SettingsError::Malformed {
            path: path.display().to_string(),
            detail: "`hooks` is not an object".into(),
        });
    };
    for (event, timeout) in EVENTS {
        let mut groups = match hooks.get(event) {
            Some(g) => without_ours(g, path)?,
            None => Vec::new(),
        };
        let mut group = json!({
            "hooks": [{"type": "command", "command": command, "timeout": timeout}],
        });
        // Tool events match tools by name: every tool. A session's end is taken whatever its reason.
        if event != "SessionEnd" {
            group["matcher"] = "*".into();
        }
        groups.push(group);
        hooks.insert(event.into(), Value::Array(groups));
    }
    Ok(Change {
        path: path.to_owned(),
        before,
        after: render(settings),
    })
}

/// Takes Reins' hooks out of the settings at `path`, and nothing else.
pub fn uninstall(path: &Path) -> Result<Change, SettingsError> {
    let (before, mut settings) = read(path)?;
    let Some(before_text) = before.clone() else {
        return Ok(Change {
            path: path.to_owned(),
            before: None,
            after: String::new(),
        });
    };
    if let Some(Value::Object(hooks)) = settings.get_mut("hooks") {
        let events: Vec<String> = hooks.keys().cloned().collect();
        for event in events {
            let kept = without_ours(&hooks[&event], path)?;
            if kept.is_empty() {
                hooks.remove(&event);
            } else {
                hooks.insert(event, Value::Array(kept));
            }
        }
        if hooks.is_empty() {
            settings.remove("hooks");
        }
    }
    let after = render(settings);
    // Nothing of Reins' was there: the file stays exactly as it was.
    let unchanged = serde_json::from_str::<Value>(&before_text).ok()
        == serde_json::from_str::<Value>(&after).ok();
    Ok(Change {
        path: path.to_owned(),
        after: if unchanged { before_text.clone() } else { after },
        before,
    })
}

/// Claude Code on this machine and Reins' hooks in one settings file, for the app's Settings.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ClaudeHooksView {
    /// Where `claude` is on `PATH`, if it is.
    pub claude: Option<String>,
    /// The settings file looked at.
    pub file: String,
    /// The command of Reins' hook there, when installed.
    pub installed: Option<String>,
    /// What would keep Claude Code from calling Reins' hooks there (a settings file that switches
    /// hooks off), each with what to do.
    pub warnings: Vec<String>,
}

fn invalid(e: impl std::fmt::Display) -> AgentError {
    AgentError::Invalid(e.to_string())
}

/// Claude Code on `PATH` and Reins' hooks in the settings of `scope`.
pub fn hooks_view(scope: &Scope) -> Result<ClaudeHooksView, AgentError> {
    let file = scope.file();
    let installed = installed(&file).map_err(invalid)?;
    let path = std::env::var_os("PATH");
    let claude = crate::process::find_program("claude", path.as_deref()).map(|p| p.display().to_string());
    let project = match scope {
        Scope::Project(dir) => Some(dir.as_path()),
        _ => None,
    };
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let managed = match scope {
        Scope::Managed(dir) => dir.clone(),
        _ => super::bypass::managed_dir(),
    };
    Ok(ClaudeHooksView {
        claude,
        file: file.display().to_string(),
        installed,
        warnings: super::bypass::warnings(project, home.as_deref(), &managed),
    })
}

/// Claude Code's managed settings on this machine: Reins' hooks there run whatever else says.
pub fn managed_scope() -> Scope {
    Scope::Managed(super::bypass::managed_dir())
}

/// The scope a face names: a project folder (which must exist), or the user's.
pub fn scope(project: Option<&str>) -> Result<Scope, AgentError> {
    match project.map(str::trim).filter(|p| !p.is_empty()) {
        None => user_scope(),
        Some(dir) => {
            let path = Path::new(dir);
            if !path.is_absolute() {
                return Err(invalid(format!(
                    "the project folder must be an absolute path: {dir}"
                )));
            }
            let dir = path
                .canonicalize()
                .map_err(|e| invalid(format!("the project folder {dir}: {e}")))?;
            if !dir.is_dir() {
                return Err(invalid(format!("{} is not a folder", dir.display())));
            }
            Ok(Scope::Project(dir))
        }
    }
}

/// The user's scope: `~/.claude/settings.json`.
pub fn user_scope() -> Result<Scope, AgentError> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Scope::User(PathBuf::from(h)))
        .ok_or_else(|| invalid("HOME is not set: say --project DIR instead"))
}

/// Reins' hooks added to the settings of `scope`, running `command`: the change, not yet written.
pub fn hooks_install(scope: &Scope, command: &str) -> Result<Change, AgentError> {
    install(&scope.file(), command).map_err(invalid)
}

/// Reins' hooks taken out of the settings of `scope`: the change, not yet written.
pub fn hooks_uninstall(scope: &Scope) -> Result<Change, AgentError> {
    uninstall(&scope.file()).map_err(invalid)
}

/// Writes a change worked out by [`hooks_install`] or [`hooks_uninstall`].
pub fn write(change: &Change) -> Result<(), AgentError> {
    change.write().map_err(invalid)
}

/// The hook command a Reins with data dir `data_dir` installs: `program`, with that data dir.
pub fn command(program: &Path, data_dir: &Path) -> String {
    let quote = |s: &str| shell_words::quote(s).into_owned();
    format!(
        "{} --data-dir {}{}",
        quote(&program.to_string_lossy()),
        quote(&data_dir.to_string_lossy()),
        MARK
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "'/usr/bin/reins' hook claude-code";

    #[test]
    fn install_keeps_other_hooks_and_settings_and_uninstall_takes_out_only_reins() {
        let dir = tempfile::tempdir().unwrap();
        let path = Scope::Project(dir.path().to_owned()).file();
        std::fs::create_dir_all(path.parent().unwrap_or(dir.path())).unwrap();
        let theirs = json!({
            "model": "opus",
            "permissions": {"allow": ["Bash(npm test)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            },
        });
        std::fs::write(&path, theirs.to_string()).unwrap();
        let change = install(&path, CMD).unwrap();
        assert!(change.changes_anything() && change.diff().contains("+"), "{}", change.diff());
        change.write().unwrap();
        // Twice is the same as once.
        let again = install(&path, CMD).unwrap();
        assert!(!again.changes_anything(), "{}", again.diff());
        let merged: Value = serde_json::from_str(&again.after).unwrap();
        let pre = merged["hooks"]["PreToolUse"].as_array().cloned().unwrap_or_default();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "my-linter");
        assert_eq!(pre[1]["hooks"][0]["timeout"], 600);
        assert_eq!(merged["hooks"]["PostToolUse"][0]["hooks"][0]["command"], CMD);
        assert_eq!(merged["hooks"]["SessionEnd"][0]["hooks"][0]["command"], CMD);
        assert!(merged["hooks"]["SessionEnd"][0].get("matcher").is_none());
        assert_eq!(installed(&path).ok().flatten().as_deref(), Some(CMD));
        let out = uninstall(&path).unwrap();
        out.write().unwrap();
        let left: Value = serde_json::from_str(&out.after).unwrap();
        assert_eq!(left, theirs);
        assert_eq!(installed(&path).ok().flatten(), None);
        // Uninstalling again changes nothing, byte for byte.
        assert!(!uninstall(&path).unwrap().changes_anything());
    }

    #[test]
    fn a_file_that_is_not_settings_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        for bad in ["[1]", "{\"hooks\": []}", "{\"hooks\": {\"PreToolUse\": {}}}", "{nope"] {
            std::fs::write(&path, bad).unwrap();
            assert!(install(&path, CMD).is_err(), "{bad}");
            assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some(bad));
        }
        // No file: uninstall has nothing to do; install creates it.
        let none = dir.path().join("none.json");
        assert!(!uninstall(&none).unwrap().changes_anything());
        assert!(install(&none, CMD).unwrap().changes_anything());
    }
}
