//! The `requests` table: what an agent running outside Reins asks of its run, kept until whoever
//! drives the run hands it to the agent as its next move (a Claude Code hook's tool call, what the
//! tool did, the session's end).

use super::{Pool, Result, StoreError, Tx};
use crate::ids::RunId;

/// One request, as its asker reads it back.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct RequestRow {
    pub id: String,
    /// The request as sent (sealed where it holds a secret).
    pub body: String,
    pub created_at: i64,
    /// When the drive took it; None while it waits.
    pub taken_at: Option<i64>,
    /// The step that decides it (a tool call); None for what is only recorded.
    pub step_seq: Option<i64>,
}

pub(super) async fn insert(tx: &mut Tx, run: RunId, id: &str, body: &str, now: i64) -> Result<()> {
    sqlx::query("INSERT INTO requests (id, run_id, body, created_at) VALUES ($1, $2, $3, $4)")
        .bind(id)
        .bind(run)
        .bind(body)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Marks request `id` taken (by step `seq`, for a tool call); `Conflict` when it was taken or
/// withdrawn meanwhile.
pub(super) async fn taken(tx: &mut Tx, id: &str, seq: Option<i64>, now: i64) -> Result<()> {
    let done = sqlx::query(
        "UPDATE requests SET taken_at = $1, step_seq = $2 WHERE id = $3 AND taken_at IS NULL",
    )
    .bind(now)
    .bind(seq)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!(
            "request {id} was taken or withdrawn meanwhile"
        )));
    }
    Ok(())
}

/// Withdraws request `id` nobody took (its asker stopped waiting); `Conflict` when it was taken.
pub(super) async fn withdraw(tx: &mut Tx, id: &str) -> Result<()> {
    let done = sqlx::query("DELETE FROM requests WHERE id = $1 AND taken_at IS NULL")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!("request {id} was taken")));
    }
    Ok(())
}

/// The oldest request of run `run` nobody took yet, and whether another waits behind it.
pub async fn oldest_open(pool: &Pool, run: RunId) -> Result<Option<(RequestRow, bool)>> {
    let mut rows: Vec<RequestRow> = sqlx::query_as(
        "SELECT id, body, created_at, taken_at, step_seq FROM requests
         WHERE run_id = $1 AND taken_at IS NULL ORDER BY created_at, id LIMIT 2",
    )
    .bind(run)
    .fetch_all(pool)
    .await?;
    let more = rows.len() > 1;
    rows.truncate(1);
    Ok(rows.pop().map(|row| (row, more)))
}

/// Request `id`, if it was not withdrawn.
pub async fn get(pool: &Pool, id: &str) -> Result<Option<RequestRow>> {
    Ok(sqlx::query_as(
        "SELECT id, body, created_at, taken_at, step_seq FROM requests WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?)
}
