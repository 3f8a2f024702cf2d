//! The driver. It owns a run while its lease is live, replays the recovery point, settles the effect
//! journal, and runs the agent's proposals through the step protocol. Every write it commits carries
//! its fence; a write that finds the fence moved means another worker owns the run, and this one stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;
use tracing::instrument;

use crate::audit::event as ev;
use crate::blob::BlobStore;
use crate::checkpoint::{self, CheckpointV1, DamageKind, Level};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::policy::Policy;
use crate::run::{self, RunEvent, RunState};
use crate::store::{self, attempts, audit, audit::Actor, checkpoints, runs, Store, StoreError, Tx};

mod control;
mod create;
mod drive;
mod effect;
mod heartbeat;
mod question;
mod recover;
mod retention;
mod reuse;
mod review;
mod reviewed;
mod rollback;
mod settle;
mod step;
mod think;

pub use control::{Control, Resolution, Resolved, ResumeMode};
pub use question::MAX_TEXT as MAX_ANSWER;
pub use retention::{GcReport, BLOB_GRACE_MS};
pub use review::{ApproveRequest, Decided};
pub use rollback::{RollbackChange, RollbackReport};

/// Something worth telling the person watching a run.
#[derive(Clone, Debug, Serialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Progress {
    Created {
        run: RunId,
        name: String,
        workspace: String,
    },
    Attempt {
        run: RunId,
        attempt: i64,
        fence: i64,
        adopted: bool,
        resumed_from: Option<i64>,
    },
    Damage {
        seq: i64,
        kind: DamageKind,
    },
    Recovered {
        attempt: i64,
        changed_outside: usize,
        text: String,
        /// Nothing happened but a review: the run simply goes on after a person's decision.
        after_review: Option<i64>,
        /// Nothing happened but a question: the run goes on with the person's answer.
        after_answer: Option<i64>,
    },
    Settled {
        step: i64,
        tool: String,
        how: String,
    },
    Step {
        seq: i64,
        tool: String,
        status: crate::step::StepStatus,
        why: Option<String>,
        summary: String,
        checkpoint: i64,
        reused: bool,
    },
    Waiting {
        state: RunState,
        reason: String,
    },
    /// A model call began.
    Thinking {
        seq: i64,
        model: String,
        /// Tokens of context sent, and the input budget.
        tokens: usize,
        budget: usize,
    },
    /// Text the model is streaming, as it arrives.
    Text {
        text: String,
    },
    Finished {
        state: RunState,
        summary: String,
    },
}

pub trait Observer: Send + Sync {
    fn on(&self, progress: &Progress);
}

/// An observer that ignores everything.
pub struct Silent;

impl Observer for Silent {
    fn on(&self, _: &Progress) {}
}

/// Where a drive left the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "outcome",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum DriveOutcome {
    Finished {
        state: RunState,
        summary: String,
    },
    NeedsHuman {
        state: RunState,
        reason: String,
    },
    /// Another worker owns the run now, or a person changed its state.
    Lost {
        reason: String,
    },
    /// A transient failure: the run was let go and is claimed again at `at` (Unix ms).
    Retrying {
        at: i64,
        reason: String,
    },
    /// Not claimed: the run is finished, waits for a human, or another worker holds it.
    Skipped {
        state: RunState,
        reason: String,
    },
}

pub struct Engine {
    store: Store,
    blobs: BlobStore,
    policy: Arc<dyn Policy>,
    worker: String,
    lease_ms: i64,
    /// Set when the worker should stop taking work and pause what it drives at the next safe point.
    drain: Arc<AtomicBool>,
    budget: crate::failure::RetryBudget,
    /// Where API keys are read from (the OS keyring; a fake in tests).
    secrets: Arc<dyn crate::keys::SecretStore>,
}

/// A checkpoint's bytes, ready to insert.
pub(crate) struct Prepared {
    level: Level,
    bytes: Vec<u8>,
    sha256: String,
    in_blob: bool,
}

impl Engine {
    pub fn new(store: Store, blobs: BlobStore, policy: Arc<dyn Policy>, lease_ms: i64) -> Self {
        let worker = crate::worker::WorkerId::current().to_string();
        Self {
            store,
            blobs,
            policy,
            worker,
            lease_ms,
            drain: Arc::new(AtomicBool::new(false)),
            budget: crate::failure::RetryBudget::default(),
            secrets: Arc::new(crate::keys::Keyring::new()),
        }
    }

    /// Reads API keys from `secrets` instead of the OS keyring.
    pub fn with_secrets(mut self, secrets: Arc<dyn crate::keys::SecretStore>) -> Self {
        self.secrets = secrets;
        self
    }

    pub fn secrets(&self) -> &Arc<dyn crate::keys::SecretStore> {
        &self.secrets
    }

    /// Sets how many retries (transient failures and lost workers) a run may use.
    pub fn with_retry_budget(mut self, budget: crate::failure::RetryBudget) -> Self {
        self.budget = budget;
        self
    }

