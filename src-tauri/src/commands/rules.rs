use reins_core::api::GrantView as GrantRow;
use tauri::State;

use super::changing;
use crate::args;
use crate::error::Result;
use crate::state::AppState;

#[tauri::command]
#[specta::specta]
pub async fn list_grants(state: State<'_, AppState>) -> Result<Vec<GrantRow>> {
    Ok(state.reins.grants().await?)
}

#[tauri::command]
#[specta::specta]
pub async fn revoke_grant(state: State<'_, AppState>, id: String) -> Result<GrantRow> {
    let id = args::id("grant", &id)?;
    changing(&state, |r| async move { r.revoke_grant(&id).await }).await
}
