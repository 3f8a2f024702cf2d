//! The `steps` table: one row per action an agent proposed.

use super::column::{Json, JsonOpt};
use super::{Executor, Pool};

use super::decode::{self, Stored};
use super::{Result, Tx};
use crate::ids::RunId;
use crate::policy::Risk;
use crate::step::{StepKind, StepStatus};
use crate::action::RecordedCall;

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct StepRow {
    pub seq: i64,
    pub kind: StepKind,
    pub tool: String,
    /// What was proposed, as the canonical text its hash is taken over.
    pub action: RecordedCall,
    pub action_hash: String,
    pub why: Option<String>,
    pub status: StepStatus,
    pub risk: Option<Risk>,
    #[sqlx(try_from = "JsonOpt<Vec<String>>")]
    pub reasons: Option<Vec<String>>,
    pub preview: Option<String>,
    pub result: Option<String>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

impl Stored for StepRow {
    const TABLE: &'static str = "steps";
    const KEY: &'static [&'static str] = &["run_id", "seq"];
}

impl StepRow {
    /// The result's first line, for people; a model call's is what the model said or called, an
    /// agent brief's what went into it.
    pub fn summary_line(&self) -> String {
        let result = self.result.as_deref().unwrap_or("");
        if self.kind == StepKind::Prompt {
            let facts = self.action.call().args["facts"].as_u64().unwrap_or(0);
            return crate::step::brief_summary(facts);
        }
        if self.kind == StepKind::ModelCall {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(result) {
                let calls: Vec<&str> = v["reply"]["toolCalls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["name"].as_str())
                    .collect();
                let said = v["reply"]["text"].as_str().unwrap_or("").trim();
                let said = said.lines().next().unwrap_or("");
                return match (said.is_empty(), calls.is_empty()) {
                    (_, false) if said.is_empty() => format!("calls {}", calls.join(", ")),
                    (_, false) => format!("{said} (calls {})", calls.join(", ")),
                    _ => said.to_owned(),
                };
            }
        }
        result.lines().next().unwrap_or("").to_owned()
    }
}

pub(crate) const INSERT: &str =
    "INSERT INTO steps (run_id, seq, kind, tool, action, action_hash, why, status, risk, reasons,
                        preview, result, started_at, ended_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

pub(crate) const FINISH: &str =
    "UPDATE steps SET status = $1, result = $2, ended_at = $3 WHERE run_id = $4 AND seq = $5";

pub(crate) type Query<'q> = sqlx::query::Query<'q, super::Db, super::Args<'q>>;

/// Binds a step's columns in `INSERT` order.
pub(crate) fn bind_insert<'q>(q: Query<'q>, run: RunId, step: &'q StepRow) -> Query<'q> {
    q.bind(run.to_string())
        .bind(step.seq)
        .bind(step.kind)
        .bind(&step.tool)
        .bind(&step.action)
        .bind(&step.action_hash)
        .bind(&step.why)
        .bind(step.status)
        .bind(step.risk)
        .bind(step.reasons.as_ref().map(Json))
        .bind(&step.preview)
        .bind(&step.result)
        .bind(step.started_at)
        .bind(step.ended_at)
}

/// Binds `FINISH`'s parameters.
pub(crate) fn bind_finish<'q>(
    q: Query<'q>,
    run: RunId,
    seq: i64,
    status: StepStatus,
    result: &'q str,
    now: i64,
) -> Query<'q> {
    q.bind(status)
        .bind(result)
        .bind(now)
        .bind(run.to_string())
        .bind(seq)
}

pub async fn insert(tx: &mut Tx, run: RunId, step: &StepRow) -> Result<()> {
    bind_insert(sqlx::query(INSERT), run, step)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Removes a step parked for review so it can be recorded again with what actually happened.
pub async fn reopen(tx: &mut Tx, run: RunId, seq: i64) -> Result<()> {
    sqlx::query("DELETE FROM steps WHERE run_id = $1 AND seq = $2 AND status = 'awaiting_review'")
        .bind(run.to_string())
        .bind(seq)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn get<'e>(db: impl Executor<'e>, run: RunId, seq: i64) -> Result<Option<StepRow>> {
    let row = sqlx::query("SELECT * FROM steps WHERE run_id = $1 AND seq = $2")
        .bind(run)
        .bind(seq)
        .fetch_optional(db)
        .await?;
    decode::optional(row)
}

/// The highest step seq recorded for the run (0 when none).
pub async fn max_seq(pool: &Pool, run: RunId) -> Result<i64> {
    let max: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM steps WHERE run_id = $1")
        .bind(run.to_string())
        .fetch_one(pool)
        .await?;
    Ok(max.unwrap_or(0))
}

pub async fn list(pool: &Pool, run: RunId) -> Result<Vec<StepRow>> {
    decode::all(
        &sqlx::query("SELECT * FROM steps WHERE run_id = $1 ORDER BY seq")
            .bind(run)
            .fetch_all(pool)
            .await?,
    )
}

/// The last `n` steps before `before`, oldest first.
pub async fn recent(pool: &Pool, run: RunId, before: i64, n: i64) -> Result<Vec<StepRow>> {
    let mut rows: Vec<StepRow> = decode::all(
        &sqlx::query("SELECT * FROM steps WHERE run_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3")
            .bind(run)
            .bind(before)
            .bind(n)
            .fetch_all(pool)
            .await?,
    )?;
    rows.reverse();
    Ok(rows)
}

/// The latest step of the run that carried out exactly this action (tool and hash) and was done
/// before `before` (ms).
pub async fn done_with(
    pool: &Pool,
    run: RunId,
    tool: &str,
    action_hash: &str,
    before: i64,
) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT MAX(seq) FROM steps WHERE run_id = $1 AND tool = $2 AND action_hash = $3
           AND status = 'done' AND ended_at < $4",
    )
    .bind(run)
    .bind(tool)
    .bind(action_hash)
    .bind(before)
    .fetch_one(pool)
    .await?)
}

