//! The `approvals` table: review checkpoints. A decision is written only over a pending row (`WHERE
//! status = 'pending'`), so a decision is never overwritten — not by a second person, not by a stale
//! worker.

use super::column::{Json, JsonOpt};
use super::{Executor, Pool};

use super::decode::{self, Stored};
use super::{Result, StoreError, Tx};
use crate::approval::{ContextSummary, OnTimeout, Scope, Status};
use crate::ids::RunId;
use crate::journal::FileImage;
use crate::policy::{shell::Segment, Risk};
use crate::action::RecordedCall;
use crate::stage::effect::StagedEffect;

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct ApprovalRow {
    pub id: String,
    pub run_id: RunId,
    pub step_seq: i64,
    pub tool: String,
    /// The proposed action, as the canonical text its hash is taken over.
    pub action: RecordedCall,
    pub action_hash: String,
    pub risk: Risk,
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub reasons: Vec<String>,
    #[sqlx(try_from = "JsonOpt<Vec<Segment>>")]
    pub segments: Option<Vec<Segment>>,
    pub preview: String,
    pub preview_sha256: String,
    /// The files as they were when the preview was made.
    #[sqlx(try_from = "Json<Vec<FileImage>>")]
    pub pre_images: Vec<FileImage>,
    #[sqlx(try_from = "Json<ContextSummary>")]
    pub context: ContextSummary,
    pub policy: String,
    pub status: Status,
    pub created_at: i64,
    pub expires_at: i64,
    pub decided_at: Option<i64>,
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub scope: Option<Scope>,
    pub edited_action: Option<RecordedCall>,
    pub edited_hash: Option<String>,
    pub edited_preview: Option<String>,
    /// The edit's verdict as the person saw it (None: no edit, or decided before it was recorded).
    pub edited_risk: Option<Risk>,
    #[sqlx(try_from = "JsonOpt<Vec<String>>")]
    pub edited_reasons: Option<Vec<String>>,
    pub superseded_by: Option<String>,
    pub stale_reason: Option<String>,
    /// What it becomes if nobody decides it by `expires_at`.
    pub on_timeout: OnTimeout,
    /// When it timed out and paused: still open, with no deadline.
    pub paused_at: Option<i64>,
    /// A rejection that also refused this many calls queued after it in the same turn.
    pub siblings_rejected: i64,
    /// A staged command's card: what approving applies (None: not staged).
    #[sqlx(try_from = "JsonOpt<StagedEffect>")]
    pub staged: Option<StagedEffect>,
}

impl Stored for ApprovalRow {
    const TABLE: &'static str = "approvals";
    const KEY: &'static [&'static str] = &["id"];
}

impl ApprovalRow {
    /// The action that runs if approved: the person's edit when there is one.
    pub fn effective_action(&self) -> (&RecordedCall, &str) {
        match (&self.edited_action, &self.edited_hash) {
            (Some(a), Some(h)) => (a, h),
            _ => (&self.action, &self.action_hash),
        }
    }

    /// The verdict the person approved: the edit's when there is one. None for an edit decided
    /// before edits' verdicts were recorded: nothing is known to bind it to.
    pub fn approved_verdict(&self) -> Option<(Risk, &[String])> {
        if self.edited_action.is_none() {
            return Some((self.risk, &self.reasons));
        }
        match (self.edited_risk, &self.edited_reasons) {
            (Some(risk), Some(reasons)) => Some((risk, reasons)),
            _ => None,
        }
    }
}

pub async fn insert(tx: &mut Tx, a: &ApprovalRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO approvals (id, run_id, step_seq, tool, action, action_hash, risk, reasons, segments,
            preview, preview_sha256, pre_images, context, policy, status, created_at, expires_at,
            on_timeout, paused_at, staged)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
    )
    .bind(&a.id)
    .bind(a.run_id)
    .bind(a.step_seq)
    .bind(&a.tool)
    .bind(&a.action)
    .bind(&a.action_hash)
    .bind(a.risk)
    .bind(Json(&a.reasons))
    .bind(a.segments.as_ref().map(Json))
    .bind(&a.preview)
    .bind(&a.preview_sha256)
    .bind(Json(&a.pre_images))
    .bind(Json(&a.context))
    .bind(&a.policy)
    .bind(a.status)
    .bind(a.created_at)
    .bind(a.expires_at)
    .bind(a.on_timeout)
    .bind(a.paused_at)
    .bind(a.staged.as_ref().map(Json))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn get<'e>(db: impl Executor<'e>, id: &str) -> Result<Option<ApprovalRow>> {
    let row = sqlx::query("SELECT * FROM approvals WHERE id = $1")
        .bind(id)
        .fetch_optional(db)
        .await?;
    decode::optional(row)
}

/// An approval by its id or a unique prefix of it (people type short ids).
pub async fn find(pool: &Pool, id_or_prefix: &str) -> Result<Option<ApprovalRow>> {
    if id_or_prefix.len() < 4
        || !id_or_prefix
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == '-')
    {
        return get(pool, id_or_prefix).await;
    }
    let rows: Vec<ApprovalRow> = decode::all(
        &sqlx::query("SELECT * FROM approvals WHERE id >= $1 AND id < $2 || 'g' LIMIT 2")
            .bind(id_or_prefix)
            .bind(id_or_prefix)
            .fetch_all(pool)
            .await?,
    )?;
    match rows.len() {
        1 => Ok(rows.into_iter().next()),
        0 => Ok(None),
        _ => Err(StoreError::Conflict(format!(
            "{id_or_prefix:?} matches more than one approval; give more of the id"
        ))),
    }
}

