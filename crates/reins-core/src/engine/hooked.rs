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
use crate::event::{self as ev, Actor};
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
        let created = self
            .create_external_run(
                KIND,
                VERSION,
                &name,
                &format!("Claude Code session {} in {}", spec.session_id, spec.cwd),
                spec.to_json(),
                &ws,
            )
            .await;
        match created {
            // Another hook of the session (Claude Code runs reads side by side) created it first.
            Err(Error::Store(StoreError::Conflict(_))) => {
                match runs::latest_named(self.store.pool(), KIND, &name).await? {
                    Some(row) => Ok(row.id),
                    None => Err(Error::Invalid(format!("{name}: its run vanished"))),
                }
            }
            other => other,
        }
    }

    /// The headless Claude Code session run `id` follows, when it is one a worker can start again
    /// (`reins run --claude` recorded how); None for any other run.
    pub async fn headless_claude(&self, id: RunId) -> Result<Option<Spec>> {
        let pool = self.store.pool();
        if runs::get(pool, id).await?.agent_kind != KIND {
            return Ok(None);
        }
        let spec = Spec::from_json(&runs::spec(pool, id).await?)?;
        Ok(spec.headless.is_some().then_some(spec))
    }

    /// Ends the run following Claude Code session `session_id`, which Claude Code says has ended
    /// (`reason`: its words for why). A card still waiting in the inbox is expired — nobody is left
    /// to carry its call out — and the run finishes with `summary`. None when the session has no
    /// run still open (it never asked anything, or its run already ended: a headless run finishes
    /// with its turn); a paused or suspended run is left as the person left it.
    pub async fn end_claude_session(
        &self,
        session_id: &str,
        summary: &str,
        deadline: i64,
    ) -> Result<Option<RunId>> {
        let name = Spec::run_name(session_id);
        let Some(row) = runs::latest_named(self.store.pool(), KIND, &name).await? else {
            return Ok(None);
        };
        if row.state.is_terminal() || matches!(row.state, RunState::Paused | RunState::Suspended)
        {
            return Ok(None);
        }
        if let Some((seq, _)) = self.unanswered_offer(row.id).await? {
            self.expire_step(row.id, seq, "the Claude Code session ended before a decision")
                .await?;
        }
        let end = crate::agent::claude::Request::End {
            ok: true,
            summary: summary.to_owned(),
            usage: Value::Null,
        };
        let request = serde_json::to_value(&end).map_err(|e| Error::Invalid(e.to_string()))?;
        let ended = self
            .record_offer(row.id, &Offer::new(request), deadline, &Silent)
            .await?;
        Ok(ended.then_some(row.id))
    }

    /// Hands `offer` (a tool call to decide) to run `id` and waits, until `deadline` (Unix ms), for
    /// its step to be decided: the answer for the agent. A card undecided at the deadline is
    /// expired and the call denied. With `wait` false, a card is not waited for: the answer is
    /// [`Answer::Ask`] as soon as it is in the inbox.
    pub async fn decide_offer(
        &self,
        id: RunId,
        offer: &Offer,
        deadline: i64,
        wait: bool,
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
                    if !wait && self.card_pending(id, seq).await? {
                        return Ok(Answer::Ask {
                            reason: format!(
                                "Reins asks a person: step {seq} of run {id} waits in the inbox"
                            ),
                        });
                    }
                }
                if now >= deadline && !expired {
                    expired = true;
                    self.expire_step(id, seq, "the agent's hook stopped waiting for a decision")
                        .await?;
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

    /// Records `offer` on run `id` if the run waits for its agent's next request now (attached);
    /// false, untouched, when it does not.
    pub async fn record_if_attached(
        &self,
        id: RunId,
        offer: &Offer,
        obs: &dyn Observer,
    ) -> Result<bool> {
        if runs::get(self.store.pool(), id).await?.state != RunState::Attached {
            return Ok(false);
        }
        Ok(matches!(
            self.drive_with(id, obs, Some(offer)).await?,
            DriveOutcome::NeedsHuman { .. } | DriveOutcome::Finished { .. }
        ))
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
        if step.tool != crate::action::permission::TOOL
            || !matches!(step.status, StepStatus::AwaitingReview | StepStatus::Running)
        {
            return Ok(None);
        }
        Ok(Some((seq, step.action.call().args.clone())))
    }

    /// The arguments of the tool call step `seq` of run `id` decided, if it is one.
    pub async fn offered_call(&self, id: RunId, seq: i64) -> Result<Option<Value>> {
        let step = steps::get(self.store.pool(), id, seq).await?;
        Ok(step
            .filter(|s| s.tool == crate::action::permission::TOOL)
            .map(|s| s.action.call().args.clone()))
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

    /// Whether step `seq` of run `id` waits on a card nobody has decided.
    async fn card_pending(&self, id: RunId, seq: i64) -> Result<bool> {
        let card = approvals::latest_for_step(self.store.pool(), id, seq).await?;
        Ok(card.is_some_and(|c| c.status == Status::Pending))
    }

    /// Expires the pending card of step `seq`, if one is pending: nobody waits for it any more
    /// (`why`).
    async fn expire_step(&self, id: RunId, seq: i64, why: &str) -> Result<()> {
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
            note: Some(why.into()),
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
