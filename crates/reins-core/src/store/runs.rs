//! The `runs` table. Every state write is guarded by `state_version` and `fence`: zero rows affected
//! means another actor moved first, and the caller must stop rather than retry on what it remembers.

use sqlx::Row;
use super::dialect::Sql;
use super::Pool;

use super::column::Json;
use super::decode::{self, Stored};
use super::{Result, StoreError, Tx};
use crate::compat::Compat;
use crate::ids::RunId;
use crate::run::{self, RunEvent, RunState};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RunRow {
    pub id: RunId,
    pub name: String,
    pub goal: String,
    pub workspace: String,
    pub agent_kind: String,
    #[sqlx(try_from = "Json<Compat>")]
    pub compat: Compat,
    pub state: RunState,
    pub state_version: i64,
    pub fence: i64,
    pub owner: Option<String>,
    pub lease_until: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// A queued run is not claimed before this (retry backoff).
    pub not_before: Option<i64>,
    /// The machine it was started on (None: made before machines were recorded).
    pub machine: Option<String>,
}

impl Stored for RunRow {
    const TABLE: &'static str = "runs";
    const KEY: &'static [&'static str] = &["id"];
}

/// A new run with its original input (kept apart: see the `run_specs` migration).
pub async fn insert(tx: &mut Tx, run: &RunRow, spec: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO runs (id, name, goal, workspace, agent_kind, compat, state, state_version,
                           fence, owner, lease_until, last_error, created_at, updated_at, machine)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(run.id)
    .bind(&run.name)
    .bind(&run.goal)
    .bind(&run.workspace)
    .bind(&run.agent_kind)
    .bind(super::column::Json(&run.compat))
    .bind(run.state)
    .bind(run.state_version)
    .bind(run.fence)
    .bind(&run.owner)
    .bind(run.lease_until)
    .bind(&run.last_error)
    .bind(run.created_at)
    .bind(run.updated_at)
    .bind(&run.machine)
    .execute(&mut **tx)
    .await?;
    sqlx::query("INSERT INTO run_specs (run_id, spec) VALUES ($1, $2)")
        .bind(run.id)
        .bind(spec)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The run's original input, as stored (secrets sealed).
pub async fn spec(pool: &Pool, id: RunId) -> Result<String> {
    sqlx::query_scalar("SELECT spec FROM run_specs WHERE run_id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?
        .ok_or_else(|| StoreError::NotFound {
            what: format!("the original input of run {id}"),
        })
}

/// A run's name, when the run is there.
pub async fn name(pool: &Pool, id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT name FROM runs WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?)
}

pub async fn get(pool: &Pool, id: RunId) -> Result<RunRow> {
    let row = sqlx::query("SELECT * FROM runs WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?;
    decode::optional(row)?.ok_or_else(|| StoreError::NotFound {
        what: format!("run {id}"),
    })
}

/// The runs with these ids, in one statement (a list of approvals names a run per card).
pub async fn get_many(pool: &Pool, ids: &[RunId]) -> Result<Vec<RunRow>> {
    let mut found = Vec::with_capacity(ids.len());
    // In chunks, each well under either database's limit on a statement's parameters.
    for chunk in ids.chunks(500) {
        let mut q = Sql::new("SELECT * FROM runs WHERE id IN ");
        q.bind_list(chunk.iter().map(ToString::to_string))?;
        let (sql, args) = q.into_parts();
        found.extend(decode::all::<RunRow>(
            &sqlx::query_with(&sql, args).fetch_all(pool).await?,
        )?);
    }
    Ok(found)
}

/// The newest run of agent `kind` named `name` (a Claude Code session's run), if any.
pub async fn latest_named(pool: &Pool, kind: &str, name: &str) -> Result<Option<RunRow>> {
    let row = sqlx::query(
        "SELECT * FROM runs WHERE agent_kind = $1 AND name = $2 ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(kind)
    .bind(name)
    .fetch_optional(pool)
    .await?;
    decode::optional(row)
}

/// Whether the newest run of `kind` named `name` is still open (neither succeeded nor failed), as
/// this transaction sees it.
pub async fn newest_named_open(tx: &mut Tx, kind: &str, name: &str) -> Result<bool> {
    let state: Option<String> = sqlx::query_scalar(
        "SELECT state FROM runs WHERE agent_kind = $1 AND name = $2 ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(kind)
    .bind(name)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(state.is_some_and(|s| s != "succeeded" && s != "failed"))
}

/// The run's state as this transaction sees it.
pub async fn state(tx: &mut Tx, id: RunId) -> Result<RunState> {
    let state: Option<String> = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    let state = state.ok_or_else(|| StoreError::NotFound {
        what: format!("run {id}"),
    })?;
    RunState::parse(&state).ok_or_else(|| StoreError::Damaged {
        table: "runs",
        row: format!("id {id}"),
        detail: format!("column state: unknown state {state:?}"),
    })
}

/// Every run, newest first, with its number of steps.
pub async fn list(pool: &Pool) -> Result<Vec<(RunRow, i64)>> {
    let rows = sqlx::query(
        "SELECT r.*, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) AS step_count
         FROM runs r ORDER BY r.created_at DESC, r.id DESC",
    )
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|row| Ok((decode::one(row)?, row.try_get("step_count")?)))
        .collect()
}

/// Ids that start with `prefix` (a user may type the first characters of an id).
pub async fn ids_with_prefix(pool: &Pool, prefix: &str) -> Result<Vec<RunId>> {
    Ok(
        sqlx::query_scalar("SELECT id FROM runs WHERE substr(id, 1, CAST($1 AS INTEGER)) = $2 ORDER BY id LIMIT 10")
            .bind(i64::try_from(prefix.len()).unwrap_or(i64::MAX))
            .bind(prefix)
            .fetch_all(pool)
            .await?,
    )
}

/// The stored specs of every run of an agent kind.
pub async fn specs(pool: &Pool) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT r.agent_kind, s.spec FROM runs r JOIN run_specs s ON s.run_id = r.id",
    )
    .fetch_all(pool)
    .await?)
}

