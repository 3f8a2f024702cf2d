//! Claiming a run: whether this worker may take it now (decided without IO), then the claim itself —
//! state, fence, lease and a new attempt in one guarded change — and the drive that follows. A claim
//! that finds the run moved on (another worker, a person) takes nothing.

use tracing::instrument;

use crate::event::{self as ev, Actor};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::failure::FailureClass;
use crate::ids::RunId;
use crate::run::{self, RunEvent, RunState};
use crate::store::runs::RunRow;
use crate::store::write::{Transition, Write};
use crate::store::{audit, runs, StoreError};

use super::commit::Change;
use super::drive::{Drive, StartError};
use super::{DriveOutcome, Engine, Observer};

/// Whether a worker may take a run now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Claimable {
    /// Take it, moving it to `to`; `adopting` a run a lost worker held (`gone`: its process died).
    Yes {
        to: RunState,
        adopting: bool,
        gone: bool,
    },
    No(DriveOutcome),
}

/// The claim decision. `holder_gone`: the holder's process is known to have died.
pub(super) fn claimable(row: &RunRow, now: i64, draining: bool, holder_gone: bool) -> Claimable {
    let adopting = matches!(row.state, RunState::Running | RunState::PauseRequested);
    let gone = adopting && holder_gone;
    let lease_live = adopting && !gone && row.lease_until.is_some_and(|until| until >= now);
    let backing_off = row.state == RunState::Queued && row.not_before.is_some_and(|t| t > now);
    if row.state.is_terminal() || row.state.needs_human() || lease_live || backing_off || draining {
        return Claimable::No(skipped(row, now));
    }
    let to = if adopting {
        Some(row.state)
    } else {
        run::next(row.state, RunEvent::Start)
    };
    match to {
        Some(to) => Claimable::Yes { to, adopting, gone },
        None => Claimable::No(skipped(row, now)),
    }
}

/// Why a run was not claimed, for a caller that asked to drive it.
pub(super) fn skipped(row: &RunRow, now: i64) -> DriveOutcome {
    let reason = match (&row.owner, row.lease_until) {
        (Some(owner), Some(until)) if until >= now && !row.state.is_terminal() => {
            format!(
                "driven by {owner} (lease for {} more seconds)",
                (until - now) / 1000 + 1
            )
        }
        _ => row.last_error.clone().unwrap_or_default(),
    };
    DriveOutcome::Skipped {
        state: row.state,
        reason,
    }
}

impl Engine {
    /// Drives one run until it finishes, needs a human, or is lost to another worker.
    #[instrument(skip_all, fields(run_id = %id), err)]
    pub async fn drive(&self, id: RunId, observer: &dyn Observer) -> Result<DriveOutcome> {
        Ok(self.drive_carrying(id, observer, None).await?.0)
    }

    /// [`Engine::drive`] for an asker that drives the run itself: its request is handed to the
    /// agent first, in hand, with no row of its own (nobody else could take it up meanwhile), and
    /// the drive says how it was taken: by the step that decides it, or only recorded. None when
    /// it was not taken (the run was not claimed, or the drive stopped first).
    pub(super) async fn drive_carrying(
        &self,
        id: RunId,
        observer: &dyn Observer,
        request: Option<serde_json::Value>,
    ) -> Result<(DriveOutcome, Option<Option<i64>>)> {
        let mut taken = None;
        let outcome = self.claim_and_drive(id, observer, request, &mut taken).await?;
        Ok((outcome, taken))
    }

