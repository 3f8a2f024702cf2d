//! The `blobs` table: small content-addressed blobs stored inside the database, so a pre-image
//! commits in the same transaction as the intent that needs it (no extra fsync, no window where one
//! exists without the other). Larger blobs go to the file store (`crate::blob`).

use super::dialect::Sql;
use super::Pool;

use super::Result;
use crate::digest::Digest;

/// Blobs up to this size are kept in the database.
pub const INLINE_LIMIT: usize = 1024 * 1024;

pub(crate) const INSERT: &str =
    "INSERT INTO blobs (sha256, size, bytes) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING";

pub(crate) fn bind_insert<'q>(
    q: super::steps::Query<'q>,
    digest: &Digest,
    bytes: &'q [u8],
) -> super::steps::Query<'q> {
    q.bind(digest.as_str().to_owned())
        .bind(i64::try_from(bytes.len()).unwrap_or(i64::MAX))
        .bind(bytes)
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

/// (count, total bytes, digests whose bytes do not match their name).
pub async fn check(pool: &Pool) -> Result<(usize, u64, Vec<String>)> {
    let rows: Vec<(String, Vec<u8>)> = sqlx::query_as("SELECT sha256, bytes FROM blobs")
        .fetch_all(pool)
        .await?;
    let bytes = rows.iter().map(|(_, b)| b.len() as u64).sum();
    let bad = rows
        .iter()
        .filter(|(name, b)| Digest::of(b).as_str() != name)
        .map(|(name, _)| name.clone())
        .collect();
    Ok((rows.len(), bytes, bad))
}

/// Counts (and unless `dry_run`, deletes) the rows whose digest is not in `needed`.
pub async fn unreferenced(
    pool: &Pool,
    needed: &std::collections::BTreeSet<Digest>,
    dry_run: bool,
) -> Result<u64> {
    let names: Vec<String> = sqlx::query_scalar("SELECT sha256 FROM blobs")
        .fetch_all(pool)
        .await?;
    let doomed: Vec<String> = names
        .into_iter()
        .filter(|n| Digest::parse(n).is_none_or(|d| !needed.contains(&d)))
        .collect();
    if !dry_run {
        for chunk in doomed.chunks(500) {
            let mut q = Sql::new("DELETE FROM blobs WHERE sha256 IN ");
            q.bind_list(chunk.iter().map(String::as_str))?;
            let (sql, args) = q.into_parts();
            sqlx::query_with(&sql, args).execute(pool).await?;
        }
    }
    Ok(doomed.len() as u64)
}
