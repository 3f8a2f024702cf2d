//! The `audit_events` table: an append-only SHA-256 chain, written in the same transaction as the
//! change each event records. `hash = SHA-256(prev_hash ‖ canonical event)`.

use serde::Serialize;
use sqlx::SqlitePool;

use super::{Result, Tx};
use crate::digest::Digest;
use crate::ids::RunId;

/// The hash before the first event.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    User,
    Agent,
    Harness,
    System,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::User => "user",
            Actor::Agent => "agent",
            Actor::Harness => "harness",
            Actor::System => "system",
        }
    }
}

#[derive(Clone, Debug, sqlx::FromRow, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRow {
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub kind: String,
    pub run_id: Option<String>,
    pub payload: String,
    pub prev_hash: String,
    pub hash: String,
}

/// The bytes the chain hashes for one event, fixed field order.
pub fn canonical(
    seq: i64,
    at: i64,
    actor: &str,
    kind: &str,
    run_id: Option<&str>,
    payload: &str,
) -> String {
    #[derive(Serialize)]
    struct Canon<'a> {
        seq: i64,
        at: i64,
        actor: &'a str,
        kind: &'a str,
        run: Option<&'a str>,
        payload: &'a str,
    }
    serde_json::to_string(&Canon {
        seq,
        at,
        actor,
        kind,
        run: run_id,
        payload,
    })
    .unwrap_or_default()
}

pub fn chain_hash(prev_hash: &str, canonical_event: &str) -> Digest {
    let mut bytes = Vec::with_capacity(prev_hash.len() + canonical_event.len());
    bytes.extend_from_slice(prev_hash.as_bytes());
    bytes.extend_from_slice(canonical_event.as_bytes());
    Digest::of(&bytes)
}

/// Appends one event to the chain inside `tx`; returns its seq.
pub async fn append(
    tx: &mut Tx,
    actor: Actor,
    kind: &str,
    run: Option<RunId>,
    payload: &serde_json::Value,
    now: i64,
) -> Result<i64> {
    let last: Option<(i64, String)> =
        sqlx::query_as("SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1")
            .fetch_optional(&mut **tx)
            .await?;
    let (seq, prev_hash) = match last {
        Some((seq, hash)) => (seq + 1, hash),
        None => (1, GENESIS.to_owned()),
    };
    let run_id = run.map(|r| r.to_string());
    let payload = payload.to_string();
    let hash = chain_hash(
        &prev_hash,
        &canonical(seq, now, actor.as_str(), kind, run_id.as_deref(), &payload),
    );
    sqlx::query(
        "INSERT INTO audit_events (seq, at, actor, kind, run_id, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(seq)
    .bind(now)
    .bind(actor.as_str())
    .bind(kind)
    .bind(run_id)
    .bind(payload)
    .bind(prev_hash)
    .bind(hash.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(seq)
}

pub async fn for_run(pool: &SqlitePool, run: RunId) -> Result<Vec<AuditRow>> {
    Ok(
        sqlx::query_as("SELECT * FROM audit_events WHERE run_id = ? ORDER BY seq")
            .bind(run.to_string())
            .fetch_all(pool)
            .await?,
    )
}

pub async fn all(pool: &SqlitePool) -> Result<Vec<AuditRow>> {
    Ok(sqlx::query_as("SELECT * FROM audit_events ORDER BY seq")
        .fetch_all(pool)
        .await?)
}
