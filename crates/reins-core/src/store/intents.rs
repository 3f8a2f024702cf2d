//! The `intents` table: the effect journal. An intent is committed before its effect runs and settled
//! (confirmed, business_failed, unknown, skipped) after, exactly once: settling is guarded by
//! `status = 'pending'`.

use super::column::Json;
use super::{Executor, Pool};

use super::dialect::batch;
use super::decode::{self, Stored};
use super::fused::{Tail, Whole};
use super::{blobs, steps, Result, StoreError, Tx};
use crate::digest::Digest;
use crate::ids::RunId;
use crate::journal::{EffectClass, FileImage, IntentStatus};
use crate::step::StepStatus;
use crate::action::RecordedCall;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct IntentRow {
    pub id: String,
    pub step_seq: i64,
    pub tool: String,
    pub action: RecordedCall,
    pub action_hash: String,
    pub effect_class: EffectClass,
    pub status: IntentStatus,
    #[sqlx(try_from = "Json<Vec<FileImage>>")]
    pub pre_images: Vec<FileImage>,
    #[sqlx(try_from = "Json<Vec<FileImage>>")]
    pub post_images: Vec<FileImage>,
    pub result: Option<String>,
    pub settled_by: Option<String>,
    pub fence: i64,
    pub created_at: i64,
    pub settled_at: Option<i64>,
}

impl Stored for IntentRow {
    const TABLE: &'static str = "intents";
    const KEY: &'static [&'static str] = &["run_id", "step_seq"];
}

const INSERT: &str =
    "INSERT INTO intents (id, run_id, step_seq, tool, action, action_hash, effect_class, status,
                          pre_images, post_images, result, settled_by, fence, created_at, settled_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";

const SETTLE: &str = "UPDATE intents SET status = $1, result = $2, settled_by = $3, settled_at = $4
     WHERE run_id = $5 AND step_seq = $6 AND status = 'pending'";

fn bind_insert<'q>(q: steps::Query<'q>, run: RunId, intent: &'q IntentRow) -> steps::Query<'q> {
    q.bind(&intent.id)
        .bind(run.to_string())
        .bind(intent.step_seq)
        .bind(&intent.tool)
        .bind(&intent.action)
        .bind(&intent.action_hash)
        .bind(intent.effect_class)
        .bind(intent.status)
        .bind(Json(&intent.pre_images))
        .bind(Json(&intent.post_images))
        .bind(&intent.result)
        .bind(&intent.settled_by)
        .bind(intent.fence)
        .bind(intent.created_at)
        .bind(intent.settled_at)
}

fn bind_settle<'q>(
    q: steps::Query<'q>,
    run: RunId,
    step_seq: i64,
    status: IntentStatus,
    result: &'q str,
    settled_by: Option<&'q str>,
    now: i64,
) -> steps::Query<'q> {
    q.bind(status)
        .bind(result)
        .bind(settled_by)
        .bind(now)
        .bind(run.to_string())
        .bind(step_seq)
}

