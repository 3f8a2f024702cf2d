//! Runs: the list, one run's timeline, its context and usage, and pause, resume and cancel; at
//! its budget, allow more or stop here.
//! Starting a run names folders and programs on the machine, so it stays with the desktop and CLI.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use reins_core::api::face;
use reins_core::api::{BudgetMeasure, BudgetView, ContextView, Control, ResumeMode, RunDetail};
use reins_core::api::{RunSummary, UsageView};
use serde::Deserialize;

use crate::body::Body;
use crate::error::Result;
use crate::guard::Device;
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllowMore {
    measure: BudgetMeasure,
    more: f64,
}

/// "Allow N more" on a run's budget; a run paused at it goes on.
pub async fn allow_more(
    State(s): State<Arc<Shared>>,
    Extension(device): Extension<Device>,
    Path(id): Path<String>,
    Body(body): Body<AllowMore>,
) -> Result<Json<BudgetView>> {
    let id = face::run_id(&id)?;
    let out = s
        .reins
        .allow_more(id, body.measure, body.more, &device.reviewer())
        .await;
    s.wake.notify_one();
    Ok(Json(out?.0))
}

/// "Stop here": ends a run paused at its budget.
pub async fn stop_at_budget(
    State(s): State<Arc<Shared>>,
    Extension(device): Extension<Device>,
    Path(id): Path<String>,
) -> Result<Json<Control>> {
    let out = s
        .reins
        .stop_at_budget(face::run_id(&id)?, &device.reviewer())
        .await;
    s.wake.notify_one();
    Ok(Json(out?))
}
