use reins_core::api::{
    FactDetailView as FactDetail, MemorySettings as Settings, RememberedView as Remembered,
};
use reins_core::api::{FactView as FactRow, SuggestionView as SuggestionRow};
use tauri::State;

use super::changing;
use crate::args;
use crate::error::Result;
use crate::state::AppState;

#[tauri::command]
#[specta::specta]
pub async fn memory_list(
    state: State<'_, AppState>,
    category: Option<String>,
    search: Option<String>,
) -> Result<Vec<FactRow>> {
    let category = category.map(|c| args::line("category", &c)).transpose()?;
    let search = search
        .map(|s| args::line("search", s.trim()))
        .transpose()?
        .filter(|s| !s.is_empty());
    Ok(state
        .reins
        .memory_list(category.as_deref(), search.as_deref())
        .await?)
}

#[tauri::command]
#[specta::specta]
pub async fn memory_show(state: State<'_, AppState>, id: String) -> Result<FactDetail> {
    Ok(state.reins.memory_show(&args::id("fact", &id)?).await?)
}

#[tauri::command]
#[specta::specta]
pub async fn memory_edit(
    state: State<'_, AppState>,
    id: String,
    value: String,
) -> Result<Remembered> {
    let id = args::id("fact", &id)?;
    let value = args::line("fact", value.trim())?;
    changing(&state, |r| async move { r.memory_edit(&id, &value).await }).await
}

#[tauri::command]
#[specta::specta]
pub async fn memory_delete(state: State<'_, AppState>, id: String) -> Result<()> {
    let id = args::id("fact", &id)?;
    changing(&state, |r| async move { r.memory_delete(&id).await }).await
}

/// Deletes every fact and suggestion; returns how many of each.
#[tauri::command]
#[specta::specta]
pub async fn memory_clear(state: State<'_, AppState>) -> Result<(u64, u64)> {
    changing(&state, |r| async move { r.memory_clear().await }).await
}

#[tauri::command]
#[specta::specta]
pub async fn memory_suggestions(state: State<'_, AppState>) -> Result<Vec<SuggestionRow>> {
    Ok(state.reins.memory_suggestions().await?)
}

#[tauri::command]
#[specta::specta]
pub async fn memory_accept(state: State<'_, AppState>, id: String) -> Result<Remembered> {
    let id = args::id("suggestion", &id)?;
    changing(&state, |r| async move { r.memory_accept(&id).await }).await
}

#[tauri::command]
#[specta::specta]
pub async fn memory_dismiss(state: State<'_, AppState>, id: String) -> Result<()> {
    let id = args::id("suggestion", &id)?;
    changing(&state, |r| async move { r.memory_dismiss(&id).await }).await
}

#[tauri::command]
#[specta::specta]
pub async fn memory_settings(state: State<'_, AppState>) -> Result<Settings> {
    Ok(state.reins.memory_settings().await?)
}

/// The memory switch: off, no fact reaches an agent's context and nothing new is remembered.
#[tauri::command]
#[specta::specta]
pub async fn memory_set_enabled(state: State<'_, AppState>, enabled: bool) -> Result<Settings> {
    changing(&state, |r| async move {
        r.memory_configure(Some(enabled), None, None).await
    })
    .await
}
