//! The `audit_events` table: an append-only SHA-256 chain, written in the same transaction as the
//! change each event records. `hash = SHA-256(prev_hash ‖ canonical event)`.

use serde::Serialize;
use super::dialect::Sql;
use super::steps::Query;
use super::Pool;

use super::anchor::Mark;
use super::scan::EventRef;
use super::{Result, StoreError, Tx};
use crate::digest::Digest;
use crate::ids::RunId;

/// The hash before the first event.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub use crate::event::{Actor, Event};

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditRow {
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub kind: String,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub approval_id: Option<String>,
    pub payload: String,
    pub prev_hash: String,
    pub hash: String,
    /// `<key id>:<HMAC-SHA256 of hash>` under the writing machine's audit key (`store::vouch`);
    /// None when it had no keyring, or before the log was keyed.
    pub mac: Option<String>,
}

impl AuditRow {
    /// This row, borrowed.
    pub fn as_event(&self) -> EventRef<'_> {
        EventRef {
            seq: self.seq,
            at: self.at,
            actor: &self.actor,
            kind: &self.kind,
            run_id: self.run_id.as_deref(),
            step_seq: self.step_seq,
            approval_id: self.approval_id.as_deref(),
            payload: &self.payload,
            prev_hash: &self.prev_hash,
            hash: &self.hash,
            mac: self.mac.as_deref(),
        }
    }

    /// The bytes the chain hashes for this event (the tests recompute the chain with it).
    #[cfg(test)]
    pub fn canonical(&self) -> String {
        canonical(&self.as_event().canon())
    }

    /// Whether `hash` is what `prev_hash` and this event's fields give.
    pub fn hash_holds(&self) -> bool {
        self.hash_holds_in(&mut Vec::new())
    }

    /// `hash_holds`, reusing `buf` for the canonical bytes (verification walks millions).
    pub fn hash_holds_in(&self, buf: &mut Vec<u8>) -> bool {
        self.as_event().hash_holds_in(buf)
    }
}

/// Whether `hash` (hex) is `SHA-256(prev_hash ‖ canonical(event))`; `buf` is scratch space.
pub fn hash_holds(event: &Canon<'_>, prev_hash: &str, hash: &str, buf: &mut Vec<u8>) -> bool {
    use sha2::Digest as _;
    buf.clear();
    if serde_json::to_writer(&mut *buf, event).is_err() {
        return false;
    }
    let mut h = sha2::Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(&buf[..]);
    let mut hex = [0u8; 64];
    hex::encode_to_slice(h.finalize(), &mut hex).is_ok() && hex[..] == *hash.as_bytes()
}

/// The fields of one event in the fixed order the chain hashes them. `step` and `approval` are
/// left out when unset, so events written before those columns existed hash as they did.
#[derive(Serialize)]
pub struct Canon<'a> {
    pub seq: i64,
    pub at: i64,
    pub actor: &'a str,
    pub kind: &'a str,
    pub run: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<&'a str>,
    pub payload: &'a str,
}

/// The bytes the chain hashes for one event.
pub fn canonical(event: &Canon<'_>) -> String {
    serde_json::to_string(event).unwrap_or_default()
}

pub fn chain_hash(prev_hash: &str, canonical_event: &str) -> Digest {
    let mut bytes = Vec::with_capacity(prev_hash.len() + canonical_event.len());
    bytes.extend_from_slice(prev_hash.as_bytes());
    bytes.extend_from_slice(canonical_event.as_bytes());
    Digest::of(&bytes)
}

/// The worker a transaction is committed for: appending fails unless it still owns the run. It also
/// remembers the chain head its last append produced, so the next append can skip reading it.
#[derive(Debug)]
pub struct Owner {
    pub run: RunId,
    pub fence: i64,
    head: std::sync::Mutex<Option<(i64, String)>>,
    /// The seq of the last checkpoint this owner wrote, so the next can travel with its events.
    checkpoint: std::sync::Mutex<Option<i64>>,
    /// Set when an append saw that a person asked the run to pause.
    pause_requested: std::sync::atomic::AtomicBool,
}