/// Holders of active runs (to learn which of them are gone).
pub async fn active_owners(pool: &Pool) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT DISTINCT owner FROM runs WHERE state IN ('running', 'pause_requested') AND owner IS NOT NULL",
    )
    .fetch_all(pool)
    .await?)
}

/// The heartbeat: extends the lease of the worker holding `fence` outside any transaction. Returns
/// the run's state, or None when that worker no longer holds it.
pub async fn heartbeat(
    pool: &Pool,
    id: RunId,
    fence: i64,
    lease_until: i64,
    now: i64,
) -> Result<Option<RunState>> {
    Ok(sqlx::query_scalar(
        "UPDATE runs SET lease_until = CASE WHEN COALESCE(lease_until, 0) > $1 THEN lease_until ELSE $1 END, updated_at = $2
         WHERE id = $3 AND fence = $4 AND state IN ('running', 'pause_requested')
         RETURNING state",
    )
    .bind(lease_until)
    .bind(now)
    .bind(id)
    .bind(fence)
    .fetch_optional(pool)
    .await?)
}

/// Records that the run now counts as compatible with this build (a person resumed it anyway).
pub async fn set_compat(tx: &mut Tx, id: RunId, compat: &Compat) -> Result<()> {
    sqlx::query("UPDATE runs SET compat = $1 WHERE id = $2")
        .bind(super::column::Json(compat))
        .bind(id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// When the earliest queued run waiting out a retry backoff becomes runnable.
pub async fn next_retry_at(pool: &Pool) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT MIN(not_before) FROM runs WHERE state = 'queued' AND not_before IS NOT NULL",
    )
    .fetch_one(pool)
    .await?)
}

