//! Reading the whole audit table fast, for verification and export.
//!
//! sqlx hands rows over one by one from its worker thread, which caps a full scan near 100,000
//! rows/s here; a million-event log must verify in two seconds. On the SQLite file these scans
//! therefore use rusqlite on a read-only connection of their own (same bundled SQLite), lending each
//! row's text in place, on a blocking thread. On a shared PostgreSQL they read pages of rows through
//! the store's pool. Writes never go through here.

use std::path::PathBuf;

use rusqlite::{Connection, OpenFlags};

use super::audit::AuditRow;
use super::StoreError;
use crate::event::Filter;

/// One event as it sits in the row: nothing copied.
#[derive(Clone, Copy, Debug)]
pub struct EventRef<'r> {
    pub seq: i64,
    pub at: i64,
    pub actor: &'r str,
    pub kind: &'r str,
    pub run_id: Option<&'r str>,
    pub step_seq: Option<i64>,
    pub approval_id: Option<&'r str>,
    pub payload: &'r str,
    pub prev_hash: &'r str,
    pub hash: &'r str,
    pub mac: Option<&'r str>,
}

impl<'r> EventRef<'r> {
    pub fn to_owned_row(self) -> AuditRow {
        AuditRow {
            seq: self.seq,
            at: self.at,
            actor: self.actor.into(),
            kind: self.kind.into(),
            run_id: self.run_id.map(str::to_owned),
            step_seq: self.step_seq,
            approval_id: self.approval_id.map(str::to_owned),
            payload: self.payload.into(),
            prev_hash: self.prev_hash.into(),
            hash: self.hash.into(),
            mac: self.mac.map(str::to_owned),
        }
    }

    /// The fields the chain hashes.
    pub fn canon(&self) -> super::audit::Canon<'r> {
        super::audit::Canon {
            seq: self.seq,
            at: self.at,
            actor: self.actor,
            kind: self.kind,
            run: self.run_id,
            step: self.step_seq,
            approval: self.approval_id,
            payload: self.payload,
        }
    }

    /// Whether `hash` is what `prev_hash` and the fields give (`buf` is reused scratch space).
    pub fn hash_holds_in(&self, buf: &mut Vec<u8>) -> bool {
        super::audit::hash_holds(&self.canon(), self.prev_hash, self.hash, buf)
    }
}

/// The columns every scan selects, in `EventRef` order.
pub(crate) const COLUMNS: &str =
    "seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash, mac";

/// A value bound to a scan's SQL.
#[derive(Clone, Debug)]
pub(crate) enum Param {
    Int(i64),
    Text(String),
}

/// ` AND …` conditions for a filter, with their values in order (`?` placeholders).
pub(crate) fn conditions(filter: &Filter) -> (String, Vec<Param>) {
    let mut sql = String::new();
    let mut params = Vec::new();
    if let Some(run) = filter.run {
        sql.push_str(" AND run_id = ?");
        params.push(Param::Text(run.to_string()));
    }
    if let Some(kind) = &filter.kind {
        if kind.contains('.') {
            sql.push_str(" AND kind = ?");
            params.push(Param::Text(kind.clone()));
        } else {
            // A family: `approval` is every `approval.*` (a range, so the kind index serves it).
            sql.push_str(" AND kind >= ? AND kind < ?");
            params.push(Param::Text(format!("{kind}.")));
            params.push(Param::Text(format!("{kind}/")));
        }
    }
    if let Some(actor) = &filter.actor {
        sql.push_str(" AND actor = ?");
        params.push(Param::Text(actor.clone()));
    }
    if let Some(since) = filter.since {
        sql.push_str(" AND at >= ?");
        params.push(Param::Int(since));
    }
    if let Some(until) = filter.until {
        sql.push_str(" AND at < ?");
        params.push(Param::Int(until));
    }
    (sql, params)
}

/// Where a scan reads the audit table from.
#[derive(Clone, Debug)]
pub enum Source {
    /// The SQLite file, read with rusqlite.
    File(PathBuf),
    /// The shared database, read in pages through the store's pool on this runtime.
    Pool(super::Pool, tokio::runtime::Handle),
}

/// Rows a page of a PostgreSQL scan holds.
const PAGE: i64 = 5_000;

