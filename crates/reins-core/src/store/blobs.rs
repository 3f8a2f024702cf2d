//! The `blobs` table: content-addressed blobs stored inside the database. Small ones commit in the
//! same transaction as the intent that needs them (no extra fsync, no window where one exists
//! without the other). Larger ones go to the blob store (`blob`): files beside an embedded
//! database, and this table too on a shared one, where no shared filesystem is assumed.

use super::dialect::Sql;
use super::Pool;

use super::Result;
use crate::digest::Digest;

/// Blobs up to this size are kept in the database.
pub const INLINE_LIMIT: usize = 1024 * 1024;

/// Stores a blob, or marks one already stored as fresh again (retention's grace runs from then).
pub(crate) const INSERT: &str = "INSERT INTO blobs (sha256, size, bytes, stored_ms) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (sha256) DO UPDATE SET stored_ms = excluded.stored_ms";

pub(crate) fn bind_insert<'q>(
    q: super::steps::Query<'q>,
    digest: &Digest,
    bytes: &'q [u8],
    now: i64,
) -> super::steps::Query<'q> {
    q.bind(digest.as_str().to_owned())
        .bind(i64::try_from(bytes.len()).unwrap_or(i64::MAX))
        .bind(bytes)
        .bind(now)
}

/// Stores a blob on its own (committed when this returns), before whatever will refer to it.
pub async fn put(pool: &Pool, digest: &Digest, bytes: &[u8], now: i64) -> Result<()> {
    bind_insert(sqlx::query(INSERT), digest, bytes, now)
        .execute(pool)
        .await?;
    Ok(())
}

/// The bytes, if stored here. The caller verifies them against the digest.
pub async fn get(pool: &Pool, digest: &Digest) -> Result<Option<Vec<u8>>> {
    Ok(
        sqlx::query_scalar("SELECT bytes FROM blobs WHERE sha256 = $1")
            .bind(digest.as_str())
            .fetch_optional(pool)
            .await?,
    )
}

/// (count, total bytes, digests whose bytes do not match their name). Reads one blob at a time:
/// in team mode the table holds large ones too.
pub async fn check(pool: &Pool) -> Result<(usize, u64, Vec<String>)> {
    use futures_util::TryStreamExt as _;
    let mut rows = sqlx::query_as::<_, (String, Vec<u8>)>("SELECT sha256, bytes FROM blobs")
        .fetch(pool);
    let (mut count, mut bytes, mut bad) = (0, 0u64, Vec::new());
    while let Some((name, b)) = rows.try_next().await? {
        count += 1;
        bytes += b.len() as u64;
        if Digest::of(&b).as_str() != name {
            bad.push(name);
        }
    }
    Ok((count, bytes, bad))
}

/// What retention found in the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unreferenced {
    /// Removed (or, in a dry run, would be).
    pub removed: u64,
    pub bytes: u64,
    /// Unreferenced but stored within the grace period: kept.
    pub young: u64,
}

/// Counts (and unless `dry_run`, deletes) the rows whose digest is not in `needed` and which were
/// stored before `stored_before` (ms).
pub async fn unreferenced(
    pool: &Pool,
    needed: &std::collections::BTreeSet<Digest>,
    stored_before: i64,
    dry_run: bool,
) -> Result<Unreferenced> {
    let rows: Vec<(String, i64, i64)> =
        sqlx::query_as("SELECT sha256, size, stored_ms FROM blobs")
            .fetch_all(pool)
            .await?;
    let mut found = Unreferenced::default();
    let mut doomed = Vec::new();
    for (name, size, stored_ms) in rows {
        if Digest::parse(&name).is_some_and(|d| needed.contains(&d)) {
            continue;
        }
        if stored_ms >= stored_before {
            found.young += 1;
            continue;
        }
        found.bytes += u64::try_from(size).unwrap_or(0);
        doomed.push(name);
    }
    found.removed = doomed.len() as u64;
    if !dry_run {
        for chunk in doomed.chunks(500) {
            // Stored again since it was looked at: someone is about to refer to it, so it stays.
            let mut q = Sql::new("DELETE FROM blobs WHERE stored_ms < ");
            q.bind(stored_before)?;
            q.push(" AND sha256 IN ");
            q.bind_list(chunk.iter().map(String::as_str))?;
            let (sql, args) = q.into_parts();
            sqlx::query_with(&sql, args).execute(pool).await?;
        }
    }
    Ok(found)
}
