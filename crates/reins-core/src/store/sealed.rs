//! Where sealed secrets are kept (see `seal`): how many rows hold one, and one of them, so
//! `doctor` can tell whether this keyring still opens them.

use super::Pool;

use super::Result;

/// Each column that may hold `⟦sealed:…⟧` tokens, as `table.column`.
const COLUMNS: &[(&str, &str)] = &[
    ("run_specs", "spec"),
    ("steps", "action"),
    ("steps", "result"),
    ("intents", "action"),
    ("intents", "result"),
    ("approvals", "action"),
    ("approvals", "edited_action"),
    ("agent_history", "entry"),
];

/// How many rows hold a sealed secret, and the text of one of them.
pub async fn sample(pool: &Pool) -> Result<(i64, Option<String>)> {
    let mut rows = 0;
    let mut one = None;
    for (table, column) in COLUMNS {
        let (n,): (i64,) = sqlx::query_as(&format!(
            "SELECT count(*) FROM {table} WHERE {column} LIKE '%⟦sealed:%'"
        ))
        .fetch_one(pool)
        .await?;
        rows += n;
        if n > 0 && one.is_none() {
            one = sqlx::query_scalar(&format!(
                "SELECT {column} FROM {table} WHERE {column} LIKE '%⟦sealed:%' LIMIT 1"
            ))
            .fetch_optional(pool)
            .await?;
        }
    }
    Ok((rows, one))
}