/// Hands each event with `from <= seq < to` (in seq order) to `each`, which returns false to stop.
/// Blocking: call from `spawn_blocking`.
pub fn events_between(
    db: &Source,
    from: i64,
    to: i64,
    each: impl FnMut(EventRef<'_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    Reader::open(db)?.events_between(from, to, &Filter::default(), each)
}

/// A read-only connection for several scans in a row.
pub enum Reader {
    File(Connection),
    Pool(super::Pool, tokio::runtime::Handle),
}

impl Reader {
    pub fn open(db: &Source) -> Result<Self, StoreError> {
        let path = match db {
            Source::File(path) => path,
            Source::Pool(pool, runtime) => return Ok(Self::Pool(pool.clone(), runtime.clone())),
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(invalid)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(invalid)?;
        Ok(Self::File(conn))
    }

    /// The events with `from <= seq < to` that `filter` selects, in seq order (see
    /// [`events_between`]).
    pub fn events_between(
        &self,
        from: i64,
        to: i64,
        filter: &Filter,
        mut each: impl FnMut(EventRef<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let conn = match self {
            Self::File(conn) => conn,
            Self::Pool(pool, runtime) => {
                return paged(pool, runtime, from, to, filter, each);
            }
        };
        let (conditions, filtered) = conditions(filter);
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_events WHERE seq >= ? AND seq < ?{conditions} ORDER BY seq"
        );
        let mut params = vec![Param::Int(from), Param::Int(to)];
        params.extend(filtered);
        let mut stmt = conn.prepare_cached(&sql).map_err(invalid)?;
        let bound: Vec<&dyn rusqlite::ToSql> = params
            .iter()
            .map(|p| match p {
                Param::Int(i) => i as &dyn rusqlite::ToSql,
                Param::Text(t) => t as &dyn rusqlite::ToSql,
            })
            .collect();
        let mut rows = stmt.query(bound.as_slice()).map_err(invalid)?;
        while let Some(row) = rows.next().map_err(invalid)? {
            let text = |i: usize| -> Result<&str, StoreError> {
                row.get_ref(i)
                    .map_err(invalid)?
                    .as_str()
                    .map_err(|e| StoreError::Invalid(format!("audit column {i}: {e}")))
            };
            let opt_text = |i: usize| -> Result<Option<&str>, StoreError> {
                row.get_ref(i)
                    .map_err(invalid)?
                    .as_str_or_null()
                    .map_err(|e| StoreError::Invalid(format!("audit column {i}: {e}")))
            };
            let event = EventRef {
                seq: row.get(0).map_err(invalid)?,
                at: row.get(1).map_err(invalid)?,
                actor: text(2)?,
                kind: text(3)?,
                run_id: opt_text(4)?,
                step_seq: row.get(5).map_err(invalid)?,
                approval_id: opt_text(6)?,
                payload: text(7)?,
                prev_hash: text(8)?,
                hash: text(9)?,
                mac: opt_text(10)?,
            };
            if !each(event)? {
                break;
            }
        }
        Ok(())
    }
}

/// The PostgreSQL scan: pages of `PAGE` rows in seq order, each lent to `each` in turn.
fn paged(
    pool: &super::Pool,
    runtime: &tokio::runtime::Handle,
    from: i64,
    to: i64,
    filter: &Filter,
    mut each: impl FnMut(EventRef<'_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let (conditions, filtered) = conditions(filter);
    let sql = super::dialect::numbered(&format!(
        "SELECT {COLUMNS} FROM audit_events WHERE seq >= ? AND seq < ?{conditions} ORDER BY seq LIMIT {PAGE}"
    ));
    let mut next = from;
    loop {
        let mut params = vec![Param::Int(next), Param::Int(to)];
        params.extend(filtered.iter().cloned());
        let rows = runtime.block_on(async {
            let mut q = sqlx::query(&sql);
            for p in &params {
                q = match p {
                    Param::Int(i) => q.bind(*i),
                    Param::Text(t) => q.bind(t.as_str()),
                };
            }
            q.fetch_all(pool).await
        })?;
        let rows = rows
            .iter()
            .map(<AuditRow as sqlx::FromRow<'_, super::DbRow>>::from_row)
            .collect::<Result<Vec<_>, _>>()?;
        for row in &rows {
            if !each(row.as_event())? {
                return Ok(());
            }
        }
        match rows.last() {
            Some(last) if rows.len() as i64 == PAGE => next = last.seq + 1,
            _ => return Ok(()),
        }
    }
}

fn invalid(e: rusqlite::Error) -> StoreError {
    StoreError::Invalid(format!("reading the audit log: {e}"))
}
