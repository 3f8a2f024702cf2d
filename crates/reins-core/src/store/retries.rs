//! The `retries` table: every retry a run used from its budget.

use super::Pool;

use super::decode::{self, Stored};
use super::{Result, Tx};
use crate::failure::FailureClass;
use crate::ids::RunId;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RetryRow {
    pub n: i64,
    pub at: i64,
    pub class: FailureClass,
    pub error: String,
    pub delay_ms: i64,
}

impl Stored for RetryRow {
    const TABLE: &'static str = "retries";
    const KEY: &'static [&'static str] = &["n"];
}

pub async fn list(pool: &Pool, run: RunId) -> Result<Vec<RetryRow>> {
    decode::all(
        &sqlx::query(
            "SELECT n, at, class, error, delay_ms FROM retries WHERE run_id = $1 ORDER BY n",
        )
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}

/// Records the next retry; returns its number and when the first retry of the run happened.
pub async fn record(
    tx: &mut Tx,
    run: RunId,
    at: i64,
    class: FailureClass,
    error: &str,
    delay_ms: i64,
) -> Result<(i64, i64)> {
    let (count, first): (i64, Option<i64>) =
        sqlx::query_as("SELECT COUNT(*), MIN(at) FROM retries WHERE run_id = $1")
            .bind(run.to_string())
            .fetch_one(&mut **tx)
            .await?;
    let n = count + 1;
    sqlx::query(
        "INSERT INTO retries (run_id, n, at, class, error, delay_ms) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(run.to_string())
    .bind(n)
    .bind(at)
    .bind(class)
    .bind(error)
    .bind(delay_ms)
    .execute(&mut **tx)
    .await?;
    Ok((n, first.unwrap_or(at)))
}
