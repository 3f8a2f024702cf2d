//! Runs that follow an agent outside Reins (Claude Code, through its hooks). Such a run has no
//! worker driving it: it waits `attached` until a hook hands it a request. The hook's process then
//! drives the run itself for that one request ([`Offer`]): the agent proposes it, the step protocol
//! decides it (deny, allow, or a review card), and the run goes back to waiting. A card's decision
//! is carried out by whoever claims the run next — the hook that waits for it, or a worker — and
//! the hook reads the outcome from the step. It answers before its own deadline; a card still
//! undecided then is expired, so nobody approves a call Claude Code has already been refused.

use std::sync::OnceLock;

use serde_json::Value;

use crate::agent::claude::{hook::Answer, Spec, KIND, VERSION};
use crate::approval::Status;
use crate::audit::event::{self as ev, Actor};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::RunState;
use crate::step::StepStatus;
use crate::store::write::{Transition, Write};
use crate::store::{approvals, audit, runs, steps, StoreError};
use crate::workspace::Workspace;

use super::commit::Change;
use super::drive::{Drive, Stop};
use crate::checkpoint::Level;
use crate::run::RunEvent;
use super::{DriveOutcome, Engine, Observer, Silent};

/// How often a waiting hook looks at its run.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);
/// How long after its deadline a hook still waits for an expired card's step to be recorded.
const GRACE_MS: i64 = 3_000;

/// A request from an agent outside Reins, handed to the drive that decides it.
pub struct Offer {
    pub(super) request: Value,
    seq: OnceLock<i64>,
}

impl Offer {
    pub fn new(request: Value) -> Self {
        Self {
            request,
            seq: OnceLock::new(),
        }
    }

    /// Waits on step `seq`, already proposed (a card that outlived the process that asked).
    pub fn answering(seq: i64) -> Self {
        let offer = Self::new(Value::Null);
        offer.decided_by(seq);
        offer
    }

    /// The step deciding it, once proposed.
    pub fn seq(&self) -> Option<i64> {
        self.seq.get().copied()
    }

    pub(super) fn decided_by(&self, seq: i64) {
        let _ = self.seq.set(seq);
    }
}

impl Engine {
    /// The run following Claude Code session `spec`: its newest run unless that one finished (a
    /// cancelled one stays: the person stopped the session), else a new one.
    pub async fn claude_session_run(&self, spec: &Spec) -> Result<RunId> {
        let name = Spec::run_name(&spec.session_id);
        if let Some(row) = runs::latest_named(self.store.pool(), KIND, &name).await? {
            if !matches!(row.state, RunState::Succeeded | RunState::Failed) {
                return Ok(row.id);
            }
        }
        let ws = Workspace::open(std::path::Path::new(&spec.cwd))
            .map_err(|e| Error::Invalid(format!("the session's folder cannot be opened: {e}")))?;
        self.create_external_run(
            KIND,
            VERSION,
            &name,
            &format!("Claude Code session {} in {}", spec.session_id, spec.cwd),
            spec.to_json(),
            &ws,
        )
        .await
    }

    /// Hands `offer` (a tool call to decide) to run `id` and waits, until `deadline` (Unix ms), for
    /// its step to be decided: the answer for the agent. A card undecided at the deadline is
    /// expired and the call denied.
    pub async fn decide_offer(
        &self,
        id: RunId,
        offer: &Offer,
        deadline: i64,
        obs: &dyn Observer,
    ) -> Result<Answer> {
        let pool = self.store.pool();
        let mut expired = false;
        loop {
            let now = now_ms();
            if let Some(seq) = offer.seq() {
                if let Some(step) = steps::get(pool, id, seq).await? {
                    if let Some(answer) = self.answer_of(id, &step).await? {
                        return Ok(answer);
                    }
                }
                if now >= deadline && !expired {
                    expired = true;
                    self.expire_step(id, seq).await?;
                }
                if now >= deadline + GRACE_MS {
                    return Ok(Answer::Deny {
                        reason: "Reins had no decision on this call before the hook's deadline"
                            .into(),
                    });
                }
            }
            let row = runs::get(pool, id).await?;
            if offer.seq().is_none() {
                if row.state == RunState::Cancelled {
                    return Ok(Answer::Deny {
                        reason: format!(
                            "this session's run ({id}) was cancelled in Reins: it takes no more tool calls"
                        ),
                    });
                }
                if matches!(row.state, RunState::Paused | RunState::Suspended) {
                    return Ok(Answer::Deny {
                        reason: format!(
                            "this session's run ({id}) is {} in Reins: `reins resume {id}` lets its tool calls through again",
                            row.state
                        ),
                    });
                }
                if now >= deadline {
                    return Ok(Answer::Deny {
                        reason: format!(
                            "Reins could not take this call up before the hook's deadline: the session's run stayed {}",
                            row.state
                        ),
                    });
                }
            }
            let outcome = match row.state {
                RunState::Attached if offer.seq().is_none() => {
                    Some(self.drive_with(id, obs, Some(offer)).await?)
                }
                RunState::Queued | RunState::Running | RunState::PauseRequested => {
                    Some(self.drive(id, obs).await?)
                }
                _ => None,
            };
            // A drive that got somewhere is looked at again at once; otherwise wait a little.
            if !matches!(
                outcome,
                Some(DriveOutcome::NeedsHuman { .. } | DriveOutcome::Finished { .. })
            ) {
                tokio::time::sleep(POLL).await;
            }
        }
    }

