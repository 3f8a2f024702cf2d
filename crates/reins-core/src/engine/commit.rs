//! The one commit path. Every durable change the engine makes is a [`Change`] value — the rows it
//! writes, the checkpoint it records, its audit events, the run's transition and the end of the
//! open attempt — and [`Engine::commit`] applies it in one transaction, always in that order, then
//! tells the observer what happened, only after the commit. A worker's change is committed as its
//! owner: appending its events proves it still holds the run (the fence check), so a stale worker's
//! change commits nothing.

use crate::event::{self as ev, Actor};
use crate::checkpoint::{self, Checkpoint, Level};
use crate::clock::now_ms;
use crate::error::Result;
use crate::ids::RunId;
use crate::store::write::{self, Moved, Transition, Write, Written};
use crate::store::fused::{Landed, Tail};
use crate::store::{audit, checkpoints};

use super::{Engine, Observer, Progress};

/// A checkpoint to write with a change: sealed and encoded when the change commits.
pub(crate) struct Prepared {
    pub(super) level: Level,
    cp: Box<Checkpoint>,
    /// The agent's history entries this checkpoint is the first to cover: (first index, entries),
    /// written in the same transaction.
    pub(super) history: Option<(i64, Vec<String>)>,
}

/// A checkpoint's bytes, ready to insert (a large payload is already in the blob store).
pub(super) struct Encoded {
    level: Level,
    bytes: Vec<u8>,
    sha256: String,
    in_blob: bool,
}

impl Encoded {
    #[cfg(test)]
    pub(super) fn in_blob(&self) -> bool {
        self.in_blob
    }
}

/// Builds events from what the change did (a transition's from and to, the approvals it closed).
pub(super) type Announce = Box<dyn FnOnce(&Applied) -> Vec<audit::Event> + Send>;

/// One durable change of one run.
#[derive(Default)]
pub(super) struct Change {
    pub rows: Vec<Write>,
    pub checkpoint: Option<Prepared>,
    pub events: Vec<audit::Event>,
    pub transition: Option<Transition>,
    /// Events that depend on the transition's outcome, appended after it.
    pub announce: Option<Announce>,
    /// Ends the run's open attempt with this outcome.
    pub end_attempt: Option<String>,
    pub report: Vec<Report>,
}

/// Something to tell the observer once the change is committed.
pub(super) enum Report {
    Now(Progress),
    /// A finished step, told with the seq of the checkpoint the change wrote.
    Step {
        seq: i64,
        tool: String,
        status: crate::step::StepStatus,
        why: Option<String>,
        summary: String,
        reused: bool,
    },
}

/// What a committed change did.
#[derive(Clone, Debug, Default)]
pub(super) struct Applied {
    pub checkpoint: Option<i64>,
    pub moved: Option<Moved>,
    pub written: Written,
}

impl Change {
    pub fn rows(rows: Vec<Write>) -> Self {
        Self {
            rows,
            ..Self::default()
        }
    }

    pub fn event(mut self, event: audit::Event) -> Self {
        self.events.push(event);
        self
    }

    pub fn events(mut self, events: impl IntoIterator<Item = audit::Event>) -> Self {
        self.events.extend(events);
        self
    }

    pub fn checkpoint(mut self, prepared: Prepared) -> Self {
        self.checkpoint = Some(prepared);
        self
    }

    pub fn moving(mut self, transition: Transition) -> Self {
        self.transition = Some(transition);
        self
    }

    pub fn announcing(mut self, announce: Announce) -> Self {
        self.announce = Some(announce);
        self
    }

    pub fn ending_attempt(mut self, outcome: impl Into<String>) -> Self {
        self.end_attempt = Some(outcome.into());
        self
    }

    pub fn report(mut self, report: Report) -> Self {
        self.report.push(report);
        self
    }
}