/// Holds a queued run back until `at` (a retry's backoff).
pub async fn set_not_before(tx: &mut Tx, id: RunId, at: i64) -> Result<()> {
    sqlx::query("UPDATE runs SET not_before = $1 WHERE id = $2")
        .bind(at)
        .bind(id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Moves the fence on, so whatever worker held the run can write nothing more for it.
pub async fn bump_fence(tx: &mut Tx, id: RunId) -> Result<i64> {
    Ok(
        sqlx::query_scalar("UPDATE runs SET fence = fence + 1 WHERE id = $1 RETURNING fence")
            .bind(id.to_string())
            .fetch_one(&mut **tx)
            .await?,
    )
}

/// Runs a worker may take now: queued ones, and active ones whose lease has run out or whose holder
/// is one of `gone_owners` (processes known to have died).
pub async fn runnable(pool: &Pool, now: i64, gone_owners: &[String]) -> Result<Vec<Runnable>> {
    let mut q = Sql::new(
        "SELECT id, machine, workspace FROM runs
         WHERE (state = 'queued' AND (not_before IS NULL OR not_before <= ",
    );
    q.bind(now)?.push(
        "))
            OR (state IN ('running', 'pause_requested') AND (lease_until IS NULL OR lease_until < ",
    );
    q.bind(now)?;
    for owner in gone_owners {
        q.push(" OR owner = ").bind(owner.as_str())?;
    }
    q.push(")) ORDER BY created_at, id");
    let (sql, args) = q.into_parts();
    Ok(sqlx::query_as_with(&sql, args).fetch_all(pool).await?)
}

/// A run a worker may take, and where it lives.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Runnable {
    pub id: RunId,
    pub machine: Option<String>,
    pub workspace: String,
}

/// Takes ownership: moves to `to`, bumps the fence, sets owner and lease. Guarded by `state_version`
/// and by claimability at this instant (queued, its lease has run out, or it is still held by
/// `gone_owner`, a holder known to have died), so a lease renewed since the caller looked is never
/// taken. Returns the new (fence, state_version).
/// What a claim asks for.
pub struct Claim<'a> {
    pub expected_version: i64,
    pub to: RunState,
    pub owner: &'a str,
    pub lease_until: i64,
    pub now: i64,
    /// A holder known to have died, whose live lease need not be waited for.
    pub gone_owner: Option<&'a str>,
}

pub async fn claim(tx: &mut Tx, id: RunId, c: &Claim<'_>) -> Result<(i64, i64)> {
    let row: Option<(i64, i64)> = sqlx::query_as(
        "UPDATE runs SET state = $1, state_version = state_version + 1, fence = fence + 1,
                         owner = $2, lease_until = $3, updated_at = $4, not_before = NULL
         WHERE id = $5 AND state_version = $6
           AND (state = 'queued' OR lease_until IS NULL OR lease_until < $7 OR owner = $8)
         RETURNING fence, state_version",
    )
    .bind(c.to)
    .bind(c.owner)
    .bind(c.lease_until)
    .bind(c.now)
    .bind(id.to_string())
    .bind(c.expected_version)
    .bind(c.now)
    .bind(c.gone_owner)
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or(StoreError::StaleState {
        run: id.to_string(),
        expected: c.expected_version,
    })
}

/// Proves we still own the run and extends the lease. Part of every transaction a worker commits.
pub async fn renew(tx: &mut Tx, id: RunId, fence: i64, lease_until: i64, now: i64) -> Result<()> {
    let done = sqlx::query(
        "UPDATE runs SET lease_until = $1, updated_at = $2
         WHERE id = $3 AND fence = $4 AND state IN ('running', 'pause_requested')",
    )
    .bind(lease_until)
    .bind(now)
    .bind(id.to_string())
    .bind(fence)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(StoreError::LostLease {
            run: id.to_string(),
            fence,
        })
    }
}

/// Applies `event` to the run inside `tx`, by the run lifecycle table. With `fence`, on behalf of the
/// worker holding it: fails with `LostLease` unless that worker still owns the active run. Without,
/// on behalf of a person. Leaving the active states releases the lease. Returns (from, to,
/// new state_version).
pub async fn advance(
    tx: &mut Tx,
    id: RunId,
    fence: Option<i64>,
    event: RunEvent,
    last_error: Option<&str>,
    now: i64,
) -> Result<(RunState, RunState, i64)> {
    let row: Option<(String, i64, i64)> =
        sqlx::query_as("SELECT state, state_version, fence FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    let (state, version, current_fence) = row.ok_or_else(|| StoreError::NotFound {
        what: format!("run {id}"),
    })?;
    let from = RunState::parse(&state).ok_or_else(|| StoreError::Damaged {
        table: "runs",
        row: format!("id {id}"),
        detail: format!("column state: unknown state {state:?}"),
    })?;
    if let Some(fence) = fence {
        if fence != current_fence || !from.is_active() {
            return Err(StoreError::LostLease {
                run: id.to_string(),
                fence,
            });
        }
    }
    let to = run::next(from, event).ok_or(StoreError::Illegal {
        run: id.to_string(),
        from,
        event,
    })?;
    let keeps_lease = to.is_active();
    let version: i64 = sqlx::query_scalar(
        "UPDATE runs SET state = $1, state_version = state_version + 1, last_error = $2, updated_at = $3,
                         owner = CASE WHEN $4 THEN owner ELSE NULL END,
                         lease_until = CASE WHEN $5 THEN lease_until ELSE NULL END
         WHERE id = $6 AND state_version = $7
         RETURNING state_version",
    )
    .bind(to)
    // Why the run stopped is for people: a secret in an error message is not kept (F11).
    .bind(last_error.map(|e| crate::secrets::redact(e).into_owned()))
    .bind(now)
    .bind(keeps_lease)
    .bind(keeps_lease)
    .bind(id.to_string())
    .bind(version)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(StoreError::StaleState {
        run: id.to_string(),
        expected: version,
    })?;
    Ok((from, to, version))
}
