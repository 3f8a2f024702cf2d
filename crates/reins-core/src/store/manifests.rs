//! The `context_manifests` table: what went into each model call's context, and why.

use super::column::Json;
use super::Pool;

use super::decode::{self, Stored};
use super::{Result, Tx};
use crate::context::chain::Record;
use crate::ids::RunId;

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct ManifestRow {
    pub step_seq: i64,
    pub model: String,
    /// Whole, or a change to the previous call's (`context/chain.rs` rebuilds it).
    #[sqlx(try_from = "Json<Record>")]
    pub manifest: Record,
    /// Profile fact ids (ids only: a deleted fact leaves no trace here).
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub facts_used: Vec<String>,
    pub created_at: i64,
}

impl Stored for ManifestRow {
    const TABLE: &'static str = "context_manifests";
    const KEY: &'static [&'static str] = &["step_seq"];
}

pub async fn insert(tx: &mut Tx, run: RunId, row: &ManifestRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO context_manifests (run_id, step_seq, model, manifest, facts_used, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (run_id, step_seq) DO UPDATE SET
           model = excluded.model, manifest = excluded.manifest,
           facts_used = excluded.facts_used, created_at = excluded.created_at",
    )
    .bind(run.to_string())
    .bind(row.step_seq)
    .bind(&row.model)
    .bind(Json(&row.manifest))
    .bind(Json(&row.facts_used))
    .bind(row.created_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The ids of the profile facts the run's latest model call used (none before its first).
pub async fn latest_facts_used(pool: &Pool, run: RunId) -> Result<Vec<String>> {
    let row = sqlx::query(
        "SELECT step_seq, facts_used FROM context_manifests WHERE run_id = $1
          ORDER BY step_seq DESC LIMIT 1",
    )
    .bind(run)
    .fetch_optional(pool)
    .await?;
    Ok(decode::optional::<FactsUsed>(row)?
        .map(|r| r.facts_used)
        .unwrap_or_default())
}

#[derive(sqlx::FromRow)]
struct FactsUsed {
    #[sqlx(try_from = "Json<Vec<String>>")]
    facts_used: Vec<String>,
}

impl Stored for FactsUsed {
    const TABLE: &'static str = "context_manifests";
    const KEY: &'static [&'static str] = &["step_seq"];
}

pub async fn list(pool: &Pool, run: RunId) -> Result<Vec<ManifestRow>> {
    decode::all(
        &sqlx::query(
            "SELECT step_seq, model, manifest, facts_used, created_at FROM context_manifests
              WHERE run_id = $1 ORDER BY step_seq",
        )
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}
