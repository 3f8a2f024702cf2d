//! A step's commit in fewer round trips on a shared PostgreSQL, where each statement costs one.
//!
//! A worker's change usually writes its rows, then its checkpoint, then its audit events: one
//! statement each, inside the transaction. When the worker remembers the chain head and the
//! checkpoint seq it last wrote, the checkpoint and the events can be built before anything is
//! sent, and travel as the last parts of the rows' own statement (`dialect::chain_counted`). Each
//! is guarded so that it lands only where the separate statements would have put it: the
//! checkpoint only at the run's next seq, the events only after the remembered head, while the
//! worker still holds the run, and only if the checkpoint landed. A part that did not land is
//! written afterwards the usual way, in the same transaction, so the outcome is the same either
//! way; only the round trips differ.
//!
//! When that one statement is the whole change (a step's intent, or its settling, with its
//! checkpoint and events), it is sent with no transaction around it ([`Whole`]): PostgreSQL runs
//! a lone statement as its own transaction, so `BEGIN` and `COMMIT` cost two round trips for
//! nothing. Such a statement must land whole, or fail and be written again in a transaction.
//!
//! SQLite gains nothing from it (no round trips there), so it is never used on SQLite.

use super::audit::Fast;
use super::checkpoints::{self, NewCheckpoint};
use super::steps::Query;
use super::{DbRow, Tx};

/// A write's own statement (`parts`, counted in group 0) with the `tail`'s parts after them, as
/// one `WITH` statement returning the rows changed by group 0, the checkpoint and the events.
/// With `whole`, the statement commits on its own (`Tx::is_single`) and so must land whole.
pub(super) fn statement(
    parts: &[(&str, Option<usize>)],
    tail: Option<&Tail<'_>>,
    whole: Option<Whole>,
) -> String {
    let extra = tail
        .map(|t| t.parts(parts.len(), whole.is_some()))
        .unwrap_or_default();
    let all: Vec<(&str, Option<usize>)> = parts
        .iter()
        .copied()
        .chain(extra.iter().map(|(sql, group)| (sql.as_str(), *group)))
        .collect();
    match whole {
        None => super::dialect::chain_counted(&all, 3),
        Some(Whole { rows }) => {
            let (checkpoint, events) = tail.map_or((0, 0), |t| {
                (i64::from(t.checkpoint.is_some()), t.events.len() as i64)
            });
            super::dialect::chain_whole(&all, &[rows, Some(checkpoint), Some(events)])
        }
    }
}

/// A step's statement that commits on its own, with no transaction around it (saving the round
/// trips of `BEGIN` and `COMMIT`): it lands whole or fails, and with it everything it did. Whole
/// means its own rows (`rows` of them in group 0, when it says), its checkpoint and every event.
///
/// It runs outside the write lock's transaction, so its guards hold by other means: the run's
/// row is read with a lock (so a fence moved after the statement began is seen, and cannot move
/// before it commits), and its events land only if it takes the write lock without waiting, so
/// a writer holding it is never disturbed. A chain head that moved after the statement began is
/// caught by the events' keys. A statement that fails is written again the usual way, in a
/// transaction (`Engine::commit`).
#[derive(Clone, Copy, Debug)]
pub struct Whole {
    pub rows: Option<i64>,
}

/// Runs a write's statement and reads its one row. A statement that commits on its own is read
/// to its very end: the database commits it after its row is sent, and says so only then.
pub(super) async fn fetch(tx: &mut Tx, q: Query<'_>) -> super::Result<DbRow> {
    if !tx.is_single() {
        return Ok(q.fetch_one(&mut **tx).await?);
    }
    q.fetch_all(&mut **tx)
        .await?
        .into_iter()
        .next()
        .ok_or(sqlx::Error::RowNotFound.into())
}

/// What travels with a write: the change's checkpoint, if any, and its events.
pub struct Tail<'a> {
    checkpoint: Option<(String, i64, &'a NewCheckpoint<'a>)>,
    events: Fast<'a>,
}

/// What of a tail landed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Landed {
    pub checkpoint: bool,
    pub events: bool,
}

impl<'a> Tail<'a> {
    /// `None` unless the owner remembers the chain head (and, with a checkpoint, the last
    /// checkpoint seq, whose successor `events` must already announce).
    pub fn new(
        owner: &'a super::audit::Owner,
        checkpoint: Option<(i64, &'a NewCheckpoint<'a>)>,
        events: &[super::audit::Event],
        now: i64,
        key: Option<&super::vouch::AuditKey>,
    ) -> Option<Self> {
        let events = Fast::of_events(owner, events, now, key)?;
        Some(Self {
            checkpoint: checkpoint.map(|(seq, cp)| (owner.run.to_string(), seq, cp)),
            events,
        })
    }

    /// The parts to add after a write's own, the first of them numbered `first`; groups 1
    /// (the checkpoint) and 2 (the events). `single`: for a statement that commits on its own
    /// (`Whole`).
    pub(super) fn parts(&self, first: usize, single: bool) -> Vec<(String, Option<usize>)> {
        let mut parts = Vec::new();
        let mut also = Vec::new();
        if self.checkpoint.is_some() {
            parts.push((checkpoints::INSERT_AT.to_owned(), Some(1)));
            also.push(format!("EXISTS (SELECT 1 FROM part{first})"));
        }
        if single {
            // Last, so it is tried only when every other guard holds.
            also.push(super::dialect::TRY_WRITE_LOCK.to_owned());
        }
        let also = (!also.is_empty()).then(|| also.join(" AND "));
        parts.push((self.events.sql(also.as_deref(), single), Some(2)));
        parts
    }

    /// Binds the parts' parameters after the write's own.
    pub(super) fn bind<'q>(&'q self, mut q: Query<'q>) -> Query<'q> {
        if let Some((run, seq, cp)) = &self.checkpoint {
            q = checkpoints::bind_insert_at(q, run, *seq, cp);
        }
        self.events.bind(q)
    }

    /// Takes note of what landed (given the rows counted in groups 1 and 2): landed events move
    /// the transaction's head and the owner's.
    pub fn landed(self, tx: &mut Tx, checkpoint_rows: i64, event_rows: i64) -> Landed {
        let checkpoint = self.checkpoint.is_some() && checkpoint_rows == 1;
        let events = usize::try_from(event_rows).ok() == Some(self.events.len())
            && (checkpoint || self.checkpoint.is_none());
        if events {
            self.events.landed(tx);
        }
        Landed { checkpoint, events }
    }
}