#[cfg(test)]
pub async fn insert(tx: &mut Tx, run: RunId, intent: &IntentRow) -> Result<()> {
    bind_insert(sqlx::query(INSERT), run, intent)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Records a step, the intent of its effect and the pre-images it needs (small ones, kept in the
/// database) in one round trip; on PostgreSQL, with the `tail` (the change's events) in the same
/// statement. Returns the rows the tail's two groups changed.
pub async fn insert_with_step(
    tx: &mut Tx,
    run: RunId,
    step: &steps::StepRow,
    intent: &IntentRow,
    pre_images: &[&[u8]],
    tail: Option<&Tail<'_>>,
) -> Result<(i64, i64)> {
    if !tx.dialect().batches() {
        // One statement: the step, its intent and each distinct pre-image once (a part may not
        // change a row another part changes).
        let mut seen = std::collections::BTreeSet::new();
        let distinct: Vec<(Digest, &[u8])> = pre_images
            .iter()
            .map(|bytes| (Digest::of(bytes), *bytes))
            .filter(|(digest, _)| seen.insert(digest.clone()))
            .collect();
        let mut parts = vec![(steps::INSERT, None), (INSERT, None)];
        parts.extend(distinct.iter().map(|_| (blobs::INSERT, None)));
        let whole = tx.is_single().then_some(Whole { rows: None });
        let sql = super::fused::statement(&parts, tail, whole);
        let mut q = bind_insert(steps::bind_insert(sqlx::query(&sql), run, step), run, intent);
        for (digest, bytes) in &distinct {
            q = blobs::bind_insert(q, digest, bytes, intent.created_at);
        }
        if let Some(tail) = tail {
            q = tail.bind(q);
        }
        let row = super::fused::fetch(tx, q).await?;
        return tail_counts(&row);
    }
    let mut statements = vec![steps::INSERT, INSERT];
    statements.extend(pre_images.iter().map(|_| blobs::INSERT));
    let sql = batch(&statements);
    let mut q = bind_insert(
        steps::bind_insert(sqlx::query(&sql), run, step),
        run,
        intent,
    );
    for bytes in pre_images {
        q = blobs::bind_insert(q, &Digest::of(bytes), bytes, intent.created_at);
    }
    q.execute(&mut **tx).await?;
    Ok((0, 0))
}

/// The rows changed by a tail's checkpoint (column 1) and events (column 2).
fn tail_counts(row: &super::DbRow) -> Result<(i64, i64)> {
    Ok((
        sqlx::Row::try_get::<i64, _>(row, 1)?,
        sqlx::Row::try_get::<i64, _>(row, 2)?,
    ))
}

/// Settles the pending intent of a step. Fails if it was already settled: an effect is settled once.
#[cfg(test)]
pub async fn settle(
    tx: &mut Tx,
    run: RunId,
    step_seq: i64,
    status: IntentStatus,
    result: &str,
    settled_by: Option<&str>,
    now: i64,
) -> Result<()> {
    let done = bind_settle(
        sqlx::query(SETTLE),
        run,
        step_seq,
        status,
        result,
        settled_by,
        now,
    )
    .execute(&mut **tx)
    .await?;
    settled_once(done.rows_affected(), 1, run, step_seq)
}

/// How a step's pending intent is settled.
pub struct Settling<'a> {
    pub step_seq: i64,
    pub status: IntentStatus,
    pub step_status: StepStatus,
    pub result: &'a str,
    pub settled_by: Option<&'a str>,
    /// Every process the step started ended with it.
    pub ends_processes: bool,
}

/// Settles the pending intent of a step and finishes the step, in one round trip (and, when
/// asked, marks the processes it started ended); on PostgreSQL with the `tail` (the change's
/// checkpoint and events) in the same statement. If the intent is not pending, neither row
/// changes and this fails. Returns the rows the tail's two groups changed.
pub async fn settle_with_step(
    tx: &mut Tx,
    run: RunId,
    s: Settling<'_>,
    now: i64,
    tail: Option<&Tail<'_>>,
) -> Result<(i64, i64)> {
    // The step first, and only while its intent is pending; then the intent.
    let finish = format!(
        "{} AND EXISTS (SELECT 1 FROM intents i WHERE i.run_id = steps.run_id AND i.step_seq = steps.seq AND i.status = 'pending')",
        steps::FINISH
    );
    let Settling {
        step_seq,
        status,
        step_status,
        result,
        settled_by,
        ends_processes,
    } = s;
    let (rows, counts) = if tx.dialect().batches() {
        if ends_processes {
            super::processes::end_step(tx, run, step_seq, now).await?;
        }
        let sql = batch(&[&finish, SETTLE]);
        let q = steps::bind_finish(sqlx::query(&sql), run, step_seq, step_status, result, now);
        let rows = bind_settle(q, run, step_seq, status, result, settled_by, now)
            .execute(&mut **tx)
            .await?
            .rows_affected();
        (rows, (0, 0))
    } else {
        // One statement: the parts touch different tables, and the step's check reads the
        // intent as it was, which is what it means.
        let mut parts = Vec::new();
        if ends_processes {
            parts.push((super::processes::END_STEP, None));
        }
        parts.extend([(finish.as_str(), Some(0)), (SETTLE, Some(0))]);
        // Both rows, or neither (`settled_once`).
        let whole = tx.is_single().then_some(Whole { rows: Some(2) });
        let sql = super::fused::statement(&parts, tail, whole);
        let mut q = sqlx::query(&sql);
        if ends_processes {
            q = super::processes::bind_end_step(q, run, step_seq, now);
        }
        let q = steps::bind_finish(q, run, step_seq, step_status, result, now);
        let mut q = bind_settle(q, run, step_seq, status, result, settled_by, now);
        if let Some(tail) = tail {
            q = tail.bind(q);
        }
        let row = super::fused::fetch(tx, q).await?;
        let rows = u64::try_from(sqlx::Row::try_get::<i64, _>(&row, 0)?).unwrap_or(0);
        (rows, tail_counts(&row)?)
    };
    settled_once(rows, 2, run, step_seq)?;
    Ok(counts)
}

fn settled_once(rows: u64, expected: u64, run: RunId, step_seq: i64) -> Result<()> {
    if rows == expected {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "the intent of step {step_seq} of run {run} is not pending; an intent is settled once"
        )))
    }
}

pub async fn pending<'e>(db: impl Executor<'e>, run: RunId) -> Result<Vec<IntentRow>> {
    decode::all(
        &sqlx::query(
            "SELECT * FROM intents WHERE run_id = $1 AND status = 'pending' ORDER BY step_seq",
        )
        .bind(run)
        .fetch_all(db)
        .await?,
    )
}

pub async fn for_step<'e>(
    db: impl Executor<'e>,
    run: RunId,
    seq: i64,
) -> Result<Option<IntentRow>> {
    let row = sqlx::query("SELECT * FROM intents WHERE run_id = $1 AND step_seq = $2")
        .bind(run)
        .bind(seq)
        .fetch_optional(db)
        .await?;
    decode::optional(row)
}

pub async fn list(pool: &Pool, run: RunId) -> Result<Vec<IntentRow>> {
    decode::all(
        &sqlx::query("SELECT * FROM intents WHERE run_id = $1 ORDER BY step_seq")
            .bind(run)
            .fetch_all(pool)
            .await?,
    )
}

