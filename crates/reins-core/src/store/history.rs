//! The `agent_history` table: an agent's append-only history, entry by entry (see
//! `checkpoint::HistoryRef`). Entries are written once, with the checkpoint that first covers them.

use super::Pool;

use super::{Result, Tx};
use crate::ids::RunId;

/// Writes `entries` as entries `from`, `from + 1`, …; a run resumed from an older checkpoint writes
/// over what came after it.
pub async fn put(tx: &mut Tx, run: RunId, from: i64, entries: &[String]) -> Result<()> {
    for (k, entry) in entries.iter().enumerate() {
        let idx = from + i64::try_from(k).unwrap_or(i64::MAX);
        sqlx::query(
            "INSERT INTO agent_history (run_id, idx, entry) VALUES ($1, $2, $3)
             ON CONFLICT (run_id, idx) DO UPDATE SET entry = excluded.entry",
        )
        .bind(run.to_string())
        .bind(idx)
        .bind(entry)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The first `len` entries of a run's history, in order (fewer when some are missing).
pub async fn first(pool: &Pool, run: RunId, len: i64) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as(
        "SELECT idx, entry FROM agent_history WHERE run_id = $1 AND idx < $2 ORDER BY idx",
    )
    .bind(run.to_string())
    .bind(len)
    .fetch_all(pool)
    .await?)
}
