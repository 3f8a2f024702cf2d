//! What takes Reins out of a Claude Code in the user's terminal: a settings file, at any level,
//! that switches hooks off (`disableAllHooks`), or managed settings that run only managed hooks
//! while Reins' are not among them. A cloned repository's `.claude/settings.json` can carry the
//! first. Hooks in Claude Code's managed settings (`/etc/claude-code/managed-settings.d/`) run
//! whatever a user's or a project's settings say, so installing there is the answer this offers.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where Claude Code reads managed settings on Linux: `/etc/claude-code` (its release builds take
/// no other). `REINS_CLAUDE_MANAGED_DIR` points Reins elsewhere, for a test that mounts a folder
/// of its own there.
pub fn managed_dir() -> PathBuf {
    std::env::var_os("REINS_CLAUDE_MANAGED_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/etc/claude-code"), PathBuf::from)
}

/// The managed settings file Reins' hooks go in: a drop-in of its own, beside the organisation's.
pub fn managed_file(dir: &Path) -> PathBuf {
    dir.join("managed-settings.d").join("50-reins.json")
}

/// Every managed settings file: `managed-settings.json`, then the drop-ins in name order.
fn managed_files(dir: &Path) -> Vec<PathBuf> {
    let mut drop_ins: Vec<PathBuf> = std::fs::read_dir(dir.join("managed-settings.d"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    drop_ins.sort();
    let mut files = vec![dir.join("managed-settings.json")];
    files.extend(drop_ins);
    files
}

fn settings(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn flag(settings: &Value, name: &str) -> bool {
    settings.get(name).and_then(Value::as_bool) == Some(true)
}

/// Why Claude Code started in `project` (or in any folder, for None) would not call Reins' hooks,
/// one sentence each with what to do; empty when nothing switches them off.
pub fn warnings(project: Option<&Path>, home: Option<&Path>, managed: &Path) -> Vec<String> {
    let managed_files = managed_files(managed);
    let ours_managed = managed_files
        .iter()
        .any(|f| super::settings::installed(f).ok().flatten().is_some());
    let mut out = Vec::new();
    for file in &managed_files {
        let Some(s) = settings(file) else { continue };
        if flag(&s, "disableAllHooks") {
            out.push(format!(
                "{} (managed settings) sets disableAllHooks: Claude Code calls no hook on this machine, Reins' included",
                file.display()
            ));
        }
        if flag(&s, "allowManagedHooksOnly") && !ours_managed {
            out.push(format!(
                "{} (managed settings) sets allowManagedHooksOnly and Reins' hooks are not managed: `reins hooks install claude-code --managed` (as root) puts them there",
                file.display()
            ));
        }
    }
    if ours_managed {
        // Managed hooks run under any other file's disableAllHooks.
        return out;
    }
    let mut others: Vec<PathBuf> = home.map(|h| h.join(".claude/settings.json")).into_iter().collect();
    if let Some(dir) = project {
        others.push(dir.join(".claude/settings.json"));
        others.push(dir.join(".claude/settings.local.json"));
    }
    for file in others {
        if settings(&file).is_some_and(|s| flag(&s, "disableAllHooks")) {
            out.push(format!(
                "{} sets disableAllHooks: Claude Code started there calls no hook, Reins' included, and nothing it does reaches Reins. `reins hooks install claude-code --managed` (as root) installs hooks no project or user setting can switch off",
                file.display()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_repository_that_switches_hooks_off_is_named_until_reins_hooks_are_managed() {
        let tmp = tempfile::tempdir().unwrap();
        let (project, home, managed) = (tmp.path().join("ws"), tmp.path().join("home"), tmp.path().join("etc"));
        write(&project.join(".claude/settings.json"), r#"{"disableAllHooks": true, "permissions": {"allow": ["Bash(*)"]}}"#);
        write(&home.join(".claude/settings.json"), r#"{"model": "opus"}"#);
        let said = warnings(Some(&project), Some(&home), &managed);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("ws/.claude/settings.json sets disableAllHooks"), "{said:?}");
        assert!(warnings(None, Some(&home), &managed).is_empty(), "no project: the user's file is fine");

        let ours = super::super::settings::install(&managed_file(&managed), "'/usr/bin/reins' hook claude-code").unwrap();
        ours.write().unwrap();
        assert!(warnings(Some(&project), Some(&home), &managed).is_empty(), "managed hooks run regardless");

        write(&managed.join("managed-settings.json"), r#"{"disableAllHooks": true}"#);
        let said = warnings(Some(&project), Some(&home), &managed);
        assert!(said.iter().any(|w| w.contains("(managed settings) sets disableAllHooks")), "{said:?}");
    }

    #[test]
    fn managed_hooks_only_without_reins_among_them_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let managed = tmp.path().join("etc");
        write(&managed.join("managed-settings.d/10-org.json"), r#"{"allowManagedHooksOnly": true}"#);
        let said = warnings(None, None, &managed);
        assert!(said[0].contains("allowManagedHooksOnly and Reins' hooks are not managed"), "{said:?}");
    }
}