impl Engine {
    /// Writes a change's one row-write with its tail as one statement that commits on its own.
    /// `None` when the database refused it (nothing was written then: a failed statement
    /// commits nothing): the caller writes it again the usual way. An error that leaves the
    /// outcome unknown (the connection lost) is returned.
    async fn apply_single(
        &self,
        run: Option<RunId>,
        rows: &[Write],
        now: i64,
        tail: Option<&Tail<'_>>,
    ) -> Result<Option<(crate::store::Tx, (Written, Option<(i64, i64)>))>> {
        let mut tx = self.store.begin_single().await?;
        match write::apply_with(&mut tx, run, rows, now, tail).await {
            Ok(applied) => Ok(Some((tx, applied))),
            Err(crate::store::StoreError::Sqlx(sqlx::Error::Database(e))) => {
                tracing::debug!(error = %e, "a step's single-statement commit was refused; writing it in a transaction");
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A checkpoint to write with a change, as it is now.
    pub(crate) fn prepare(&self, cp: &Checkpoint, level: Level) -> Result<Prepared> {
        Ok(Prepared {
            level,
            cp: Box::new(cp.clone()),
            history: None,
        })
    }

    /// Seals the secrets a checkpoint holds (the agent's state; the step summaries, which are for
    /// people, are redacted) and encodes it; payloads over the inline limit go to the blob store
    /// (durably) first.
    pub(super) async fn encode(&self, p: Prepared) -> Result<Encoded> {
        let Prepared { level, mut cp, .. } = p;
        for done in &mut cp.completed {
            if let std::borrow::Cow::Owned(s) = crate::secrets::redact(&done.summary) {
                done.summary = s;
            }
        }
        cp.agent = self.sealed_value(&cp.agent, "the agent's checkpointed state").await?;
        let (bytes, digest) = checkpoint::encode(&cp);
        let in_blob = bytes.len() > checkpoint::INLINE_LIMIT;
        if in_blob {
            self.blobs.put(&bytes).await?;
        }
        Ok(Encoded {
            level,
            bytes,
            sha256: digest.as_str().to_owned(),
            in_blob,
        })
    }

    /// Applies `change` to `run` in one transaction: rows, checkpoint, events (as `owner` when a
    /// worker commits it), transition, announced events, attempt end; commits; then reports.
    pub(super) async fn commit(
        &self,
        run: Option<RunId>,
        change: Change,
        owner: Option<&audit::Owner>,
        observer: &dyn Observer,
    ) -> Result<Applied> {
        let Change {
            mut rows,
            mut checkpoint,
            mut events,
            transition,
            announce,
            end_attempt,
            report,
        } = change;
        if let Some((from, entries)) = checkpoint.as_mut().and_then(|p| p.history.take()) {
            rows.push(Write::History { from, entries });
        }
        let rows = self.sealed(rows).await?;
        let checkpoint = match checkpoint {
            Some(p) => Some(self.encode(p).await?),
            None => None,
        };
        let now = now_ms();
        // Only a step's own doing in a run this worker holds: no change of state, announcement or
        // attempt's end. Such a commit wakes no other process (`write::steps_own`).
        let step_only = owner.is_some()
            && transition.is_none()
            && announce.is_none()
            && end_attempt.is_none();
        let new_checkpoint = checkpoint.as_ref().map(|p| checkpoints::NewCheckpoint {
            level: p.level,
            schema_version: checkpoint::SCHEMA_VERSION,
            body: if p.in_blob {
                checkpoints::Body::Blob(&p.sha256)
            } else {
                checkpoints::Body::Inline(&p.bytes)
            },
            size: i64::try_from(p.bytes.len()).unwrap_or(i64::MAX),
            sha256: &p.sha256,
            created_at: now,
        });
        let written = |seq: i64, p: &Encoded| -> Result<audit::Event> {
            Ok(audit::Event::new(
                Actor::Harness,
                Some(write::of_run(run)?),
                ev::CheckpointWritten {
                    seq,
                    level: p.level,
                    sha256: p.sha256.clone(),
                    size: p.bytes.len(),
                },
            ))
        };
        // On a shared PostgreSQL a worker's checkpoint and events travel in its rows' statement
        // when it can tell in advance where they go (`store::fused`): `predicted` is the seq its
        // checkpoint is foreseen at, announced already in `events`.
        let mut predicted = None;
        let tail = match owner {
            Some(o)
                if self.store.dialect() == crate::store::Dialect::Postgres
                    && step_only
                    && write::carries_tail(&rows)
                    && (checkpoint.is_some() || !events.is_empty()) =>
            {
                match (&checkpoint, &new_checkpoint, o.last_checkpoint()) {
                    (None, _, _) => Tail::new(o, None, &events, now),
                    (Some(p), Some(cp), Some(last)) => {
                        predicted = Some(last + 1);
                        events.push(written(last + 1, p)?);
                        Tail::new(o, Some((last + 1, cp)), &events, now)
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let quiet = step_only && write::steps_own(&rows);
        // The whole change in one statement, checkpoint and events included (a tail carries a
        // checkpoint only where it foresaw its seq): it can commit on its own, with no
        // transaction around it (`fused::Whole`).
        let single = quiet && rows.len() == 1 && tail.is_some();
        let done = if single {
            self.apply_single(run, &rows, now, tail.as_ref()).await?
        } else {
            None
        };
        let (mut tx, (written_rows, carried)) = match done {
            Some(done) => done,
            None => {
                let mut tx = if quiet {
                    self.store.begin_quiet().await?
                } else {
                    self.store.begin().await?
                };
                let applied = write::apply_with(&mut tx, run, &rows, now, tail.as_ref()).await?;
                (tx, applied)
            }
        };
        let landed = match (tail, carried) {
            (Some(tail), Some((checkpoint_rows, event_rows))) => {
                tail.landed(&mut tx, checkpoint_rows, event_rows)
            }
            _ => Landed::default(),
        };
        if tx.is_single() && !(landed.events && (landed.checkpoint || checkpoint.is_none())) {
            // The statement fails unless it lands whole, so this cannot be; if it were, the
            // rest could not be written with it.
            return Err(crate::store::StoreError::Invalid(
                "a step's single-statement commit landed in part".into(),
            )
            .into());
        }
        let mut applied = Applied {
            written: written_rows,
            ..Applied::default()
        };
        if let (Some(p), Some(cp)) = (&checkpoint, &new_checkpoint) {
            let seq = match predicted {
                Some(seq) if landed.checkpoint => seq,
                _ => {
                    if predicted.is_some() {
                        // It did not land where foreseen: announce where it does.
                        events.pop();
                    }
                    let seq = checkpoints::insert(&mut tx, write::of_run(run)?, cp).await?;
                    events.push(written(seq, p)?);
                    seq
                }
            };
            if let Some(o) = owner {
                o.wrote_checkpoint(seq);
            }
            applied.checkpoint = Some(seq);
        }
        if !events.is_empty() && !landed.events {
            audit::append_all(&mut tx, owner, &events, now).await?;
        }
        if let Some(t) = &transition {
            applied.moved =
                Some(write::transition(&mut tx, run, owner.map(|o| o.fence), t, now).await?);
        }
        if let Some(announce) = announce {
            let later = announce(&applied);
            if !later.is_empty() {
                // The transition (fenced for a worker) already proved who writes.
                audit::append_all(&mut tx, None, &later, now).await?;
            }
        }
        if let Some(outcome) = &end_attempt {
            crate::store::attempts::end_open(&mut tx, write::of_run(run)?, outcome, now).await?;
        }
        tx.commit().await.map_err(crate::store::StoreError::from)?;
        for r in report {
            observer.on(&match r {
                Report::Now(p) => p,
                Report::Step {
                    seq,
                    tool,
                    status,
                    why,
                    summary,
                    reused,
                } => Progress::Step {
                    seq,
                    tool,
                    status,
                    why,
                    summary,
                    checkpoint: applied.checkpoint.unwrap_or(0),
                    reused,
                },
            });
        }
        Ok(applied)
    }
}
