//! What the audit log records: who acted, which run, and one [`Kind`] of event with its typed
//! payload. Each kind's name (`run.created`, …) is written once, in the table below, so an event
//! cannot be appended with a misspelt kind or a missing field; the payload's JSON is what the chain
//! hashes and what exports and screens show. Several variants may share a name when the same thing
//! happens from two places with different detail (a pause a person asked for, a pause the worker's
//! drain made).

use serde::Serialize;

use crate::ids::RunId;

mod budget;
mod chain;
mod device;
mod intent;
mod payload;
mod log;
mod retention;

pub use budget::*;
pub use chain::*;
pub use device::*;
pub use intent::*;
pub use payload::*;
pub use log::{ExportFormat, Filter, Mark, MARK_EVERY};
pub use retention::GcReport;

/// Who caused an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    User,
    Agent,
    Harness,
    System,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::User => "user",
            Actor::Agent => "agent",
            Actor::Harness => "harness",
            Actor::System => "system",
        }
    }
}

/// One event to append.
#[derive(Clone, Debug)]
pub struct Event {
    pub actor: Actor,
    pub run: Option<RunId>,
    pub kind: Kind,
}

impl Event {
    pub fn new(actor: Actor, run: Option<RunId>, kind: impl Into<Kind>) -> Self {
        Self {
            actor,
            run,
            kind: kind.into(),
        }
    }

    /// The payload as the chain stores it (before redaction).
    pub fn payload(&self) -> serde_json::Value {
        self.kind.payload()
    }
}

