//! What a person does to a run: pause, resume (also past an incompatibility, or from the start), and
//! cancel. Each is one guarded transaction with its audit event; a worker holding the run learns of
//! it at its next write.

use serde::Serialize;

use crate::agent;
use crate::audit::event as ev;
use crate::clock::now_ms;
use crate::compat::Compat;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::journal::IntentStatus;
use crate::run::{RunEvent, RunState};
use crate::step::StepStatus;
use crate::store::{attempts, audit, audit::Actor, runs, StoreError};
use crate::workspace::Workspace;

use super::Engine;

/// How to resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ResumeMode {
    /// Go on from the recovery point.
    Continue,
    /// Go on even though the run was started by an incompatible build (recorded in the audit log).
    Force,
    /// Leave this run cancelled and start a new one from the same original input and workspace.
    StartOver,
}

/// What a control action did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Control {
    pub run: RunId,
    pub from: RunState,
    pub to: RunState,
    /// The new run, when started over.
    pub new_run: Option<RunId>,
    pub message: String,
}

impl Engine {
    /// Pause: a run nobody drives (queued, waiting for review, or held by a worker that died or
    /// whose lease ran out) is paused at once; a running one is asked to stop at its next safe point.
    pub async fn pause(&self, id: RunId) -> Result<Control> {
        let row = runs::get(self.store.pool(), id).await?;
        let now = now_ms();
        let unattended = row.state.is_active()
            && (row.lease_until.is_none_or(|until| until < now)
                || row.owner.as_deref().is_some_and(crate::worker::is_gone));
        let mut tx = self.store.begin().await?;
        let (from, to) = if unattended {
            let (from, _, _) =
                runs::advance(&mut tx, id, None, RunEvent::RequestPause, None, now).await?;
            let reason = "paused while no live worker held it";
            runs::advance(
                &mut tx,
                id,
                None,
                RunEvent::ReachSafePoint,
                Some(reason),
                now,
            )
            .await?;
            // Whatever the old holder still believes, it can no longer write for this run.
            runs::bump_fence(&mut tx, id).await?;
            attempts::end_open(&mut tx, id, "lost: paused while no worker held it", now).await?;
            (from, RunState::Paused)
        } else {
            let (from, to, _) = runs::advance(&mut tx, id, None, RunEvent::RequestPause, None, now)
                .await
                .map_err(|e| refine(e, &row.state))?;
            (from, to)
        };
        let moved = ev::RunMoved { from, to };
        let kind = if to == RunState::Paused {
            ev::Kind::Paused(moved)
        } else {
            ev::Kind::PauseRequested(moved)
        };
        audit::append(&mut tx, audit::Event::new(Actor::User, Some(id), kind), now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        let message = if to == RunState::Paused {
            format!("run {id} is paused")
        } else {
            format!("pause requested: run {id} stops at its next safe point")
        };
        Ok(Control {
            run: id,
            from,
            to,
            new_run: None,
            message,
        })
    }

    pub async fn resume(&self, id: RunId, mode: ResumeMode) -> Result<Control> {
        if mode == ResumeMode::StartOver {
            return self.start_over(id).await;
        }
        let row = runs::get(self.store.pool(), id).await?;
        let now = now_ms();
        let mut tx = self.store.begin().await?;
        let (from, to, _) = runs::advance(&mut tx, id, None, RunEvent::Resume, None, now)
            .await
            .map_err(|e| refine(e, &row.state))?;
        let mut events = vec![audit::Event::new(
            Actor::User,
            Some(id),
            ev::Resumed {
                from,
                to,
                force: mode == ResumeMode::Force,
            },
        )];
        if mode == ResumeMode::Force {
            let agent = agent::build(&row.agent_kind, &row.agent_spec)
                .map_err(|e| Error::Conflict(format!("run {id} cannot be resumed: {e}")))?;
            let current = Compat::current(agent.kind(), agent.version(), &row.agent_spec);
            let mismatches = row.compat.mismatches(&current);
            if !mismatches.is_empty() {
                runs::set_compat(&mut tx, id, &current).await?;
                events.push(audit::Event::new(
                    Actor::User,
                    Some(id),
                    ev::CompatOverridden { mismatches },
                ));
            }
        }
        audit::append_all(&mut tx, None, &events, now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(Control {
            run: id,
            from,
            to,
            new_run: None,
            message: if from == RunState::PauseRequested {
                format!("pause withdrawn: run {id} goes on")
            } else {
                format!("run {id} is queued; a worker picks it up")
            },
        })
    }

    pub async fn cancel(&self, id: RunId, reason: Option<&str>) -> Result<Control> {
        let row = runs::get(self.store.pool(), id).await?;
        let now = now_ms();
        let reason = reason.unwrap_or("cancelled by the user");
        let mut tx = self.store.begin().await?;
        let (from, to, _) = runs::advance(&mut tx, id, None, RunEvent::Cancel, Some(reason), now)
            .await
            .map_err(|e| refine(e, &row.state))?;
        attempts::end_open(&mut tx, id, "cancelled", now).await?;
        audit::append(
            &mut tx,
            audit::Event::new(
                Actor::User,
                Some(id),
                ev::Cancelled {
                    from,
                    reason: reason.into(),
                },
            ),
            now,
        )
        .await?;
        // Its pending reviews can never be carried out: they leave the inbox.
        for approval in
            crate::store::approvals::close_for_run(&mut tx, id, "the run was cancelled", now)
                .await?
        {
            audit::append(
                &mut tx,
                audit::Event::new(
                    Actor::System,
                    Some(id),
                    ev::ClosedWithRun {
                        approval,
                        why: "the run was cancelled".into(),
                    },
                ),
                now,
            )
            .await?;
        }
        tx.commit().await.map_err(StoreError::from)?;
        Ok(Control {
            run: id,
            from,
            to,
            new_run: None,
            message: format!("run {id} is cancelled"),
        })
    }

    /// A new run from the original input; the old one is cancelled, pointing at it.
    async fn start_over(&self, id: RunId) -> Result<Control> {
        let row = runs::get(self.store.pool(), id).await?;
        if row.state.is_active() {
            return Err(Error::Conflict(format!(
                "run {id} is {}; pause or cancel it before starting over",
                row.state
            )));
        }
        let plan = match row.agent_kind.as_str() {
            agent::script::KIND => agent::script::Plan::from_json(&row.agent_spec)?,
            other => {
                return Err(Error::Conflict(format!(
                    "run {id}: cannot start over an agent of kind {other:?}"
                )))
            }
        };
        let ws = Workspace::open(std::path::Path::new(&row.workspace))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let new_run = self.create_script_run(&plan, &ws).await?;
        let from = row.state;
        if !from.is_terminal() {
            self.cancel(id, Some(&format!("started over as run {new_run}")))
                .await?;
        }
        Ok(Control {
            run: id,
            from,
            to: if from.is_terminal() {
                from
            } else {
                RunState::Cancelled
            },
            new_run: Some(new_run),
            message: format!("started over as run {new_run} from the original input"),
        })
    }
}

/// "run X is succeeded; it cannot be paused" is exact but unfriendly for the common cases.
fn refine(e: StoreError, state: &RunState) -> Error {
    match e {
        StoreError::Illegal { run, event, .. } if state.is_terminal() => Error::Conflict(format!(
            "run {run} already ended ({state}); it cannot {}",
            event.verb()
        )),
        other => other.into(),
    }
}

/// What a person decided about an effect whose outcome nobody could know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// It happened: the agent is told the result it would have got.
    Done,
    /// Run it again: the step is proposed and executed afresh (new pre-images, new intent).
    Retry,
    /// Do not run it: the agent is told it was skipped.
    Skip,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub intent: String,
    pub run: RunId,
    pub step: i64,
    pub tool: String,
    pub resolution: Resolution,
    /// The run was waiting only on this decision and is queued again.
    pub resumed: bool,
    pub message: String,
}

impl Engine {
    /// Records a person's decision on an unsettled intent (unknown, or pending on a run no worker
    /// drives), and resumes the run when nothing else is left undecided.
    pub async fn resolve(
        &self,
        intent_prefix: &str,
        resolution: Resolution,
        note: Option<&str>,
    ) -> Result<Resolved> {
        let prefix = intent_prefix.trim().to_ascii_lowercase();
        if prefix.len() < 4 {
            return Err(Error::Invalid(format!(
                "{intent_prefix:?} is not an intent id (give at least its first 4 characters; `reins show RUN` lists them)"
            )));
        }
        let found = crate::store::intents::find(self.store.pool(), &prefix).await?;
        let (run, intent) = match found.as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(StoreError::NotFound {
                    what: format!("intent {intent_prefix}"),
                }
                .into())
            }
            many => {
                return Err(Error::Invalid(format!(
                    "{intent_prefix:?} matches {} intents; give more characters",
                    many.len()
                )))
            }
        };
        let row = runs::get(self.store.pool(), run).await?;
        if !matches!(intent.status, IntentStatus::Unknown | IntentStatus::Pending) {
            return Err(Error::Conflict(format!(
                "intent {} (step {} {}) is already {}; nothing to decide",
                intent.id, intent.step_seq, intent.tool, intent.status
            )));
        }
        if row.state.is_active() || row.state.is_terminal() {
            return Err(Error::Conflict(format!(
                "run {run} is {}; an effect is decided while its run waits (suspended or paused)",
                row.state
            )));
        }
        let now = now_ms();
        let who = match note {
            Some(n) => format!("a person: {n}"),
            None => "a person".to_owned(),
        };
        let mut tx = self.store.begin().await?;
        match resolution {
            Resolution::Done => {
                let result = intent
                    .result
                    .clone()
                    .unwrap_or_else(|| format!("{} done", intent.tool));
                crate::store::intents::settle_by_person(
                    &mut tx,
                    run,
                    intent.step_seq,
                    IntentStatus::Confirmed,
                    StepStatus::Done,
                    &result,
                    &format!("marked done by {who}"),
                    now,
                )
                .await?;
            }
            Resolution::Skip => {
                let result = format!(
                    "skipped by {who}: the effect's outcome was unknown and it was not run again"
                );
                crate::store::intents::settle_by_person(
                    &mut tx,
                    run,
                    intent.step_seq,
                    IntentStatus::Skipped,
                    StepStatus::Skipped,
                    &result,
                    &result,
                    now,
                )
                .await?;
            }
            Resolution::Retry => {
                crate::store::intents::forget_for_retry(&mut tx, run, intent.step_seq).await?;
            }
        }
        let others = crate::store::intents::count_unsettled(&mut tx, run).await?;
        let resume = others == 0 && row.state == RunState::Suspended;
        let mut events = vec![audit::Event::new(
            Actor::User,
            Some(run),
            ev::IntentResolved {
                intent: intent.id.clone(),
                step: intent.step_seq,
                tool: intent.tool.clone(),
                action_hash: intent.action_hash.clone(),
                previous_status: intent.status,
                resolution,
                note: note.map(str::to_owned),
                pre: intent.pre_images.clone(),
                post: intent.post_images.clone(),
            },
        )];
        if resume {
            runs::advance(&mut tx, run, None, RunEvent::Resume, None, now).await?;
            events.push(audit::Event::new(
                Actor::User,
                Some(run),
                ev::ResumedAfterResolve {
                    from: row.state,
                    to: RunState::Queued,
                    after: "intent.resolved",
                },
            ));
        }
        audit::append_all(&mut tx, None, &events, now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        let what = match resolution {
            Resolution::Done => "marked done; the agent gets its recorded result",
            Resolution::Retry => "will run again when the run resumes",
            Resolution::Skip => "skipped; the agent is told it did not run",
        };
        let tail = if resume {
            format!("; run {run} is queued again")
        } else if others > 0 {
            format!("; {others} more effect(s) of run {run} still need a decision")
        } else {
            format!("; `reins resume {run}` continues the run")
        };
        Ok(Resolved {
            intent: intent.id.clone(),
            run,
            step: intent.step_seq,
            tool: intent.tool.clone(),
            resolution,
            resumed: resume,
            message: format!("step {} ({}) {what}{tail}", intent.step_seq, intent.tool),
        })
    }
}
