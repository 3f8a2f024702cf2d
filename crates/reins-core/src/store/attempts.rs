//! The `attempts` table: each execution or recovery of a run.

use super::column::{Json, JsonOpt};
use super::Pool;

use super::decode::{self, Stored};
use super::{Result, Tx};
use crate::ids::RunId;
use crate::resume::RecoverySummary;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AttemptRow {
    pub n: i64,
    pub worker: String,
    pub fence: i64,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub outcome: Option<String>,
    /// The recovery summary this attempt gave its agent, when it resumed the run.
    #[sqlx(try_from = "JsonOpt<RecoverySummary>")]
    pub recovery: Option<RecoverySummary>,
}

impl Stored for AttemptRow {
    const TABLE: &'static str = "attempts";
    const KEY: &'static [&'static str] = &["run_id", "n"];
}

/// Records a new attempt and returns its number (1, 2, …).
pub async fn start(tx: &mut Tx, run: RunId, worker: &str, fence: i64, now: i64) -> Result<i64> {
    let n: i64 = sqlx::query_scalar(
        "INSERT INTO attempts (run_id, n, worker, fence, started_at)
         VALUES ($1, (SELECT COALESCE(MAX(n), 0) + 1 FROM attempts WHERE run_id = $1), $2, $3, $4)
         RETURNING n",
    )
    .bind(run.to_string())
    .bind(worker)
    .bind(fence)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(n)
}

/// Closes every attempt of the run still open (a crashed worker never closed its own).
pub async fn end_open(tx: &mut Tx, run: RunId, outcome: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE attempts SET ended_at = $1, outcome = $2 WHERE run_id = $3 AND ended_at IS NULL",
    )
    .bind(now)
    .bind(outcome)
    .bind(run.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn list(pool: &Pool, run: RunId) -> Result<Vec<AttemptRow>> {
    decode::all(
        &sqlx::query("SELECT * FROM attempts WHERE run_id = $1 ORDER BY n")
            .bind(run)
            .fetch_all(pool)
            .await?,
    )
}

pub async fn set_recovery(
    tx: &mut Tx,
    run: RunId,
    n: i64,
    summary: &RecoverySummary,
) -> Result<()> {
    sqlx::query("UPDATE attempts SET recovery = $1 WHERE run_id = $2 AND n = $3")
        .bind(Json(summary))
        .bind(run.to_string())
        .bind(n)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
