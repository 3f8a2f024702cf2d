//! The `token_counts` table: token counts of an LLM run's earlier turns, by counter and by the
//! SHA-256 of what was counted, so a run resumed in a new process need not count its whole
//! conversation again.

use super::Pool;

use super::{Result, Tx};
use crate::ids::RunId;

/// Records `counts` (digest, tokens) made with `counter`; one already there is kept (a count is a
/// pure function of its text and counter).
pub async fn put(tx: &mut Tx, run: RunId, counter: &str, counts: &[(String, i64)]) -> Result<()> {
    for (sha256, tokens) in counts {
        sqlx::query(
            "INSERT INTO token_counts (run_id, counter, sha256, tokens) VALUES ($1, $2, $3, $4)
             ON CONFLICT (run_id, counter, sha256) DO NOTHING",
        )
        .bind(run.to_string())
        .bind(counter)
        .bind(sha256)
        .bind(tokens)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The counts a run's earlier calls made with `counter`: (digest, tokens).
pub async fn of_run(pool: &Pool, run: RunId, counter: &str) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT sha256, tokens FROM token_counts WHERE run_id = $1 AND counter = $2",
    )
    .bind(run.to_string())
    .bind(counter)
    .fetch_all(pool)
    .await?)
}
