//! The inbox: approvals, their decisions, and the grants decisions leave behind.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::{Extension, Json};
use reins_core::api::face::{self, Approve};
use reins_core::api::{ApprovalView, DecidedView, GrantView};
use serde::Deserialize;

use crate::body::Body;
use crate::error::{HttpError, Result};
use crate::guard::Device;
use crate::Shared;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    status: Option<String>,
}

pub fn query<T>(q: std::result::Result<Query<T>, QueryRejection>) -> Result<T> {
    q.map(|Query(q)| q).map_err(|e| {
        HttpError::invalid(format!(
            "the query string is not what this route takes: {e}"
        ))
    })
}

pub async fn list(
    State(s): State<Arc<Shared>>,
    q: std::result::Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<ApprovalView>>> {
    let status = face::approval_status(query(q)?.status.as_deref())?;
    Ok(Json(s.reins.approvals(Some(status), None).await?))
}

pub async fn show(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<ApprovalView>> {
    Ok(Json(s.reins.approval(&face::id("approval", &id)?).await?))
}

pub async fn approve(
    State(s): State<Arc<Shared>>,
    Extension(device): Extension<Device>,
    Path(id): Path<String>,
    Body(approve): Body<Approve>,
) -> Result<Json<DecidedView>> {
    let id = face::id("approval", &id)?;
    let req = approve.request(device.reviewer())?;
    let out = s.reins.approve(&id, req).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    reason: String,
}

pub async fn reject(
    State(s): State<Arc<Shared>>,
    Extension(device): Extension<Device>,
    Path(id): Path<String>,
    Body(body): Body<Reject>,
) -> Result<Json<DecidedView>> {
    let id = face::id("approval", &id)?;
    let reason = face::reason(&body.reason)?;
    let out = s.reins.reject(&id, &reason, &device.reviewer()).await;
    s.wake.notify_one();
    Ok(Json(out?))
}

pub async fn grants(State(s): State<Arc<Shared>>) -> Result<Json<Vec<GrantView>>> {
    Ok(Json(s.reins.grants().await?))
}

pub async fn revoke_grant(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<GrantView>> {
    let out = s.reins.revoke_grant(&face::id("grant", &id)?).await;
    s.wake.notify_one();
    Ok(Json(out?))
}
