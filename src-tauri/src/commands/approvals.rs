use reins_core::api::ApprovalView;
use reins_core::api::DecidedView as Decided;
use tauri::State;

use super::changing;
use crate::args::{self, Approve, ApproveBatch};
use crate::error::Result;
use crate::state::AppState;

/// Who decided, as the audit log records it: the desktop user.
pub fn reviewer() -> String {
    reins_core::api::face::person(Some("desktop"))
}

/// Pending approvals (default) or those with `status`, oldest first.
#[tauri::command]
#[specta::specta]
pub async fn list_approvals(
    state: State<'_, AppState>,
    status: Option<String>,
) -> Result<Vec<ApprovalView>> {
    let status = args::approval_status(status.as_deref())?;
    Ok(state.reins.approvals(Some(status), None).await?)
}

/// One approval, re-checked against the disk first (a changed file supersedes it).
#[tauri::command]
#[specta::specta]
pub async fn approval(state: State<'_, AppState>, id: String) -> Result<ApprovalView> {
    Ok(state.reins.approval(&args::id("approval", &id)?).await?)
}

#[tauri::command]
#[specta::specta]
pub async fn approve(state: State<'_, AppState>, id: String, approve: Approve) -> Result<Decided> {
    let id = args::id("approval", &id)?;
    let req = approve.request(reviewer())?;
    changing(&state, |r| async move { r.approve(&id, req).await }).await
}

/// Approves exactly the checked cards, each bound to the hash it showed, or none of them.
#[tauri::command]
#[specta::specta]
pub async fn approve_batch(
    state: State<'_, AppState>,
    batch: ApproveBatch,
) -> Result<Vec<Decided>> {
    let (cards, note) = batch.checked()?;
    changing(&state, |r| async move {
        r.approve_batch(&cards, &reviewer(), note.as_deref()).await
    })
    .await
}

/// Rejects with a reason; with `siblings`, the calls queued after it in the same turn too.
#[tauri::command]
#[specta::specta]
pub async fn reject(
    state: State<'_, AppState>,
    id: String,
    reason: String,
    siblings: Option<bool>,
) -> Result<Decided> {
    let id = args::id("approval", &id)?;
    let reason = args::reason(&reason)?;
    let siblings = siblings.unwrap_or(false);
    changing(&state, |r| async move {
        r.reject_with(&id, &reason, &reviewer(), siblings).await
    })
    .await
}
