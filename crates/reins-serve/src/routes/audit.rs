//! The audit log: pages of events, the chain's verification, and an export downloaded as a file.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use reins_core::api::{
    AuditFilter, AuditPage, ExportFormat, ExportRequest, PageRequest, Verification,
};
use serde::Deserialize;

use crate::body::Body;
use crate::error::{HttpError, Result};
use crate::Shared;

pub async fn page(
    State(s): State<Arc<Shared>>,
    Body(req): Body<PageRequest>,
) -> Result<Json<AuditPage>> {
    Ok(Json(s.reins.audit_page(&req).await?))
}

pub async fn verify(State(s): State<Arc<Shared>>) -> Result<Json<Verification>> {
    Ok(Json(s.reins.audit_verify().await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Export {
    format: ExportFormat,
    #[serde(default)]
    filter: AuditFilter,
}

/// The export as an attachment: written to a private temporary file by the same code as
/// `reins audit export`, then sent.
pub async fn export(
    State(s): State<Arc<Shared>>,
    Body(body): Body<Export>,
) -> Result<impl IntoResponse> {
    let dir = tempfile::tempdir().map_err(|e| {
        tracing::error!("cannot make a temporary directory for an export: {e}");
        HttpError::from(reins_core::api::Error::Invalid("cannot export now".into()))
    })?;
    let ext = body.format.as_str();
    let out = dir.path().join(format!("reins-audit.{ext}"));
    let req = ExportRequest {
        format: body.format,
        out: out.clone(),
        filter: body.filter,
        overwrite: true,
    };
    let summary = s.reins.audit_export(&req, &mut |_, _| {}).await?;
    let bytes = tokio::fs::read(&out).await.map_err(|e| {
        tracing::error!("cannot read the export back: {e}");
        HttpError::from(reins_core::api::Error::Invalid("cannot export now".into()))
    })?;
    let content_type = match body.format {
        ExportFormat::Jsonl => "application/x-ndjson",
        ExportFormat::Csv => "text/csv; charset=utf-8",
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"reins-audit.{ext}\""),
            ),
            (
                header::HeaderName::from_static("x-reins-count"),
                summary.count.to_string(),
            ),
            (
                header::HeaderName::from_static("x-reins-sha256"),
                summary.sha256.clone(),
            ),
        ],
        bytes,
    ))
}
