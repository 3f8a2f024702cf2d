//! The memory's writes as a change carries them (`Write::Memory`): each one's reads and writes in
//! the change's one transaction, and what it did reported back for the change's events. A fact is
//! never overwritten: a change is a new version of it.

use super::memory::{self, FactRow, SuggestionRow};
use super::{Result, StoreError, Tx};
use crate::ids::FactId;

#[derive(Clone, Debug)]
pub enum MemoryWrite {
    /// A fact: a new fact, or the next version of the one of its category and key. With
    /// `unless_same`, a fact whose current value is the same is left as it is.
    Fact { row: Box<FactRow>, unless_same: bool },
    /// An agent's doubtful fact, kept for the person; the same proposal made again (a step done
    /// again after a restart) is not a second one.
    Suggestion(Box<SuggestionRow>),
    /// The person accepts suggestion `id`: it becomes a fact (or its next version) at `now`.
    Accept(String),
    /// The person dismisses suggestion `id`: its value is removed.
    Dismiss(String),
    /// Deletes fact `id` and every version of it; `NotFound` when there is none.
    Delete(String),
    /// Deletes every fact and suggestion.
    Clear,
}

/// What the memory's writes did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryWritten {
    /// The fact written (true) or found already holding the value (false).
    pub fact: Option<(FactRow, bool)>,
    /// The suggestion kept (true: new), or taken out to accept or dismiss (false).
    pub suggestion: Option<(SuggestionRow, bool)>,
    /// The category of the fact deleted.
    pub deleted: Option<String>,
    /// Facts and suggestions cleared.
    pub cleared: Option<(u64, u64)>,
}

pub(super) async fn apply(
    tx: &mut Tx,
    w: &MemoryWrite,
    now: i64,
    out: &mut MemoryWritten,
) -> Result<()> {
    match w {
        MemoryWrite::Fact { row, unless_same } => {
            let existing = memory::find(tx, &row.category, &row.key).await?;
            if let Some(current) = existing.as_ref().filter(|f| *unless_same && f.value == row.value)
            {
                out.fact = Some((current.clone(), false));
                return Ok(());
            }
            let row = next_version(existing.as_ref(), (**row).clone());
            memory::put(tx, &row).await?;
            out.fact = Some((row, true));
        }
        MemoryWrite::Suggestion(row) => {
            let same = memory::same_suggestion(
                tx,
                &row.category,
                &row.key,
                &row.value,
                row.run_id.as_deref(),
                row.step_seq,
            )
            .await?;
            out.suggestion = Some(match same {
                Some(same) => (same, false),
                None => {
                    memory::suggest(tx, row).await?;
                    ((**row).clone(), true)
                }
            });
        }
        MemoryWrite::Accept(id) => {
            let s = memory::take_suggestion(tx, id).await?;
            let existing = memory::find(tx, &s.category, &s.key).await?;
            let row = next_version(
                existing.as_ref(),
                FactRow {
                    id: String::new(),
                    category: s.category.clone(),
                    key: s.key.clone(),
                    version: 1,
                    value: s.value.clone(),
                    confidence: s.confidence,
                    origin: "agent".into(),
                    run_id: s.run_id.clone(),
                    step_seq: s.step_seq,
                    source_text: s.source_text.clone(),
                    created_at: now,
                    updated_at: now,
                },
            );
            memory::put(tx, &row).await?;
            out.fact = Some((row, true));
            out.suggestion = Some((s, false));
        }
        MemoryWrite::Dismiss(id) => {
            out.suggestion = Some((memory::take_suggestion(tx, id).await?, false));
        }
        MemoryWrite::Delete(id) => match memory::delete(tx, id).await? {
            Some(category) => out.deleted = Some(category),
            None => {
                return Err(StoreError::NotFound {
                    what: format!("memory fact {id}"),
                })
            }
        },
        MemoryWrite::Clear => out.cleared = Some(memory::clear(tx).await?),
    }
    Ok(())
}

/// `row` as the next version of `existing` (same id, version + 1, first created time), or as a
/// new fact at version 1.
fn next_version(existing: Option<&FactRow>, row: FactRow) -> FactRow {
    match existing {
        Some(f) => FactRow {
            id: f.id.clone(),
            version: f.version + 1,
            created_at: f.created_at,
            ..row
        },
        None => FactRow {
            id: FactId::new().to_string(),
            version: 1,
            ..row
        },
    }
}
