//! The profile memory: browse, edit and delete facts, and accept or dismiss suggestions.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use reins_core::api::face;
use reins_core::api::{FactDetailView, FactView, MemorySettings, RememberedView, SuggestionView};
use serde::Deserialize;

use super::reviews::query;
use crate::body::Body;
use crate::error::Result;
use crate::Shared;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    category: Option<String>,
    search: Option<String>,
}

pub async fn list(
    State(s): State<Arc<Shared>>,
    q: std::result::Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<FactView>>> {
    let q = query(q)?;
    let category = q.category.map(|c| face::line("category", &c)).transpose()?;
    let search = q
        .search
        .map(|t| face::line("search", t.trim()))
        .transpose()?
        .filter(|t| !t.is_empty());
    Ok(Json(
        s.reins
            .memory_list(category.as_deref(), search.as_deref())
            .await?,
    ))
}

pub async fn show(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<FactDetailView>> {
    Ok(Json(s.reins.memory_show(&face::id("fact", &id)?).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    value: String,
}

pub async fn edit(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    Body(body): Body<Edit>,
) -> Result<Json<RememberedView>> {
    let id = face::id("fact", &id)?;
    let value = face::line("fact", body.value.trim())?;
    let out = s.reins.memory_edit(&id, &value).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

pub async fn delete(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Result<Json<()>> {
    let out = s.reins.memory_delete(&face::id("fact", &id)?).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

pub async fn suggestions(State(s): State<Arc<Shared>>) -> Result<Json<Vec<SuggestionView>>> {
    Ok(Json(s.reins.memory_suggestions().await?))
}

pub async fn accept(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<RememberedView>> {
    let out = s.reins.memory_accept(&face::id("suggestion", &id)?).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

pub async fn dismiss(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Result<Json<()>> {
    let out = s.reins.memory_dismiss(&face::id("suggestion", &id)?).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

pub async fn settings(State(s): State<Arc<Shared>>) -> Result<Json<MemorySettings>> {
    Ok(Json(s.reins.memory_settings().await?))
}
