//! The audit log as people use it: verify the chain against its head anchor, export it to a file
//! that verifies on its own, and page through it. Appending lives with the table
//! (`store::audit`), because every event is written in the transaction of the change it records.
//!
//! Event kinds (`kind`, actor in brackets; each kind and its payload is typed in [`crate::event`]):
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
//! - the log itself: `audit.anchor_created` [system], `audit.anchor_acknowledged`,
//!   `audit.unvouched_accepted`, `audit.verified`, `audit.exported` [user]

pub mod export;
mod export_file;
pub mod exported;
pub mod query;
pub mod sentence;
pub mod verify;
pub mod vouched;

#[cfg(test)]
mod tests;

pub use export::{ExportRequest, ExportSummary};
pub use exported::ExportCheck;
pub use query::{Page, PageRequest};
pub use verify::Verification;

/// Appends one of the log's own events (verified, exported, an anchor accepted), done by a person,
/// in a transaction of its own.
pub(crate) async fn record_by_user(
    store: &crate::store::Store,
    kind: impl Into<crate::event::Kind>,
) -> Result<(), crate::store::StoreError> {
    use crate::store::audit;
    let event = audit::Event::new(audit::Actor::User, None, kind);
    let change = crate::store::change::Change::default().event(event);
    store.apply(None, change, None).await?;
    Ok(())
}

/// Unix ms as an RFC 3339 UTC time, for people and exports.
pub fn utc(at_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(at_ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| at_ms.to_string())
}
