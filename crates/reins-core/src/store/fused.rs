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
//! SQLite gains nothing from it (no round trips there), so it is never used on SQLite.

use super::audit::Fast;
use super::checkpoints::{self, NewCheckpoint};
use super::steps::Query;
use super::Tx;

/// A write's own statement (`parts`, counted in group 0) with the `tail`'s parts after them, as
/// one `WITH` statement returning the rows changed by group 0, the checkpoint and the events.
pub(super) fn statement(parts: &[(&str, Option<usize>)], tail: Option<&Tail<'_>>) -> String {
    let extra = tail.map(|t| t.parts(parts.len())).unwrap_or_default();
    let all: Vec<(&str, Option<usize>)> = parts
        .iter()
        .copied()
        .chain(extra.iter().map(|(sql, group)| (sql.as_str(), *group)))
        .collect();
    super::dialect::chain_counted(&all, 3)
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
    ) -> Option<Self> {
        let events = Fast::of_events(owner, events, now)?;
        Some(Self {
            checkpoint: checkpoint.map(|(seq, cp)| (owner.run.to_string(), seq, cp)),
            events,
        })
    }

    /// The parts to add after a write's own, the first of them numbered `first`; groups 1
    /// (the checkpoint) and 2 (the events).
    pub(super) fn parts(&self, first: usize) -> Vec<(String, Option<usize>)> {
        let mut parts = Vec::new();
        let mut also = None;
        if self.checkpoint.is_some() {
            parts.push((checkpoints::INSERT_AT.to_owned(), Some(1)));
            also = Some(format!("EXISTS (SELECT 1 FROM part{first})"));
        }
        parts.push((self.events.sql(also.as_deref()), Some(2)));
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
