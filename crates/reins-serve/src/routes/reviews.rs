//! The inbox: approvals, their decisions, and the grants decisions leave behind.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use reins_core::api::face::{self, Approve};
use reins_core::api::{ApprovalStatus, ApprovalView, DecidedView, GrantView};
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

/// The inbox as JSON, kept while nothing changes: every browser refetches it on every change, and
/// a thousand cards are a megabyte of JSON to build.
pub struct Cached {
    stamp: (i64, i64),
    /// The earliest expiry among the cards: after it, one may have expired.
    valid_until: i64,
    body: axum::body::Bytes,
}

pub async fn list(
    State(s): State<Arc<Shared>>,
    q: std::result::Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response> {
    let status = face::approval_status(query(q)?.status.as_deref())?;
    if status != ApprovalStatus::Pending {
        return Ok(Json(s.reins.approvals(Some(status), None).await?).into_response());
    }
    // The stamp is read first: a change made while the list is built changes it again, so a list
    // newer than its stamp is at worst built once more.
    let stamp = s.reins.change_stamp().await?;
    let now = reins_core::api::now_ms();
    if let Some(c) = s.pending.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        if c.stamp == stamp && now < c.valid_until {
            return Ok(json_bytes(c.body.clone()));
        }
    }
    let views = s.reins.approvals(Some(status), None).await?;
    let body = axum::body::Bytes::from(serde_json::to_vec(&views).map_err(|e| {
        HttpError::from(reins_core::api::Error::Invalid(format!(
            "cannot encode: {e}"
        )))
    })?);
    let valid_until = views.iter().map(|v| v.expires_at).min().unwrap_or(i64::MAX);
    *s.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(Cached {
        stamp,
        valid_until,
        body: body.clone(),
    });
    Ok(json_bytes(body))
}

fn json_bytes(body: axum::body::Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
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

/// Approves exactly the cards named, each bound to the hash it showed, or none of them.
pub async fn approve_batch(
    State(s): State<Arc<Shared>>,
    Extension(device): Extension<Device>,
    Body(batch): Body<face::ApproveBatch>,
) -> Result<Json<Vec<DecidedView>>> {
    let (cards, note) = batch.checked()?;
    let out = s
        .reins
        .approve_batch(&cards, &device.reviewer(), note.as_deref())
        .await;
    s.wake.notify_one();
    Ok(Json(out?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    reason: String,
    /// Also the calls queued after it in the same turn.
    #[serde(default)]
    siblings: bool,
}

pub async fn reject(
    State(s): State<Arc<Shared>>,
    Extension(device): Extension<Device>,
    Path(id): Path<String>,
    Body(body): Body<Reject>,
) -> Result<Json<DecidedView>> {
    let id = face::id("approval", &id)?;
    let reason = face::reason(&body.reason)?;
    let out = s
        .reins
        .reject_with(&id, &reason, &device.reviewer(), body.siblings)
        .await;
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