    /// Records `offer` (what happened to a tool call) on run `id` if the run can take it before
    /// `deadline`; false when it could not (the run was busy deciding something else).
    pub async fn record_offer(
        &self,
        id: RunId,
        offer: &Offer,
        deadline: i64,
        obs: &dyn Observer,
    ) -> Result<bool> {
        loop {
            let row = runs::get(self.store.pool(), id).await?;
            match row.state {
                RunState::Attached => {
                    if let DriveOutcome::NeedsHuman { .. } | DriveOutcome::Finished { .. } =
                        self.drive_with(id, obs, Some(offer)).await?
                    {
                        return Ok(true);
                    }
                }
                RunState::Queued => {
                    self.drive(id, obs).await?;
                }
                s if s.is_terminal() => return Ok(false),
                _ => {}
            }
            if now_ms() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The last step of run `id` when it is a tool call whose decision is not carried out yet (a
    /// card still pending, or approved with nobody to carry it out): its seq and its call's
    /// arguments. A Claude Code that asks for the same call again is answered by it.
    pub async fn unanswered_offer(&self, id: RunId) -> Result<Option<(i64, Value)>> {
        let pool = self.store.pool();
        let seq = steps::max_seq(pool, id).await?;
        let Some(step) = steps::get(pool, id, seq).await? else {
            return Ok(None);
        };
        if step.tool != crate::tools::permission::TOOL
            || !matches!(step.status, StepStatus::AwaitingReview | StepStatus::Running)
        {
            return Ok(None);
        }
        Ok(Some((seq, step.action.call().args.clone())))
    }

    /// The answer a decided step gives; None while it is undecided.
    async fn answer_of(&self, id: RunId, step: &steps::StepRow) -> Result<Option<Answer>> {
        let result = step.result.clone().unwrap_or_default();
        let approval = approvals::latest_for_step(self.store.pool(), id, step.seq).await?;
        Ok(Some(match step.status {
            StepStatus::Done => {
                let input = approval
                    .as_ref()
                    .and_then(|a| a.edited_action.as_ref())
                    .map(|e| e.call().args["rawInput"].clone());
                let reason = match &approval {
                    Some(a) if input.is_some() => {
                        format!("approved in Reins as edited by {}", by(a))
                    }
                    Some(a) => format!("approved in Reins by {}", by(a)),
                    None => "allowed by Reins' policy".into(),
                };
                Answer::Allow { reason, input }
            }
            StepStatus::Denied => Answer::Deny {
                reason: format!(
                    "denied by Reins' policy: {}",
                    step.reasons.clone().unwrap_or_default().join("; ")
                ),
            },
            StepStatus::Rejected => Answer::Deny {
                reason: match approval.as_ref().and_then(|a| a.note.clone()) {
                    Some(note) => format!("rejected in Reins: {note}"),
                    None => "rejected in Reins".into(),
                },
            },
            StepStatus::Expired => Answer::Deny {
                reason: "no decision in Reins in time".into(),
            },
            StepStatus::Invalid | StepStatus::Failed | StepStatus::Skipped => Answer::Deny {
                reason: format!("Reins refused the call: {result}"),
            },
            StepStatus::Running
            | StepStatus::AwaitingReview
            | StepStatus::Unknown
            | StepStatus::AwaitingInput
            | StepStatus::Answered => return Ok(None),
        }))
    }

    /// Expires the pending card of step `seq`, if one is pending: the hook stopped waiting.
    async fn expire_step(&self, id: RunId, seq: i64) -> Result<()> {
        let Some(row) = approvals::latest_for_step(self.store.pool(), id, seq).await? else {
            return Ok(());
        };
        if row.status != Status::Pending {
            return Ok(());
        }
        let change = Change::rows(vec![Write::ApprovalDecided {
            id: row.id.clone(),
            status: Status::Expired,
            by: "system".into(),
            note: Some("the agent's hook stopped waiting for a decision".into()),
            scope: None,
            edited: None,
        }])
        .event(audit::Event::new(
            Actor::System,
            Some(id),
            ev::Expired {
                approval: row.id.clone(),
                step: seq,
                expires_at: now_ms(),
            },
        ))
        .moving(Transition::Decided);
        match self.commit(Some(id), change, None, &Silent).await {
            Ok(_) | Err(Error::Store(StoreError::Conflict(_))) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn by(a: &approvals::ApprovalRow) -> String {
    a.decided_by.clone().unwrap_or_else(|| "a person".into())
}

impl Drive<'_> {
    /// The agent outside Reins asks nothing now: checkpoint what it knows, let go of the run, and
    /// leave it attached, waiting for the agent's next tool call.
    pub(super) async fn detach(&mut self) -> Result<DriveOutcome> {
        let note = "waiting for the agent's next tool call".to_owned();
        let change = Change::default().checkpoint(self.checkpoint(Level::Step, note.clone())?);
        let stop = Stop {
            transition: Transition::Moves(vec![RunEvent::Detach], None),
            state: RunState::Attached,
            message: note.clone(),
            attempt: note,
        };
        self.stop(change, stop).await
    }
}
