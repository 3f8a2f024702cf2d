//! One durable change, applied whole: the rows it writes, the checkpoint it records, its audit
//! events, the run's transition and the end of the open attempt, always in that order. The store
//! alone chooses how it lands: one statement sent alone (a step's intent or settling on a shared
//! PostgreSQL, with its checkpoint and events), a quiet transaction (a step's own rows, which wake
//! nobody), or a transaction that wakes every waiter. A worker's change is applied as its owner:
//! appending its events proves it still holds the run (the fence check), so a stale worker's
//! change commits nothing.

use crate::checkpoint::{Level, SCHEMA_VERSION};
use crate::event::{self as ev, Actor};
use crate::ids::RunId;

use super::audit::{self, Event, Owner};
use super::checkpoints::{self, Body, NewCheckpoint};
use super::fused::{Landed, Tail};
use super::write::{self, Moved, Transition, Write, Written};
use super::{attempts, Result, Store, StoreError, Tx};

/// A checkpoint's bytes, ready to insert (a large payload is already in the blob store).
#[derive(Clone, Debug)]
pub struct Encoded {
    pub level: Level,
    pub bytes: Vec<u8>,
    pub sha256: String,
    /// The bytes are in the blob store under `sha256`; the row names them.
    pub in_blob: bool,
}

/// Builds events from what the change did (a transition's from and to, the approvals it closed).
pub type Announce = Box<dyn FnOnce(&Applied) -> Vec<Event> + Send>;

/// One durable change of one run (or of none: a person's settings, the memory, the log itself).
#[derive(Default)]
pub struct Change {
    pub rows: Vec<Write>,
    pub checkpoint: Option<Encoded>,
    pub events: Vec<Event>,
    pub transition: Option<Transition>,
    /// Events that depend on what the change did, appended after it.
    pub announce: Option<Announce>,
    /// Ends the run's open attempt with this outcome.
    pub end_attempt: Option<String>,
    /// A step's own change the disk can settle: it rides with the next durable commit
    /// (`Store::begin_riding`).
    pub rides: bool,
}

/// What a committed change did.
#[derive(Clone, Debug, Default)]
pub struct Applied {
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

    pub fn event(mut self, event: Event) -> Self {
        self.events.push(event);
        self
    }


    pub fn announcing(mut self, announce: Announce) -> Self {
        self.announce = Some(announce);
        self
    }

    /// Only a step's own doing in a run its worker holds (`owned`): no change of state,
    /// announcement or attempt's end.
    fn step_only(&self, owned: bool) -> bool {
        owned && self.transition.is_none() && self.announce.is_none() && self.end_attempt.is_none()
    }

    /// A step's own doing that writes only its own rows: its commit wakes no other process
    /// (`write::steps_own`).
    fn quiet(&self, owned: bool) -> bool {
        self.step_only(owned) && write::steps_own(&self.rows)
    }

    /// Its rows, and what is written after them.
    fn split(self) -> (Vec<Write>, Rest) {
        let Change {
            rows,
            checkpoint,
            events,
            transition,
            announce,
            end_attempt,
            rides: _,
        } = self;
        let rest = Rest {
            checkpoint,
            events,
            transition,
            announce,
            end_attempt,
        };
        (rows, rest)
    }
}

