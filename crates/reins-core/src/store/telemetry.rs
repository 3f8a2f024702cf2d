//! The `telemetry_cursors` table: where each OpenTelemetry export stands in the audit log, and
//! which process is exporting to it now. Its writes go straight through the pool: bookkeeping of a
//! follower, not a change to a run, so not audited.

use sqlx::Row as _;

use super::decode;
use super::steps::StepRow;
use super::{Pool, Result};
use crate::ids::RunId;

/// One destination's cursor.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CursorRow {
    pub destination: String,
    /// The last audit event whose spans the collector took.
    pub seq: i64,
    pub spans: i64,
    pub holder: Option<String>,
    pub lease_until: i64,
    pub last_error: Option<String>,
    pub last_error_at: Option<i64>,
}

/// Takes (or keeps) the export to `destination` for `holder` until `now + lease_ms`, unless
/// another holder's lease is still running. Returns the cursor when it is this holder's.
pub async fn claim(
    pool: &Pool,
    destination: &str,
    holder: &str,
    now: i64,
    lease_ms: i64,
) -> Result<Option<CursorRow>> {
    sqlx::query(
        "INSERT INTO telemetry_cursors (destination, updated_at) VALUES ($1, $2)
         ON CONFLICT (destination) DO NOTHING",
    )
    .bind(destination)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(sqlx::query_as(
        "UPDATE telemetry_cursors SET holder = $1, lease_until = $2
         WHERE destination = $3 AND (holder IS NULL OR holder = $1 OR lease_until < $4)
         RETURNING destination, seq, spans, holder, lease_until, last_error, last_error_at",
    )
    .bind(holder)
    .bind(now + lease_ms)
    .bind(destination)
    .bind(now)
    .fetch_optional(pool)
    .await?)
}

/// Moves the cursor from `from` to `to` after the collector took `spans` more, if `holder` still
/// holds it and nobody moved it meanwhile. False: it was lost (its spans may be sent again by
/// the new holder; their ids are the same, so they land on the same spans).
#[allow(clippy::too_many_arguments)]
pub async fn advance(
    pool: &Pool,
    destination: &str,
    holder: &str,
    from: i64,
    to: i64,
    spans: i64,
    now: i64,
    lease_ms: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE telemetry_cursors
         SET seq = $1, spans = spans + $2, lease_until = $3, last_error = NULL,
             last_error_at = NULL, updated_at = $4
         WHERE destination = $5 AND holder = $6 AND seq = $7",
    )
    .bind(to)
    .bind(spans)
    .bind(now + lease_ms)
    .bind(now)
    .bind(destination)
    .bind(holder)
    .bind(from)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records why the last export failed (the cursor stays where it was).
pub async fn failed(
    pool: &Pool,
    destination: &str,
    holder: &str,
    error: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE telemetry_cursors SET last_error = $1, last_error_at = $2
         WHERE destination = $3 AND holder = $4",
    )
    .bind(error)
    .bind(now)
    .bind(destination)
    .bind(holder)
    .execute(pool)
    .await?;
    Ok(())
}

/// Lets go of the export, so another process may take it at once.
pub async fn release(pool: &Pool, destination: &str, holder: &str) -> Result<()> {
    sqlx::query(
        "UPDATE telemetry_cursors SET holder = NULL, lease_until = 0
         WHERE destination = $1 AND holder = $2",
    )
    .bind(destination)
    .bind(holder)
    .execute(pool)
    .await?;
    Ok(())
}

/// Where the export to `destination` stands (0 before its first pass): read without writing, so
/// an idle follower costs the database no write.
pub async fn seq(pool: &Pool, destination: &str) -> Result<i64> {
    let seq: Option<i64> =
        sqlx::query_scalar("SELECT seq FROM telemetry_cursors WHERE destination = $1")
            .bind(destination)
            .fetch_optional(pool)
            .await?;
    Ok(seq.unwrap_or(0))
}

/// Every destination's cursor.
pub async fn all(pool: &Pool) -> Result<Vec<CursorRow>> {
    Ok(sqlx::query_as(
        "SELECT destination, seq, spans, holder, lease_until, last_error, last_error_at
         FROM telemetry_cursors ORDER BY destination",
    )
    .fetch_all(pool)
    .await?)
}

/// A step and when its first review card opened (None: it had none), in one read: a reviewed
/// step's row is written again when it is carried out, so its own start is the card's.
pub async fn step_with_card(pool: &Pool, run: RunId, seq: i64) -> Result<Option<(StepRow, Option<i64>)>> {
    let row = sqlx::query(
        "SELECT s.*, (SELECT MIN(a.created_at) FROM approvals a
                      WHERE a.run_id = s.run_id AND a.step_seq = s.seq) AS first_card_at
         FROM steps s WHERE s.run_id = $1 AND s.seq = $2",
    )
    .bind(run)
    .bind(seq)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let card: Option<i64> = row.try_get("first_card_at")?;
    Ok(Some((decode::one(&row)?, card)))
}

/// How many runs are in each state, for the metrics' gauge.
pub async fn runs_by_state(pool: &Pool) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as("SELECT state, COUNT(*) FROM runs GROUP BY state ORDER BY state")
        .fetch_all(pool)
        .await?)
}

/// How many reviews wait for a person.
pub async fn reviews_waiting(pool: &Pool) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM approvals WHERE status = 'pending'")
        .fetch_one(pool)
        .await?)
}
