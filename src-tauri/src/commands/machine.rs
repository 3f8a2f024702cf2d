//! What the app finds on this machine for a first launch: whether the model server answers, and
//! the agents Reins knows that are installed.

use reins_core::api::{self as api, ClaudeHooksView, FoundAgent, ModelServerCheck};
use serde::Serialize;
use tauri::State;

use crate::error::Result;
use crate::state::AppState;

/// Asks the model server (the provider setting's, or `base_url`) for its models.
#[tauri::command]
#[specta::specta]
pub async fn check_model_server(
    state: State<'_, AppState>,
    base_url: Option<String>,
) -> Result<ModelServerCheck> {
    Ok(state.reins.check_model_server(base_url).await?)
}

#[derive(Debug, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct AgentOnPath {
    pub agent: FoundAgent,
    /// An agent of this name is registered already.
    pub registered: bool,
}

/// The agents Reins knows how to run that are on `PATH`.
#[tauri::command]
#[specta::specta]
pub async fn agents_on_path(state: State<'_, AppState>) -> Result<Vec<AgentOnPath>> {
    Ok(state
        .reins
        .agents_on_path()?
        .into_iter()
        .map(|(agent, registered)| AgentOnPath { agent, registered })
        .collect())
}

/// Registers an agent found on `PATH` by its name; the command is the one Reins found, never one
/// the webview sends.
#[tauri::command]
#[specta::specta]
pub async fn register_found_agent(state: State<'_, AppState>, name: String) -> Result<FoundAgent> {
    Ok(state.reins.register_found_agent(&name)?)
}

/// Claude Code on `PATH`, and whether Reins' hooks are in the settings of `project` (a folder), or
/// of the user (`~/.claude/settings.json`) when none is named.
#[tauri::command]
#[specta::specta]
pub async fn claude_hooks(project: Option<String>) -> Result<ClaudeHooksView> {
    let scope = api::claude_scope(project.as_deref())?;
    Ok(api::claude_hooks_view(&scope)?)
}

/// Installs Reins' hooks there (or, with `install` false, takes them out); the hook runs the
/// `reins` program installed beside the app, on the app's data dir.
#[tauri::command]
#[specta::specta]
pub async fn set_claude_hooks(
    state: State<'_, AppState>,
    project: Option<String>,
    install: bool,
) -> Result<ClaudeHooksView> {
    let scope = api::claude_scope(project.as_deref())?;
    let change = if install {
        let program = crate::reins_program().ok_or_else(|| {
            api::Error::Invalid(
                "the `reins` program is not installed beside the app or on PATH: the hook needs it"
                    .into(),
            )
        })?;
        api::claude_hooks_install(&scope, &state.reins.claude_hook_command(&program))?
    } else {
        api::claude_hooks_uninstall(&scope)?
    };
    if change.changes_anything() {
        api::write_settings(&change)?;
    }
    Ok(api::claude_hooks_view(&scope)?)
}