impl Store {
    /// Applies `change` to `run`: rows, checkpoint, events (as `owner` when a worker commits it),
    /// transition, announced events, attempt end; all of it or, on any error, none.
    pub async fn apply(
        &self,
        run: Option<RunId>,
        change: Change,
        owner: Option<&Owner>,
    ) -> Result<Applied> {
        let now = crate::clock::now_ms();
        let step_only = change.step_only(owner.is_some());
        let quiet = change.quiet(owner.is_some());
        let rides = change.rides;
        let (rows, mut rest) = change.split();
        let new_checkpoint = rest.checkpoint.as_ref().map(|p| new_checkpoint(p, now));
        // On a shared PostgreSQL a worker's checkpoint and events travel in its rows' statement
        // when it can tell in advance where they go (`fused`): `predicted` is the seq its
        // checkpoint is foreseen at, announced already in `events`.
        let mut predicted = None;
        let key = match owner {
            Some(_) if self.shared() && step_only => self.vouch.key().await,
            _ => None,
        };
        let tail = match owner {
            Some(o)
                if self.shared()
                    && step_only
                    && write::carries_tail(&rows)
                    && (rest.checkpoint.is_some() || !rest.events.is_empty()) =>
            {
                match (&rest.checkpoint, &new_checkpoint, o.last_checkpoint()) {
                    (None, _, _) => Tail::new(o, None, &rest.events, now, key.as_deref()),
                    (Some(p), Some(cp), Some(last)) => {
                        predicted = Some(last + 1);
                        rest.events.push(written_event(run, last + 1, p)?);
                        Tail::new(o, Some((last + 1, cp)), &rest.events, now, key.as_deref())
                    }
                    _ => None,
                }
            }
            _ => None,
        };
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
                let mut tx = self.begin_for(quiet, rides).await?;
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
        if tx.is_single() && !(landed.events && (landed.checkpoint || rest.checkpoint.is_none())) {
            // The statement fails unless it lands whole, so this cannot be; if it were, the
            // rest could not be written with it.
            return Err(StoreError::Invalid(
                "a step's single-statement commit landed in part".into(),
            ));
        }
        let applied = finish_in(
            &mut tx,
            run,
            owner,
            rest,
            written_rows,
            (predicted, landed),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(applied)
    }

    /// Applies `changes` to `run`, in order, in one transaction: all of them or none. A file
    /// effect's confirmation held back by the drive goes with its next change this way, so the
    /// step costs one commit (see `Store::holds_riding`). Only a local database: no change is
    /// fused into one statement here. The transaction is durable unless every change rides.
    pub async fn apply_together(
        &self,
        run: Option<RunId>,
        changes: Vec<Change>,
        owner: Option<&Owner>,
    ) -> Result<Vec<Applied>> {
        let now = crate::clock::now_ms();
        let quiet = changes.iter().all(|c| c.quiet(owner.is_some()));
        let rides = changes.iter().all(|c| c.rides);
        let mut tx = self.begin_for(quiet, rides).await?;
        let mut out = Vec::with_capacity(changes.len());
        for change in changes {
            let (rows, rest) = change.split();
            let (written, _) = write::apply_with(&mut tx, run, &rows, now, None).await?;
            let applied = finish_in(
                &mut tx,
                run,
                owner,
                rest,
                written,
                (None, Landed::default()),
                now,
            )
            .await?;
            out.push(applied);
        }
        tx.commit().await?;
        Ok(out)
    }

    /// A write transaction of the kind a change needs: one that rides with the next durable
    /// commit, a quiet one (a step's own rows, which wake nobody), or one that wakes every waiter.
    async fn begin_for(&self, quiet: bool, rides: bool) -> Result<Tx> {
        if quiet && rides {
            self.begin_riding().await
        } else if quiet {
            self.begin_quiet().await
        } else {
            self.begin().await
        }
    }

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
    ) -> Result<Option<(Tx, (Written, Option<(i64, i64)>))>> {
        let mut tx = self.begin_single().await?;
        match write::apply_with(&mut tx, run, rows, now, tail).await {
            Ok(applied) => Ok(Some((tx, applied))),
            Err(StoreError::Sqlx(sqlx::Error::Database(e))) => {
                tracing::debug!(error = %e, "a step's single-statement commit was refused; writing it in a transaction");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl Store {
    /// Several changes, each to its own run, in one transaction: every one lands, or none does
    /// (a person's decisions on several cards at once). Each is a person's change: rows, events
    /// and a transition, no checkpoint, announcement or attempt's end.
    pub async fn apply_all(&self, changes: Vec<(RunId, Change)>) -> Result<Vec<Applied>> {
        let now = crate::clock::now_ms();
        let mut tx = self.begin().await?;
        let mut out = Vec::with_capacity(changes.len());
        for (run, change) in changes {
            let (rows, rest) = change.split();
            if rest.checkpoint.is_some() || rest.announce.is_some() || rest.end_attempt.is_some() {
                return Err(StoreError::Invalid(
                    "a change applied with others carries rows, events and a transition only"
                        .into(),
                ));
            }
            let (written, _) = write::apply_with(&mut tx, Some(run), &rows, now, None).await?;
            if !rest.events.is_empty() {
                audit::append_all(&mut tx, None, &rest.events, now).await?;
            }
            let moved = match &rest.transition {
                Some(t) => Some(write::transition(&mut tx, Some(run), None, t, now).await?),
                None => None,
            };
            out.push(Applied {
                checkpoint: None,
                moved,
                written,
            });
        }
        tx.commit().await?;
        Ok(out)
    }
}

/// What a change writes after its rows: its checkpoint, its events, the run's transition, the
/// announced events and the attempt's end.
struct Rest {
    checkpoint: Option<Encoded>,
    events: Vec<Event>,
    transition: Option<Transition>,
    announce: Option<Announce>,
    end_attempt: Option<String>,
}

/// Writes the rest of a change whose rows are written, in `tx`: the checkpoint (unless it
/// `landed` where `predicted`), the events (unless they landed), the transition, the announced
/// events and the attempt's end, always in that order.
async fn finish_in(
    tx: &mut Tx,
    run: Option<RunId>,
    owner: Option<&Owner>,
    rest: Rest,
    written_rows: Written,
    (predicted, landed): (Option<i64>, Landed),
    now: i64,
) -> Result<Applied> {
    let Rest {
        checkpoint,
        mut events,
        transition,
        announce,
        end_attempt,
    } = rest;
    let mut applied = Applied {
        written: written_rows,
        ..Applied::default()
    };
    if let Some(p) = &checkpoint {
        let seq = match predicted {
            Some(seq) if landed.checkpoint => seq,
            _ => {
                if predicted.is_some() {
                    // It did not land where foreseen: announce where it does.
                    events.pop();
                }
                let row = new_checkpoint(p, now);
                let seq = checkpoints::insert(tx, write::of_run(run)?, &row).await?;
                events.push(written_event(run, seq, p)?);
                seq
            }
        };
        if let Some(o) = owner {
            o.wrote_checkpoint(seq);
        }
        applied.checkpoint = Some(seq);
    }
    if !events.is_empty() && !landed.events {
        audit::append_all(tx, owner, &events, now).await?;
    }
    if let Some(t) = &transition {
        applied.moved = Some(write::transition(tx, run, owner.map(|o| o.fence), t, now).await?);
    }
    if let Some(announce) = announce {
        let later = announce(&applied);
        if !later.is_empty() {
            // The transition (fenced for a worker) already proved who writes.
            audit::append_all(tx, None, &later, now).await?;
        }
    }
    if let Some(outcome) = &end_attempt {
        attempts::end_open(tx, write::of_run(run)?, outcome, now).await?;
    }
    Ok(applied)
}

/// The event that says a checkpoint was written at `seq`.
fn written_event(run: Option<RunId>, seq: i64, p: &Encoded) -> Result<Event> {
    Ok(Event::new(
        Actor::Harness,
        Some(write::of_run(run)?),
        ev::CheckpointWritten {
            seq,
            level: p.level,
            sha256: p.sha256.clone(),
            size: p.bytes.len(),
        },
    ))
}

/// A checkpoint's row, as `p` encodes it, written at `now`.
fn new_checkpoint(p: &Encoded, now: i64) -> NewCheckpoint<'_> {
    NewCheckpoint {
        level: p.level,
        schema_version: SCHEMA_VERSION,
        body: if p.in_blob {
            Body::Blob(&p.sha256)
        } else {
            Body::Inline(&p.bytes)
        },
        size: i64::try_from(p.bytes.len()).unwrap_or(i64::MAX),
        sha256: &p.sha256,
        created_at: now,
    }
}
