//! Runs: the list, one run's timeline, its context and usage, and pause, resume and cancel.
//! Starting a run names folders and programs on the machine, so it stays with the desktop and CLI.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use reins_core::api::face;
use reins_core::api::{ContextView, Control, ResumeMode, RunDetail, RunSummary, UsageView};
use serde::Deserialize;

use crate::body::Body;
use crate::error::Result;
use crate::Shared;

pub async fn list(State(s): State<Arc<Shared>>) -> Result<Json<Vec<RunSummary>>> {
    Ok(Json(s.reins.runs().await?))
}

pub async fn detail(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>> {
    Ok(Json(s.reins.run_detail(face::run_id(&id)?).await?))
}

pub async fn context(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<Vec<ContextView>>> {
    Ok(Json(s.reins.context(face::run_id(&id)?).await?))
}

pub async fn usage(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<UsageView>> {
    Ok(Json(s.reins.usage(face::run_id(&id)?).await?))
}

pub async fn pause(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Result<Json<Control>> {
    let out = s.reins.pause(face::run_id(&id)?).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

pub async fn resume(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Result<Json<Control>> {
    let out = s
        .reins
        .resume(face::run_id(&id)?, ResumeMode::Continue)
        .await;
    s.wake.notify_one();
    Ok(Json(out?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cancel {
    reason: Option<String>,
}

pub async fn cancel(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    Body(body): Body<Cancel>,
) -> Result<Json<Control>> {
    let id = face::run_id(&id)?;
    let reason = body.reason.map(|r| face::line("reason", &r)).transpose()?;
    let out = s.reins.cancel(id, reason.as_deref()).await;
    s.wake.notify_one();
    Ok(Json(out?))
}
