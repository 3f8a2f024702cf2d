use reins_core::api::GcReport;
use reins_core::api::Secret;
use reins_core::api::{KeyStatus, ProviderDefaults};
use serde::Serialize;
use tauri::State;
use tauri_plugin_dialog::DialogExt;

use super::changing;
use crate::error::{IpcError, Result};
use crate::state::AppState;

#[derive(Debug, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    pub version: String,
    pub data_dir: String,
    pub policy_file: String,
    /// False: only the built-in policy applies.
    pub policy_file_exists: bool,
    /// Whether commands and agents run confined in full here, and how, in words.
    pub confined: bool,
    pub containment: String,
}

#[tauri::command]
#[specta::specta]
pub async fn app_info(state: State<'_, AppState>) -> Result<AppInfo> {
    let policy = state.reins.policy_file();
    let (confined, containment) = state.reins.containment().await;
    Ok(AppInfo {
        confined,
        containment,
        version: env!("CARGO_PKG_VERSION").into(),
        data_dir: state.reins.data_dir().display().to_string(),
        policy_file: policy.display().to_string(),
        policy_file_exists: policy.exists(),
    })
}

#[tauri::command]
#[specta::specta]
pub async fn provider_defaults(state: State<'_, AppState>) -> Result<ProviderDefaults> {
    Ok(state.reins.provider_defaults().await?)
}

#[tauri::command]
#[specta::specta]
pub async fn set_provider_defaults(
    state: State<'_, AppState>,
    defaults: ProviderDefaults,
) -> Result<ProviderDefaults> {
    changing(&state, |r| async move {
        r.set_provider_defaults(&defaults).await
    })
    .await
}

/// Whether each named key is in the keyring. Never the key itself.
#[tauri::command]
#[specta::specta]
pub async fn key_status(state: State<'_, AppState>, names: Vec<String>) -> Result<Vec<KeyStatus>> {
    if names.len() > 32 {
        return Err(IpcError::invalid("at most 32 key names at once"));
    }
    Ok(state.reins.keys_status(names).await?)
}

/// Stores an API key in the OS keyring. The value goes from this call straight to the keyring; it
/// is never written to disk, logged, or sent back.
#[tauri::command]
#[specta::specta]
pub async fn key_set(state: State<'_, AppState>, name: String, value: String) -> Result<()> {
    Ok(state.reins.keys_set(&name, Secret::new(value)).await?)
}

#[tauri::command]
#[specta::specta]
pub async fn key_delete(state: State<'_, AppState>, name: String) -> Result<bool> {
    Ok(state.reins.keys_delete(&name).await?)
}

/// Retention: keeps the last `keep` checkpoints of finished runs and drops blobs nothing needs.
#[tauri::command]
#[specta::specta]
pub async fn clean_up(state: State<'_, AppState>, keep: u32, dry_run: bool) -> Result<GcReport> {
    if keep == 0 {
        return Err(IpcError::invalid("keep at least one checkpoint per run"));
    }
    let keep = keep as usize;
    changing(&state, |r| async move { r.gc(keep, dry_run).await }).await
}

/// A folder chosen in the native dialog (None: cancelled).
#[tauri::command]
#[specta::specta]
pub async fn pick_folder(app: tauri::AppHandle) -> Result<Option<String>> {
    let dialog = app.dialog().file().set_title("Choose the workspace folder");
    let picked = tokio::task::spawn_blocking(move || dialog.blocking_pick_folder())
        .await
        .map_err(|e| IpcError::invalid(format!("the dialog failed: {e}")))?;
    Ok(picked
        .and_then(|p| p.into_path().ok())
        .map(|p| p.display().to_string()))
}

/// A plan file chosen in the native dialog (None: cancelled).
#[tauri::command]
#[specta::specta]
pub async fn pick_file(app: tauri::AppHandle) -> Result<Option<String>> {
    let dialog = app
        .dialog()
        .file()
        .set_title("Choose a plan")
        .add_filter("Plan", &["toml"]);
    let picked = tokio::task::spawn_blocking(move || dialog.blocking_pick_file())
        .await
        .map_err(|e| IpcError::invalid(format!("the dialog failed: {e}")))?;
    Ok(picked
        .and_then(|p| p.into_path().ok())
        .map(|p| p.display().to_string()))
}
