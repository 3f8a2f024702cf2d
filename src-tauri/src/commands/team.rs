//! Settings → Team database: which shared PostgreSQL the app opens. Connecting or disconnecting
//! saves the choice and starts the app again (its runs drain first, as on quit): one process keeps
//! one database for its whole life.

use reins_core::api::{self as api, AlertScope, TeamCheck, TeamDatabase, TeamView};
use tauri::{AppHandle, State};

use crate::error::Result;
use crate::state::AppState;

#[tauri::command]
#[specta::specta]
pub async fn team_database(state: State<'_, AppState>) -> Result<TeamView> {
    Ok(state.reins.team_view().await?)
}

/// Connects to `database` and reads its schema version; changes nothing there or here.
#[tauri::command]
#[specta::specta]
pub async fn check_team_database(
    state: State<'_, AppState>,
    database: TeamDatabase,
) -> Result<TeamCheck> {
    Ok(state.reins.check_team_database(&database).await?)
}

/// Saves `database` as the app's, then restarts the app on it. Refused when it cannot be reached
/// now, so a typo cannot leave the app unable to start.
#[tauri::command]
#[specta::specta]
pub async fn connect_team_database(
    app: AppHandle,
    state: State<'_, AppState>,
    database: TeamDatabase,
) -> Result<()> {
    let check = state.reins.check_team_database(&database).await?;
    if let Some(problem) = check.problem {
        return Err(api::Error::Invalid(format!("{}: {problem}", check.url)).into());
    }
    api::save_team_database(Some(&database))?;
    crate::restart(&app);
    Ok(())
}

/// Forgets the saved team database and restarts the app on this machine's own SQLite file.
#[tauri::command]
#[specta::specta]
pub async fn disconnect_team_database(app: AppHandle) -> Result<()> {
    api::save_team_database(None)?;
    crate::restart(&app);
    Ok(())
}

/// What this machine's tray count and notifications cover: the whole team's runs, or the runs
/// started here. Saved in this machine's config dir; the tray follows at once.
#[tauri::command]
#[specta::specta]
pub async fn set_alert_scope(state: State<'_, AppState>, scope: AlertScope) -> Result<AlertScope> {
    let scope = api::save_alert_scope(scope)?;
    state.alerts.send_replace(scope);
    Ok(scope)
}