macro_rules! kinds {
    ($( $(#[$doc:meta])* $variant:ident($payload:ty) = $name:literal $([$from:ident])?, )*) => {
        /// Every kind of event the harness writes, each with its payload.
        #[derive(Clone, Debug)]
        pub enum Kind {
            $( $(#[$doc])* $variant($payload), )*
        }

        impl Kind {
            /// The name stored in `audit_events.kind`.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Kind::$variant(_) => $name, )*
                }
            }

            /// The event a stored `name` and payload record, read back into its typed payload.
            /// Where several variants share a name, the first whose fields the payload has wins
            /// (the table keeps their fields apart). None: the payload has none of their shapes.
            pub fn decode(name: &str, payload: &serde_json::Value) -> Option<Kind> {
                $(
                    if name == $name {
                        if let Ok(p) = <$payload as serde::Deserialize>::deserialize(payload) {
                            return Some(Kind::$variant(p));
                        }
                    }
                )*
                None
            }

            fn payload(&self) -> serde_json::Value {
                // Plain structs with string keys: serialising them cannot fail.
                let value = match self {
                    $( Kind::$variant(p) => serde_json::to_value(p), )*
                };
                value.unwrap_or(serde_json::Value::Null)
            }
        }

        // A payload used by one kind only converts into it (`[from]` in the table).
        $($(
            impl From<$payload> for Kind {
                fn from(p: $payload) -> Self {
                    let _ = stringify!($from);
                    Kind::$variant(p)
                }
            }
        )?)*

        /// Every name an event may have, for filters and their help.
        #[cfg(test)]
        const NAMES: &[&str] = &[$($name),*];
    };
}

kinds! {
    RunCreated(RunCreated) = "run.created" [from],
    /// The worker claimed a queued run, or a question is waited for again.
    RunStateChanged(RunStateChanged) = "run.state_changed" [from],
    /// A person asked a run to pause (`to` is where it went at once).
    PauseRequested(RunMoved) = "run.pause_requested",
    /// The worker pauses a run it drives because it is shutting down.
    DrainPauseRequested(DrainPause) = "run.pause_requested" [from],
    /// A person paused a run nobody was driving.
    Paused(RunMoved) = "run.paused",
    /// The worker paused at a safe point, after verifying its checkpoint.
    PausedAtSafePoint(PausedAtSafePoint) = "run.paused" [from],
    Resumed(Resumed) = "run.resumed" [from],
    /// Resolving the last unsettled effect queued the run again.
    ResumedAfterResolve(ResumedAfterResolve) = "run.resumed" [from],
    CompatOverridden(CompatOverridden) = "run.compat_overridden" [from],
    Cancelled(Cancelled) = "run.cancelled" [from],
    Suspended(Reason) = "run.suspended" [from],
    Recovered(crate::resume::RecoverySummary) = "run.recovered" [from],
    RetryScheduled(RetryScheduled) = "run.retry_scheduled" [from],
    Finished(Finished) = "run.finished" [from],
    BudgetSet(BudgetSet) = "budget.set" [from],
    /// The run reached a limit of its budget and paused at a safe point.
    BudgetReached(BudgetReached) = "budget.reached" [from],
    BudgetRaised(BudgetRaised) = "budget.raised" [from],
    AttemptStarted(AttemptBegun) = "attempt.started",
    AttemptAdopted(AttemptBegun) = "attempt.adopted",
    AttemptLost(AttemptLost) = "attempt.lost" [from],
    OrphanEnded(OrphanEnded) = "process.orphan_ended" [from],
    CheckpointWritten(CheckpointWritten) = "checkpoint.written" [from],
    DamageDetected(DamageDetected) = "checkpoint.damage_detected" [from],
    PolicyDecided(PolicyDecided) = "policy.decided" [from],
    StepFinished(StepFinished) = "step.finished" [from],
    IntentPending(IntentPending) = "intent.pending" [from],
    /// The effect ran and the disk shows it.
    IntentConfirmed(IntentConfirmed) = "intent.confirmed" [from],
    /// A pending intent was settled from the disk after a restart.
    IntentRecovered(IntentRecovered) = "intent.confirmed" [from],
    IntentFailed(IntentFailed) = "intent.failed" [from],
    OutcomeUnknown(OutcomeUnknown) = "intent.outcome_unknown" [from],
    IntentResolved(IntentResolved) = "intent.resolved" [from],
    ApprovalRequested(ApprovalRequested) = "approval.requested" [from],
    ApprovalWaiting(ApprovalWaiting) = "approval.waiting" [from],
    Approved(Approved) = "approval.approved" [from],
    Edited(Edited) = "approval.edited" [from],
    Rejected(Rejected) = "approval.rejected" [from],
    /// No decision before the review timeout.
    Expired(Expired) = "approval.expired" [from],
    /// No decision before the review timeout, and the rule says pause: it stays open.
    TimedOut(TimedOut) = "approval.paused" [from],
    /// The run was cancelled with the review still open.
    ClosedWithRun(ClosedWithRun) = "approval.expired" [from],
    /// The worker found the action or the files changed since the review.
    Superseded(Superseded) = "approval.superseded" [from],
    /// The files changed on disk while the review was open.
    Refreshed(Refreshed) = "approval.superseded" [from],
    ModelCalled(ModelCalled) = "model.called" [from],
    QuestionAsked(QuestionAsked) = "question.asked" [from],
    QuestionAnswered(QuestionAnswered) = "question.answered" [from],
    GrantCreated(GrantCreated) = "grant.created" [from],
    GrantUsed(GrantUsed) = "grant.used" [from],
    GrantRevoked(GrantRevoked) = "grant.revoked" [from],
    PairingOffered(PairingOffered) = "device.pairing_offered" [from],
    DevicePaired(DeviceChanged) = "device.paired",
    DeviceRevoked(DeviceChanged) = "device.revoked",
    /// An external agent's write ran under the permission it was granted at an earlier step.
    BoundToPermission(BoundToPermission) = "grant.bound_to_permission" [from],
    /// An external agent was allowed to change files itself, its pre-images kept first.
    HandedToAgent(HandedToAgent) = "intent.handed_to_agent" [from],
    /// How a step's process ran confined, and what its profile stopped.
    Contained(Contained) = "step.contained" [from],
    /// A write asked for again was already done and on disk: confirmed without writing.
    AlreadyApplied(AlreadyApplied) = "intent.already_applied" [from],
    /// Reins sent an external agent its brief: the goal and the profile facts it may use.
    AgentBriefed(AgentBriefed) = "agent.briefed" [from],
    /// Who an external agent is, as it said at `initialize` (also in the run's compat record).
    AgentIdentified(crate::compat::ExternalAgent) = "agent.identified" [from],
    AgentReported(AgentReported) = "agent.reported" [from],
    /// The run stops: the agent changed something without asking.
    ActedUnasked(ActedUnasked) = "agent.acted_unasked" [from],
    AgentBlocked(AgentBlocked) = "agent.blocked" [from],
    /// The run stops: the agent changed the workspace where no approval covered it.
    ChangedUnasked(ChangedUnasked) = "workspace.changed_unasked" [from],
    /// What an allowed command changed in the workspace.
    ChangedByCommand(ChangedByCommand) = "workspace.changed_by_command" [from],
    RollbackSnapshot(RollbackSnapshot) = "rollback.snapshot" [from],
    RollbackPerformed(RollbackPerformed) = "rollback.performed" [from],
    RetentionPruned(RetentionPruned) = "retention.pruned" [from],
    RetentionGc(GcReport) = "retention.gc" [from],
    FactAdded(FactWritten) = "memory.fact_added",
    FactEdited(FactWritten) = "memory.fact_edited",
    FactRefused(FactRefused) = "memory.fact_refused" [from],
    FactDeleted(FactDeleted) = "memory.fact_deleted" [from],
    MemorySuggested(MemorySuggested) = "memory.suggested" [from],
    SuggestionAccepted(SuggestionAccepted) = "memory.suggestion_accepted" [from],
    SuggestionDismissed(SuggestionDismissed) = "memory.suggestion_dismissed" [from],
    MemoryCleared(MemoryCleared) = "memory.cleared" [from],
    /// An agent asked Reins' memory server (`reins mcp serve`) to recall or suggest a fact.
    MemoryServed(MemoryServed) = "memory.served" [from],
    MemorySwitchedOn(MemorySetting) = "memory.switched_on",
    MemorySwitchedOff(MemorySetting) = "memory.switched_off",
    /// A memory setting (threshold, categories).
    MemorySettingChanged(MemorySetting) = "settings.changed",
    /// A model provider default.
    SettingChanged(SettingChanged) = "settings.changed" [from],
    AnchorCreated(AnchorCreated) = "audit.anchor_created" [from],
    AnchorAcknowledged(AnchorAcknowledged) = "audit.anchor_acknowledged" [from],
    UnvouchedAccepted(UnvouchedAccepted) = "audit.unvouched_accepted" [from],
    AuditVerified(AuditVerified) = "audit.verified" [from],
    AuditExported(AuditExported) = "audit.exported" [from],
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Scope;
    use crate::policy::Risk;
    use crate::run::RunState;

    #[test]
    fn every_payload_names_its_kind_once_and_names_are_dotted() {
        for name in NAMES {
            let (room, what) = name.split_once('.').unwrap_or(("", ""));
            assert!(!room.is_empty() && !what.is_empty(), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_'),
                "{name}"
            );
        }
    }

    #[test]
    fn a_payload_keeps_the_field_names_the_log_always_had() {
        let e = Event::new(
            Actor::User,
            None,
            Approved {
                approval: "a1".into(),
                step: 3,
                tool: "fs.write".into(),
                by: "me".into(),
                action_hash: "h".into(),
                preview_sha256: "p".into(),
                risk: Risk::High,
                scope: Scope::Once,
                note: None,
                left_out: Vec::new(),
            },
        );
        assert_eq!(e.kind.name(), "approval.approved");
        let p = e.payload();
        assert_eq!(p["actionHash"], "h");
        assert_eq!(p["previewSha256"], "p");
        assert_eq!(p["risk"], "high");
        assert_eq!(p["scope"], "once");
        assert!(p["note"].is_null(), "absent values are null, as before");
    }

    #[test]
    fn optional_fields_of_a_shared_shape_are_left_out_when_unset() {
        let p = Event::new(
            Actor::Harness,
            None,
            RunStateChanged {
                from: None,
                to: RunState::AwaitingInput,
                step: Some(4),
            },
        )
        .payload();
        assert!(p.get("from").is_none());
        assert_eq!(p["step"], 4);
    }
}
