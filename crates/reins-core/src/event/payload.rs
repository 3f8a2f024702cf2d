//! The payload of each kind of audit event: the fields it must carry, serialized as the JSON the
//! chain hashes.

use serde::{Deserialize, Serialize};
use crate::approval::Scope;
use crate::checkpoint::{DamageKind, Level};
use crate::compat::Mismatch;
use crate::digest::Digest;
use crate::policy::{Decision, Risk, Verdict};
use crate::run::RunState;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCreated {
    pub name: String,
    pub goal: String,
    pub workspace: String,
    pub agent_kind: String,
    pub spec_hash: Digest,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStateChanged {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<RunState>,
    pub to: RunState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
}

/// A person moved a run from one state to another.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMoved {
    pub from: RunState,
    pub to: RunState,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainPause {
    /// Always "worker drain".
    pub by: String,
    pub worker: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PausedAtSafePoint {
    pub checkpoint: i64,
    pub verified: bool,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resumed {
    pub from: RunState,
    pub to: RunState,
    pub force: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumedAfterResolve {
    pub from: RunState,
    pub to: RunState,
    /// Always "intent.resolved".
    pub after: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatOverridden {
    pub mismatches: Vec<Mismatch>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cancelled {
    pub from: RunState,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reason {
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryScheduled {
    pub n: u32,
    /// Always "transient".
    pub class: String,
    pub error: String,
    pub delay_ms: i64,
    pub state: RunState,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finished {
    pub state: RunState,
    pub summary: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptBegun {
    pub attempt: i64,
    pub fence: i64,
    pub worker: String,
    pub previous_owner: Option<String>,
    pub previous_owner_gone: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptLost {
    pub worker: Option<String>,
    pub why: String,
    pub fence: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphanEnded {
    pub step: i64,
    pub pid: i64,
    pub command: String,
    pub outcome: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointWritten {
    pub seq: i64,
    pub level: Level,
    pub sha256: String,
    pub size: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DamageDetected {
    pub seq: i64,
    pub kind: DamageKind,
    pub recovery_point: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDecided {
    pub step: i64,
    pub tool: String,
    pub action_hash: String,
    pub risk: Risk,
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub policy: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFinished {
    pub step: i64,
    pub tool: String,
    pub status: crate::step::StepStatus,
    pub action_hash: String,
    pub verdict: Option<Verdict>,
    pub approval: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequested {
    pub approval: String,
    pub step: i64,
    pub tool: String,
    pub action_hash: String,
    pub risk: Risk,
    pub reasons: Vec<String>,
    pub preview_sha256: String,
    pub context: crate::approval::ContextSummary,
    pub policy: String,
    pub expires_at: i64,
    /// What the review becomes at `expires_at` (absent in reviews opened before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<crate::approval::OnTimeout>,
    /// A staged command's card: how it was staged and what it did (absent: not staged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalWaiting {
    pub approval: String,
    pub step: i64,
}

/// The face a decision taken on a desktop notification names in its `by`:
/// `user:NAME@HOST (desktop, from the notification)`.
pub const NOTIFICATION_FACE: &str = "desktop, from the notification";

/// Whether `by` (of an approval or a rejection) was decided on a desktop notification.
pub fn from_notification(by: &str) -> bool {
    by.strip_suffix(')')
        .is_some_and(|b| b.ends_with(NOTIFICATION_FACE))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approved {
    pub approval: String,
    pub step: i64,
    pub tool: String,
    pub by: String,
    pub action_hash: String,
    pub preview_sha256: String,
    pub risk: Risk,
    pub scope: Scope,
    pub note: Option<String>,
    /// A staged command's files the person left out: they do not land.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

impl Approved {
    /// ", leaving out a.txt, gen/" for the sentence; empty when nothing was left out.
    pub fn left_out_said(&self) -> String {
        match self.left_out.as_slice() {
            [] => String::new(),
            paths => format!(", leaving out {}", paths.join(", ")),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edited {
    pub approval: String,
    pub original_hash: String,
    pub edited_hash: String,
    pub edited_preview_sha256: Digest,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejected {
    pub approval: String,
    pub step: i64,
    pub tool: String,
    pub by: String,
    pub action_hash: String,
    pub preview_sha256: String,
    pub reason: String,
    /// The calls queued after it in the same turn, rejected with it (none before this was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub siblings: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expired {
    pub approval: String,
    pub step: i64,
    pub expires_at: i64,
}

/// A review timed out and paused: still open, with no deadline, its run waiting for it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimedOut {
    pub approval: String,
    pub step: i64,
    pub expires_at: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosedWithRun {
    pub approval: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
// A refreshed review's payload has these fields and more: reading it back must not take it for this.
#[serde(deny_unknown_fields)]
pub struct Superseded {
    pub approval: String,
    pub by: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refreshed {
    pub approval: String,
    pub by: String,
    pub why: String,
    pub preview_sha256: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCalled {
    pub step: i64,
    pub model: String,
    pub usage: Option<crate::provider::Usage>,
    pub cost_usd: Option<f64>,
    pub finish_reason: Option<String>,
    pub tool_calls: Vec<String>,
    pub context_tokens: Option<usize>,
    pub input_budget: Option<usize>,
    pub facts_used: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAsked {
    pub step: i64,
    pub question: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswered {
    pub step: i64,
    pub answer: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantCreated {
    pub grant: String,
    pub scope: Scope,
    pub tool: String,
    pub matcher: crate::approval::Matcher,
    pub pattern: String,
    pub origin: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantUsed {
    pub grant: String,
    pub scope: Scope,
    pub matcher: crate::approval::Matcher,
    pub step: i64,
    pub action_hash: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundToPermission {
    pub step: i64,
    /// The step whose granted permission reported exactly this action.
    pub permission: i64,
    pub action_hash: String,
}

/// An external agent was allowed to change files itself: the pre-images are kept (rollback covers
/// the change), and the agent, not Reins, makes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandedToAgent {
    pub intent: String,
    pub step: i64,
    pub pre: Vec<crate::journal::FileImage>,
    pub post: Vec<crate::journal::FileImage>,
}

/// Reins briefed an external agent: its goal, and the profile facts it may use (ids only).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentBriefed {
    pub step: i64,
    pub tokens: usize,
    pub facts_used: Vec<String>,
}

/// A write asked for again that the journal holds done and the files already show (an external
/// agent restarted after a crash): confirmed without writing.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlreadyApplied {
    pub step: i64,
    /// The done step that carried it out.
    pub earlier: i64,
    pub action_hash: String,
}

/// An external agent's account of its own work: a tool call and its status, its plan, its token
/// usage, a mode change. What it says, not what Reins decided.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentReported {
    /// `tool_call`, `plan`, `usage`, `mode` or `message` (detail `{text}`: the agent's words).
    pub what: String,
    pub detail: serde_json::Value,
}

/// What an external agent's confinement stopped, as Reins saw it at the end of a turn: protected
/// paths it created (removed) and the refusals it printed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentBlocked {
    pub blocked: Vec<String>,
}

/// What an external agent changed in the workspace that no approval covered, seen between its
/// moves (at the end of its turn at the latest). The run stops there; rolling back to checkpoint
/// `undo` restores every change marked `undoable`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedUnasked {
    pub changes: Vec<WorkspaceChange>,
    pub undo: Option<i64>,
}

/// What changed in the workspace while a command that was allowed ran (the agent's own, or one
/// Reins ran for it): the command's doing, as far as Reins can tell.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedByCommand {
    /// The step that allowed the command.
    pub step: i64,
    pub changes: Vec<WorkspaceChange>,
}

/// One file's change: its content before and after (None: absent, or too large to hash), and
/// whether its content before is kept, so the change can be undone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceChange {
    pub path: String,
    pub kind: crate::workspace::fingerprint::ChangeKind,
    pub before: Option<Digest>,
    pub after: Option<Digest>,
    pub undoable: bool,
}

impl WorkspaceChange {
    /// `a.txt (created), b.rs (changed)`: the first five of a list, and how many more.
    pub fn in_words(list: &[Self]) -> String {
        use crate::workspace::fingerprint::ChangeKind;
        let mut parts: Vec<String> = list
            .iter()
            .take(5)
            .map(|c| {
                let how = match c.kind {
                    ChangeKind::Added => "created",
                    ChangeKind::Modified => "changed",
                    ChangeKind::Removed => "deleted",
                };
                format!("{} ({how})", c.path)
            })
            .collect();
        if list.len() > 5 {
            parts.push(format!("and {} more", list.len() - 5));
        }
        parts.join(", ")
    }
}

/// An external agent reported a tool call that changes things, which it ran without asking Reins.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActedUnasked {
    pub tool_call: String,
    pub kind: String,
    pub title: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantRevoked {
    pub grant: String,
    pub scope: Scope,
    pub tool: String,
    pub pattern: String,
    pub uses: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackSnapshot {
    pub to: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackPerformed {
    pub to: i64,
    pub snapshot: Option<i64>,
    pub paths: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPruned {
    pub through: i64,
    pub checkpoints: usize,
    pub keep: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FactWritten {
    pub fact: String,
    pub category: String,
    pub version: i64,
    pub origin: String,
    pub step: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FactRefused {
    pub category: String,
    pub reason: String,
}

/// A call to Reins' memory over MCP: which tool, for whom, about what, and what came of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryServed {
    pub tool: String,
    /// The agent the server was started for, when Reins started it for a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The recall's query, or the suggested fact's `category.key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The facts a recall answered with, by id.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
    pub outcome: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FactDeleted {
    pub fact: String,
    pub category: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySuggested {
    pub suggestion: String,
    pub category: String,
    pub step: Option<i64>,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuggestionAccepted {
    pub suggestion: String,
    pub fact: String,
    pub category: String,
    pub version: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuggestionDismissed {
    pub suggestion: String,
    pub category: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryCleared {
    pub facts: u64,
    pub suggestions: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySetting {
    pub setting: String,
    pub from: Option<String>,
    pub to: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingChanged {
    pub key: String,
    pub old: Option<String>,
    pub new: String,
}
