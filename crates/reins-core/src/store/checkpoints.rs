//! The `checkpoints` table and the record of damage the harness has recovered past.
//! Rows are immutable once written; `seq` is assigned inside the writing transaction.

use super::Pool;

use super::decode::{self, Stored};
use super::{Result, StoreError, Tx};
use crate::checkpoint::{DamageKind, Level};
use crate::ids::RunId;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CheckpointRow {
    pub seq: i64,
    pub level: Level,
    pub schema_version: i64,
    pub payload: Option<Vec<u8>>,
    pub blob: Option<String>,
    pub size: i64,
    pub sha256: String,
    pub created_at: i64,
}

impl Stored for CheckpointRow {
    const TABLE: &'static str = "checkpoints";
    const KEY: &'static [&'static str] = &["seq"];
}

/// Where the canonical bytes live.
pub enum Body<'a> {
    Inline(&'a [u8]),
    Blob(&'a str),
}

pub struct NewCheckpoint<'a> {
    pub level: Level,
    pub schema_version: i64,
    pub body: Body<'a>,
    pub size: i64,
    pub sha256: &'a str,
    pub created_at: i64,
}

/// Inserts with the next seq of the run's logical clock and returns that seq.
pub async fn insert(tx: &mut Tx, run: RunId, cp: &NewCheckpoint<'_>) -> Result<i64> {
    let run = run.to_string();
    let q = sqlx::query(
        "INSERT INTO checkpoints (run_id, seq, level, schema_version, payload, blob, size, sha256, created_at)
         VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_id = $1), $2, $3, $4, $5, $6, $7, $8)
         RETURNING seq",
    );
    let row = bind_row(q.bind(&run), cp).fetch_one(&mut **tx).await?;
    Ok(sqlx::Row::try_get(&row, 0)?)
}

/// Binds what a checkpoint row holds besides its run and seq, in column order.
fn bind_row<'q>(q: super::steps::Query<'q>, cp: &'q NewCheckpoint<'q>) -> super::steps::Query<'q> {
    let (payload, blob) = match cp.body {
        Body::Inline(bytes) => (Some(bytes), None),
        Body::Blob(hash) => (None, Some(hash)),
    };
    q.bind(cp.level)
        .bind(cp.schema_version)
        .bind(payload)
        .bind(blob)
        .bind(cp.size)
        .bind(cp.sha256)
        .bind(cp.created_at)
}

/// Inserts at `$2`, and only if that is the run's next seq: a checkpoint travelling in a write's
/// own statement (`store::fused`), whose seq had to be known before the statement was sent.
pub(super) const INSERT_AT: &str =
    "INSERT INTO checkpoints (run_id, seq, level, schema_version, payload, blob, size, sha256, created_at)
     SELECT column1, column2, column3, column4, column5, column6, column7, column8, column9
     FROM (VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)) AS v
     WHERE (SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = $1) = $2 - 1";

pub(super) fn bind_insert_at<'q>(
    q: super::steps::Query<'q>,
    run: &'q str,
    seq: i64,
    cp: &'q NewCheckpoint<'q>,
) -> super::steps::Query<'q> {
    bind_row(q.bind(run).bind(seq), cp)
}

pub async fn get(pool: &Pool, run: RunId, seq: i64) -> Result<CheckpointRow> {
    let row = sqlx::query(
        "SELECT seq, level, schema_version, payload, blob, size, sha256, created_at
         FROM checkpoints WHERE run_id = $1 AND seq = $2",
    )
    .bind(run)
    .bind(seq)
    .fetch_optional(pool)
    .await?;
    decode::optional(row)?.ok_or_else(|| StoreError::NotFound {
        what: format!("checkpoint {seq} of run {run}"),
    })
}

