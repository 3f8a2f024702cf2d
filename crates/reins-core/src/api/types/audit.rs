//! The audit log as the faces show it: events with their payloads decoded.

use serde::Serialize;

use crate::error::Result;
use crate::store::audit::AuditRow;
use crate::store::StoreError;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditEventView {
    pub seq: i64,
    /// Unix ms.
    pub at: i64,
    /// `user`, `agent`, `harness` or `system`.
    pub actor: String,
    pub kind: String,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub approval_id: Option<String>,
    /// What happened, as the chain hashed it (secrets already redacted).
    pub payload: serde_json::Value,
    pub prev_hash: String,
    pub hash: String,
}

impl TryFrom<AuditRow> for AuditEventView {
    type Error = crate::Error;

    /// The payload the harness wrote is JSON; one that is not is damage, named by its seq.
    fn try_from(row: AuditRow) -> Result<Self> {
        let AuditRow {
            seq,
            at,
            actor,
            kind,
            run_id,
            step_seq,
            approval_id,
            payload,
            prev_hash,
            hash,
        } = row;
        let payload = serde_json::from_str(&payload).map_err(|e| StoreError::Damaged {
            table: "audit_events",
            row: format!("seq {seq}"),
            detail: format!("column payload: {e}"),
        })?;
        Ok(Self {
            seq,
            at,
            actor,
            kind,
            run_id,
            step_seq,
            approval_id,
            payload,
            prev_hash,
            hash,
        })
    }
}

/// One page of the log.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditPage {
    pub events: Vec<AuditEventView>,
    /// The cursor for the next page, when there is one.
    pub next: Option<i64>,
}

impl AuditPage {
    pub(crate) fn of(page: crate::audit::Page) -> Result<Self> {
        let crate::audit::Page { events, next } = page;
        Ok(Self {
            events: events
                .into_iter()
                .map(AuditEventView::try_from)
                .collect::<Result<_>>()?,
            next,
        })
    }
}
