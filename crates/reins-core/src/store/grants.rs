//! The `grants` table: standing permissions, created only by an approval decision, counted on every
//! use, revocable.

use super::Pool;

use super::column::JsonOpt;
use super::decode::{self, Stored};
use super::{Result, StoreError, Tx};
use crate::approval::{Matcher, Scope};
use crate::ids::RunId;
use crate::policy::Risk;

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct GrantRow {
    pub id: String,
    pub scope: Scope,
    pub run_id: Option<RunId>,
    pub workspace: Option<String>,
    pub tool: String,
    pub matcher: Matcher,
    pub pattern: String,
    pub origin: String,
    pub uses: i64,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    /// The risk of the action the grant was made from: it covers nothing riskier. None: made
    /// before grants recorded it (and its approval is gone), so it covers only what is low risk.
    pub risk: Option<Risk>,
    /// For a prefix grant: the options of the approved command beyond the prefix, the only ones
    /// a covered command may have (None: made before grants recorded them, so none).
    #[sqlx(try_from = "JsonOpt<Vec<String>>")]
    pub options: Option<Vec<String>>,
}

impl GrantRow {
    /// What the grant allows, for the policy to judge an action against.
    pub fn terms(&self) -> crate::approval::grant::Terms {
        crate::approval::grant::Terms {
            tool: self.tool.clone(),
            matcher: self.matcher,
            pattern: self.pattern.clone(),
            risk: self.risk,
            options: self.options.clone(),
            revoked: self.revoked_at.is_some(),
        }
    }
}

impl Stored for GrantRow {
    const TABLE: &'static str = "grants";
    const KEY: &'static [&'static str] = &["id"];
}

pub async fn insert(tx: &mut Tx, g: &GrantRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO grants (id, scope, run_id, workspace, tool, matcher, pattern, origin, uses, created_at, risk, options)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10, $11)",
    )
    .bind(&g.id)
    .bind(g.scope)
    .bind(g.run_id)
    .bind(&g.workspace)
    .bind(&g.tool)
    .bind(g.matcher)
    .bind(&g.pattern)
    .bind(&g.origin)
    .bind(g.created_at)
    .bind(g.risk)
    .bind(g.options.as_ref().map(super::column::Json))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Live grants for a tool that may apply to `run` on `workspace`.
pub async fn live_for(
    pool: &Pool,
    tool: &str,
    run: RunId,
    workspace: &str,
) -> Result<Vec<GrantRow>> {
    decode::all(
        &sqlx::query(
            "SELECT * FROM grants WHERE tool = $1 AND revoked_at IS NULL
               AND (scope = 'always' OR (scope = 'run' AND run_id = $2) OR (scope = 'workspace' AND workspace = $3))
             ORDER BY created_at",
        )
        .bind(tool)
        .bind(run)
        .bind(workspace)
        .fetch_all(pool)
        .await?,
    )
}

pub async fn list(pool: &Pool) -> Result<Vec<GrantRow>> {
    decode::all(
        &sqlx::query("SELECT * FROM grants ORDER BY created_at")
            .fetch_all(pool)
            .await?,
    )
}

/// Counts a use; fails when the grant was revoked meanwhile.
pub async fn used(tx: &mut Tx, id: &str, now: i64) -> Result<()> {
    let done = sqlx::query(
        "UPDATE grants SET uses = uses + 1, last_used_at = $1 WHERE id = $2 AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!("grant {id} was revoked")));
    }
    Ok(())
}

/// A grant by its full id, or a unique prefix of at least 4 id characters.
pub async fn find(pool: &Pool, id: &str) -> Result<GrantRow> {
    // No LIKE wildcards get through: the prefix is compared as a range.
    let prefix_ok = id.len() >= 4 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    let rows: Vec<GrantRow> = decode::all(
        &sqlx::query(
            "SELECT * FROM grants WHERE id = $1 OR ($2 AND id >= $1 AND id < $1 || 'g') LIMIT 2",
        )
        .bind(id)
        .bind(prefix_ok)
        .fetch_all(pool)
        .await?,
    )?;
    if rows.len() > 1 {
        return Err(StoreError::Conflict(format!(
            "{id:?} matches more than one grant; give more of the id"
        )));
    }
    let row = rows
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::NotFound {
            what: format!("grant {id}"),
        })?;
    if row.revoked_at.is_some() {
        return Err(StoreError::Conflict(format!(
            "grant {} is already revoked",
            row.id
        )));
    }
    Ok(row)
}

/// Revokes a live grant; fails with `Conflict` when it was revoked meanwhile.
pub async fn revoke(tx: &mut Tx, id: &str, now: i64) -> Result<()> {
    let done = sqlx::query("UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(now)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!(
            "grant {id} is already revoked"
        )));
    }
    Ok(())
}