pub async fn list(pool: &Pool, run: RunId) -> Result<Vec<CheckpointRow>> {
    decode::all(
        &sqlx::query(
            "SELECT seq, level, schema_version, payload, blob, size, sha256, created_at
             FROM checkpoints WHERE run_id = $1 ORDER BY seq",
        )
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}

/// The lowest and highest checkpoint seq of a run (None when it has none).
pub async fn seq_range(pool: &Pool, run: RunId) -> Result<Option<(i64, i64)>> {
    let (lo, hi): (Option<i64>, Option<i64>) =
        sqlx::query_as("SELECT MIN(seq), MAX(seq) FROM checkpoints WHERE run_id = $1")
            .bind(run)
            .fetch_one(pool)
            .await?;
    Ok(lo.zip(hi))
}

/// What verifying a checkpoint needs: its bytes (or their blob's name), checksum and schema.
pub struct Sealed {
    pub seq: i64,
    pub schema_version: i64,
    pub payload: Option<Vec<u8>>,
    pub blob: Option<String>,
    pub sha256: String,
}

/// Streams the checkpoints with `from <= seq < to` to `each`, oldest first, as they arrive.
pub async fn each_sealed(
    pool: &Pool,
    run: RunId,
    from: i64,
    to: i64,
    mut each: impl FnMut(Sealed),
) -> Result<()> {
    use futures_util::TryStreamExt as _;
    let mut rows = sqlx::query_as::<_, (i64, i64, Option<Vec<u8>>, Option<String>, String)>(
        "SELECT seq, schema_version, payload, blob, sha256 FROM checkpoints
         WHERE run_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq",
    )
    .bind(run)
    .bind(from)
    .bind(to)
    .fetch(pool);
    while let Some((seq, schema_version, payload, blob, sha256)) = rows.try_next().await? {
        each(Sealed {
            seq,
            schema_version,
            payload,
            blob,
            sha256,
        });
    }
    Ok(())
}

/// Every blob hash a checkpoint points to (for the store's consistency check).
pub async fn blob_refs(pool: &Pool) -> Result<Vec<String>> {
    Ok(
        sqlx::query_scalar("SELECT blob FROM checkpoints WHERE blob IS NOT NULL")
            .fetch_all(pool)
            .await?,
    )
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DamageRow {
    pub seq: i64,
}

impl Stored for DamageRow {
    const TABLE: &'static str = "checkpoint_damage";
    const KEY: &'static [&'static str] = &["seq"];
}

/// Records damage the harness recovered past; returns false when it was already known.
pub async fn acknowledge_damage(
    tx: &mut Tx,
    run: RunId,
    seq: i64,
    kind: DamageKind,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO checkpoint_damage (run_id, seq, kind, detected_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id, seq) DO NOTHING",
    )
    .bind(run.to_string())
    .bind(seq)
    .bind(kind)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn damage(pool: &Pool, run: RunId) -> Result<Vec<DamageRow>> {
    decode::all(
        &sqlx::query(
            "SELECT seq FROM checkpoint_damage WHERE run_id = $1 ORDER BY seq",
        )
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}

/// Checkpoints up to this seq were removed by retention (0: none).
pub async fn pruned_through(pool: &Pool, run: RunId) -> Result<i64> {
    Ok(
        sqlx::query_scalar::<_, i64>("SELECT through FROM checkpoint_pruned WHERE run_id = $1")
            .bind(run.to_string())
            .fetch_optional(pool)
            .await?
            .unwrap_or(0),
    )
}

/// (seq, size, blob) of a run's checkpoints, oldest first: what retention weighs.
pub async fn sizes(pool: &Pool, run: RunId) -> Result<Vec<(i64, i64, Option<String>)>> {
    Ok(
        sqlx::query_as("SELECT seq, size, blob FROM checkpoints WHERE run_id = $1 ORDER BY seq")
            .bind(run.to_string())
            .fetch_all(pool)
            .await?,
    )
}

/// Removes a run's checkpoints up to `through` (and their damage records) and remembers it.
pub async fn prune(tx: &mut Tx, run: RunId, through: i64, now: i64) -> Result<u64> {
    let removed = sqlx::query("DELETE FROM checkpoints WHERE run_id = $1 AND seq <= $2")
        .bind(run.to_string())
        .bind(through)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    sqlx::query("DELETE FROM checkpoint_damage WHERE run_id = $1 AND seq <= $2")
        .bind(run.to_string())
        .bind(through)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO checkpoint_pruned (run_id, through, at) VALUES ($1, $2, $3)
         ON CONFLICT (run_id) DO UPDATE
         SET through = CASE WHEN checkpoint_pruned.through > excluded.through
                            THEN checkpoint_pruned.through ELSE excluded.through END,
             at = excluded.at",
    )
    .bind(run.to_string())
    .bind(through)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(removed)
}

/// Records that a resume verified the run's checkpoints through `through`.
pub async fn verified(tx: &mut Tx, run: RunId, through: i64, sha256: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO checkpoint_verified (run_id, through, sha256) VALUES ($1, $2, $3)
         ON CONFLICT (run_id) DO UPDATE SET through = excluded.through, sha256 = excluded.sha256",
    )
    .bind(run.to_string())
    .bind(through)
    .bind(sha256)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The checkpoint a resume last verified through, if it is still stored with the checksum it had
/// then (a row changed or removed since is not trusted: everything is verified again).
pub async fn verified_through(pool: &Pool, run: RunId) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT v.through FROM checkpoint_verified v
         JOIN checkpoints c ON c.run_id = v.run_id AND c.seq = v.through AND c.sha256 = v.sha256
         WHERE v.run_id = $1",
    )
    .bind(run.to_string())
    .fetch_optional(pool)
    .await?)
}
