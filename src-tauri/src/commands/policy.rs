//! The Policy view: the rules in force, and trying a command, path or URL against them.

use reins_core::api::{PolicyCheck, PolicyState};
use serde::Deserialize;
use tauri::State;

use crate::error::{IpcError, Result};
use crate::state::AppState;

/// The policy in force (the watcher reads the file again when it changes).
#[tauri::command]
#[specta::specta]
pub async fn policy_state(state: State<'_, AppState>) -> Result<PolicyState> {
    Ok(state.reins.policy_state()?)
}

/// What is tried: a shell command, a file to change, or a URL to fetch.
#[derive(Debug, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum TryKind {
    Command,
    Path,
    Url,
}

/// What the policy decides for `text` in `workspace` (default: the home folder), exactly as
/// `reins policy check` does, without running anything. A path is judged as a write to it.
#[tauri::command]
#[specta::specta]
pub async fn policy_try(
    state: State<'_, AppState>,
    kind: TryKind,
    text: String,
    workspace: Option<String>,
) -> Result<PolicyCheck> {
    let text = text.trim();
    if text.is_empty() || text.len() > 8192 {
        return Err(IpcError::invalid("give 1 to 8192 characters to try"));
    }
    let workspace = match workspace.filter(|w| !w.trim().is_empty()) {
        Some(w) => std::path::PathBuf::from(w),
        None => std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .ok_or_else(|| IpcError::invalid("no workspace given and no home folder"))?,
    };
    let (tool, args) = match kind {
        TryKind::Command => ("shell.exec", serde_json::json!({ "command": text })),
        TryKind::Path => (
            "fs.write",
            serde_json::json!({ "path": text, "content": "" }),
        ),
        TryKind::Url => ("http.fetch", serde_json::json!({ "url": text })),
    };
    Ok(state.reins.policy_check(tool, args, &workspace).await?)
}

/// Opens the policy file in the desktop's editor for it, creating it (with a commented example)
/// when it does not exist.
#[tauri::command]
#[specta::specta]
pub async fn open_policy_file(state: State<'_, AppState>) -> Result<String> {
    let file = state.reins.policy_file().to_owned();
    if !file.exists() {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| IpcError::invalid(e.to_string()))?;
        }
        std::fs::write(&file, TEMPLATE).map_err(|e| IpcError::invalid(e.to_string()))?;
    }
    std::process::Command::new("xdg-open")
        .arg(&file)
        .spawn()
        .map_err(|e| IpcError::invalid(format!("cannot open {}: {e}", file.display())))?;
    Ok(file.display().to_string())
}

const TEMPLATE: &str =
    "# Reins' policy: rules weighed deny first, then ask, then allow. The built-in
# rules always apply (see the Policy view). Saved, this file is read again at once.
#
# [[rules]]
# decision = \"allow\"            # allow, ask or deny
# tool = \"shell.exec\"
# program = \"touch\"
# reason = \"harmless\"
";
