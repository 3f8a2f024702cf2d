//! The audit log as people use it: verify the chain against its head anchor, export it to a file
//! that verifies on its own, and page through it. Appending lives with the table
//! (`store::audit`), because every event is written in the transaction of the change it records.
//!
//! Event kinds (`kind`, actor in brackets; each kind and its payload is typed in [`event`]):
//! - runs: `run.created` [user], `run.state_changed` [harness], `run.pause_requested`, `run.paused`,
//!   `run.resumed`, `run.cancelled` [user], `run.suspended`, `run.recovered`, `run.retry_scheduled`,
//!   `run.finished` [harness], `run.compat_overridden` [user]
//! - attempts: `attempt.started`, `attempt.lost`, `attempt.adopted` [harness],
//!   `process.orphan_ended` [harness]
//! - checkpoints: `checkpoint.written`, `checkpoint.damage_detected` [harness]
//! - steps: `policy.decided` [harness] (risk, decision, reasons, policy version), `step.finished` [agent]
//! - the effect journal: `intent.pending` [agent], `intent.confirmed`, `intent.failed`,
//!   `intent.outcome_unknown` [harness], `intent.resolved` [user]
//! - reviews: `approval.requested` (the preview's SHA-256 and the context summary shown),
//!   `approval.waiting`, `approval.approved` (scope), `approval.edited`, `approval.rejected`
//!   (reason) [user], `approval.expired`, `approval.superseded` [harness]
//! - the model: `model.called` [agent] (model, usage, cost, finish reason, tool names, the context
//!   budget used and the fact ids it included — never the prompt), `question.asked` [agent],
//!   `question.answered` [user]
//! - grants: `grant.created`, `grant.revoked` [user], `grant.used` [harness]
//! - devices for remote approvals: `device.pairing_offered`, `device.revoked` [user],
//!   `device.paired` [system] (names and ids, never a code or a token)
//! - rollback: `rollback.snapshot`, `rollback.performed` [user]
//! - retention: `retention.pruned`, `retention.gc` [user]
//! - memory (ids and categories only, never a key or a value): `memory.fact_added`,
//!   `memory.fact_edited` [user or agent], `memory.suggested` [agent], `memory.suggestion_accepted`,
//!   `memory.suggestion_dismissed`, `memory.fact_deleted`, `memory.cleared`, `memory.switched_on`,
//!   `memory.switched_off` [user], `memory.fact_refused` (the reason, without the content)
//! - settings: `settings.changed` [user] (key, old and new value)
//! - the log itself: `audit.anchor_created` [system], `audit.verified`, `audit.exported` [user]

use serde::{Deserialize, Serialize};

use crate::ids::RunId;

pub mod event;
pub mod export;
mod export_file;
pub mod exported;
pub mod query;
pub mod verify;

#[cfg(test)]
mod tests;

pub use export::{ExportFormat, ExportRequest, ExportSummary};
pub use exported::ExportCheck;
pub use query::{Page, PageRequest};
pub use verify::Verification;

/// Which events: all given conditions must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Filter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    /// An exact kind (`approval.approved`) or a family (`approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Unix ms, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// Unix ms, exclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self == &Filter::default()
    }

    /// Checks what a person typed; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(kind) = &self.kind {
            let ok = !kind.is_empty()
                && kind.len() <= 64
                && kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_');
            if !ok {
                return Err(format!(
                    "--kind {kind:?}: a kind is lowercase words with dots, like `approval.approved` or `approval`"
                ));
            }
        }
        if let Some(actor) = &self.actor {
            if !["user", "agent", "harness", "system"].contains(&actor.as_str()) {
                return Err(format!(
                    "--actor {actor:?}: one of user, agent, harness, system"
                ));
            }
        }
        if let (Some(since), Some(until)) = (self.since, self.until) {
            if since >= until {
                return Err("--since must be before --until".into());
            }
        }
        Ok(())
    }
}

/// Appends one of the log's own events (verified, exported, an anchor accepted), done by a person,
/// in a transaction of its own.
pub(crate) async fn record_by_user(
    store: &crate::store::Store,
    kind: impl Into<event::Kind>,
) -> Result<(), crate::store::StoreError> {
    use crate::store::audit;
    let mut tx = store.begin().await?;
    audit::append(
        &mut tx,
        audit::Event::new(audit::Actor::User, None, kind),
        crate::clock::now_ms(),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Unix ms as an RFC 3339 UTC time, for people and exports.
pub fn utc(at_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(at_ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| at_ms.to_string())
}
