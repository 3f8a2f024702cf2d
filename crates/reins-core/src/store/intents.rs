//! The `intents` table: the effect journal. An intent is committed before its effect runs and settled
//! (confirmed, business_failed, unknown, skipped) after, exactly once: settling is guarded by
//! `status = 'pending'`.

use sqlx::{SqliteExecutor, SqlitePool};

use super::{Result, StoreError, Tx};
use crate::ids::RunId;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentRow {
    pub id: String,
    pub step_seq: i64,
    pub tool: String,
    pub action: String,
    pub action_hash: String,
    pub effect_class: String,
    pub status: String,
    pub pre_images: String,
    pub post_images: String,
    pub result: Option<String>,
    pub settled_by: Option<String>,
    pub fence: i64,
    pub created_at: i64,
    pub settled_at: Option<i64>,
}

pub async fn insert(tx: &mut Tx, run: RunId, intent: &IntentRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO intents (id, run_id, step_seq, tool, action, action_hash, effect_class, status,
                              pre_images, post_images, result, settled_by, fence, created_at, settled_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&intent.id)
    .bind(run.to_string())
    .bind(intent.step_seq)
    .bind(&intent.tool)
    .bind(&intent.action)
    .bind(&intent.action_hash)
    .bind(&intent.effect_class)
    .bind(&intent.status)
    .bind(&intent.pre_images)
    .bind(&intent.post_images)
    .bind(&intent.result)
    .bind(&intent.settled_by)
    .bind(intent.fence)
    .bind(intent.created_at)
    .bind(intent.settled_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Settles the pending intent of a step. Fails if it was already settled: an effect is settled once.
pub async fn settle(
    tx: &mut Tx,
    run: RunId,
    step_seq: i64,
    status: &str,
    result: &str,
    settled_by: Option<&str>,
    now: i64,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE intents SET status = ?, result = ?, settled_by = ?, settled_at = ?
         WHERE run_id = ? AND step_seq = ? AND status = 'pending'",
    )
    .bind(status)
    .bind(result)
    .bind(settled_by)
    .bind(now)
    .bind(run.to_string())
    .bind(step_seq)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "the intent of step {step_seq} of run {run} is not pending; an intent is settled once"
        )))
    }
}

pub async fn pending<'e>(db: impl SqliteExecutor<'e>, run: RunId) -> Result<Vec<IntentRow>> {
    Ok(sqlx::query_as(
        "SELECT * FROM intents WHERE run_id = ? AND status = 'pending' ORDER BY step_seq",
    )
    .bind(run.to_string())
    .fetch_all(db)
    .await?)
}

pub async fn for_step<'e>(
    db: impl SqliteExecutor<'e>,
    run: RunId,
    seq: i64,
) -> Result<Option<IntentRow>> {
    Ok(
        sqlx::query_as("SELECT * FROM intents WHERE run_id = ? AND step_seq = ?")
            .bind(run.to_string())
            .bind(seq)
            .fetch_optional(db)
            .await?,
    )
}

pub async fn list(pool: &SqlitePool, run: RunId) -> Result<Vec<IntentRow>> {
    Ok(
        sqlx::query_as("SELECT * FROM intents WHERE run_id = ? ORDER BY step_seq")
            .bind(run.to_string())
            .fetch_all(pool)
            .await?,
    )
}

/// Pre- and post-image lists of every intent (for the blob store's consistency check).
pub async fn all_images(pool: &SqlitePool) -> Result<Vec<(String, String)>> {
    Ok(
        sqlx::query_as("SELECT pre_images, post_images FROM intents")
            .fetch_all(pool)
            .await?,
    )
}