/// How many tool steps before `seq` are done (a review card's progress).
pub async fn tool_steps_done_before(pool: &Pool, run: RunId, seq: i64) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT COUNT(*) FROM steps WHERE run_id = $1 AND seq < $2 AND status = 'done'
           AND kind = 'tool_call'",
    )
    .bind(run)
    .bind(seq)
    .fetch_one(pool)
    .await?)
}

/// The actions of the reads (read, list, search) done before `seq`, newest first.
pub async fn reads_before(
    pool: &Pool,
    run: RunId,
    seq: i64,
    limit: i64,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT action FROM steps WHERE run_id = $1 AND seq < $2 AND status = 'done'
           AND tool IN ('fs.read', 'fs.list', 'fs.search') ORDER BY seq DESC LIMIT $3",
    )
    .bind(run)
    .bind(seq)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The results of a run's tool calls and questions, by seq: what its agent observed (an agent's
/// history refers to them instead of keeping copies).
pub async fn outputs(pool: &Pool, run: RunId) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as(
        "SELECT seq, result FROM steps
         WHERE run_id = $1 AND kind IN ('tool_call', 'question') AND result IS NOT NULL",
    )
    .bind(run.to_string())
    .fetch_all(pool)
    .await?)
}

/// Results longer than `over` bytes (kept as artifacts in the blob store too).
pub async fn large_results(pool: &Pool, run: RunId, over: usize) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT result FROM steps WHERE run_id = $1 AND kind = 'tool_call' AND octet_length(result) > $2",
    )
    .bind(run.to_string())
    .bind(i64::try_from(over).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?)
}

/// Records a model call's token usage and cost (in millionths of a dollar) on its step.
pub async fn set_usage(
    tx: &mut Tx,
    run: RunId,
    seq: i64,
    tokens_in: i64,
    tokens_out: i64,
    cost_micros: Option<i64>,
) -> Result<()> {
    sqlx::query(
        "UPDATE steps SET tokens_in = $1, tokens_out = $2, cost_micros = $3 WHERE run_id = $4 AND seq = $5",
    )
    .bind(tokens_in)
    .bind(tokens_out)
    .bind(cost_micros)
    .bind(run.to_string())
    .bind(seq)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Token totals of a run's model calls: (calls, tokens in, tokens out, cost in micro-dollars).
pub async fn usage(pool: &Pool, run: RunId) -> Result<(i64, i64, i64, Option<i64>)> {
    Ok(sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(tokens_in), 0) AS BIGINT), CAST(COALESCE(SUM(tokens_out), 0) AS BIGINT),
                CAST(SUM(cost_micros) AS BIGINT)
           FROM steps WHERE run_id = $1 AND kind = 'model_call'",
    )
    .bind(run.to_string())
    .fetch_one(pool)
    .await?)
}

/// The question a run is waiting on: its step seq and text.
pub async fn open_question<'e>(
    db: impl Executor<'e>,
    run: RunId,
) -> Result<Option<(i64, RecordedCall)>> {
    Ok(sqlx::query_as(
        "SELECT seq, action FROM steps WHERE run_id = $1 AND kind = 'question'
           AND status = 'awaiting_input' ORDER BY seq DESC LIMIT 1",
    )
    .bind(run.to_string())
    .fetch_optional(db)
    .await?)
}

/// Records a person's answer as the question step's result.
pub async fn answer(tx: &mut Tx, run: RunId, seq: i64, text: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE steps SET status = 'answered', result = $1, ended_at = $2
           WHERE run_id = $3 AND seq = $4 AND status = 'awaiting_input'",
    )
    .bind(text)
    .bind(now)
    .bind(run.to_string())
    .bind(seq)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