    async fn claim_and_drive(
        &self,
        id: RunId,
        observer: &dyn Observer,
        request: Option<serde_json::Value>,
        taken: &mut Option<Option<i64>>,
    ) -> Result<DriveOutcome> {
        let row = runs::get(self.store.pool(), id).await?;
        let now = now_ms();
        let holder_gone = row.owner.as_deref().is_some_and(crate::worker::is_gone);
        let (to, adopting, gone) = match claimable(&row, now, self.draining(), holder_gone) {
            Claimable::Yes { to, adopting, gone } => (to, adopting, gone),
            Claimable::No(outcome) => {
                if row.state.is_terminal() || matches!(row.state, RunState::Paused | RunState::Suspended) {
                    // Ended, paused or suspended elsewhere (another process's `reins cancel`): an
                    // external agent this process kept for it hears "no", and ends.
                    self.sessions
                        .end(id, &format!("the run is {}", row.state))
                        .await;
                }
                return Ok(outcome);
            }
        };
        if let Some(reason) = self.held_elsewhere(&row).await {
            // Another process runs the agent's session (a `reins run`, a worker): it is theirs.
            return Ok(DriveOutcome::Skipped {
                state: row.state,
                reason,
            });
        }
        let why = if gone {
            "lost: its worker process is gone"
        } else {
            "lost: lease expired"
        };
        let mut rows = vec![Write::Claim {
            expected_version: row.state_version,
            to,
            owner: self.worker.clone(),
            lease_until: now + self.lease_ms,
            gone_owner: row.owner.clone().filter(|_| gone),
            lost: adopting.then(|| why.to_owned()),
        }];
        let mut events = Vec::new();
        if adopting {
            events.push(audit::Event::new(
                Actor::Harness,
                Some(id),
                ev::AttemptLost {
                    worker: row.owner.clone(),
                    why: why.into(),
                    fence: row.fence,
                },
            ));
            // A lost worker uses the run's retry budget: a run that keeps killing its worker stops.
            rows.push(Write::Retry {
                class: FailureClass::WorkerLost,
                error: why.into(),
                delay_ms: 0,
            });
        }
        let (worker, previous, state) = (self.worker.clone(), row.owner.clone(), row.state);
        let change = Change::rows(rows)
            .events(events)
            .announcing(Box::new(move |applied| {
                let Some((fence, attempt)) = applied.written.claimed else {
                    return Vec::new();
                };
                let begun = ev::AttemptBegun {
                    attempt,
                    fence,
                    worker,
                    previous_owner: previous,
                    previous_owner_gone: gone,
                };
                let mut events = vec![audit::Event::new(
                    Actor::Harness,
                    Some(id),
                    if adopting {
                        ev::Kind::AttemptAdopted(begun)
                    } else {
                        ev::Kind::AttemptStarted(begun)
                    },
                )];
                if !adopting {
                    events.push(audit::Event::new(
                        Actor::Harness,
                        Some(id),
                        ev::RunStateChanged {
                            from: Some(state),
                            to,
                            step: None,
                        },
                    ));
                }
                events
            }));
        let applied = match self.commit(Some(id), change, None, observer).await {
            Ok(a) => a,
            // Someone else moved first: another worker claimed it, or a person changed it.
            Err(Error::Store(StoreError::StaleState { .. })) => {
                return Ok(skipped(&runs::get(self.store.pool(), id).await?, now_ms()));
            }
            Err(e) => return Err(e),
        };
        let (fence, attempt) = applied.written.claimed.ok_or_else(|| {
            Error::Store(StoreError::Invalid("the claim reported no fence".into()))
        })?;
        if let Some((n, first)) = applied.written.retry {
            if !self
                .budget
                .allows(u32::try_from(n).unwrap_or(u32::MAX), now - first)
            {
                let reason = format!(
                    "retry budget exhausted: the run lost its worker or failed transiently {n} times (limit {}); a step may be crashing the worker. `reins show {id}` lists the retries; `reins resume {id}` tries again",
                    self.budget.max_retries
                );
                return self.suspend_owned(id, fence, &reason, observer).await;
            }
        }

        let claimed_until = now + self.lease_ms;
        let mut drive = match Drive::start(
            self,
            observer,
            &row,
            fence,
            claimed_until,
            attempt,
            adopting,
        )
        .await
        {
            Ok(d) => d,
            Err(StartError::Suspend(reason)) => {
                return self.suspend_owned(id, fence, &reason, observer).await;
            }
            Err(StartError::Fatal(e)) => return Err(e),
        };
        drive.served.carried = request;
        let outcome = drive.run().await;
        if outcome.is_ok() {
            // A drive that stopped without a last commit (its run lost): recovery settles the
            // held confirmation from the disk if this cannot commit it.
            if let Err(e) = drive.release_held().await {
                tracing::debug!(run_id = %id, "a held confirmation did not commit: {e}");
            }
        }
        *taken = drive.served.carried_taken;
        if let Ok(DriveOutcome::NeedsHuman { state, .. }) = &outcome {
            drive.park_watch(*state);
        }
        match outcome {
            Ok(outcome) => Ok(outcome),
            Err(e) => {
                let class = e.class();
                let handled = match class {
                    FailureClass::WorkerLost => {
                        return Ok(DriveOutcome::Lost {
                            reason: e.to_string(),
                        })
                    }
                    FailureClass::Transient => drive.retry_later(&e).await,
                    FailureClass::Resource => {
                        let reason = format!("{e}: the disk is full, failing or read-only; nothing more runs until a person fixes it and runs `reins resume {id}`");
                        tracing::error!(run_id = %id, "{reason}");
                        drive.suspend(&reason).await
                    }
                    other => {
                        // A harness failure retrying would repeat: hand the run to a human, keep the reason.
                        let reason = format!("harness error ({}): {e}", other.as_str());
                        tracing::error!(run_id = %id, "{reason}");
                        drive.suspend(&reason).await
                    }
                };
                // If even recording the failure fails, report the original error.
                handled.or(Err(e))
            }
        }
    }

    /// Why run `row`'s agent cannot be driven here now (its session runs in another process).
    pub(super) async fn held_elsewhere(&self, row: &RunRow) -> Option<String> {
        // A run waiting, attached, for its agent's next request has no session running anywhere.
        if !crate::agent::has_sessions(&row.agent_kind) || row.state == RunState::Attached {
            return None;
        }
        let spec = runs::spec(self.store.pool(), row.id).await.ok()?;
        let spec = self.opened_text(&spec, "the run's plan").await.ok()?;
        crate::agent::held_elsewhere(&row.agent_kind, &spec, &self.services(row))
    }

    /// Suspends a run this worker claimed but could not start driving.
    async fn suspend_owned(
        &self,
        id: RunId,
        fence: i64,
        reason: &str,
        observer: &dyn Observer,
    ) -> Result<DriveOutcome> {
        let owner = audit::Owner::new(id, fence);
        let change = Change::default()
            .event(audit::Event::new(
                Actor::Harness,
                Some(id),
                ev::Reason {
                    reason: reason.into(),
                },
            ))
            .moving(Transition::Moves(
                vec![RunEvent::Suspend],
                Some(reason.into()),
            ))
            .ending_attempt(format!("suspended: {reason}"));
        self.commit(Some(id), change, Some(&owner), observer)
            .await?;
        Ok(DriveOutcome::NeedsHuman {
            state: RunState::Suspended,
            reason: reason.into(),
        })
    }
}
