//! The `processes` table: child processes tools started for a run.

use super::Pool;

use super::decode::{self, Stored};
use super::Result;
use crate::ids::RunId;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ProcessRow {
    pub step_seq: i64,
    pub pid: i64,
    pub start_time: i64,
    pub pgid: i64,
    pub command: String,
}

impl Stored for ProcessRow {
    const TABLE: &'static str = "processes";
    const KEY: &'static [&'static str] = &["step_seq", "pid"];
}

pub struct NewProcess<'a> {
    pub step_seq: i64,
    pub pid: u32,
    pub start_time: u64,
    pub pgid: u32,
    pub command: &'a str,
    pub now: i64,
}

/// Records a started process (right after spawning it).
pub async fn record(pool: &Pool, run: RunId, p: &NewProcess<'_>) -> Result<()> {
    sqlx::query(
        "INSERT INTO processes (run_id, step_seq, pid, start_time, pgid, command, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(run.to_string())
    .bind(p.step_seq)
    .bind(i64::from(p.pid))
    .bind(i64::try_from(p.start_time).unwrap_or(i64::MAX))
    .bind(i64::from(p.pgid))
    .bind(p.command)
    .bind(p.now)
    .execute(pool)
    .await?;
    Ok(())
}

/// Processes of the run not known to have ended.
pub async fn open(pool: &Pool, run: RunId) -> Result<Vec<ProcessRow>> {
    decode::all(
        &sqlx::query(
            "SELECT step_seq, pid, start_time, pgid, command
             FROM processes WHERE run_id = $1 AND ended_at IS NULL ORDER BY started_at",
        )
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}

pub async fn end(
    tx: &mut super::Tx,
    run: RunId,
    step_seq: i64,
    pid: i64,
    outcome: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE processes SET ended_at = $1, outcome = $2 WHERE run_id = $3 AND step_seq = $4 AND pid = $5",
    )
    .bind(now)
    .bind(outcome)
    .bind(run.to_string())
    .bind(step_seq)
    .bind(pid)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Marks every process a step started as ended with the step (its group was ended when it finished).
pub async fn end_step(tx: &mut super::Tx, run: RunId, step_seq: i64, now: i64) -> Result<()> {
    bind_end_step(sqlx::query(END_STEP), run, step_seq, now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub(crate) const END_STEP: &str = "UPDATE processes SET ended_at = $1, outcome = 'ended with its step'
     WHERE run_id = $2 AND step_seq = $3 AND ended_at IS NULL";

pub(crate) fn bind_end_step(
    q: super::steps::Query<'_>,
    run: RunId,
    step_seq: i64,
    now: i64,
) -> super::steps::Query<'_> {
    q.bind(now).bind(run.to_string()).bind(step_seq)
}
