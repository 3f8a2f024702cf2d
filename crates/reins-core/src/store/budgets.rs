//! The `budgets` and `agent_usage` tables: what a run may spend, and what external agents reported
//! they spent; with the steps' own usage and the attempts' times, what the run has spent.

use super::column::Json;
use super::{Pool, Result, Tx};
use crate::budget::{Budget, Spent};
use crate::ids::RunId;

/// The run's budget (None: it has none).
pub async fn get(pool: &Pool, run: RunId) -> Result<Option<Budget>> {
    let row: Option<(Json<Budget>,)> =
        sqlx::query_as("SELECT limits FROM budgets WHERE run_id = $1")
            .bind(run.to_string())
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(b,)| b.into_inner()))
}

/// Sets the run's budget (an empty one removes it).
pub async fn set(tx: &mut Tx, run: RunId, budget: &Budget) -> Result<()> {
    if budget.is_empty() {
        sqlx::query("DELETE FROM budgets WHERE run_id = $1")
            .bind(run.to_string())
            .execute(&mut **tx)
            .await?;
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO budgets (run_id, limits) VALUES ($1, $2)
         ON CONFLICT (run_id) DO UPDATE SET limits = excluded.limits",
    )
    .bind(run.to_string())
    .bind(Json(budget))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What `source` (an agent's session) reports it has spent in all: its running totals replace
/// the ones it reported before.
pub async fn agent_usage(
    tx: &mut Tx,
    run: RunId,
    source: &str,
    tokens: i64,
    cost_micros: Option<i64>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO agent_usage (run_id, source, tokens, cost_micros) VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id, source) DO UPDATE SET
           tokens = CASE WHEN excluded.tokens > agent_usage.tokens THEN excluded.tokens ELSE agent_usage.tokens END,
           cost_micros = COALESCE(excluded.cost_micros, agent_usage.cost_micros)",
    )
    .bind(run.to_string())
    .bind(source)
    .bind(tokens)
    .bind(cost_micros)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What the run has spent by `now`: the model calls' tokens and cost, what its external agents
/// reported, the time its attempts took, and the steps it proposed.
pub async fn spent(pool: &Pool, run: RunId, now: i64) -> Result<Spent> {
    let id = run.to_string();
    let (tokens, micros, steps): (i64, i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(CASE WHEN kind = 'model_call' THEN tokens_in + tokens_out ELSE 0 END), 0) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN kind = 'model_call' THEN cost_micros ELSE 0 END), 0) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN kind IN ('tool_call', 'question') THEN 1 ELSE 0 END), 0) AS BIGINT)
           FROM steps WHERE run_id = $1",
    )
    .bind(&id)
    .fetch_one(pool)
    .await?;
    let (agent_tokens, agent_micros): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(tokens), 0) AS BIGINT), CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT)
           FROM agent_usage WHERE run_id = $1",
    )
    .bind(&id)
    .fetch_one(pool)
    .await?;
    let (ms,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(COALESCE(ended_at, $2) - started_at), 0) AS BIGINT)
           FROM attempts WHERE run_id = $1",
    )
    .bind(&id)
    .bind(now)
    .fetch_one(pool)
    .await?;
    let count = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(Spent {
        tokens: count(tokens) + count(agent_tokens),
        cost_usd: (micros + agent_micros) as f64 / 1_000_000.0,
        wall_secs: count(ms) / 1000,
        steps: count(steps),
    })
}