/// The pre-images of every intent (what rollback and recovery depend on), for retention and the
/// blob store's consistency check.
pub async fn all_pre_images(pool: &Pool) -> Result<Vec<FileImage>> {
    let rows = sqlx::query("SELECT run_id, step_seq, pre_images FROM intents")
        .fetch_all(pool)
        .await?;
    let mut images = Vec::new();
    for row in decode::all::<PreImages>(&rows)? {
        images.extend(row.pre_images);
    }
    Ok(images)
}

#[derive(sqlx::FromRow)]
struct PreImages {
    #[sqlx(try_from = "Json<Vec<FileImage>>")]
    pre_images: Vec<FileImage>,
}

impl Stored for PreImages {
    const TABLE: &'static str = "intents";
    const KEY: &'static [&'static str] = &["run_id", "step_seq"];
}

/// Intents whose id starts with `prefix`, with their run (a person types the first characters).
pub async fn find(pool: &Pool, prefix: &str) -> Result<Vec<(RunId, IntentRow)>> {
    let rows: Vec<(RunId, String)> = sqlx::query_as(
        "SELECT run_id, id FROM intents WHERE substr(id, 1, CAST($1 AS INTEGER)) = $2 ORDER BY id LIMIT 10",
    )
    .bind(i64::try_from(prefix.len()).unwrap_or(i64::MAX))
    .bind(prefix)
    .fetch_all(pool)
    .await?;
    let mut found = Vec::new();
    for (run, id) in rows {
        let row = sqlx::query("SELECT * FROM intents WHERE id = $1")
            .bind(&id)
            .fetch_one(pool)
            .await?;
        found.push((run, decode::one(&row)?));
    }
    Ok(found)
}

/// A person settles an intent nobody could (pending on a stopped run, or unknown), and the step
/// with it. Fails unless the intent is still pending or unknown.
#[allow(clippy::too_many_arguments)]
pub async fn settle_by_person(
    tx: &mut Tx,
    run: RunId,
    step_seq: i64,
    status: IntentStatus,
    step_status: StepStatus,
    result: &str,
    settled_by: &str,
    now: i64,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE intents SET status = $1, result = $2, settled_by = $3, settled_at = $4
         WHERE run_id = $5 AND step_seq = $6 AND status IN ('pending', 'unknown')",
    )
    .bind(status)
    .bind(result)
    .bind(settled_by)
    .bind(now)
    .bind(run.to_string())
    .bind(step_seq)
    .execute(&mut **tx)
    .await?;
    settled_once(done.rows_affected(), 1, run, step_seq)?;
    steps::bind_finish(
        sqlx::query(steps::FINISH),
        run,
        step_seq,
        step_status,
        result,
        now,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Removes an unsettled intent and its step so the step is proposed and run again from scratch.
/// The audit event recording the decision keeps everything the rows held.
pub async fn forget_for_retry(tx: &mut Tx, run: RunId, step_seq: i64) -> Result<()> {
    let done = sqlx::query(
        "DELETE FROM intents WHERE run_id = $1 AND step_seq = $2 AND status IN ('pending', 'unknown')",
    )
    .bind(run.to_string())
    .bind(step_seq)
    .execute(&mut **tx)
    .await?;
    settled_once(done.rows_affected(), 1, run, step_seq)?;
    sqlx::query("DELETE FROM steps WHERE run_id = $1 AND seq = $2")
        .bind(run.to_string())
        .bind(step_seq)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Intents of the run nobody has settled: unknown ones, and pending ones.
pub async fn unsettled(pool: &Pool, run: RunId) -> Result<Vec<IntentRow>> {
    decode::all(
        &sqlx::query(
            "SELECT * FROM intents WHERE run_id = $1 AND status IN ('pending', 'unknown') ORDER BY step_seq",
        )
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}

/// Intents from step `from` on.
pub async fn from_step(pool: &Pool, run: RunId, from: i64) -> Result<Vec<IntentRow>> {
    decode::all(
        &sqlx::query("SELECT * FROM intents WHERE run_id = $1 AND step_seq >= $2 ORDER BY step_seq")
            .bind(run)
            .bind(from)
            .fetch_all(pool)
            .await?,
    )
}

/// Intents settled at or after `since` by someone other than the step's own confirmation.
pub async fn settled_since(pool: &Pool, run: RunId, since: i64) -> Result<Vec<IntentRow>> {
    decode::all(
        &sqlx::query(
            "SELECT * FROM intents WHERE run_id = $1 AND settled_at >= $2 AND settled_by IS NOT NULL ORDER BY step_seq",
        )
        .bind(run)
        .bind(since)
        .fetch_all(pool)
        .await?,
    )
}

/// How many intents of the run nobody has settled yet (pending or unknown).
pub async fn count_unsettled(tx: &mut Tx, run: RunId) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT COUNT(*) FROM intents WHERE run_id = $1 AND status IN ('pending', 'unknown')",
    )
    .bind(run.to_string())
    .fetch_one(&mut **tx)
    .await?)
}