    /// Asks this engine to drain: every run it drives pauses at its next safe point, and no new run
    /// is claimed. Safe to call from a signal handler task.
    pub fn drain_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.drain)
    }

    pub fn draining(&self) -> bool {
        self.drain.load(Ordering::Relaxed)
    }

    /// Reads a checkpoint back and verifies its checksum and payload.
    pub async fn verify_checkpoint(&self, run: RunId, seq: i64) -> Result<CheckpointV1> {
        checkpoint::stored::load(&self.store, &self.blobs, run, seq)
            .await?
            .map_err(|detail| {
                Error::Checkpoint(checkpoint::CheckpointError::Decode { seq, detail })
            })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Splits blobs an intent needs by size: large ones are written to the file store now (fsynced,
    /// before the intent commits); the small ones are returned to be committed inside the intent's own
    /// transaction. Either way they are durable once the intent is.
    pub(crate) fn stage_blobs<'b>(&self, blobs: &'b [Vec<u8>]) -> Result<Vec<&'b [u8]>> {
        let mut small = Vec::new();
        for bytes in blobs {
            if bytes.len() <= store::blobs::INLINE_LIMIT {
                small.push(bytes.as_slice());
            } else {
                self.blobs.put(bytes)?;
            }
        }
        Ok(small)
    }

    /// A blob by digest, from the database or the file store, verified. None when neither has it.
    pub async fn blob(&self, digest: &crate::digest::Digest) -> Result<Option<Vec<u8>>> {
        if let Some(bytes) = store::blobs::get(self.store.pool(), digest).await? {
            if &crate::digest::Digest::of(&bytes) == digest {
                return Ok(Some(bytes));
            }
        }
        match self.blobs.get(digest) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(
                crate::blob::BlobError::Missing { .. } | crate::blob::BlobError::Corrupt { .. },
            ) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Encodes a checkpoint; payloads over the inline limit go to the blob store (durably) first.
    pub(crate) fn prepare(&self, cp: &CheckpointV1, level: Level) -> Result<Prepared> {
        let (bytes, digest) = checkpoint::encode(cp);
        let in_blob = bytes.len() > checkpoint::INLINE_LIMIT;
        if in_blob {
            self.blobs.put(&bytes)?;
        }
        Ok(Prepared {
            level,
            bytes,
            sha256: digest.as_str().to_owned(),
            in_blob,
        })
    }

    /// Inserts a checkpoint and appends `events` (the change it records) plus `checkpoint.written`
    /// to the audit chain, all inside `tx`. With an `owner`, fails unless that worker holds the run.
    pub(crate) async fn insert_checkpoint(
        &self,
        tx: &mut Tx,
        run: RunId,
        p: &Prepared,
        now: i64,
        mut events: Vec<audit::Event>,
        owner: Option<&audit::Owner>,
    ) -> Result<i64> {
        let body = if p.in_blob {
            checkpoints::Body::Blob(&p.sha256)
        } else {
            checkpoints::Body::Inline(&p.bytes)
        };
        let seq = checkpoints::insert(
            tx,
            run,
            &checkpoints::NewCheckpoint {
                level: p.level,
                schema_version: checkpoint::SCHEMA_VERSION,
                body,
                size: i64::try_from(p.bytes.len()).unwrap_or(i64::MAX),
                sha256: &p.sha256,
                created_at: now,
            },
        )
        .await?;
        events.push(audit::Event::new(
            Actor::Harness,
            Some(run),
            ev::CheckpointWritten {
                seq,
                level: p.level,
                sha256: p.sha256.clone(),
                size: p.bytes.len(),
            },
        ));
        audit::append_all(tx, owner, &events, now).await?;
        Ok(seq)
    }

    /// Drives one run until it finishes, needs a human, or is lost to another worker.
    #[instrument(skip_all, fields(run_id = %id), err)]
    pub async fn drive(&self, id: RunId, observer: &dyn Observer) -> Result<DriveOutcome> {
        let row = runs::get(self.store.pool(), id).await?;
        let now = now_ms();
        let adopting = matches!(row.state, RunState::Running | RunState::PauseRequested);
        // A holder on this machine whose process is gone (crashed, killed) is not waited for.
        let holder_gone = adopting && row.owner.as_deref().is_some_and(crate::worker::is_gone);
        let lease_live =
            adopting && !holder_gone && row.lease_until.is_some_and(|until| until >= now);
        let backing_off = row.state == RunState::Queued && row.not_before.is_some_and(|t| t > now);
        if row.state.is_terminal()
            || row.state.needs_human()
            || lease_live
            || backing_off
            || self.draining()
        {
            return Ok(skipped(&row, now));
        }
        let to = if adopting {
            row.state
        } else {
            run::next(row.state, RunEvent::Start).ok_or_else(|| {
                Error::Conflict(format!("run {id} cannot start from {}", row.state))
            })?
        };

        let mut tx = self.store.begin().await?;
        let claimed = runs::claim(
            &mut tx,
            id,
            &runs::Claim {
                expected_version: row.state_version,
                to,
                owner: &self.worker,
                lease_until: now + self.lease_ms,
                now,
                gone_owner: row.owner.as_deref().filter(|_| holder_gone),
            },
        )
        .await;
        let (fence, _version) = match claimed {
            Ok(claimed) => claimed,
            // Someone else moved first: another worker claimed it, or a person changed it.
            Err(StoreError::StaleState { .. }) => {
                drop(tx);
                return Ok(skipped(&runs::get(self.store.pool(), id).await?, now_ms()));
            }
            Err(e) => return Err(e.into()),
        };
        let mut lost_retry = None;
        if adopting {
            let why = if holder_gone {
                "lost: its worker process is gone"
            } else {
                "lost: lease expired"
            };
            attempts::end_open(&mut tx, id, why, now).await?;
            audit::append(
                &mut tx,
                audit::Event::new(
                    Actor::Harness,
                    Some(id),
                    ev::AttemptLost {
                        worker: row.owner.clone(),
                        why: why.into(),
                        fence: row.fence,
                    },
                ),
                now,
            )
            .await?;
            // A lost worker uses the run's retry budget: a run that keeps killing its worker stops.
            lost_retry = Some(
                store::retries::record(
                    &mut tx,
                    id,
                    now,
                    crate::failure::FailureClass::WorkerLost,
                    why,
                    0,
                )
                .await?,
            );
        }
        let attempt = attempts::start(&mut tx, id, &self.worker, fence, now).await?;
        let begun = ev::AttemptBegun {
            attempt,
            fence,
            worker: self.worker.clone(),
            previous_owner: row.owner.clone(),
            previous_owner_gone: holder_gone,
        };
        audit::append(
            &mut tx,
            audit::Event::new(
                Actor::Harness,
                Some(id),
                if adopting {
                    ev::Kind::AttemptAdopted(begun)
                } else {
                    ev::Kind::AttemptStarted(begun)
                },
            ),
            now,
        )
        .await?;
        if !adopting {
            audit::append(
                &mut tx,
                audit::Event::new(
                    Actor::Harness,
                    Some(id),
                    ev::RunStateChanged {
                        from: Some(row.state),
                        to,
                        step: None,
                    },
                ),
                now,
            )
            .await?;
        }
        tx.commit().await.map_err(crate::store::StoreError::from)?;
        if let Some((n, first)) = lost_retry {
            if !self
                .budget
                .allows(u32::try_from(n).unwrap_or(u32::MAX), now - first)
            {
                let reason = format!(
                    "retry budget exhausted: the run lost its worker or failed transiently {n} times (limit {}); a step may be crashing the worker. `reins show {id}` lists the retries; `reins resume {id}` tries again",
                    self.budget.max_retries
                );
                return self.suspend_owned(id, fence, &reason).await;
            }
        }

        let mut drive = match drive::Drive::start(
            self,
            observer,
            &row,
            fence,
            now + self.lease_ms,
            attempt,
            adopting,
        )
        .await
        {
            Ok(d) => d,
            Err(drive::StartError::Suspend(reason)) => {
                return self.suspend_owned(id, fence, &reason).await;
            }
            Err(drive::StartError::Fatal(e)) => return Err(e),
        };
        match drive.run().await {
            Ok(outcome) => Ok(outcome),
            Err(e) => {
                let class = crate::failure::classify(&e);
                let handled = match class {
                    crate::failure::FailureClass::WorkerLost => {
                        return Ok(DriveOutcome::Lost {
                            reason: e.to_string(),
                        })
                    }
                    crate::failure::FailureClass::Transient => drive.retry_later(&e).await,
                    crate::failure::FailureClass::Resource => {
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

    async fn suspend_owned(&self, id: RunId, fence: i64, reason: &str) -> Result<DriveOutcome> {
        let now = now_ms();
        let mut tx = self.store.begin().await?;
        runs::advance(
            &mut tx,
            id,
            Some(fence),
            RunEvent::Suspend,
            Some(reason),
            now,
        )
        .await?;
        attempts::end_open(&mut tx, id, &format!("suspended: {reason}"), now).await?;
        audit::append(
            &mut tx,
            audit::Event::new(
                Actor::Harness,
                Some(id),
                ev::Reason {
                    reason: reason.into(),
                },
            ),
            now,
        )
        .await?;
        tx.commit().await.map_err(crate::store::StoreError::from)?;
        Ok(DriveOutcome::NeedsHuman {
            state: RunState::Suspended,
            reason: reason.to_owned(),
        })
    }

    /// Runs a worker may take now.
    pub async fn runnable(&self) -> Result<Vec<RunId>> {
        let pool = self.store.pool();
        let gone: Vec<String> = runs::active_owners(pool)
            .await?
            .into_iter()
            .filter(|owner| crate::worker::is_gone(owner))
            .collect();
        Ok(runs::runnable(pool, now_ms(), &gone).await?)
    }
}

/// Why a run was not claimed, for a caller that asked to drive it.
fn skipped(row: &runs::RunRow, now: i64) -> DriveOutcome {
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

#[cfg(test)]
mod tests;
