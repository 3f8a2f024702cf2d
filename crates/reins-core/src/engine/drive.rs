//! One worker's hold on one run: the agent loop and the step protocol (DESIGN §3).

use crate::agent::{self, Agent, Move};
use crate::audit::event as ev;
use crate::checkpoint::{stored, CheckpointV1, Level, Meta};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::{RunEvent, RunState};
use crate::store::{attempts, audit, audit::Actor, checkpoints, runs, steps, StoreError, Tx};
use crate::workspace::Workspace;

use super::heartbeat::Heartbeat;

use super::{DriveOutcome, Engine, Observer, Progress};

pub(super) enum StartError {
    /// The run cannot go on without a person (workspace gone, stored agent unreadable…).
    Suspend(String),
    Fatal(Error),
}

impl From<Error> for StartError {
    fn from(e: Error) -> Self {
        StartError::Fatal(e)
    }
}

impl From<StoreError> for StartError {
    fn from(e: StoreError) -> Self {
        StartError::Fatal(e.into())
    }
}

pub(super) struct Drive<'a> {
    pub(super) e: &'a Engine,
    pub(super) obs: &'a dyn Observer,
    pub(super) run: RunId,
    pub(super) ws: Workspace,
    pub(super) agent: Box<dyn Agent>,
    pub(super) fence: i64,
    pub(super) attempt: i64,
    /// The run's context as of the last checkpoint, updated as steps complete.
    pub(super) cp: CheckpointV1,
    /// The highest step seq the journal held when this drive started: steps up to it are reused.
    pub(super) journal_through: i64,
    /// Proves ownership in every transaction and remembers the audit chain's head (see `audit::Owner`).
    owner: audit::Owner,
    /// Keeps the lease alive in the background and reports what it sees.
    heartbeat: Heartbeat,
    /// The checkpoint this attempt resumed from.
    pub(super) resumed_from: Option<i64>,
    /// Why the run had stopped before this attempt (for the recovery summary).
    pub(super) stopped_because: Option<String>,
    /// Effects the previous attempt left unsettled, and how they were settled.
    pub(super) settled: Vec<crate::resume::SettledEffect>,
    /// Orphan processes of earlier attempts this one ended.
    pub(super) ended_processes: Vec<String>,
    /// The API key, once looked up in this attempt.
    pub(super) api_key: Option<crate::keys::Secret>,
}

impl<'a> Drive<'a> {
    pub(super) async fn start(
        e: &'a Engine,
        obs: &'a dyn Observer,
        row: &runs::RunRow,
        fence: i64,
        claimed_until: i64,
        attempt: i64,
        adopted: bool,
    ) -> Result<Drive<'a>, StartError> {
        let ws = Workspace::open(std::path::Path::new(&row.workspace))
            .map_err(|err| StartError::Suspend(format!("the workspace cannot be opened: {err}")))?;
        let mut agent = agent::build(&row.agent_kind, &row.agent_spec).map_err(|err| {
            StartError::Suspend(format!("the run's agent cannot be rebuilt: {err}"))
        })?;

