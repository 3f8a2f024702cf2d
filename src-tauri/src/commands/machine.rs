//! What the app finds on this machine for a first launch: whether the model server answers, and
//! the agents Reins knows that are installed.

use reins_core::api::{FoundAgent, ModelServerCheck};
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
