//! What a person does to a run: pause, resume (also past an incompatibility, or from the start), and
//! cancel. Each is one change with its audit event; a worker holding the run learns of it at its
//! next write.

use serde::Serialize;

use crate::agent;
use crate::event::{self as ev, Actor};
use crate::clock::now_ms;
use crate::compat::Compat;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::{RunEvent, RunState};
use crate::store::write::{Transition, Write};
use crate::store::{audit, runs, StoreError};
use crate::workspace::Workspace;

use super::commit::{Applied, Change};
use super::{Engine, Silent};

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

/// Where the change moved the run (a committed change with a transition always says).
fn moved(applied: &Applied) -> Result<(RunState, RunState)> {
    applied
        .moved
        .map(|m| (m.from, m.to))
        .ok_or_else(|| Error::Store(StoreError::Invalid("the change reported no move".into())))
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
        let change = if unattended {
            // Whatever the old holder still believes, it can no longer write for this run.
            Change::rows(vec![Write::BumpFence])
                .moving(Transition::Moves(
                    vec![RunEvent::RequestPause, RunEvent::ReachSafePoint],
                    Some("paused while no live worker held it".into()),
                ))
                .ending_attempt("lost: paused while no worker held it")
        } else {
            Change::default().moving(Transition::Moves(vec![RunEvent::RequestPause], None))
        };
        let change = change.announcing(Box::new(move |applied| {
            let Some(m) = applied.moved else {
                return Vec::new();
            };
            let moved = ev::RunMoved {
                from: m.from,
                to: m.to,
            };
            let kind = if m.to == RunState::Paused {
                ev::Kind::Paused(moved)
            } else {
                ev::Kind::PauseRequested(moved)
            };
            vec![audit::Event::new(Actor::User, Some(id), kind)]
        }));
        let applied = self
            .commit(Some(id), change, None, &Silent)
            .await
            .map_err(|e| refine(e, row.state))?;
        let (from, to) = moved(&applied)?;
        if to == RunState::Paused {
            // Paused where it waited for a person: an external agent kept alive for the answer
            // ends now (its request refused); the run's next attempt starts it again.
            self.sessions.end(id, "the run was paused").await;
            self.watches.forget(id);
        }
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

    /// On drain: a run this process let go into a retry backoff is paused where it waits, after
    /// its last checkpoint is read back and verified, so the process can exit now rather than
    /// wait the backoff out. None when the run is not waiting out a backoff (it finished, someone
    /// else holds it, or a person moved it).
    pub async fn pause_backoff_for_drain(&self, id: RunId) -> Result<Option<Control>> {
        const REASON: &str =
            "the worker is shutting down (drain) during a retry backoff; `reins resume` continues the run";
        let row = runs::get(self.store.pool(), id).await?;
        let now = now_ms();
        let leased = row.lease_until.is_some_and(|until| until >= now)
            && !row.owner.as_deref().is_some_and(crate::worker::is_gone);
        if row.state != RunState::Queued || row.not_before.is_none() || leased {
            return Ok(None);
        }
        let seq = match crate::store::checkpoints::seq_range(self.store.pool(), id).await? {
            Some((_, last)) => {
                self.verify_checkpoint(id, last).await?;
                last
            }
            None => 0,
        };
        let worker = self.worker.clone();
        // Resumed, it goes on at once rather than waiting out the rest of the backoff.
        let change = Change::rows(vec![Write::BumpFence, Write::RunNotBefore(now)])
            .moving(Transition::Moves(
                vec![RunEvent::RequestPause],
                Some(REASON.into()),
            ))
            .announcing(Box::new(move |applied| {
                if applied.moved.is_none() {
                    return Vec::new();
                }
                vec![
                    audit::Event::new(
                        Actor::System,
                        Some(id),
                        ev::Kind::DrainPauseRequested(ev::DrainPause {
                            by: "worker drain".into(),
                            worker,
                        }),
                    ),
                    audit::Event::new(
                        Actor::Harness,
                        Some(id),
                        ev::PausedAtSafePoint {
                            checkpoint: seq,
                            verified: seq > 0,
                            reason: REASON.into(),
                        },
                    ),
                ]
            }));
        let applied = self
            .commit(Some(id), change, None, &Silent)
            .await
            .map_err(|e| refine(e, row.state))?;
        let (from, to) = moved(&applied)?;
        Ok(Some(Control {
            run: id,
            from,
            to,
            new_run: None,
            message: format!("run {id} is paused: {REASON}"),
        }))
    }

    pub async fn resume(&self, id: RunId, mode: ResumeMode) -> Result<Control> {
        if mode == ResumeMode::StartOver {
            return self.start_over(id).await;
        }
        let row = runs::get(self.store.pool(), id).await?;
        let mut change = Change::default().moving(Transition::Moves(vec![RunEvent::Resume], None));
        if mode == ResumeMode::Force {
            let spec = runs::spec(self.store.pool(), id).await?;
            let spec = self.opened_text(&spec, "the run's plan").await?;
            let agent = agent::build(&row.agent_kind, &spec, &self.services(&row))
                .map_err(|e| Error::Conflict(format!("run {id} cannot be resumed: {e}")))?;
            let current = Compat {
                external_agent: row.compat.external_agent.clone(),
                ..Compat::current(agent.kind(), agent.version(), &spec)
            };
            let mut mismatches = row.compat.mismatches(&current);
            if let Some(stored) = &row.compat.mcp_tools {
                // Checked again when the servers start; forcing takes their tools as they are then.
                mismatches.push(crate::compat::Mismatch {
                    field: "mcpTools".into(),
                    stored: stored
                        .iter()
                        .map(|(s, d)| format!("{s}:{}", d.chars().take(12).collect::<String>()))
                        .collect::<Vec<_>>()
                        .join(" "),
                    current: "recorded again when the servers start".into(),
                });
            }
            if !mismatches.is_empty() {
                change.rows.push(Write::RunCompat(Box::new(current)));
                change.events.push(audit::Event::new(
                    Actor::User,
                    Some(id),
                    ev::CompatOverridden { mismatches },
                ));
            }
        }
        let force = mode == ResumeMode::Force;
        let change = change.announcing(Box::new(move |applied| {
            applied
                .moved
                .map(|m| {
                    audit::Event::new(
                        Actor::User,
                        Some(id),
                        ev::Resumed {
                            from: m.from,
                            to: m.to,
                            force,
                        },
                    )
                })
                .into_iter()
                .collect()
        }));
        let applied = self
            .commit(Some(id), change, None, &Silent)
            .await
            .map_err(|e| refine(e, row.state))?;
        let (from, to) = moved(&applied)?;
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
        let reason = reason.unwrap_or("cancelled by the user").to_owned();
        let said = reason.clone();
        // Its pending reviews can never be carried out: they leave the inbox.
        let change = Change::rows(vec![Write::ApprovalsClosed {
            why: "the run was cancelled".into(),
        }])
        .moving(Transition::Moves(vec![RunEvent::Cancel], Some(reason)))
        .announcing(Box::new(move |applied| {
            let mut events = Vec::new();
            if let Some(m) = applied.moved {
                events.push(audit::Event::new(
                    Actor::User,
                    Some(id),
                    ev::Cancelled {
                        from: m.from,
                        reason: said,
                    },
                ));
            }
            for approval in &applied.written.closed {
                events.push(audit::Event::new(
                    Actor::System,
                    Some(id),
                    ev::ClosedWithRun {
                        approval: approval.clone(),
                        why: "the run was cancelled".into(),
                    },
                ));
            }
            events
        }))
        .ending_attempt("cancelled");
        let applied = self
            .commit(Some(id), change, None, &Silent)
            .await
            .map_err(|e| refine(e, row.state))?;
        let (from, to) = moved(&applied)?;
        // An external agent kept alive for a review's answer hears "no", and ends.
        self.sessions.end(id, "the run was cancelled").await;
        self.watches.forget(id);
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
        let spec = self
            .opened_text(&runs::spec(self.store.pool(), id).await?, "the run's plan")
            .await?;
        let Some(new) = agent::start_over(&row.agent_kind, &spec)? else {
            return Err(Error::Conflict(format!(
                "run {id}: cannot start over an agent of kind {:?}",
                row.agent_kind
            )));
        };
        let ws = Workspace::open(std::path::Path::new(&row.workspace))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let new_run = self.create_run(&new, &ws).await?;
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
fn refine(e: Error, state: RunState) -> Error {
    match e {
        Error::Store(StoreError::Illegal { run, event, .. }) if state.is_terminal() => {
            Error::Conflict(format!(
                "run {run} already ended ({state}); it cannot {}",
                event.verb()
            ))
        }
        other => other,
    }
}
