//! Runs as the faces show them: the list, one run's detail, its steps, intents and attempts.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::action::RecordedCall;
use crate::checkpoint::Damage;
use crate::compat::Compat;
use crate::digest::Digest;
use crate::engine::stored::CheckpointSummary;
use crate::failure::FailureClass;
use crate::ids::RunId;
use crate::journal::{EffectClass, FileImage, IntentStatus};
use crate::policy::Risk;
use crate::run::RunState;
use crate::step::{StepKind, StepStatus};
use crate::store::attempts::AttemptRow;
use crate::store::intents::IntentRow;
use crate::store::retries::RetryRow;
use crate::store::runs::RunRow;
use crate::store::steps::StepRow;

use super::{ApprovalView, AuditEventView, Views};
use crate::engine::stored;
use crate::error::{Error, Result};
use crate::store::{self, audit, checkpoints, intents, runs};

/// A call as proposed: the tool and its arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ActionView {
    pub tool: String,
    pub args: serde_json::Value,
}

impl ActionView {
    /// The canonical text an action hash is taken over (keys sorted, no spaces).
    pub fn canonical_text(&self) -> String {
        crate::digest::canonical_json(&serde_json::json!({ "tool": self.tool, "args": self.args }))
    }
}

impl From<RecordedCall> for ActionView {
    fn from(recorded: RecordedCall) -> Self {
        let call = recorded.call().clone();
        Self {
            tool: call.tool,
            args: call.args,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunSummary {
    pub id: RunId,
    pub name: String,
    /// `script` or `llm`.
    pub agent: String,
    pub state: RunState,
    /// Finished for good: succeeded, failed or cancelled.
    pub terminal: bool,
    /// Waits for a person to decide something: a review, a question, an unknown outcome.
    pub waiting: bool,
    pub workspace: String,
    /// The machine it was started on (team mode shows it in the runs list).
    pub machine: Option<String>,
    pub steps: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_error: Option<String>,
}

impl RunSummary {
    pub(crate) fn of(row: RunRow, steps: i64) -> Self {
        let RunRow {
            id,
            name,
            goal: _,
            workspace,
            agent_kind,
            compat: _,
            state,
            state_version: _,
            fence: _,
            owner: _,
            lease_until: _,
            last_error,
            created_at,
            updated_at,
            not_before: _,
            machine,
        } = row;
        Self {
            id,
            name,
            agent: agent_kind,
            machine,
            terminal: state.is_terminal(),
            waiting: matches!(
                state,
                RunState::AwaitingApproval | RunState::AwaitingInput | RunState::Suspended
            ),
            state,
            workspace,
            steps,
            created_at,
            updated_at,
            last_error,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunView {
    pub id: RunId,
    pub name: String,
    pub goal: String,
    pub workspace: String,
    /// The machine it was started on.
    pub machine: Option<String>,
    pub agent_kind: String,
    pub state: RunState,
    /// Pause applies: a worker drives it, or it waits in the queue or for a person.
    pub pausable: bool,
    /// Cancel applies: it has not finished.
    pub cancellable: bool,
    /// Resume applies: it is paused or suspended (or a pause was asked for and not reached).
    pub resumable: bool,
    pub state_version: i64,
    pub fence: i64,
    pub owner: Option<String>,
    pub lease_until: Option<i64>,
    /// A queued run is not claimed before this (retry backoff).
    pub not_before: Option<i64>,
    pub last_error: Option<String>,
    pub compat: Compat,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<RunRow> for RunView {
    fn from(row: RunRow) -> Self {
        let RunRow {
            id,
            name,
            goal,
            workspace,
            agent_kind,
            compat,
            state,
            state_version,
            fence,
            owner,
            lease_until,
            last_error,
            created_at,
            updated_at,
            not_before,
            machine,
        } = row;
        let allows = |event| crate::run::next(state, event).is_some();
        Self {
            id,
            name,
            goal,
            workspace,
            machine,
            agent_kind,
            pausable: allows(crate::run::RunEvent::RequestPause),
            cancellable: allows(crate::run::RunEvent::Cancel),
            resumable: allows(crate::run::RunEvent::Resume),
            state,
            state_version,
            fence,
            owner,
            lease_until,
            not_before,
            last_error,
            compat,
            created_at,
            updated_at,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AttemptView {
    pub n: i64,
    pub worker: String,
    pub fence: i64,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub outcome: Option<String>,
    /// Whether this attempt resumed the run and gave its agent a recovery summary.
    pub resumed: bool,
}

impl From<AttemptRow> for AttemptView {
    fn from(row: AttemptRow) -> Self {
        let AttemptRow {
            n,
            worker,
            fence,
            started_at,
            ended_at,
            outcome,
            recovery,
        } = row;
        Self {
            n,
            worker,
            fence,
            started_at,
            ended_at,
            outcome,
            resumed: recovery.is_some(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RetryView {
    pub n: i64,
    pub at: i64,
    pub class: FailureClass,
    pub error: String,
    pub delay_ms: i64,
}

impl From<RetryRow> for RetryView {
    fn from(row: RetryRow) -> Self {
        let RetryRow {
            n,
            at,
            class,
            error,
            delay_ms,
        } = row;
        Self {
            n,
            at,
            class,
            error,
            delay_ms,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StepView {
    pub seq: i64,
    pub kind: StepKind,
    pub tool: String,
    pub action: ActionView,
    pub action_hash: String,
    /// The agent's stated reason.
    pub why: Option<String>,
    pub status: StepStatus,
    pub risk: Option<Risk>,
    pub reasons: Vec<String>,
    pub preview: Option<String>,
    pub result: Option<String>,
    /// The result's first line for people (for a model call: what the model said or called).
    pub summary: String,
    /// A model call's turn in words (None for other steps).
    pub model_turn: Option<super::ModelTurnView>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

impl From<StepRow> for StepView {
    fn from(row: StepRow) -> Self {
        let summary = row.summary_line();
        let StepRow {
            seq,
            kind,
            tool,
            action,
            action_hash,
            why,
            status,
            risk,
            reasons,
            preview,
            result,
            started_at,
            ended_at,
        } = row;
        // History is for people: a sealed secret reads as `[sealed secret]` (the token is only
        // good for running, and a step that ran is not run again from here).
        let ActionView {
            tool: shown_tool,
            args,
        } = action.into();
        let shown = |t: String| crate::seal::shown(&t).into_owned();
        let result = result.map(shown);
        let model_turn = super::ModelTurnView::of(kind, result.as_deref());
        Self {
            seq,
            kind,
            tool,
            action: ActionView {
                tool: shown_tool,
                args: serde_json::from_str(&crate::seal::shown(&args.to_string())).unwrap_or(args),
            },
            action_hash,
            why,
            status,
            risk,
            reasons: reasons.unwrap_or_default(),
            preview,
            model_turn,
            result,
            summary: shown(summary),
            started_at,
            ended_at,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct IntentView {
    pub id: String,
    pub step_seq: i64,
    pub tool: String,
    pub action: ActionView,
    pub action_hash: String,
    pub effect_class: EffectClass,
    pub status: IntentStatus,
    pub pre_images: Vec<FileImage>,
    pub post_images: Vec<FileImage>,
    pub result: Option<String>,
    pub settled_by: Option<String>,
    pub fence: i64,
    pub created_at: i64,
    pub settled_at: Option<i64>,
}

impl From<IntentRow> for IntentView {
    fn from(row: IntentRow) -> Self {
        let IntentRow {
            id,
            step_seq,
            tool,
            action,
            action_hash,
            effect_class,
            status,
            pre_images,
            post_images,
            result,
            settled_by,
            fence,
            created_at,
            settled_at,
        } = row;
        Self {
            id,
            step_seq,
            tool,
            action: action.into(),
            action_hash,
            effect_class,
            status,
            pre_images,
            post_images,
            result,
            settled_by,
            fence,
            created_at,
            settled_at,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Recovery {
    /// The checkpoint a resume would start from.
    pub point: Option<i64>,
    pub damage: Vec<Damage>,
    /// Checkpoints up to this seq were removed by retention (0: none).
    pub pruned_through: i64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunDetail {
    pub run: RunView,
    pub attempts: Vec<AttemptView>,
    /// Retries the run used from its budget (transient failures, lost workers).
    pub retries: Vec<RetryView>,
    pub steps: Vec<StepView>,
    pub checkpoints: Vec<CheckpointSummary>,
    pub intents: Vec<IntentView>,
    /// Review checkpoints of this run, oldest first (superseded ones included).
    pub approvals: Vec<ApprovalView>,
    pub recovery: Recovery,
    /// Files the run touched → sha256 at the recovery point (null: absent).
    pub files: BTreeMap<String, Option<Digest>>,
    pub audit_events: usize,
    /// What the latest attempt that resumed an interrupted run was told: steps done, settled
    /// effects, outside changes (an attempt that only goes on after a review or an answer is no
    /// recovery and is left out).
    pub recovery_summary: Option<crate::resume::RecoverySummary>,
    /// The run's audit events, oldest first.
    pub audit: Vec<AuditEventView>,
    /// An external agent's stderr: the end of its bounded log.
    pub agent_log: Option<AgentLogView>,
    /// What it may spend, what it has spent, and whether it waits at a limit.
    pub budget: crate::engine::BudgetView,
}

/// The end of an external agent's stderr log.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AgentLogView {
    pub path: String,
    /// Its last lines (at most 8 KiB), secrets redacted before they were written.
    pub tail: String,
}

/// Bytes of an external agent's stderr log a run's detail shows.
const AGENT_LOG_TAIL: usize = 8 * 1024;

impl Views<'_> {
    pub async fn runs(&self) -> Result<Vec<RunSummary>> {
        Ok(runs::list(self.e.store().pool())
            .await?
            .into_iter()
            .map(|(r, steps)| RunSummary::of(r, steps))
            .collect())
    }

    /// Every checkpoint of a run, read back, hashed and decoded: what `status` says is what is
    /// wrong with it, or "ok".
    pub async fn checkpoints(&self, id: RunId) -> Result<Vec<CheckpointSummary>> {
        runs::get(self.e.store().pool(), id).await?;
        let inspected = stored::inspect(self.e.store(), self.e.blobs(), id).await?;
        Ok(inspected.iter().map(|i| i.summary()).collect())
    }

    pub async fn run_detail(&self, id: RunId) -> Result<RunDetail> {
        let pool = self.e.store().pool();
        let row = runs::get(pool, id).await?;
        let events = audit::for_run(pool, id).await?;
        let names = crate::audit::sentence::Lookup::of_rows(self.e.store(), &events).await?;
        let attempts = store::attempts::list(pool, id).await?;
        let inspected = stored::inspect(self.e.store(), self.e.blobs(), id).await?;
        let analysis = stored::analyse(self.e.store(), id, &inspected).await?;
        let files = analysis
            .point
            .and_then(|p| inspected.iter().find(|i| i.seq == p))
            .and_then(|i| i.payload.as_ref().ok())
            .map(|cp| cp.files.clone())
            .unwrap_or_default();
        let mut approvals = Vec::new();
        for a in store::approvals::list(pool, None, Some(id)).await? {
            approvals.push(self.approval_view(a).await?);
        }
        let agent_log = match self.e.agent_log(id) {
            Some(path) => crate::stderr::read_tail(&path, AGENT_LOG_TAIL)
                .map_err(|source| Error::Io {
                    context: format!("reading the agent log {}", path.display()),
                    source,
                })?
                .map(|tail| AgentLogView {
                    path: path.display().to_string(),
                    tail,
                }),
            None => None,
        };
        Ok(RunDetail {
            agent_log,
            budget: self.e.budget(id).await?,
            run: RunView::from(row),
            recovery_summary: attempts
                .iter()
                .rev()
                .filter_map(|a| a.recovery.clone())
                .find(crate::resume::RecoverySummary::interrupted),
            attempts: attempts.into_iter().map(AttemptView::from).collect(),
            retries: store::retries::list(pool, id)
                .await?
                .into_iter()
                .map(RetryView::from)
                .collect(),
            steps: {
                let mut steps: Vec<StepView> = store::steps::list(pool, id)
                    .await?
                    .into_iter()
                    .map(StepView::from)
                    .collect();
                super::link_calls(&mut steps);
                steps
            },
            checkpoints: inspected.iter().map(|i| i.summary()).collect(),
            intents: intents::list(pool, id)
                .await?
                .into_iter()
                .map(IntentView::from)
                .collect(),
            approvals,
            recovery: Recovery {
                point: analysis.point,
                damage: analysis.damage,
                pruned_through: checkpoints::pruned_through(pool, id).await?,
            },
            files,
            audit_events: events.len(),
            audit: events
                .into_iter()
                .map(|row| AuditEventView::read(row, &names))
                .collect::<Result<_>>()?,
        })
    }
}