impl Owner {
    pub fn new(run: RunId, fence: i64) -> Self {
        Self {
            run,
            fence,
            head: std::sync::Mutex::new(None),
            checkpoint: std::sync::Mutex::new(None),
            pause_requested: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether a pause was requested, as last seen by this owner's appends (or told by `saw_pause`).
    pub fn pause_requested(&self) -> bool {
        self.pause_requested
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn saw_pause(&self, requested: bool) {
        self.pause_requested
            .store(requested, std::sync::atomic::Ordering::Relaxed);
    }

    /// The seq of the last checkpoint this owner wrote, if it remembers one.
    pub fn last_checkpoint(&self) -> Option<i64> {
        self.checkpoint.lock().ok().and_then(|c| *c)
    }

    pub fn wrote_checkpoint(&self, seq: i64) {
        if let Ok(mut c) = self.checkpoint.lock() {
            *c = Some(seq);
        }
    }

    fn remembered(&self) -> Option<(i64, String)> {
        self.head.lock().ok().and_then(|h| h.clone())
    }

    fn remember(&self, head: Option<(i64, String)>) {
        if let Ok(mut h) = self.head.lock() {
            *h = head;
        }
    }
}

/// Appends one event to the chain inside `tx`; returns its seq.
pub async fn append(tx: &mut Tx, event: Event, now: i64) -> Result<i64> {
    append_all(tx, None, &[event], now).await
}

/// One event as the chain stores it: its kind's name and its payload as JSON.
struct Entry {
    actor: Actor,
    kind: &'static str,
    run: Option<RunId>,
    payload: serde_json::Value,
}

impl Entry {
    fn of(event: &Event) -> Self {
        Self {
            actor: event.actor,
            kind: event.kind.name(),
            run: event.run,
            payload: event.payload(),
        }
    }
}

/// Appends an event of any kind and payload: for the chain's own tests (tampering, export), which
/// need events no harness code writes.
#[cfg(test)]
pub(crate) async fn append_raw(
    tx: &mut Tx,
    actor: Actor,
    kind: &'static str,
    run: Option<RunId>,
    payload: &serde_json::Value,
    now: i64,
) -> Result<i64> {
    let entry = Entry {
        actor,
        kind,
        run,
        payload: payload.clone(),
    };
    insert(tx, None, &[entry], now).await
}

/// The MACs of `rows`, made with `key`.
fn vouch(rows: &mut [Row], key: Option<&super::vouch::AuditKey>) {
    if let Some(key) = key {
        for r in rows {
            r.mac = Some(key.mac(&r.hash));
        }
    }
}

struct Row {
    seq: i64,
    actor: &'static str,
    kind: &'static str,
    run_id: Option<String>,
    step: Option<i64>,
    approval: Option<String>,
    payload: String,
    prev_hash: String,
    hash: String,
    mac: Option<String>,
}

/// Chains `events` after (seq, hash). Every payload is redacted first: no secret reaches the log.
fn chain(mut seq: i64, mut prev_hash: String, entries: &[Entry], now: i64) -> Vec<Row> {
    entries
        .iter()
        .map(|event| {
            seq += 1;
            let run_id = event.run.map(|r| r.to_string());
            let value = &event.payload;
            let step = value.get("step").and_then(serde_json::Value::as_i64);
            let approval = value
                .get("approval")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned);
            let payload = value.to_string();
            let payload = crate::secrets::redact_json_str(&payload).unwrap_or(payload);
            let hash = chain_hash(
                &prev_hash,
                &canonical(&Canon {
                    seq,
                    at: now,
                    actor: event.actor.as_str(),
                    kind: event.kind,
                    run: run_id.as_deref(),
                    step,
                    approval: approval.as_deref(),
                    payload: &payload,
                }),
            )
            .to_string();
            let prev = std::mem::replace(&mut prev_hash, hash.clone());
            Row {
                seq,
                actor: event.actor.as_str(),
                kind: event.kind,
                run_id,
                step,
                approval,
                payload,
                prev_hash: prev,
                hash,
                mac: None,
            }
        })
        .collect()
}

/// The first of `rows` that carries a MAC (all do, or none: they were made with one key or none).
fn first_keyed(rows: &[Row]) -> Option<i64> {
    rows.first().filter(|r| r.mac.is_some()).map(|r| r.seq)
}

/// `VALUES (…), (…)` of the rows, each field a parameter.
fn push_rows(q: &mut Sql<'_>, rows: &[Row], now: i64) -> Result<()> {
    q.push("VALUES ");
    for (i, r) in rows.iter().enumerate() {
        q.push(if i == 0 { "(" } else { ", (" });
        q.bind(r.seq)?.push(", ").bind(now)?.push(", ");
        q.bind(r.actor.to_owned())?.push(", ").bind(r.kind.to_owned())?.push(", ");
        q.bind(r.run_id.clone())?.push(", ").bind(r.step)?.push(", ");
        q.bind(r.approval.clone())?.push(", ").bind(r.payload.clone())?.push(", ");
        q.bind(r.prev_hash.clone())?.push(", ").bind(r.hash.clone())?.push(", ");
        q.bind(r.mac.clone())?.push(")");
    }
    Ok(())
}

/// The anchor marks among `rows`, and the last row (the new head).
fn marks_of(rows: &[Row]) -> Vec<Mark> {
    let last = rows.len().saturating_sub(1);
    rows.iter()
        .enumerate()
        .filter(|(i, r)| *i == last || Mark::wanted(r.seq))
        .map(|(_, r)| Mark {
            seq: r.seq,
            hash: r.hash.clone(),
        })
        .collect()
}

/// An owner's append on the fast path: its rows chained after the head the owner remembers, and
/// one guarded `INSERT` that lands them only if that is still the head and the owner still holds
/// the run (plainly running: a pause request sends the append down the slow path, which notices
/// it). It may travel alone or as the last part of a write's own statement (`store::fused`).
pub(super) struct Fast<'o> {
    owner: &'o Owner,
    rows: Vec<Row>,
    head: String,
    run: String,
    now: i64,
}

impl<'o> Fast<'o> {
    /// `None` when the owner remembers no head.
    fn prepare(
        owner: &'o Owner,
        events: &[Entry],
        now: i64,
        key: Option<&super::vouch::AuditKey>,
    ) -> Option<Self> {
        let (seq, head) = owner.remembered()?;
        let mut rows = chain(seq, head.clone(), events, now);
        vouch(&mut rows, key);
        Some(Self {
            owner,
            rows,
            head,
            run: owner.run.to_string(),
            now,
        })
    }

