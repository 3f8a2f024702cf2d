//! A doubtful fact of an agent's waits as a suggestion: the person accepts it (it becomes a fact,
//! keeping where it came from) or dismisses it (its value is removed).

use super::{next_version, Remembered, Result};
use crate::event as ev;
use crate::clock::now_ms;
use crate::store::audit::{self, Actor};
use crate::store::memory::{self as table, FactRow, SuggestionRow};
use crate::store::{Store, StoreError};

pub async fn suggestions(store: &Store) -> Result<Vec<SuggestionRow>> {
    Ok(table::suggestions(store.pool()).await?)
}

/// Accepts a suggestion: it becomes a fact (or a new version), keeping where it came from.
pub async fn accept(store: &Store, id: &str) -> Result<Remembered> {
    let mut tx = store.begin().await?;
    let s = table::take_suggestion(&mut tx, id).await?;
    let now = now_ms();
    let existing = table::find(&mut tx, &s.category, &s.key).await?;
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
    table::put(&mut tx, &row).await?;
    audit::append(
        &mut tx,
        audit::Event::new(
            Actor::User,
            None,
            ev::SuggestionAccepted {
                suggestion: s.id.clone(),
                fact: row.id.clone(),
                category: row.category.clone(),
                version: row.version,
            },
        ),
        now,
    )
    .await?;
    tx.commit().await.map_err(StoreError::from)?;
    Ok(Remembered::Stored { fact: row })
}

/// Dismisses a suggestion: its value is removed.
pub async fn dismiss(store: &Store, id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let s = table::take_suggestion(&mut tx, id).await?;
    audit::append(
        &mut tx,
        audit::Event::new(
            Actor::User,
            None,
            ev::SuggestionDismissed {
                suggestion: s.id.clone(),
                category: s.category.clone(),
            },
        ),
        now_ms(),
    )
    .await?;
    tx.commit().await.map_err(StoreError::from)?;
    table::checkpoint(store.pool()).await?;
    Ok(())
}
