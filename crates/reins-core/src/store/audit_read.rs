//! Reading the audit log through the pool: its head and boundaries, counts and pages for a filter,
//! and the lookups verification makes when it names damage. Whole-table scans go through `scan`.

use super::Pool;

use super::anchor::Mark;
use super::audit::AuditRow;
use super::dialect::numbered;
use super::scan::{self, Param};
use super::Result;
use crate::event::Filter;

/// The last event's (seq, hash).
pub async fn head(pool: &Pool) -> Result<Option<Mark>> {
    Ok(sqlx::query_as::<_, (i64, String)>(
        "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1",
    )
    .fetch_optional(pool)
    .await?
    .map(|(seq, hash)| Mark { seq, hash }))
}

/// The highest seq (0 for an empty log).
pub async fn max_seq(pool: &Pool) -> Result<i64> {
    let max: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM audit_events")
        .fetch_one(pool)
        .await?;
    Ok(max.unwrap_or(0))
}

/// The first event after `seq`: its seq and time.
pub async fn earliest_after(pool: &Pool, seq: i64) -> Result<Option<(i64, i64)>> {
    Ok(
        sqlx::query_as("SELECT seq, at FROM audit_events WHERE seq > $1 ORDER BY seq LIMIT 1")
            .bind(seq)
            .fetch_optional(pool)
            .await?,
    )
}

/// The lowest seq, if the log has events.
pub async fn min_seq(pool: &Pool) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar("SELECT MIN(seq) FROM audit_events")
        .fetch_one(pool)
        .await?)
}

/// The hash of the event at `seq`, if there is one.
pub async fn hash_at(pool: &Pool, seq: i64) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT hash FROM audit_events WHERE seq = $1")
            .bind(seq)
            .fetch_optional(pool)
            .await?,
    )
}

/// The last event before `seq`: where a second stretch of a walk starts.
pub async fn last_before(pool: &Pool, seq: i64) -> Result<Option<(i64, String)>> {
    Ok(
        sqlx::query_as(
            "SELECT seq, hash FROM audit_events WHERE seq < $1 ORDER BY seq DESC LIMIT 1",
        )
        .bind(seq)
        .fetch_optional(pool)
        .await?,
    )
}

/// An event (other than the one at `not_seq`) that names `prev_hash` as its predecessor.
pub async fn follower_of(pool: &Pool, prev_hash: &str, not_seq: i64) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT seq FROM audit_events WHERE prev_hash = $1 AND seq <> $2 ORDER BY seq LIMIT 1",
    )
    .bind(prev_hash)
    .bind(not_seq)
    .fetch_optional(pool)
    .await?)
}

/// Seqs of the events of one kind, oldest first.
pub async fn seqs_of_kind(pool: &Pool, kind: &str) -> Result<Vec<i64>> {
    Ok(
        sqlx::query_scalar("SELECT seq FROM audit_events WHERE kind = $1 ORDER BY seq")
            .bind(kind)
            .fetch_all(pool)
            .await?,
    )
}

/// How many events up to `through` the filter selects.
pub async fn count(pool: &Pool, filter: &Filter, through: i64) -> Result<u64> {
    let (conditions, mut params) = scan::conditions(filter);
    params.insert(0, Param::Int(through));
    let sql = numbered(&format!("SELECT COUNT(*) FROM audit_events WHERE seq <= ?{conditions}"));
    let (total,): (i64,) = bind_all(sqlx::query_as(&sql), &params)
        .fetch_one(pool)
        .await?;
    Ok(u64::try_from(total).unwrap_or(0))
}

/// The kinds present in `family` (`approval` → `approval.approved`, …), by a skip-scan of the
/// kind index: one lookup per kind, however many events.
pub async fn kinds_in(pool: &Pool, family: &str) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "WITH RECURSIVE k(kind) AS (
             SELECT (SELECT MIN(kind) FROM audit_events WHERE kind >= $1 AND kind < $2)
             UNION ALL
             SELECT (SELECT MIN(kind) FROM audit_events WHERE kind > k.kind AND kind < $2)
             FROM k WHERE k.kind IS NOT NULL)
         SELECT kind FROM k WHERE kind IS NOT NULL",
    )
    .bind(format!("{family}."))
    .bind(format!("{family}/"))
    .fetch_all(pool)
    .await?)
}

/// Up to `limit` events the filter selects, newest first (or oldest first), after the cursor.
pub async fn page(
    pool: &Pool,
    filter: &Filter,
    cursor: Option<i64>,
    oldest_first: bool,
    limit: i64,
) -> Result<Vec<AuditRow>> {
    let (conditions, mut params) = scan::conditions(filter);
    let (cmp, order) = if oldest_first {
        (" AND seq > ?", " ORDER BY seq ASC")
    } else {
        (" AND seq < ?", " ORDER BY seq DESC")
    };
    let mut sql = format!(
        "SELECT {} FROM audit_events WHERE 1 = 1{conditions}",
        scan::COLUMNS
    );
    if let Some(cursor) = cursor {
        sql.push_str(cmp);
        params.push(Param::Int(cursor));
    }
    sql.push_str(order);
    sql.push_str(" LIMIT ?");
    params.push(Param::Int(limit));
    let sql = numbered(&sql);
    Ok(bind_all(sqlx::query_as(&sql), &params)
        .fetch_all(pool)
        .await?)
}

/// Binds scan parameters to an sqlx query, in order.
fn bind_all<'q, O>(
    mut q: sqlx::query::QueryAs<'q, super::Db, O, super::Args<'q>>,
    params: &'q [Param],
) -> sqlx::query::QueryAs<'q, super::Db, O, super::Args<'q>> {
    for p in params {
        q = match p {
            Param::Int(i) => q.bind(*i),
            Param::Text(t) => q.bind(t.as_str()),
        };
    }
    q
}
