//! The memory tables: facts, their versions, suggestions, and the settings table.

use super::Pool;

use super::{map_not_found, Result, Tx};

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct FactRow {
    pub id: String,
    pub category: String,
    pub key: String,
    pub version: i64,
    pub value: String,
    pub confidence: f64,
    pub origin: String,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub source_text: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct VersionRow {
    pub version: i64,
    pub value: String,
    pub confidence: f64,
    pub origin: String,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub source_text: Option<String>,
    pub created_at: i64,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct SuggestionRow {
    pub id: String,
    pub category: String,
    pub key: String,
    pub value: String,
    pub confidence: f64,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub source_text: Option<String>,
    pub reason: String,
    pub created_at: i64,
}

/// The current version of each fact joined with its facts row.
const CURRENT: &str = "SELECT f.id, f.category, f.key, f.version, v.value, v.confidence, v.origin,
        v.run_id, v.step_seq, v.source_text, f.created_at, f.updated_at
     FROM memory_facts f JOIN memory_versions v ON v.fact_id = f.id AND v.version = f.version";

pub async fn list(pool: &Pool) -> Result<Vec<FactRow>> {
    Ok(
        sqlx::query_as(&format!("{CURRENT} ORDER BY f.category, f.key"))
            .fetch_all(pool)
            .await?,
    )
}

/// A fact's `category/key`, while the fact is there (a deleted fact leaves no trace).
pub async fn name(pool: &Pool, id: &str) -> Result<Option<String>> {
    let row: Option<(String, String)> =
        sqlx::query_as("SELECT category, key FROM memory_facts WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(category, key)| format!("{category}/{key}")))
}

pub async fn get(pool: &Pool, id: &str) -> Result<FactRow> {
    sqlx::query_as(&format!("{CURRENT} WHERE f.id = $1"))
        .bind(id)
        .fetch_one(pool)
        .await
        .map_err(|e| map_not_found(e, || format!("memory fact {id}")))
}

pub async fn find(tx: &mut Tx, category: &str, key: &str) -> Result<Option<FactRow>> {
    Ok(
        sqlx::query_as(&format!("{CURRENT} WHERE f.category = $1 AND f.key = $2"))
            .bind(category)
            .bind(key)
            .fetch_optional(&mut **tx)
            .await?,
    )
}

pub async fn history(pool: &Pool, id: &str) -> Result<Vec<VersionRow>> {
    Ok(sqlx::query_as(
        "SELECT version, value, confidence, origin, run_id, step_seq, source_text, created_at
         FROM memory_versions WHERE fact_id = $1 ORDER BY version DESC",
    )
    .bind(id)
    .fetch_all(pool)
    .await?)
}

/// Writes version `row.version` of fact `row` (creating the fact at version 1).
pub async fn put(tx: &mut Tx, row: &FactRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO memory_facts (id, category, key, version, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at",
    )
    .bind(&row.id)
    .bind(&row.category)
    .bind(&row.key)
    .bind(row.version)
    .bind(row.created_at)
    .bind(row.updated_at)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO memory_versions (fact_id, version, value, confidence, origin, run_id, step_seq, source_text, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&row.id)
    .bind(row.version)
    .bind(&row.value)
    .bind(row.confidence)
    .bind(&row.origin)
    .bind(&row.run_id)
    .bind(row.step_seq)
    .bind(&row.source_text)
    .bind(row.updated_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Removes a fact and every version of it; false when there was none.
pub async fn delete(tx: &mut Tx, id: &str) -> Result<Option<String>> {
    let category: Option<String> =
        sqlx::query_scalar("DELETE FROM memory_facts WHERE id = $1 RETURNING category")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    Ok(category)
}

/// Removes every fact and suggestion: (facts, suggestions) removed.
pub async fn clear(tx: &mut Tx) -> Result<(u64, u64)> {
    let facts = sqlx::query("DELETE FROM memory_facts")
        .execute(&mut **tx)
        .await?
        .rows_affected();
    sqlx::query("DELETE FROM memory_versions")
        .execute(&mut **tx)
        .await?;
    let suggestions = sqlx::query("DELETE FROM memory_suggestions")
        .execute(&mut **tx)
        .await?
        .rows_affected();
    Ok((facts, suggestions))
}

pub async fn suggest(tx: &mut Tx, row: &SuggestionRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO memory_suggestions (id, category, key, value, confidence, run_id, step_seq, source_text, reason, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&row.id)
    .bind(&row.category)
    .bind(&row.key)
    .bind(&row.value)
    .bind(row.confidence)
    .bind(&row.run_id)
    .bind(row.step_seq)
    .bind(&row.source_text)
    .bind(&row.reason)
    .bind(row.created_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn suggestions(pool: &Pool) -> Result<Vec<SuggestionRow>> {
    Ok(
        sqlx::query_as("SELECT * FROM memory_suggestions ORDER BY created_at, id")
            .fetch_all(pool)
            .await?,
    )
}

/// A pending suggestion identical to this one (the same proposal made again), if any.
pub async fn same_suggestion(
    tx: &mut Tx,
    category: &str,
    key: &str,
    value: &str,
    run_id: Option<&str>,
    step_seq: Option<i64>,
) -> Result<Option<SuggestionRow>> {
    Ok(sqlx::query_as(
        "SELECT * FROM memory_suggestions
         WHERE category = $1 AND key = $2 AND value = $3 AND run_id IS NOT DISTINCT FROM $4 AND step_seq IS NOT DISTINCT FROM $5
         LIMIT 1",
    )
    .bind(category)
    .bind(key)
    .bind(value)
    .bind(run_id)
    .bind(step_seq)
    .fetch_optional(&mut **tx)
    .await?)
}

/// Takes a suggestion out (to accept or dismiss it).
pub async fn take_suggestion(tx: &mut Tx, id: &str) -> Result<SuggestionRow> {
    sqlx::query_as("DELETE FROM memory_suggestions WHERE id = $1 RETURNING *")
        .bind(id)
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| map_not_found(e, || format!("memory suggestion {id}")))
}

pub async fn setting(pool: &Pool, key: &str) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(pool)
            .await?,
    )
}

pub async fn set_setting(tx: &mut Tx, key: &str, value: &str, now: i64) -> Result<Option<String>> {
    let old: Option<String> = sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
        .bind(key)
        .fetch_optional(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    )
    .bind(key)
    .bind(value)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(old)
}

/// Moves the WAL's content into the database and empties it, so deleted values leave no copy in
/// the WAL file either. Best effort: a reader holding an old snapshot delays it to a later commit.
/// PostgreSQL has no such file to empty: nothing to do there.
pub async fn checkpoint(pool: &Pool) -> Result<()> {
    if super::Dialect::of(pool) == super::Dialect::Sqlite {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(pool)
            .await?;
    }
    Ok(())
}