    pub(super) fn of_events(
        owner: &'o Owner,
        events: &[Event],
        now: i64,
        key: Option<&super::vouch::AuditKey>,
    ) -> Option<Self> {
        let entries: Vec<Entry> = events.iter().map(Entry::of).collect();
        Self::prepare(owner, &entries, now, key)
    }

    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The statement, parameters from `$1`; `also` is one more condition (SQL) the rows need.
    /// With `locking`, the run's row is read with a lock (`FOR SHARE`), which sees the newest
    /// fence even if it moved after the statement began, and keeps it from moving until the
    /// statement commits: for a statement outside the write lock's transaction (`fused::Whole`).
    pub(super) fn sql(&self, also: Option<&str>, locking: bool) -> String {
        let mut sql = String::from(
            "INSERT INTO audit_events (seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash, mac)
             SELECT column1, column2, column3, column4, column5, column6, column7, column8, column9, column10, column11 FROM (VALUES ",
        );
        let mut n = 0;
        for i in 0..self.rows.len() {
            sql.push_str(if i == 0 { "(" } else { ", (" });
            let fields: Vec<String> = (0..11)
                .map(|_| {
                    n += 1;
                    format!("${n}")
                })
                .collect();
            sql.push_str(&fields.join(", "));
            sql.push(')');
        }
        sql.push_str(&format!(
            ") AS v WHERE (SELECT hash FROM audit_events ORDER BY seq DESC LIMIT 1) IS NOT DISTINCT FROM ${}
               AND EXISTS (SELECT 1 FROM runs WHERE id = ${} AND fence = ${} AND state = 'running'{})",
            n + 1,
            n + 2,
            n + 3,
            if locking { " FOR SHARE" } else { "" }
        ));
        if let Some(also) = also {
            sql.push_str(" AND ");
            sql.push_str(also);
        }
        sql
    }

    /// Binds the statement's parameters, in order, after those already bound to `q`.
    pub(super) fn bind<'q>(&'q self, mut q: Query<'q>) -> Query<'q> {
        for r in &self.rows {
            q = q
                .bind(r.seq)
                .bind(self.now)
                .bind(r.actor)
                .bind(r.kind)
                .bind(r.run_id.as_deref())
                .bind(r.step)
                .bind(r.approval.as_deref())
                .bind(r.payload.as_str())
                .bind(r.prev_hash.as_str())
                .bind(r.hash.as_str())
                .bind(r.mac.as_deref());
        }
        q.bind(self.head.as_str())
            .bind(self.run.as_str())
            .bind(self.owner.fence)
    }

    /// The rows landed: the transaction carries the new head to the anchor and the owner
    /// remembers it. Returns the last seq.
    pub(super) fn landed(self, tx: &mut Tx) -> i64 {
        tx.appended(marks_of(&self.rows));
        if let Some(seq) = first_keyed(&self.rows) {
            tx.keyed_from(seq);
        }
        let last = self.rows.last().map(|r| (r.seq, r.hash.clone()));
        let seq = last.as_ref().map(|(seq, _)| *seq).unwrap_or(0);
        self.owner.remember(last);
        seq
    }
}

/// Appends events in order inside `tx` and returns the last seq.
///
/// With an `owner`, the append also proves that worker still holds the run (inside `BEGIN IMMEDIATE`
/// nobody can move the fence before this transaction commits), so it doubles as the fence check.
/// When the owner remembers the head it last wrote, one guarded INSERT does it all; if that inserts
/// nothing (someone else appended since, or the run was lost), the head is read and checked anew.
pub async fn append_all(
    tx: &mut Tx,
    owner: Option<&Owner>,
    events: &[Event],
    now: i64,
) -> Result<i64> {
    let entries: Vec<Entry> = events.iter().map(Entry::of).collect();
    insert(tx, owner, &entries, now).await
}

async fn insert(tx: &mut Tx, owner: Option<&Owner>, events: &[Entry], now: i64) -> Result<i64> {
    if events.is_empty() {
        return Err(StoreError::Invalid(
            "an audit append needs at least one event".into(),
        ));
    }
    let key = tx.key().cloned();
    if let Some(fast) = owner.and_then(|o| Fast::prepare(o, events, now, key.as_deref())) {
        let sql = fast.sql(None, false);
        let done = fast.bind(sqlx::query(&sql)).execute(&mut **tx).await?;
        if done.rows_affected() == fast.rows.len() as u64 {
            return Ok(fast.landed(tx));
        }
    }
    let (state, last_seq, last_hash): (Option<String>, Option<i64>, Option<String>) = match owner {
        Some(o) => {
            sqlx::query_as(
                "SELECT (SELECT state FROM runs WHERE id = $1 AND fence = $2),
                        (SELECT seq FROM audit_events ORDER BY seq DESC LIMIT 1),
                        (SELECT hash FROM audit_events ORDER BY seq DESC LIMIT 1)",
            )
            .bind(o.run.to_string())
            .bind(o.fence)
            .fetch_one(&mut **tx)
            .await?
        }
        None => {
            sqlx::query_as(
                "SELECT 'running', (SELECT seq FROM audit_events ORDER BY seq DESC LIMIT 1),
                           (SELECT hash FROM audit_events ORDER BY seq DESC LIMIT 1)",
            )
            .fetch_one(&mut **tx)
            .await?
        }
    };
    if let Some(o) = owner {
        match state.as_deref() {
            Some("running") => {}
            Some("pause_requested") => o.saw_pause(true),
            _ => {
                o.remember(None);
                return Err(StoreError::LostLease {
                    run: o.run.to_string(),
                    fence: o.fence,
                });
            }
        }
    }
    let mut rows = chain(
        last_seq.unwrap_or(0),
        last_hash.unwrap_or_else(|| GENESIS.to_owned()),
        events,
        now,
    );
    vouch(&mut rows, key.as_deref());
    let mut insert = Sql::new(
        "INSERT INTO audit_events (seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash, mac) ",
    );
    push_rows(&mut insert, &rows, now)?;
    let (sql, args) = insert.into_parts();
    sqlx::query_with(&sql, args).execute(&mut **tx).await?;
    tx.appended(marks_of(&rows));
    if let Some(seq) = first_keyed(&rows) {
        tx.keyed_from(seq);
    }
    let last = rows.last().map(|r| (r.seq, r.hash.clone()));
    if let Some(o) = owner {
        o.remember(last.clone());
    }
    Ok(last.map(|(seq, _)| seq).unwrap_or(0))
}

/// The anchor marks the table holds now: seq 1, every `MARK_EVERY`th seq, and the head.
pub async fn marks(pool: &Pool) -> Result<Vec<Mark>> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT seq, hash FROM audit_events
         WHERE seq = 1 OR seq % $1 = 0 OR seq = (SELECT MAX(seq) FROM audit_events)
         ORDER BY seq",
    )
    .bind(super::anchor::MARK_EVERY)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(seq, hash)| Mark { seq, hash })
        .collect())
}

pub async fn for_run(pool: &Pool, run: RunId) -> Result<Vec<AuditRow>> {
    Ok(
        sqlx::query_as("SELECT * FROM audit_events WHERE run_id = $1 ORDER BY seq")
            .bind(run.to_string())
            .fetch_all(pool)
            .await?,
    )
}

#[cfg(test)]
pub async fn all(pool: &Pool) -> Result<Vec<AuditRow>> {
    Ok(sqlx::query_as("SELECT * FROM audit_events ORDER BY seq")
        .fetch_all(pool)
        .await?)
}

/// What a screen watching the store compares to notice that something changed, whichever process
/// changed it: the audit chain's head and the latest run update. (Every decision, step, state
/// change and memory edit appends an audit event; run rows change with every state move.)
pub async fn change_stamp(pool: &Pool) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT (SELECT COALESCE(MAX(seq), 0) FROM audit_events), \
                (SELECT COALESCE(MAX(updated_at), 0) FROM runs)",
    )
    .fetch_one(pool)
    .await?)
}
