//! The audit log as the faces show it: events with their payloads decoded.

use serde::Serialize;

use crate::audit::sentence::{self, Lookup};
use crate::error::Result;
use crate::store::audit::AuditRow;
use crate::store::StoreError;

use super::Views;

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
    /// The run's name, when the event belongs to one.
    pub run_name: Option<String>,
    pub step_seq: Option<i64>,
    pub approval_id: Option<String>,
    /// What happened in one sentence, from the typed payload (with approvals named by their
    /// action).
    pub sentence: String,
    /// What happened, as the chain hashed it (secrets already redacted).
    pub payload: serde_json::Value,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEventView {
    /// The payload the harness wrote is JSON; one that is not is damage, named by its seq.
    pub(crate) fn read(row: AuditRow, names: &Lookup) -> Result<Self> {
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
            ..
        } = row;
        let payload = serde_json::from_str(&payload).map_err(|e| StoreError::Damaged {
            table: "audit_events",
            row: format!("seq {seq}"),
            detail: format!("column payload: {e}"),
        })?;
        let sentence = sentence::of_stored(&kind, &actor, &payload, names);
        let run_name = run_id.as_ref().and_then(|r| names.runs.get(r).cloned());
        Ok(Self {
            seq,
            at,
            actor,
            kind,
            run_id,
            run_name,
            step_seq,
            approval_id,
            sentence,
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
    pub(crate) fn of(page: crate::audit::Page, names: &Lookup) -> Result<Self> {
        let crate::audit::Page { events, next } = page;
        Ok(Self {
            events: events
                .into_iter()
                .map(|row| AuditEventView::read(row, names))
                .collect::<Result<_>>()?,
            next,
        })
    }
}

impl Views<'_> {
    /// A page of the log, each event in a sentence.
    pub async fn audit_page(&self, req: &crate::audit::PageRequest) -> Result<AuditPage> {
        let page = crate::audit::query::page(self.e.store(), req).await?;
        let names = Lookup::of_rows(self.e.store(), &page.events).await?;
        AuditPage::of(page, &names)
    }
}
