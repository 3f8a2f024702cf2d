//! Settings → Traces: where this machine sends OpenTelemetry. Saving starts the app's follower
//! again on the new choice; nothing else changes.

use reins_core::api::{TelemetryPass, TelemetrySettings, TelemetryView};
use tauri::State;

use crate::error::Result;
use crate::state::AppState;

#[tauri::command]
#[specta::specta]
pub async fn telemetry_settings(state: State<'_, AppState>) -> Result<TelemetryView> {
    let following = state.telemetry.following().await;
    Ok(state.reins.telemetry_view(following).await?)
}

/// Saves the export (None: turns the saved one off) and follows the log on it at once. A saved
/// choice the follower cannot start on (a keyring entry missing) shows as the view's problem.
#[tauri::command]
#[specta::specta]
pub async fn save_telemetry_settings(
    state: State<'_, AppState>,
    settings: Option<TelemetrySettings>,
) -> Result<TelemetryView> {
    state.reins.save_telemetry(settings.as_ref())?;
    let started = state.telemetry.restart(&state.reins).await;
    let mut view = state
        .reins
        .telemetry_view(matches!(started, Ok(true)))
        .await?;
    if let Err(e) = started {
        view.problem.get_or_insert_with(|| e.to_string());
    }
    Ok(view)
}

/// Sends what the collector has not taken yet, now; None: export is off.
#[tauri::command]
#[specta::specta]
pub async fn telemetry_send_now(state: State<'_, AppState>) -> Result<Option<TelemetryPass>> {
    Ok(state.reins.telemetry_pass().await?)
}
