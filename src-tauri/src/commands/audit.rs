use reins_core::api::{
    AuditFilter as Filter, AuditPage as Page, ExportFormat, ExportRequest, ExportSummary,
    PageRequest, Verification,
};
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

use crate::error::{IpcError, Result};
use crate::state::AppState;

#[tauri::command]
#[specta::specta]
pub async fn audit_page(state: State<'_, AppState>, request: PageRequest) -> Result<Page> {
    Ok(state.reins.audit_page(&request).await?)
}

#[tauri::command]
#[specta::specta]
pub async fn audit_verify(state: State<'_, AppState>) -> Result<Verification> {
    Ok(state.reins.audit_verify().await?)
}

/// Exports the events `filter` selects to a file the person picks in the native save dialog; the
/// webview never names a path. None: the dialog was cancelled.
#[tauri::command]
#[specta::specta]
pub async fn audit_export(
    app: AppHandle,
    state: State<'_, AppState>,
    format: ExportFormat,
    filter: Filter,
) -> Result<Option<ExportSummary>> {
    let ext = format.as_str();
    let dialog = app
        .dialog()
        .file()
        .set_title("Export the audit log")
        .add_filter(ext.to_uppercase(), &[ext])
        .set_file_name(format!("reins-audit.{ext}"));
    let picked = tokio::task::spawn_blocking(move || dialog.blocking_save_file())
        .await
        .map_err(|e| IpcError::invalid(format!("the save dialog failed: {e}")))?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    let out = picked
        .into_path()
        .map_err(|e| IpcError::invalid(format!("cannot save there: {e}")))?;
    let req = ExportRequest {
        format,
        out,
        filter,
        // The dialog already asked whether to replace an existing file.
        overwrite: true,
    };
    Ok(Some(state.reins.audit_export(&req, &mut |_, _| {}).await?))
}
