//! Reading the whole audit table fast, for verification and export.
//!
//! sqlx hands rows over one by one from its worker thread, which caps a full scan near 100,000
//! rows/s here; a million-event log must verify in two seconds. These scans therefore use rusqlite
//! on a read-only connection of their own (same bundled SQLite), lending each row's text in place,
//! on a blocking thread. Writes never go through here.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::audit::AuditRow;
use super::StoreError;
use crate::audit::Filter;

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
    "seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash";

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

/// Hands each event with `from <= seq < to` (in seq order) to `each`, which returns false to stop,
/// on a read-only connection to `db`. Blocking: call from `spawn_blocking`.
pub fn events_between(
    db: &Path,
    from: i64,
    to: i64,
    each: impl FnMut(EventRef<'_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    Reader::open(db)?.events_between(from, to, &Filter::default(), each)
}

/// A read-only connection for several scans in a row.
pub struct Reader {
    conn: Connection,
}

impl Reader {
    pub fn open(db: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(invalid)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(invalid)?;
        Ok(Self { conn })
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
        let (conditions, filtered) = conditions(filter);
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_events WHERE seq >= ? AND seq < ?{conditions} ORDER BY seq"
        );
        let mut params = vec![Param::Int(from), Param::Int(to)];
        params.extend(filtered);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(invalid)?;
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
            };
            if !each(event)? {
                break;
            }
        }
        Ok(())
    }
}

fn invalid(e: rusqlite::Error) -> StoreError {
    StoreError::Invalid(format!("reading the audit log: {e}"))
}