/// The newest approval for a step (a superseded one has a newer successor).
pub async fn latest_for_step<'e>(
    db: impl Executor<'e>,
    run: RunId,
    seq: i64,
) -> Result<Option<ApprovalRow>> {
    let row = sqlx::query(
        "SELECT * FROM approvals WHERE run_id = $1 AND step_seq = $2 ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(run)
    .bind(seq)
    .fetch_optional(db)
    .await?;
    decode::optional(row)
}

pub async fn list(
    pool: &Pool,
    status: Option<Status>,
    run: Option<RunId>,
) -> Result<Vec<ApprovalRow>> {
    decode::all(
        &sqlx::query(
            "SELECT * FROM approvals WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR run_id = $2)
             ORDER BY created_at, id",
        )
        .bind(status)
        .bind(run)
        .fetch_all(pool)
        .await?,
    )
}

pub async fn pending_due(pool: &Pool, now: i64) -> Result<Vec<ApprovalRow>> {
    decode::all(
        &sqlx::query(
            "SELECT * FROM approvals WHERE status = 'pending' AND paused_at IS NULL AND expires_at <= $1
             ORDER BY expires_at",
        )
        .bind(now)
        .fetch_all(pool)
        .await?,
    )
}

/// A decision on a pending approval. Fails with `Conflict` when it is no longer pending.
pub struct DecisionWrite<'a> {
    pub status: Status,
    pub by: &'a str,
    pub note: Option<&'a str>,
    pub scope: Option<Scope>,
    /// The person's edit: what runs instead of the proposal.
    pub edited: Option<&'a Edit>,
    pub now: i64,
}

/// An action as a person edited it, with the preview and pre-images it was reviewed with.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub action: RecordedCall,
    pub hash: String,
    pub preview: String,
    pub pre_images: Vec<FileImage>,
    pub risk: Risk,
    pub reasons: Vec<String>,
}

pub async fn decide(tx: &mut Tx, id: &str, d: &DecisionWrite<'_>) -> Result<()> {
    let done = sqlx::query(
        "UPDATE approvals SET status = $1, decided_at = $2, decided_by = $3, note = $4, scope = $5,
            edited_action = $6, edited_hash = $7, edited_preview = $8, edited_risk = $9, edited_reasons = $10,
            pre_images = COALESCE($11, pre_images)
         WHERE id = $12 AND status = 'pending'",
    )
    .bind(d.status)
    .bind(d.now)
    .bind(d.by)
    .bind(d.note)
    .bind(d.scope)
    .bind(d.edited.map(|e| e.action.text()))
    .bind(d.edited.map(|e| e.hash.as_str()))
    .bind(d.edited.map(|e| e.preview.as_str()))
    .bind(d.edited.map(|e| e.risk))
    .bind(d.edited.map(|e| Json(&e.reasons)))
    .bind(d.edited.map(|e| Json(&e.pre_images)))
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!(
            "approval {id} is no longer pending; it was decided or replaced meanwhile"
        )));
    }
    Ok(())
}

/// Records what an approval lands once the person left files out of a staged result.
pub async fn leave_out(tx: &mut Tx, id: &str, staged: &StagedEffect) -> Result<()> {
    sqlx::query("UPDATE approvals SET staged = $1 WHERE id = $2 AND status = 'approved'")
        .bind(Json(staged))
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Marks an approval superseded by `by` (pending or approved-but-not-yet-run).
pub async fn supersede(tx: &mut Tx, id: &str, by: &str, why: &str, now: i64) -> Result<()> {
    let done = sqlx::query(
        "UPDATE approvals SET status = 'superseded', superseded_by = $1, stale_reason = $2,
            decided_at = COALESCE(decided_at, $3)
         WHERE id = $4 AND status IN ('pending', 'approved')",
    )
    .bind(by)
    .bind(why)
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!(
            "approval {id} was decided meanwhile; not replacing it"
        )));
    }
    Ok(())
}

/// A pending review that timed out stays open with no deadline. Fails with `Conflict` when it was
/// decided (or paused) meanwhile.
pub async fn pause(tx: &mut Tx, id: &str, now: i64) -> Result<()> {
    let done = sqlx::query(
        "UPDATE approvals SET paused_at = $1 WHERE id = $2 AND status = 'pending' AND paused_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!(
            "approval {id} was decided or paused meanwhile"
        )));
    }
    Ok(())
}

/// Ends every pending approval of a run that will never carry it out (cancelled). Returns their ids.
pub async fn close_for_run(tx: &mut Tx, run: RunId, why: &str, now: i64) -> Result<Vec<String>> {
    let ids: Vec<String> = sqlx::query_scalar(
        "UPDATE approvals SET status = 'expired', decided_at = $1, decided_by = 'system', note = $2
         WHERE run_id = $3 AND status = 'pending' RETURNING id",
    )
    .bind(now)
    .bind(why)
    .bind(run.to_string())
    .fetch_all(&mut **tx)
    .await?;
    Ok(ids)
}

/// A rejection refused `count` calls queued after the card's own as well.
pub async fn siblings_rejected(tx: &mut Tx, id: &str, count: i64) -> Result<()> {
    sqlx::query("UPDATE approvals SET siblings_rejected = $1 WHERE id = $2 AND status = 'rejected'")
        .bind(count)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
