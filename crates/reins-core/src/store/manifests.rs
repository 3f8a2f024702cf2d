//! The `context_manifests` table: what went into each model call's context, and why.

use serde::Serialize;
use sqlx::SqlitePool;

use super::{Result, Tx};
use crate::ids::RunId;

#[derive(Clone, Debug, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct ManifestRow {
    pub step_seq: i64,
    pub model: String,
    /// JSON (`context::Manifest`).
    pub manifest: String,
    /// JSON array of profile fact ids.
    pub facts_used: String,
    pub created_at: i64,
}

pub async fn insert(tx: &mut Tx, run: RunId, row: &ManifestRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO context_manifests (run_id, step_seq, model, manifest, facts_used, created_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id, step_seq) DO UPDATE SET
           model = excluded.model, manifest = excluded.manifest,
           facts_used = excluded.facts_used, created_at = excluded.created_at",
    )
    .bind(run.to_string())
    .bind(row.step_seq)
    .bind(&row.model)
    .bind(&row.manifest)
    .bind(&row.facts_used)
    .bind(row.created_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn list(pool: &SqlitePool, run: RunId) -> Result<Vec<ManifestRow>> {
    Ok(sqlx::query_as(
        "SELECT step_seq, model, manifest, facts_used, created_at FROM context_manifests
          WHERE run_id = ? ORDER BY step_seq",
    )
    .bind(run.to_string())
    .fetch_all(pool)
    .await?)
}