        let mismatches = row.compat.mismatches(&crate::compat::Compat::current(
            agent.kind(),
            agent.version(),
            &row.agent_spec,
        ));
        if !mismatches.is_empty() {
            return Err(StartError::Suspend(format!(
                "incompatible with this build: {}. `reins resume {} --force` resumes anyway; `reins resume {} --start-over` starts again from the original input",
                crate::compat::describe(&mismatches),
                row.id,
                row.id
            )));
        }
        let health = stored::verify(&e.store, &e.blobs, row.id).await?;
        let analysis = stored::analyse_health(&e.store, row.id, &health).await?;
        let fresh: Vec<_> = analysis
            .damage
            .iter()
            .filter(|d| !d.acknowledged)
            .cloned()
            .collect();
        if !fresh.is_empty() {
            let now = now_ms();
            let mut tx = e.store.begin().await?;
            runs::renew(&mut tx, row.id, fence, now + e.lease_ms, now).await?;
            for d in &fresh {
                checkpoints::acknowledge_damage(&mut tx, row.id, d.seq, d.kind, now).await?;
                audit::append(
                    &mut tx,
                    audit::Event::new(
                        Actor::Harness,
                        Some(row.id),
                        ev::DamageDetected {
                            seq: d.seq,
                            kind: d.kind,
                            recovery_point: analysis.point,
                        },
                    ),
                    now,
                )
                .await?;
            }
            tx.commit().await.map_err(StoreError::from)?;
            for d in &fresh {
                obs.on(&Progress::Damage {
                    seq: d.seq,
                    kind: d.kind,
                });
            }
        }
        let cp = match analysis.point {
            Some(point) => match stored::load(&e.store, &e.blobs, row.id, point).await? {
                Ok(cp) => cp,
                Err(err) => {
                    return Err(StartError::Suspend(format!(
                        "recovery checkpoint {point} unreadable: {err}"
                    )))
                }
            },
            // Nothing usable: start over from the original input. Completed steps are still reused
            // from the journal, so no effect runs twice.
            None => CheckpointV1 {
                goal: row.goal.clone(),
                next_step: 1,
                ..CheckpointV1::default()
            },
        };
        agent.restore(&cp.agent).map_err(|err| {
            StartError::Suspend(format!(
                "the agent cannot resume from its checkpoint: {err}"
            ))
        })?;
        let resumed_from = if adopted || cp.next_step > 1 {
            analysis.point
        } else {
            None
        };
        obs.on(&Progress::Attempt {
            run: row.id,
            attempt,
            fence,
            adopted,
            resumed_from,
        });
        let journal_through = steps::max_seq(e.store.pool(), row.id).await?;
        // The previous attempt's outcome says why the run stopped (a resume clears the run's reason).
        let previous_outcome = attempts::list(e.store.pool(), row.id)
            .await?
            .into_iter()
            .rev()
            .nth(1)
            .and_then(|a| a.outcome);
        let stopped_because = match (&row.last_error, previous_outcome) {
            (Some(e), _) => Some(e.clone()),
            (None, Some(outcome)) if outcome.starts_with("lost") => {
                Some("its worker stopped (crashed, killed or frozen) mid-run".into())
            }
            (None, Some(outcome)) => Some(outcome),
            (None, None) => None,
        };
        let settled = settled_by_person(e, row.id).await?;
        let owner = audit::Owner::new(row.id, fence);
        owner.saw_pause(row.state == RunState::PauseRequested);
        Ok(Drive {
            owner,
            journal_through,
            heartbeat: Heartbeat::start(
                e.store.pool().clone(),
                row.id,
                fence,
                e.lease_ms,
                claimed_until,
            ),
            resumed_from,
            stopped_because,
            settled,
            ended_processes: Vec::new(),
            api_key: None,
            e,
            obs,
            run: row.id,
            ws,
            agent,
            fence,
            attempt,
            cp,
        })
    }

    /// The agent loop.
    pub(super) async fn run(&mut self) -> Result<DriveOutcome> {
        self.end_orphans().await?;
        if let Some(outcome) = self.settle_journal().await? {
            return Ok(outcome);
        }
        self.orient().await?;
        if let Some(seq) = self.cp.current_step {
            let question = steps::get(self.e.store.pool(), self.run, seq)
                .await?
                .filter(|s| s.kind == crate::step::StepKind::Question);
            let outcome = match question {
                Some(step) => self.continue_question(step).await?,
                None => self.continue_review(seq).await?,
            };
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
        loop {
            if let Some(outcome) = self.safe_point().await? {
                return Ok(outcome);
            }
            let next = match self.agent.next().await {
                Ok(m) => m,
                Err(err) => {
                    return self
                        .finish(RunState::Failed, &format!("agent error: {err}"))
                        .await
                }
            };
            match next {
                Move::Think(input) => {
                    if let Some(outcome) = self.think(input).await? {
                        return Ok(outcome);
                    }
                }
                Move::Ask { question } => {
                    if let Some(outcome) = self.ask(question).await? {
                        return Ok(outcome);
                    }
                }
                Move::Finish { summary } => {
                    return self.finish(RunState::Succeeded, &summary).await
                }
                Move::Fail { reason } => return self.finish(RunState::Failed, &reason).await,
                Move::Call { call, why } => {
                    if let Some(outcome) = self.step(call, why).await? {
                        return Ok(outcome);
                    }
                }
            }
        }
    }

    /// Begins a write transaction, renewing the lease when less than half of it is left (the
    /// heartbeat normally keeps it longer). Every transaction a drive commits appends to the audit
    /// chain as `self.owner()`, which fails unless this worker still holds the run: that read is the
    /// fence check (see `audit::append_all`).
    pub(super) async fn begin(&self) -> Result<Tx> {
        let now = now_ms();
        let mut tx = self.e.store.begin().await?;
        let watch = self.heartbeat.watch();
        if watch.until() - now < self.e.lease_ms / 2 {
            runs::renew(&mut tx, self.run, self.fence, now + self.e.lease_ms, now).await?;
            watch.renewed(now + self.e.lease_ms);
        }
        Ok(tx)
    }

    /// Whether the run was lost (taken over, cancelled) while this worker held it.
    pub(super) fn heartbeat_lost(&self) -> bool {
        self.heartbeat.watch().lost()
    }

    /// Whether this worker may still start an effect: it has not lost the run, and enough of its
    /// lease is left that nobody can take the run over before the effect has begun. A worker frozen
    /// past this point (stopped, swapped out) finds it false when it wakes, and runs nothing.
    pub(super) fn may_run_effect(&self) -> bool {
        let watch = self.heartbeat.watch();
        !watch.lost() && watch.until() - now_ms() > self.e.lease_ms / 4
    }

    /// Between steps: stop here when the run was lost, a person asked to pause, or the worker drains.
    async fn safe_point(&mut self) -> Result<Option<DriveOutcome>> {
        if self.heartbeat.watch().lost() {
            return Ok(Some(DriveOutcome::Lost {
                reason: "another worker owns the run now, or it is no longer running".into(),
            }));
        }
        let draining = self.e.draining();
        if draining || self.owner.pause_requested() || self.heartbeat.watch().pause_requested() {
            return self.pause_here(draining).await.map(Some);
        }
        Ok(None)
    }

    /// Writes a checkpoint, reads it back and verifies it, and only then marks the run paused.
    async fn pause_here(&mut self, draining: bool) -> Result<DriveOutcome> {
        let reason = if draining {
            "the worker is shutting down (drain); `reins resume` continues the run"
        } else {
            "paused on request; `reins resume` continues the run"
        };
        let seq = self
            .write_checkpoint(Level::Task, format!("paused: {reason}"))
            .await?;
        self.e.verify_checkpoint(self.run, seq).await?;

        let now = now_ms();
        let mut tx = self.e.store.begin().await?;
        let mut events = Vec::new();
        match runs::advance(
            &mut tx,
            self.run,
            Some(self.fence),
            RunEvent::ReachSafePoint,
            Some(reason),
            now,
        )
        .await
        {
            Ok(_) => {}
            // Nobody asked: the worker itself pauses the run because it is shutting down.
            Err(StoreError::Illegal {
                from: RunState::Running,
                ..
            }) => {
                runs::advance(
                    &mut tx,
                    self.run,
                    Some(self.fence),
                    RunEvent::RequestPause,
                    None,
                    now,
                )
                .await?;
                runs::advance(
                    &mut tx,
                    self.run,
                    Some(self.fence),
                    RunEvent::ReachSafePoint,
                    Some(reason),
                    now,
                )
                .await?;
                events.push(audit::Event::new(
                    Actor::System,
                    Some(self.run),
                    ev::Kind::DrainPauseRequested(ev::DrainPause {
                        by: "worker drain",
                        worker: self.e.worker.clone(),
                    }),
                ));
            }
            Err(e) => return Err(e.into()),
        }
        attempts::end_open(&mut tx, self.run, &format!("paused: {reason}"), now).await?;
        events.push(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::PausedAtSafePoint {
                checkpoint: seq,
                verified: true,
                reason: reason.into(),
            },
        ));
        audit::append_all(&mut tx, None, &events, now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Waiting {
            state: RunState::Paused,
            reason: reason.into(),
        });
        Ok(DriveOutcome::NeedsHuman {
            state: RunState::Paused,
            reason: reason.into(),
        })
    }

    pub(super) fn owner(&self) -> &audit::Owner {
        &self.owner
    }

    /// Writes a checkpoint of the context as it stands, alone in its transaction; returns its seq.
    pub(super) async fn write_checkpoint(&mut self, level: Level, note: String) -> Result<i64> {
        self.stamp(note);
        let prepared = self.e.prepare(&self.cp, level)?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        let seq = self
            .e
            .insert_checkpoint(
                &mut tx,
                self.run,
                &prepared,
                now,
                Vec::new(),
                Some(self.owner()),
            )
            .await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(seq)
    }

    /// Brings the context up to date for the checkpoint about to be written: agent state and metadata.
    pub(super) fn stamp(&mut self, note: String) {
        self.cp.agent = self.agent.state();
        self.cp.meta = Meta {
            attempt: self.attempt,
            fence: self.fence,
            written_at: now_ms(),
            note,
        };
    }

    async fn finish(&mut self, state: RunState, summary: &str) -> Result<DriveOutcome> {
        self.stamp(format!("finished: {state}"));
        let prepared = self.e.prepare(&self.cp, Level::Task)?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        self.e
            .insert_checkpoint(
                &mut tx,
                self.run,
                &prepared,
                now,
                vec![audit::Event::new(
                    Actor::Harness,
                    Some(self.run),
                    ev::Finished {
                        state,
                        summary: summary.into(),
                    },
                )],
                Some(self.owner()),
            )
            .await?;
        let last_error = (state != RunState::Succeeded).then_some(summary);
        let event = if state == RunState::Succeeded {
            RunEvent::Succeed
        } else {
            RunEvent::Fail
        };
        runs::advance(&mut tx, self.run, Some(self.fence), event, last_error, now).await?;
        attempts::end_open(&mut tx, self.run, state.as_str(), now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Finished {
            state,
            summary: summary.into(),
        });
        Ok(DriveOutcome::Finished {
            state,
            summary: summary.into(),
        })
    }

    /// A transient failure: record a retry, let the run go, and have it claimed again after a
    /// backoff — or, with the budget spent, suspend it for a person.
    pub(super) async fn retry_later(&mut self, error: &Error) -> Result<DriveOutcome> {
        let now = now_ms();
        let text = error.to_string();
        let salt = u64::try_from(now).unwrap_or(0) ^ u64::from(std::process::id());
        let mut tx = self.e.store.begin().await?;
        let prior = crate::store::retries::list(self.e.store.pool(), self.run).await?;
        let n = u32::try_from(prior.len() + 1).unwrap_or(u32::MAX);
        let first = prior.first().map_or(now, |r| r.at);
        if !self.e.budget.allows(n, now - first) {
            drop(tx);
            let reason = format!(
                "retry budget exhausted after {} retries over {} s; last error: {text}",
                n - 1,
                (now - first) / 1000
            );
            return self.suspend(&reason).await;
        }
        // A server that says when to come back (429 Retry-After) is not called before then.
        let asked = match error {
            Error::Provider(p) => p
                .retry_after_ms()
                .map_or(0, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            _ => 0,
        };
        let delay = self.e.budget.delay_ms(n, salt).max(asked);
        crate::store::retries::record(
            &mut tx,
            self.run,
            now,
            crate::failure::FailureClass::Transient,
            &text,
            delay,
        )
        .await?;
        let reason = format!(
            "retry {n} of {} in {:.1} s after a transient error: {text}",
            self.e.budget.max_retries,
            delay as f64 / 1000.0
        );
        let (_, to, _) = runs::advance(
            &mut tx,
            self.run,
            Some(self.fence),
            RunEvent::Retry,
            Some(&reason),
            now,
        )
        .await?;
        runs::set_not_before(&mut tx, self.run, now + delay).await?;
        attempts::end_open(&mut tx, self.run, &format!("retry: {text}"), now).await?;
        audit::append(
            &mut tx,
            audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::RetryScheduled {
                    n,
                    class: "transient",
                    error: text.clone(),
                    delay_ms: delay,
                    state: to,
                },
            ),
            now,
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Waiting {
            state: to,
            reason: reason.clone(),
        });
        Ok(if to == RunState::Paused {
            DriveOutcome::NeedsHuman { state: to, reason }
        } else {
            DriveOutcome::Retrying {
                at: now + delay,
                reason,
            }
        })
    }

    pub(super) async fn suspend(&mut self, reason: &str) -> Result<DriveOutcome> {
        let now = now_ms();
        let mut tx = self.e.store.begin().await?;
        runs::advance(
            &mut tx,
            self.run,
            Some(self.fence),
            RunEvent::Suspend,
            Some(reason),
            now,
        )
        .await?;
        attempts::end_open(&mut tx, self.run, &format!("suspended: {reason}"), now).await?;
        audit::append(
            &mut tx,
            audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::Reason {
                    reason: reason.into(),
                },
            ),
            now,
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Waiting {
            state: RunState::Suspended,
            reason: reason.into(),
        });
        Ok(DriveOutcome::NeedsHuman {
            state: RunState::Suspended,
            reason: reason.into(),
        })
    }
}

/// Effects a person decided since the run's previous attempt began (`reins resolve`).
async fn settled_by_person(
    e: &Engine,
    run: crate::ids::RunId,
) -> Result<Vec<crate::resume::SettledEffect>> {
    let attempts = attempts::list(e.store.pool(), run).await?;
    let since = match attempts.iter().rev().nth(1) {
        Some(previous) => previous.started_at,
        None => return Ok(Vec::new()),
    };
    Ok(
        crate::store::intents::settled_since(e.store.pool(), run, since)
            .await?
            .into_iter()
            .filter_map(|i| {
                let how = i.settled_by.clone()?;
                how.contains("a person")
                    .then_some(crate::resume::SettledEffect {
                        step: i.step_seq,
                        tool: i.tool,
                        status: i.status.as_str().into(),
                        how,
                    })
            })
            .collect(),
    )
}
