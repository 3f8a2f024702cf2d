//! A doubtful fact of an agent's waits as a suggestion: the person accepts it (it becomes a fact,
//! keeping where it came from) or dismisses it (its value is removed).

use super::{Remembered, Result};
use crate::event as ev;
use crate::store::audit::{self, Actor};
use crate::store::change::Change;
use crate::store::memory::{self as table, SuggestionRow};
use crate::store::memory_write::MemoryWrite;
use crate::store::write::Write;
use crate::store::{Store, StoreError};

pub async fn suggestions(store: &Store) -> Result<Vec<SuggestionRow>> {
    Ok(table::suggestions(store.pool()).await?)
}

/// Accepts a suggestion: it becomes a fact (or a new version), keeping where it came from.
pub async fn accept(store: &Store, id: &str) -> Result<Remembered> {
    let change = Change::rows(vec![Write::Memory(MemoryWrite::Accept(id.into()))]).announcing(
        Box::new(|applied| {
            let memory = &applied.written.memory;
            match (&memory.suggestion, &memory.fact) {
                (Some((s, _)), Some((row, _))) => vec![audit::Event::new(
                    Actor::User,
                    None,
                    ev::SuggestionAccepted {
                        suggestion: s.id.clone(),
                        fact: row.id.clone(),
                        category: row.category.clone(),
                        version: row.version,
                    },
                )],
                _ => Vec::new(),
            }
        }),
    );
    let applied = store.apply(None, change, None).await?;
    let (fact, _) = applied
        .written
        .memory
        .fact
        .ok_or_else(|| StoreError::Invalid("the accepted fact was not reported written".into()))?;
    Ok(Remembered::Stored { fact })
}

/// Dismisses a suggestion: its value is removed.
pub async fn dismiss(store: &Store, id: &str) -> Result<()> {
    let change = Change::rows(vec![Write::Memory(MemoryWrite::Dismiss(id.into()))]).announcing(
        Box::new(|applied| match &applied.written.memory.suggestion {
            Some((s, _)) => vec![audit::Event::new(
                Actor::User,
                None,
                ev::SuggestionDismissed {
                    suggestion: s.id.clone(),
                    category: s.category.clone(),
                },
            )],
            None => Vec::new(),
        }),
    );
    store.apply(None, change, None).await?;
    table::checkpoint(store.pool()).await?;
    Ok(())
}
